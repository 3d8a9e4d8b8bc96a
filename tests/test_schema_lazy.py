"""schema_lite's lazy compile and its sharing of compiled schemas.

``SchemaValidator(schema, lazy=True)`` checks a schema at once and compiles it on
first use.  What must hold: it raises exactly the SchemaError the eager compile
raises (same text, keyword and path), never one later, and answers exactly as
the eager validator does.  Checked on every schema of the JSON Schema Test Suite
and the Ajv oracle, on hand-written broken schemas, and on seeded mutants of
them all.  Equal schemas share one compiled form; unequal ones never do.
"""

import copy
import json
import random
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import schema_lite  # noqa: E402
from schema_lite import SchemaError, SchemaValidator  # noqa: E402
import schema_report  # noqa: E402
from conftest import shared_path  # noqa: E402


def outcome(schema, lazy, strict=False):
    """(validator, None) or (None, what was raised)."""
    try:
        return SchemaValidator(schema, strict=strict, lazy=lazy), None
    except SchemaError as exc:
        return None, ("SchemaError", str(exc), exc.keyword, exc.schema_path)
    except Exception as exc:  # the eager compile's other exceptions must be the lazy check's too
        return None, (type(exc).__name__, str(exc))


def answers(validator, instances):
    """Everything a validator says about the instances, as JSON text."""
    out = []
    for instance in instances:
        try:
            filled = validator.apply_defaults(instance)
        except SchemaError as exc:   # strict mode refuses defaults Ajv would ignore, when first asked
            filled = "SchemaError: %s" % exc
        out.append([validator.is_valid(instance), validator.issues(instance), filled])
    return json.dumps(out, sort_keys=True, default=repr)


def assert_same(schema, instances, strict=False):
    """Lazy and eager raise alike and answer alike; "refused", "deferred" or "compiled"."""
    lazy, lazy_error = outcome(schema, True, strict)
    eager, eager_error = outcome(schema, False, strict)
    assert lazy_error == eager_error, schema
    if lazy is None:
        return "refused"
    deferred = lazy._check is None
    assert answers(lazy, instances) == answers(eager, instances), schema
    return "deferred" if deferred else "compiled"


# ---------------------------------------------------------------------------
# The corpora
# ---------------------------------------------------------------------------


def corpus():
    return schema_report.schemas_and_instances(str(shared_path("jsonschema-suite").parent))


def nested(levels, leaf):
    schema = leaf
    for _ in range(levels - 1):
        schema = {"items": schema}
    return schema


BROKEN = [
    {"properties": {"a": {"minLength": -1}}},
    {"items": {"type": "strin"}},
    {"anyOf": []},
    {"pattern": "[x"},
    {"properties": {"a": {"pattern": "(?<=a+)b"}}},
    {"patternProperties": {"(": {}}},
    {"properties": {"a": 1}},
    {"required": "a"},
    {"required": [1]},
    {"enum": 5},
    {"type": []},
    {"type": ["string", "string"]},
    {"format": 5},
    {"$id": 5},
    {"multipleOf": 0},
    {"maxLength": 1.5},
    {"maxLength": 10 ** 5000},
    {"uniqueItems": "yes"},
    {"dependentRequired": {"a": [1]}},
    {"dependencies": {"a": 5}},
    {"prefixItems": {}},
    {"not": [1]},
    {"$ref": "#/nope"},
    {"properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"then": {"$ref": "#/nope"}},
    {"if": {"$ref": "#/nope"}},
    {"$defs": {"unused": {"$ref": "#/nope"}}},
    {"$ref": "#"},
    {"allOf": [{"$ref": "#"}]},
    {"$dynamicRef": "#nowhere"},
    {"properties": {"a": {"pattern": "\\p{Script=Greek}"}}},
    nested(31, {"type": "integer"}),
    nested(32, {"minLength": -1}),
    nested(33, {"type": "integer"}),
    nested(34, {"pattern": "["}),
    {"properties": {"a": {"items": {"prefixItems": [{"format": "url"}, {"format": "nope"}]}}}},
    {"properties": {"default": {"default": 1}}, "then": {"properties": {"x": {"default": 2}}}},
]
DEEP = [nested(400, {"type": "integer"}), nested(10000, {"type": "integer"})]
INSTANCES = [None, True, 0, 1.5, "", "x" * 40, [], [1, [2, [3]]], {}, {"a": "b", "default": [1]},
             {"items": {"items": {"a": [[[]]]}}}]


# ---------------------------------------------------------------------------
# Lazy = eager
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("schema", BROKEN + DEEP, ids=range(len(BROKEN + DEEP)))
def test_lazy_raises_what_eager_raises(schema):
    assert_same(schema, INSTANCES)


def test_lazy_equals_eager_on_the_suite_and_the_oracle():
    seen = []
    for schema, instances in corpus():
        seen.append(assert_same(schema, instances))
        assert_same(schema, instances, strict=True)
    assert seen.count("deferred") > 500   # most schemas really were compiled on first use


MUTATION_KEYS = ["type", "minLength", "pattern", "properties", "items", "required", "enum", "format",
                 "$ref", "anyOf", "additionalProperties", "patternProperties", "if", "then", "const",
                 "uniqueItems", "$defs", "dependentRequired", "contains", "multipleOf", "$id", "default"]
MUTATION_VALUES = [None, True, False, -1, 0, 2.5, 10 ** 30, "", "string", "[", "^a+$", "(?<=a+)b", "#",
                   "#/nope", "#/$defs/a", "email", "url", [], ["a"], [1], [{}], [{"type": "integer"}],
                   {}, {"a": {}}, {"a": {"minLength": -1}}, {"a": {"$ref": "#"}}, {"^x": {}}, {"(": {}},
                   {"type": "string", "pattern": "["}, {"items": {"items": {"maxItems": "no"}}}]


def mutants(schema, rng, count):
    """``count`` copies of ``schema``, each with one random keyword set to a random value."""
    for _ in range(count):
        mutant = copy.deepcopy(schema)
        nodes, stack = [], [mutant]
        while stack:
            node = stack.pop()
            if type(node) is dict:
                nodes.append(node)
                stack.extend(node.values())
            elif type(node) is list:
                stack.extend(node)
        if nodes:
            rng.choice(nodes)[rng.choice(MUTATION_KEYS)] = copy.deepcopy(rng.choice(MUTATION_VALUES))
        yield mutant


def test_lazy_equals_eager_on_mutants():
    rng = random.Random(20261204)
    pool = corpus() + [(s, INSTANCES) for s in BROKEN]
    seen = []
    for schema, instances in rng.sample(pool, 600):
        for mutant in mutants(schema, rng, 5):
            seen.append(assert_same(mutant, instances[:3] + INSTANCES[:6]))
    assert len(seen) == 3000
    assert [seen.count(kind) > 50 for kind in ("refused", "deferred", "compiled")] == [True] * 3, [seen.count(k) for k in ("refused", "deferred", "compiled")]


def test_first_use_on_a_deep_stack():
    """A lazily compiled schema of 32 levels compiles on a caller's stack already 500 deep."""
    validator = SchemaValidator(nested(32, {"type": "integer"}), lazy=True)
    assert validator._check is None

    instance = "x"
    for _ in range(31):
        instance = [instance]

    def call_at(depth):
        return call_at(depth - 1) if depth else validator.issues(instance)
    assert call_at(500)[0]["message"] == "must be integer"


def test_what_is_compiled_at_once_even_when_lazy():
    for schema in ({"$ref": "#/$defs/a", "$defs": {"a": {}}}, {"$dynamicAnchor": "a", "items": {"$dynamicRef": "#a"}},
                   nested(33, {})):
        assert SchemaValidator(schema, lazy=True)._check is not None
    assert SchemaValidator({"type": "string"}, strict=True, lazy=True)._check is not None
    assert SchemaValidator(nested(32, {}), lazy=True)._check is None


def test_lazy_builds_the_formats_it_names_at_once(monkeypatch):
    monkeypatch.setattr(schema_lite, "_format_tests", {})
    SchemaValidator({"properties": {"home": {"type": "string", "format": "url"}}}, lazy=True)
    assert list(schema_lite._format_tests) == ["url"]


def test_lazy_first_use_from_many_threads_compiles_once(monkeypatch):
    compiles = []
    real = schema_lite._Compiled.compile
    monkeypatch.setattr(schema_lite._Compiled, "compile", lambda self, c: compiles.append(1) or real(self, c))
    validator = SchemaValidator({"properties": {"n": {"type": "integer"}}, "required": ["n"]}, lazy=True)
    assert compiles == []
    results = []
    barrier = threading.Barrier(8)

    def work(i):
        barrier.wait(10)
        results.append(validator.issues({"n": "x"})[0]["message"])
    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == ["must be integer"] * 8
    assert compiles == [1]


def test_defaults_ignore_then_and_else_without_if():
    """Ajv never fills them, nor resolves their references: neither does apply_defaults."""
    v = SchemaValidator({"then": {"$ref": "#/nope"}, "else": {"properties": {"a": {"default": 1}}}})
    assert v.apply_defaults({}) == {}


# ---------------------------------------------------------------------------
# Sharing
# ---------------------------------------------------------------------------


def test_equal_schemas_share_one_compiled_form():
    shared = {}
    a = SchemaValidator(json.loads('{"type": "object", "properties": {"n": {"minimum": 1}}}'), shared=shared)
    b = SchemaValidator(json.loads('{"type": "object", "properties": {"n": {"minimum": 1}}}'), shared=shared)
    c = SchemaValidator(json.loads('{"type": "object", "properties": {"n": {"minimum": 1}}}'), shared=shared,
                        lazy=True)
    assert a._compiled is b._compiled is c._compiled
    assert b._check is not None and c._check is not None
    assert SchemaValidator(a.schema)._compiled is not a._compiled   # without the dict: compiled anew


def test_lazy_validators_share_the_first_use():
    shared = {}
    a = SchemaValidator({"maxLength": 2}, lazy=True, shared=shared)
    b = SchemaValidator({"maxLength": 2}, lazy=True, shared=shared)
    assert a._check is None and b._check is None
    assert a.is_valid("abc") is False
    assert b._compiled.check is not None and b.is_valid("ab") is True


@pytest.mark.parametrize("other", [
    {"properties": {"n": {"const": 1.0}, "m": {}}},        # 1 and 1.0 read alike in messages, still apart
    {"properties": {"n": {"const": True}, "m": {}}},
    {"properties": {"m": {}, "n": {"const": 1}}},          # key order is issue order
    {"properties": {"n": {"const": 1}, "m": {}}, "title": "x"},
])
def test_schemas_that_differ_do_not_share(other):
    shared = {}
    first = SchemaValidator({"properties": {"n": {"const": 1}, "m": {}}}, shared=shared)
    assert SchemaValidator(other, shared=shared)._compiled is not first._compiled


def test_a_look_alike_is_not_shared():
    class Names(list):
        """A list subclass prints as a list: the repr key matches, the value check does not."""
    shared = {}
    first = SchemaValidator({"required": ["a"]}, shared=shared)
    with pytest.raises(SchemaError, match="must be an array of unique strings"):
        SchemaValidator({"required": Names(["a"])}, shared=shared)
    assert SchemaValidator({"required": ["a"]}, shared=shared)._compiled is first._compiled


def test_strict_and_lax_do_not_share():
    shared = {}
    schema = {"type": "string", "format": "nope"}
    assert SchemaValidator(schema, shared=shared).is_valid("x")
    with pytest.raises(SchemaError, match="unknown format"):
        SchemaValidator(schema, strict=True, shared=shared)


def test_a_schema_changed_after_compiling_is_compiled_again():
    shared = {}
    schema = {"maxLength": 2}
    first = SchemaValidator(schema, shared=shared)
    schema["maxLength"] = 5
    second = SchemaValidator(schema, shared=shared)
    assert second._compiled is not first._compiled
    assert first.is_valid("abc") is False and second.is_valid("abc") is True
    again = SchemaValidator({"maxLength": 2}, shared=shared)   # its key finds the changed one: compared, refused
    assert again._compiled is not first._compiled and again.is_valid("abc") is False


def test_what_references_or_remotes_do_to_sharing():
    shared = {}
    schema = {"$defs": {"n": {"type": "integer"}}, "items": {"$ref": "#/$defs/n"}}
    assert SchemaValidator(schema, shared=shared)._compiled is SchemaValidator(dict(schema), shared=shared)._compiled
    remote = {"http://x/n": {"type": "integer"}}
    with_remotes = [SchemaValidator({"$ref": "http://x/n"}, remotes=remote, shared=shared) for _ in range(2)]
    assert with_remotes[0]._compiled is not with_remotes[1]._compiled   # remotes are not part of the key


@pytest.mark.parametrize("a,b", [
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),     # key order is issue order
    ({"const": 1}, {"const": 1.0}),
    ({"const": 1}, {"const": True}),
    ({"enum": [1]}, {"enum": [1, 2]}),
    ({"enum": [1, 2]}, {"enum": [1]}),
])
def test_equal_means_same_types_same_order_same_length(a, b):
    # The shared dict's key is a hash: a colliding one is told apart by this comparison alone
    assert schema_lite._same(a, b) is False and schema_lite._same(b, a) is False
    assert schema_lite._same(a, copy.deepcopy(a)) is True


def test_a_lazy_validator_keeps_its_checker_after_first_use():
    v = SchemaValidator({"maxLength": 2}, lazy=True)
    assert v._check is None and v.is_valid("abc") is False
    assert v._check is v._compiled.check is not None   # later calls take no lock
