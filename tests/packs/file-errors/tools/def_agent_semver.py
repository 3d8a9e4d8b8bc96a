from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

bad = Agent(id="acme.errors.agent", version="v1", name="A", instructions="x")
