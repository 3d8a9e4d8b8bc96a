"""A check id without the pack's prefix: a warning, and the guardrail still indexes."""

from kindgi import guardrail


@guardrail(id="shout-check", on_violation="warn")
def shout(config, trace):
    return True
