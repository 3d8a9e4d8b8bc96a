"""The kindgi schemas embedded in kindgi_pack_index, and how they are checked, in process.

The copies must be the kindgi 0.1.10 wheel's files, unchanged; every keyword they use
must be one the checker knows; and on a corpus of valid and mutated instances the
checker must give exactly the SDK validator's issues (in order) and explanations.  The
comparisons with the wheel and the SDK skip, saying why, where the SDK can't be had.
"""

import copy
import json
import os
import random
import subprocess
import sys

import pytest

from conftest import ROOT
from kindgi_pack_index import _CHECKS, _FORMATS, _TYPES, ANNOTATIONS, SCHEMA_TEXTS, kindgi_schema

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from indexing import require_sdk  # noqa: E402

SCHEMA_FILES = {"pack-index": "pack-index.schema.json", "flow": "flow.schema.json", "tool": "tool.schema.json"}


@pytest.fixture(scope="module")
def sdk():
    return require_sdk()


def sdk_run(python, code, payload, hash_seed=0):
    """Run code under the SDK's interpreter with payload as JSON on stdin; its JSON stdout."""
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    done = subprocess.run([python, "-c", code], input=json.dumps(payload).encode(), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120, env=env)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return json.loads(done.stdout)


def test_the_embedded_schemas_are_the_wheels_files(sdk):
    texts = sdk_run(sdk, "import json, sys\nfrom importlib import resources\n"
                         "names = json.load(sys.stdin)\n"
                         "print(json.dumps({n: resources.files('kindgi._specs').joinpath(f).read_text('utf-8') "
                         "for n, f in names.items()}))", SCHEMA_FILES)
    for name in SCHEMA_FILES:
        assert SCHEMA_TEXTS[name] == texts[name], "%s differs from the wheel's %s" % (name, SCHEMA_FILES[name])


def test_the_wheel_is_apache_2(sdk):
    licence = sdk_run(sdk, "import json, importlib.metadata as m\n"
                           "print(json.dumps(m.metadata('kindgi')['License']))", None)
    assert licence == "Apache-2.0"


def schema_objects(node, where="#"):
    """Every schema object in a schema, with where it is (property and $defs names are not keywords)."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    yield from schema_objects(sub, "%s/%s/%s" % (where, key, name))
            elif key in ("items", "additionalProperties", "not", "propertyNames", "$ref"):
                yield from schema_objects(value, where + "/" + key)
            elif key == "oneOf":
                for i, sub in enumerate(value):
                    yield from schema_objects(sub, "%s/oneOf/%d" % (where, i))


@pytest.mark.parametrize("name", sorted(SCHEMA_FILES))
def test_every_keyword_of_the_schemas_is_checked_or_an_annotation(name):
    for where, node in schema_objects(json.loads(SCHEMA_TEXTS[name])):
        unknown = set(node) - set(_CHECKS) - ANNOTATIONS
        assert not unknown, (where, unknown)
        types = node.get("type", [])
        assert set(types if isinstance(types, list) else [types]) <= set(_TYPES), where
        assert node.get("format", "date-time") in _FORMATS, where


# -- the checker, without the SDK ---------------------------------------------------------------

FLOW = {"id": "f", "version": "1.0.0", "nodes": [{"id": "a", "kind": "tool", "ref": "t"}], "edges": []}


def flow_with(**changes):
    flow = copy.deepcopy(FLOW)
    flow.update(changes)
    return flow


@pytest.mark.parametrize("flow, where, message", [
    (flow_with(nodes=[{"id": "a", "kind": "teleport"}]), "/nodes/0/kind",
     'must be one of "tool", "agent", "loop", "fanout", "subgraph"'),
    (flow_with(nodes=[{"id": "a", "kind": "loop", "loopKind": "until"}]), "/nodes/0/loopKind",
     'must be one of "while", "foreach"'),
    (flow_with(nodes=[{"id": "a", "kind": "tool", "ref": 5}]), "/nodes/0/ref", "must be string"),
    (flow_with(nodes=[{"id": "a", "kind": "fanout", "branches": [], "convergence": "all-succeed"}]),
     "/nodes/0/branches", "must NOT have fewer than 2 items"),
    (flow_with(edges=[{"id": "e", "from": "a", "to": "b", "when": {"op": "eq", "left": {"literal": 1}}}]),
     "/edges/0/when", "must have required property 'right'"),
    (flow_with(colour="red"), "", "must NOT have additional properties"),
    (flow_with(nodes=[{"id": "a", "kind": "tool", "ref": "t", "inputMapping": {"a/b~c": {"literal": 1, "x": 2}}}]),
     "/nodes/0/inputMapping/a~1b~0c", "must match exactly one schema in oneOf"),   # a JSON Pointer's escapes
    (flow_with(edges=[{"id": "e", "from": "a", "to": "a", "policy": {"concurrencyKey": "k" * 257}}]),
     "/edges/0/policy/concurrencyKey", "must NOT have more than 256 characters"),
])
def test_explain_follows_the_discriminator(flow, where, message):
    issue = kindgi_schema("flow").explain(flow)
    assert (issue["instancePath"], issue["message"]) == (where, message)


def test_a_valid_flow_has_nothing_to_explain():
    assert kindgi_schema("flow").explain(FLOW) is None
    assert kindgi_schema("flow").issues(FLOW) == []


def test_a_float_with_no_fraction_is_an_integer_as_the_sdk_checks_one():
    assert kindgi_schema("flow").issues(flow_with(maxParallelism=2.0)) == []
    assert kindgi_schema("flow").explain(flow_with(maxParallelism=2.5))["message"] == "must be integer"


def test_http_spec_issues_are_all_listed_once_in_schema_order():
    issues = kindgi_schema("http-tool-spec").issues({"kind": "http", "method": "FETCH", "extra": 1})
    assert [(i["instancePath"], i["message"]) for i in issues] == [
        ("", "must NOT have additional properties"), ("", "must have required property 'urlTemplate'"),
        ("/method", "must be equal to one of the allowed values")]


INDEX = {"v": 1, "packId": "p", "packVersion": "1", "artifactVersion": "a", "publishedAt": "",
         "tools": [], "guardrails": [], "agents": [], "flows": []}


@pytest.mark.parametrize("when, valid", [
    ("2026-06-30T23:59:60Z", True),   # a leap second
    ("2026-06-30T23:59:61Z", False),
    ("2026-01-01T24:00:00Z", False),
    ("2026-01-01 00:00:00Z", True),   # a space, or a lower-case t and z, as the SDK takes them
    ("2026-01-01t00:00:00.5z", True),
    ("2026-01-01T00:00:00.Z", False),
    ("2026-01-01T00:00:00+01:00", True),
])
def test_published_at_is_a_date_time_as_the_sdk_reads_one(when, valid):
    index = dict(INDEX, publishedAt=when)
    messages = [issue["message"] for issue in kindgi_schema("pack-index").issues(index)]
    assert messages == ([] if valid else ['must match format "date-time"'])


def test_a_name_listed_twice_in_env_is_an_issue_in_the_sdks_words():
    """The config check keeps an index from listing a name twice; the schema says so too."""
    index = dict(INDEX, publishedAt="2026-01-01T00:00:00Z",
                 env={"required": ["A", "B", "A"], "optional": ["C", "C"]})
    twice = {"keyword": "uniqueItems", "params": {}, "message": "must NOT have duplicate items"}
    assert kindgi_schema("pack-index").issues(index) == [dict(twice, instancePath="/env/required"),
                                                         dict(twice, instancePath="/env/optional")]


# -- the checker and the SDK's validator, on a corpus -------------------------------------------

VALID = {
    "flow": [FLOW, {
        "id": "p", "version": "1.0.0-rc.1", "name": "P", "maxParallelism": 2, "metadata": {"a": 1},
        "nodes": [
            {"id": "a", "kind": "agent", "ref": "x", "config": {}, "inputMapping": {"q": {"path": "runInput.q"}}},
            {"id": "l", "kind": "loop", "loopKind": "foreach", "iterateOver": {"literal": [1, 2]},
             "body": {"nodes": [{"id": "i", "kind": "tool", "ref": "t"}], "edges": []}, "maxIterations": 5,
             "outputSchema": {}, "concurrency": 2},
            {"id": "s", "kind": "subgraph", "flowRef": {"flowId": "g", "version": "1.0.0"}, "inputMapping": {},
             "outputSchema": {}, "convergence": "settle-all"},
            {"id": "f", "kind": "fanout", "convergence": "any-succeed", "branches": [
                {"branchId": "x", "handler": "h", "outputSchema": {}}, {"branchId": "y", "handler": "h",
                                                                        "outputSchema": {}}]}],
        "edges": [{"id": "e", "from": "a", "to": "l", "policy": {"retry": {"maxAttempts": 3, "backoff": "linear"},
                                                                 "priority": -5, "concurrencyKey": "k"},
                   "when": {"op": "and", "children": [{"op": "not", "child": {"op": "exists", "value": {
                       "path": "state.x"}}}, {"op": "in", "value": {"literal": 1}, "set": {"literal": [1]}}]}}],
        "output": {"mapping": {"r": {"path": "nodeOutputs.a.r"}}, "schema": {"type": "object"}}}],
    "http-tool-spec": [
        {"kind": "http", "method": "GET", "urlTemplate": "https://x.test/{a}"},
        {"kind": "http", "method": "POST", "urlTemplate": "u", "headers": [{"name": "a", "value": "b"}],
         "authorization": {"kind": "header", "headerName": "k", "secretRef": {"envName": "e", "name": "n"}},
         "requestBody": {"kind": "text", "template": "t"}, "timeoutMs": 5, "parseJson": False,
         "successStatus": {"min": 200, "max": 299}}],
    "pack-index": [
        {"v": 1, "packId": "p", "packVersion": "1", "artifactVersion": "a", "publishedAt": "2026-01-01T00:00:00Z",
         "tools": [{"id": "t", "input": {}, "output": {}, "modulePath": "m.py", "effects": [{}], "mutating": True,
                    "description": "d", "version": "1.0.0"}],
         "guardrails": [{"id": "g", "kind": "k", "action": {}, "checkModulePath": "g.py", "checkId": "c"}],
         "agents": [{"id": "a", "version": "1", "name": "n", "instructions": {"prompt": "p", "version": "1"},
                     "capabilities": [], "tools": [{"id": "t", "version": "1"}], "modulePath": "a.py",
                     "guardrails": ["g"], "conversationPolicy": {"maxTurns": 1}}],
         "flows": [{"id": "f", "version": "1", "nodes": [], "edges": [], "kernelPayloadVersion": 1,
                    "modulePath": "f.py"}],
         "env": {"required": ["A"], "optional": []}}],
}

ODD_VALUES = [None, True, 0, -1, 2.5, "", "x", "loop", "while", "tool", [], [1], {}, {"kind": "tool"},
              {"literal": 1}, {"path": 5}, "2026-01-01T00:00:00+0100", "2026-02-30T00:00:00Z", "1.0",
              "KINDGI_X", {"op": "eq"}, [{"id": "x"}]]


def paths_of(value, path=()):
    yield path
    if isinstance(value, dict):
        for key in value:
            yield from paths_of(value[key], path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths_of(item, path + (i,))


def mutated(value, rng):
    """A copy of value with one to three random changes: a value replaced, a key dropped or added."""
    value = copy.deepcopy(value)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(list(paths_of(value)))
        if not path:
            continue
        parent = value
        for part in path[:-1]:
            parent = parent[part]
        roll = rng.random()
        if roll < 0.6:
            parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif roll < 0.8 and isinstance(parent, dict):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[rng.choice(["extra", "kind", "id", "op", "loopKind", "2"])] = copy.deepcopy(rng.choice(ODD_VALUES))
    return value


SDK_CHECKS = """
import json, sys
from kindgi.pack.index import _spec
from kindgi.pack.define import _http_spec_validator
job = json.load(sys.stdin)
check = _http_spec_validator() if job["schema"] == "http-tool-spec" else _spec(job["schema"])
def plain(issue):
    if issue is not None:
        issue.pop("schemaPath")
    return issue
print(json.dumps([{"issues": [plain(i) for i in check.issues(x)], "explain": plain(check.explain(x))}
                  for x in job["instances"]]))
"""


TIE_SEEDS = range(1, 17)


@pytest.mark.parametrize("name", sorted(VALID))
def test_issues_and_explanations_are_the_sdks(sdk, name):
    """Exactly the SDK's, but for one thing: where a oneOf's alternatives tie on their
    discriminator, the SDK picks one by a set's order, which follows the hash seed.  There
    its answer changes from seed to seed, and ours must be one of the answers it gives."""
    rng = random.Random(name)
    instances = list(VALID[name]) + [mutated(rng.choice(VALID[name]), rng) for _ in range(400)]
    instances = json.loads(json.dumps(instances))
    theirs = sdk_run(sdk, SDK_CHECKS, {"schema": name, "instances": instances})
    check = kindgi_schema(name)
    failing = 0
    ties = []
    for instance, expected in zip(instances, theirs):
        ours = {"issues": check.issues(instance), "explain": check.explain(instance)}
        assert ours["issues"] == expected["issues"], json.dumps(instance)
        if ours["explain"] != expected["explain"]:
            ties.append((instance, ours["explain"]))
        failing += bool(expected["issues"])
    assert failing > 300   # the mutations do fail
    if ties:
        payload = {"schema": name, "instances": [instance for instance, _ in ties]}
        answers = [sdk_run(sdk, SDK_CHECKS, payload, seed) for seed in TIE_SEEDS]
        for i, (instance, ours) in enumerate(ties):
            seen = [answer[i]["explain"] for answer in answers]
            assert ours in seen and len({json.dumps(a, sort_keys=True) for a in seen}) > 1, json.dumps(instance)


def test_on_a_tie_ours_is_one_of_the_sdks_answers(sdk):
    """A subgraph node whose convergence is a number: the alternatives miss on "kind" as often
    as on "convergence", and the SDK's report depends on the hash seed."""
    node = {"id": "s", "kind": "subgraph", "flowRef": {"flowId": "g", "version": "1.0.0"}, "inputMapping": {},
            "outputSchema": {}, "convergence": -1}
    payload = {"schema": "flow", "instances": [flow_with(nodes=[node])]}
    seen = {json.dumps(sdk_run(sdk, SDK_CHECKS, payload, seed)[0]["explain"], sort_keys=True) for seed in TIE_SEEDS}
    ours = kindgi_schema("flow").explain(payload["instances"][0])
    assert len(seen) == 2
    assert json.dumps(ours, sort_keys=True) in seen
    # "kind" comes first of the tied properties: the one alternative that matches it is subgraph's.
    assert (ours["instancePath"], ours["message"]) == ("/nodes/0/convergence", "must be string")
