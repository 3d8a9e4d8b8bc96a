"""Flows the flow schema refuses: each is a file error, explained as the SDK explains it."""

from kindgi import Flow

unknown_kind = Flow(id="acme.af.unknown-kind", version="1.0.0", edges=[],
                    nodes=[{"id": "n", "kind": "teleport", "ref": "x"}])
extra_field = Flow(id="acme.af.extra-field", version="1.0.0", edges=[],
                   nodes=[{"id": "n", "kind": "tool", "ref": "x", "colour": "red"}])
bad_loop = Flow(id="acme.af.bad-loop", version="1.0.0", edges=[],
                nodes=[{"id": "n", "kind": "loop", "loopKind": "until", "body": {"nodes": [], "edges": []},
                        "maxIterations": 1, "outputSchema": {}}])
bad_while = Flow(id="acme.af.bad-while", version="1.0.0", edges=[],
                 nodes=[{"id": "n", "kind": "loop", "loopKind": "while",
                         "body": {"nodes": [{"id": "i", "kind": "tool", "ref": "x"}], "edges": []},
                         "exitCondition": {"op": "truthy", "value": {"path": "state.done"}},
                         "maxIterations": 0, "outputSchema": {}}])
bad_expr = Flow(id="acme.af.bad-expr", version="1.0.0",
                nodes=[{"id": "a", "kind": "tool", "ref": "x"}, {"id": "b", "kind": "tool", "ref": "y"}],
                edges=[{"id": "e", "from": "a", "to": "b", "when": {"op": "near", "left": {"literal": 1}}}])
no_edge_to = Flow(id="acme.af.no-edge-to", version="1.0.0",
                  nodes=[{"id": "a", "kind": "tool", "ref": "x"}], edges=[{"id": "e", "from": "a"}])
bad_version = Flow(id="acme.af.bad-version", version="one", edges=[],
                   nodes=[{"id": "a", "kind": "tool", "ref": "x"}])
no_nodes = Flow(id="acme.af.no-nodes", version="1.0.0", nodes=[], edges=[])
bad_operand = Flow(id="acme.af.bad-operand", version="1.0.0", edges=[],
                   nodes=[{"id": "a", "kind": "tool", "ref": "x", "inputMapping": {"q": {"path": 5}}}])
bad_parallel = Flow(id="acme.af.bad-parallel", version="1.0.0", edges=[], max_parallelism=0,
                    nodes=[{"id": "a", "kind": "tool", "ref": "x"}])
