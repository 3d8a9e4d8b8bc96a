from kindgi import guardrail


@guardrail(id="acme.versions.same", on_violation="halt")
def first(config, trace):
    return True
