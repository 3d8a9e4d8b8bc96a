from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="acme.errors.no-description", input={"type": "object"}, output={})
def f(input):
    return {}
