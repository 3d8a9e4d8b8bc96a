from kindgi import guardrail

@guardrail(id="acme.errors.nameless", action={"retry": 1})
def f(config, trace):
    return True
