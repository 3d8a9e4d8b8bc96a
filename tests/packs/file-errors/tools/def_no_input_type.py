from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="acme.errors.no-input", description="x", output={})
def f(input):
    return {}
