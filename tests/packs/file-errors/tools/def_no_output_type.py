from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="acme.errors.no-output", description="x", input={"type": "object"})
def f(input):
    return {}
