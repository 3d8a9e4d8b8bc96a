from kindgi import guardrail

@guardrail(id="acme.errors.none")
def f(config, trace):
    return True
