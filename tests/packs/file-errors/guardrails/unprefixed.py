"""Check ids without the pack's prefix: a warning each, and the guardrails still index.
The prefix is the pack's id and a dot: "acme.errorsx..." is another pack's name."""

from kindgi import guardrail


@guardrail(id="shout-check", on_violation="warn")
def shout(config, trace):
    return True


@guardrail(id="acme.errors.near", check_id="acme.errorsx.near", on_violation="warn")
def near(config, trace):
    return True
