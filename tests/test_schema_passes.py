"""schema_lite's two ways to answer: a keyword's fast ``passes`` test and its checker.

A checker that only tests its instance also carries the test as ``check.passes``;
a valid instance is answered by the tests alone, the checkers run to write issues.
The two must agree on every value: here every checker with a test, found in the
compiled closures of every schema of the JSON Schema Test Suite and the Ajv oracle,
is run both ways on every value inside every instance of that schema, and on the
same instances made of values of no JSON type (tuples, OrderedDicts, subclasses),
which every keyword must treat the same way.
"""

import functools
import json
import sys
from collections import OrderedDict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import schema_lite  # noqa: E402
from schema_lite import SchemaValidator  # noqa: E402
import schema_report  # noqa: E402
from conftest import shared_path  # noqa: E402


class Text(str):
    pass


class Number(int):
    pass


def not_json(value):
    """The same value built of types json.loads never makes."""
    if type(value) is dict:
        return OrderedDict((k, not_json(v)) for k, v in value.items())
    if type(value) is list:
        return tuple(not_json(v) for v in value)
    if type(value) is str:
        return Text(value)
    if type(value) is int:
        return Number(value)
    return value


def values_in(instance):
    """The instance and every value inside it."""
    out, stack = [], [instance]
    while stack:
        value = stack.pop()
        out.append(value)
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
    return out


def checkers_with_tests(validator):
    """Every checker reachable from a compiled validator that carries a ``passes`` test."""
    validator.is_valid(None)   # compiled now, if it waited for its first use
    found, seen, stack = [], set(), [validator._check]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, functools.partial):
            stack.append(obj.func)
            stack.extend(obj.args)
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif callable(obj) and getattr(obj, "__closure__", None) is not None:
            if hasattr(obj, "passes"):
                found.append(obj)
            for cell in obj.__closure__:
                try:
                    stack.append(cell.cell_contents)
                except ValueError:   # a cell not filled yet
                    pass
    return found


def disagreements(validator, instances):
    """(checker, value) pairs where the test and the checker answer differently.

    Each checker is given every value, also values of types its keyword never sees
    (its group sees to that): where either way raises on one, the pair is skipped.
    """
    schema_lite._tls.scope = []
    out = []
    for check in checkers_with_tests(validator):
        for value in [v for instance in instances for v in values_in(instance)]:
            errors = []
            try:
                expected = bool(check.passes(value))
                answers = (bool(check(value, None, None, None)), bool(check(value, None, errors, None)),
                           not errors)
            except (AttributeError, TypeError, KeyError, IndexError):
                continue   # a value of another type than the keyword's: never given to it
            if answers != (expected,) * 3:
                out.append((check, value, expected, answers))
    return out


def corpus():
    return schema_report.validators_and_instances(str(shared_path("jsonschema-suite").parent))


def test_each_test_agrees_with_its_checker_on_the_suite_and_the_oracle():
    checked = 0
    for schema, validator, instances in corpus():
        both = instances + [not_json(i) for i in instances]
        assert disagreements(validator, both) == [], json.dumps(schema)[:300]
        checked += len(checkers_with_tests(validator))
    assert checked > 1000


def test_values_of_no_json_type_are_answered_alike_everywhere():
    """is_valid, issues and the tests give one answer for tuples, OrderedDicts and subclasses."""
    for schema, validator, instances in corpus():
        for instance in instances:
            other = not_json(instance)
            issues = validator.issues(other)
            assert validator.is_valid(other) == (issues == []), json.dumps(schema)[:300]
            json.dumps(issues)


@pytest.mark.parametrize("schema, instance, valid", [
    ({"type": "array", "maxItems": 1}, (1, 2, 3), False),    # a tuple is not an array: "must be array"
    ({"maxItems": 1}, (1, 2, 3), True),                      # nor do array keywords apply to it
    ({"type": "object", "required": ["a"]}, OrderedDict(), False),
    ({"required": ["a"]}, OrderedDict(), True),              # an OrderedDict is not an object
    ({"type": "string"}, Text("x"), False),
    ({"type": "integer"}, Number(1), False),
    ({"type": ["string", "array"]}, (1,), False),
    ({"enum": [[1]]}, (1,), False),
    ({"const": {"a": 1}}, OrderedDict(a=1), False),
    ({"uniqueItems": True}, [OrderedDict(), OrderedDict()], True),   # equal to nothing but itself
    ({"uniqueItems": True}, [tuple([1]), tuple([1])], True),
])
def test_values_of_no_json_type(schema, instance, valid):
    validator = SchemaValidator(schema)
    assert validator.is_valid(instance) is valid
    assert (validator.issues(instance) == []) is valid
