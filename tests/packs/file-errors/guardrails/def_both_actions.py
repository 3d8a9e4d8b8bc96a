from kindgi import guardrail

@guardrail(id="acme.errors.both", on_violation="halt", action={"on-violation": "halt"})
def f(config, trace):
    return True
