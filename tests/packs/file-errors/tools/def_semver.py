from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

@tool(id="acme.errors.semver", version="1.0", description="x", input={"type": "object"}, output={})
def f(input):
    return {}
