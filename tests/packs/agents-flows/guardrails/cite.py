from kindgi import guardrail


@guardrail(id="acme.af.cite", on_violation="halt", check_id="acme.af.checks.cite")
def cite(config, trace):
    return True
