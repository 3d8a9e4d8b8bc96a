from kindgi import guardrail

@guardrail(id="acme.errors.one", on_violation="halt")
def f(config):
    return True
