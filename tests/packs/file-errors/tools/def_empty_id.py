from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="  ", description="x", input={"type": "object"}, output={})
def f(input):
    return {}
