"""schema_lite's capped issue list: ``first_issues(instance, limit)``.

It must list exactly the first ``limit`` issues ``issues()`` lists (Ajv's order,
anyOf/oneOf/contains dropping a passing branch's issues included), count the
rest exactly, and never make them: memory stays bounded for an instance with a
million issues.
"""

import json
import sys
import tracemalloc
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from schema_lite import SchemaValidator  # noqa: E402
import schema_report  # noqa: E402
from conftest import shared_path  # noqa: E402


def corpus():
    return schema_report.validators_and_instances(str(shared_path("jsonschema-suite").parent))


def test_the_first_issues_are_the_issues_first_on_the_suite_and_the_oracle():
    compared = cut = 0
    for schema, validator, instances in corpus():
        for instance in instances:
            every = validator.issues(instance)
            for limit in (0, 1, 2, 3, 100):
                kept, left_out = validator.first_issues(instance, limit)
                assert (kept, left_out) == (every[:limit], max(len(every) - limit, 0)), json.dumps(schema)
                compared += 1
                cut += left_out > 0
    assert compared > 10000 and cut > 1000


@pytest.mark.parametrize("schema, instance", [
    # anyOf: the first branch's issues pass the limit, the second branch passes and drops them all
    ({"anyOf": [{"required": ["a", "b", "c", "d"]}, {"type": "object"}], "required": ["x", "y", "z"]}, {}),
    # oneOf and contains drop their branches' issues the same way
    ({"oneOf": [{"required": ["a", "b", "c"]}, {"required": ["p"]}], "required": ["x", "y"]}, {"p": 1}),
    ({"contains": {"required": ["a", "b", "c"]}, "items": {"required": ["q"]}}, [{}, {}, {"a": 1, "b": 2, "c": 3}]),
    # a failing anyOf keeps its branches' issues, then its own
    ({"anyOf": [{"required": ["a", "b"]}, {"required": ["c", "d"]}], "required": ["x"]}, {}),
])
@pytest.mark.parametrize("limit", [0, 1, 2, 3, 4, 5, 10])
def test_dropped_branches_around_the_limit(schema, instance, limit):
    validator = SchemaValidator(schema)
    every = validator.issues(instance)
    assert validator.first_issues(instance, limit) == (every[:limit], max(len(every) - limit, 0))


def test_600000_issues_in_bounded_memory():
    validator = SchemaValidator({"type": "object", "properties": {"a": {}}, "additionalProperties": False,
                                 "propertyNames": {"maxLength": 3}})
    instance = {"key%d" % i: i for i in range(200000)}
    tracemalloc.start()
    try:
        kept, left_out = validator.first_issues(instance, 10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [issue["keyword"] for issue in kept] == ["maxLength", "propertyNames"] * 5
    assert left_out == 3 * 200000 - 10   # each name's maxLength and propertyNames, then each additional
    assert peak < 8 * 2 ** 20, peak            # a list of the keys (1.6 MB); the issues: ~150 MB


def test_an_instance_too_deep_to_validate():
    validator = SchemaValidator({"items": {"$ref": "#"}})
    deep = []
    for _ in range(10000):
        deep = [deep]
    assert validator.first_issues(deep, 0) == ([], 1)
    kept, left_out = validator.first_issues(deep, 5)
    assert kept == validator.issues(deep) and [i["keyword"] for i in kept] == ["depth"] and left_out == 0
    assert kept == [{"instancePath": "", "schemaPath": "#", "keyword": "depth", "params": {},
                     "message": "instance is nested too deeply to validate"}]
