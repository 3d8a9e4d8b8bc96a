from kindgi import guardrail

@guardrail(id="must-cite", on_violation="halt")
def f(config, trace):
    return True
