from kindgi import Agent, guardrail, http_tool, tool  # noqa: F401

from typing import Any


@tool(id="acme.errors.input-any", description="x", output={})
def f(input: Any):
    return {}
