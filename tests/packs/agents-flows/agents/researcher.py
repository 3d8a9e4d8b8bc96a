from kindgi import Agent

from ..guardrails.cite import cite
from ..tools.search import search, summarise

researcher = Agent(
    id="acme.af.researcher", version="1.0.0", name="Researcher",
    instructions="Find sources, then summarise them.",
    capabilities=[{"kind": "web-search"}],
    tools=[search, summarise, {"id": "acme.other.lookup", "version": "^2.0.0"}],
    retrieval=[{"source": "kb", "topK": 5}],
    guardrails=[cite, "acme.af.checks.other"],
    parameters=[{"name": "depth", "type": "integer", "default": 2}],
    budget={"maxTokens": 20000, "maxCostUsd": 0.25},
    preferred_provider="anthropic", preferred_model="claude-x",
    description="Researches a question.", tags=("research", "web"),
    conversation_policy={"maxTurns": 10},
    output={"type": "object", "properties": {"answer": {"type": "string"}}},
    tool_errors={"maxRetries": 2, "retryOn": ["timeout"]},
    settings=[{"id": "acme.weights", "version": "^1.0.0"}],
    model_settings={"id": "acme.model", "version": "^1.0.0"},
    memory={"instructionTypes": ["policy"]})

prompted = Agent(
    id="acme.af.prompted", version="1.0.0-rc.1", name="Prompted",
    instructions={"prompt": "acme.intake-prompt", "version": "^1.0.0"},
    output={"schema": {"type": "object"}, "name": "Answer", "maxRepairs": 1})

minimal = Agent(id="acme.af.minimal", version="0.0.1", name="Minimal", instructions="Hi.")

bad_ref = Agent(id="acme.af.bad-ref", version="1.0.0", name="Bad", instructions="x",
                tools=["acme.af.search"])
