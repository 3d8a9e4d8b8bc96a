from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="acme.errors.not-object", description="x", input={"type": "array"}, output={})
def f(input):
    return {}
