from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

bad = Agent(id="acme.errors.agent-prompt", version="1.0.0", name="A", instructions={"prompt": "p"})
