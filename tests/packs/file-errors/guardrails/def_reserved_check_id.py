from kindgi import guardrail

@guardrail(id="acme.errors.cite", check_id="tool-order", on_violation="halt")
def f(config, trace):
    return True
