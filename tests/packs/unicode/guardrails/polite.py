from kindgi import guardrail


@guardrail(id="acme.unicode.höflich", name="Höflich — polite", on_violation="warn",
           check_id="acme.unicode.checks.höflich")
def polite(config, trace):
    return {"passed": "bitte" in (trace.output or ""), "reason": "Bitte „bitte“ sagen"}
