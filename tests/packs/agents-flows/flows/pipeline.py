from kindgi import Flow

from ..agents.researcher import researcher
from ..tools.search import search, summarise

pipeline = Flow(
    id="acme.af.pipeline", version="1.0.0", name="Pipeline", description="Search, loop, fan out.",
    max_parallelism=4, metadata={"owner": "team-a"},
    nodes=[
        {"id": "find", "kind": "tool", "ref": search, "config": {"limit": 3},
         "inputMapping": {"q": {"path": "runInput.question"}}},
        {"id": "think", "kind": "agent", "ref": researcher},
        {"id": "again", "kind": "loop", "loopKind": "while",
         "body": {"nodes": [{"id": "inner", "kind": "tool", "ref": summarise}], "edges": []},
         "exitCondition": {"op": "truthy", "value": {"path": "state.done"}},
         "maxIterations": 3, "outputSchema": {"type": "object"}},
        {"id": "spread", "kind": "fanout", "convergence": "all-succeed",
         "branches": [{"branchId": "a", "handler": search, "outputSchema": {}},
                      {"branchId": "b", "handler": "acme.af.summarise", "outputSchema": {}}]},
    ],
    edges=[
        {"id": "e1", "from": "find", "to": "think",
         "when": {"op": "gt", "left": {"path": "nodeOutputs.find.count"}, "right": {"literal": 0}}},
        {"id": "e2", "from": "think", "to": "again", "policy": {"retry": {"maxAttempts": 2}, "timeoutMs": 1000}},
        {"id": "e3", "from": "again", "to": "spread"},
    ],
    output={"mapping": {"answer": {"path": "nodeOutputs.think.answer"}}})

simple = Flow(id="acme.af.simple", version="2.0.0",
              nodes=[{"id": "only", "kind": "tool", "ref": "acme.af.search"}], edges=[])
