"""A guardrail in tools/: kind-mismatch (the tool beside it still indexes)."""

from kindgi import guardrail, tool


@guardrail(id="acme.errors.misplaced", on_violation="halt")
def misplaced(config, trace):
    return True


@tool(id="acme.errors.beside", description="Beside the misplaced guardrail.", input={"type": "object"},
      output={})
def beside(input):
    return {}
