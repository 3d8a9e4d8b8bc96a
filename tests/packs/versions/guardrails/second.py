"""A second guardrail with the same id: guardrails have no version, so it is a duplicate."""

from kindgi import guardrail


@guardrail(id="acme.versions.same", on_violation="halt", check_id="acme.versions.other")
def second(config, trace):
    return False
