"""schema_lite on its own: every keyword's issue (message, params, paths), defaults,
strict mode, ECMAScript regex semantics and hostile input.

The expected issues are Ajv 8's answers (allErrors, allowUnionTypes, ajv-formats).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import schema_lite  # noqa: E402
from schema_lite import SchemaError, SchemaValidator, apply_defaults, check_schema  # noqa: E402


def one(schema, instance):
    """The single issue schema_lite reports (the test fails if there is not exactly one)."""
    issues = SchemaValidator(schema).issues(instance)
    assert len(issues) == 1, issues
    assert SchemaValidator(schema).is_valid(instance) is False
    return issues[0]


# ---------------------------------------------------------------------------
# Every keyword: (schema, failing instance, instancePath, schemaPath, keyword, params, message)
# ---------------------------------------------------------------------------

KEYWORD_CASES = [
    ({"type": "string"}, 1, "", "#/type", "type", {"type": "string"}, "must be string"),
    ({"type": ["string", "null"]}, 1, "", "#/type", "type", {"type": ["string", "null"]}, "must be string,null"),
    ({"type": "integer"}, 1.5, "", "#/type", "type", {"type": "integer"}, "must be integer"),
    ({"type": "number"}, True, "", "#/type", "type", {"type": "number"}, "must be number"),
    ({"type": "string", "nullable": True}, 5, "", "#/type", "type", {"type": "string"}, "must be string"),
    # Ajv 8.20.0 adds nullable's "null" to a type array (in place), and names it: it was left out
    ({"type": ["string", "object"], "nullable": True}, [2], "", "#/type", "type",
     {"type": ["string", "object", "null"]}, "must be string,object,null"),
    ({"enum": ["a", 1]}, "b", "", "#/enum", "enum", {"allowedValues": ["a", 1]},
     "must be equal to one of the allowed values"),
    ({"const": {"a": [1]}}, {"a": [2]}, "", "#/const", "const", {"allowedValue": {"a": [1]}},
     "must be equal to constant"),
    ({"multipleOf": 0.01}, 19.99, "", "#/multipleOf", "multipleOf", {"multipleOf": 0.01}, "must be multiple of 0.01"),
    ({"maximum": 5}, 6, "", "#/maximum", "maximum", {"comparison": "<=", "limit": 5}, "must be <= 5"),
    ({"minimum": 1.5}, 1, "", "#/minimum", "minimum", {"comparison": ">=", "limit": 1.5}, "must be >= 1.5"),
    ({"exclusiveMaximum": 5}, 5, "", "#/exclusiveMaximum", "exclusiveMaximum", {"comparison": "<", "limit": 5},
     "must be < 5"),
    ({"exclusiveMinimum": 0}, 0, "", "#/exclusiveMinimum", "exclusiveMinimum", {"comparison": ">", "limit": 0},
     "must be > 0"),
    ({"maxLength": 2}, "abc", "", "#/maxLength", "maxLength", {"limit": 2}, "must NOT have more than 2 characters"),
    ({"minLength": 2}, "\U0001F600", "", "#/minLength", "minLength", {"limit": 2},
     "must NOT have fewer than 2 characters"),
    ({"pattern": "^[0-9]{5}$"}, "12345\n", "", "#/pattern", "pattern", {"pattern": "^[0-9]{5}$"},
     'must match pattern "^[0-9]{5}$"'),
    ({"format": "email"}, "nobody", "", "#/format", "format", {"format": "email"}, 'must match format "email"'),
    ({"format": "int32"}, 2 ** 31, "", "#/format", "format", {"format": "int32"}, 'must match format "int32"'),
    ({"maxItems": 1}, [1, 2], "", "#/maxItems", "maxItems", {"limit": 1}, "must NOT have more than 1 items"),
    ({"minItems": 3}, [1, 2], "", "#/minItems", "minItems", {"limit": 3}, "must NOT have fewer than 3 items"),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], "", "#/uniqueItems", "uniqueItems", {"i": 1, "j": 0},
     "must NOT have duplicate items (items ## 0 and 1 are identical)"),
    ({"items": {"type": "string"}, "uniqueItems": True}, ["a", "b", "a"], "", "#/uniqueItems", "uniqueItems",
     {"i": 0, "j": 2}, "must NOT have duplicate items (items ## 2 and 0 are identical)"),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, "", "#/maxProperties", "maxProperties", {"limit": 1},
     "must NOT have more than 1 properties"),
    ({"minProperties": 1}, {}, "", "#/minProperties", "minProperties", {"limit": 1},
     "must NOT have fewer than 1 properties"),
    ({"required": ["a"]}, {}, "", "#/required", "required", {"missingProperty": "a"},
     "must have required property 'a'"),
    ({"dependentRequired": {"a": ["b", "c"]}}, {"a": 1, "c": 1}, "", "#/dependentRequired", "dependentRequired",
     {"property": "a", "missingProperty": "b", "depsCount": 2, "deps": "b, c"},
     "must have properties b, c when property a is present"),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, "", "#/dependentSchemas/a/required", "required",
     {"missingProperty": "b"}, "must have required property 'b'"),
    ({"properties": {"a/b": {"type": "string"}}}, {"a/b": 1}, "/a~1b", "#/properties/a~1b/type", "type",
     {"type": "string"}, "must be string"),
    ({"properties": {"with space": False}}, {"with space": 1}, "/with space",
     "#/properties/with%20space/false schema", "false schema", {}, "boolean schema is false"),
    ({"patternProperties": {"^x-": {"type": "string"}}}, {"x-a": 1}, "/x-a", "#/patternProperties/%5Ex-/type",
     "type", {"type": "string"}, "must be string"),
    ({"additionalProperties": False}, {"a": 1}, "", "#/additionalProperties", "additionalProperties",
     {"additionalProperty": "a"}, "must NOT have additional properties"),
    ({"additionalProperties": {"type": "integer"}}, {"a": "x"}, "/a", "#/additionalProperties/type", "type",
     {"type": "integer"}, "must be integer"),
    ({"items": {"type": "integer"}}, [1, "x"], "/1", "#/items/type", "type", {"type": "integer"},
     "must be integer"),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], "", "#/items", "items", {"limit": 1},
     "must NOT have more than 1 items"),
    ({"prefixItems": [{"type": "integer"}]}, ["x"], "/0", "#/prefixItems/0/type", "type", {"type": "integer"},
     "must be integer"),
    ({"contains": {"const": 1}, "minContains": 2, "maxContains": 3}, [1, 1, 1, 1], "", "#/contains", "contains",
     {"minContains": 2, "maxContains": 3}, "must contain at least 2 and no more than 3 valid item(s)"),
    ({"unevaluatedItems": False, "prefixItems": [True]}, [1, 2], "", "#/unevaluatedItems", "unevaluatedItems",
     {"limit": 1}, "must NOT have more than 1 items"),
    ({"unevaluatedProperties": False, "allOf": [{"properties": {"a": True}}]}, {"a": 1, "b": 2}, "",
     "#/unevaluatedProperties", "unevaluatedProperties", {"unevaluatedProperty": "b"},
     "must NOT have unevaluated properties"),
    ({"not": {"type": "string"}}, "x", "", "#/not", "not", {}, "must NOT be valid"),
    ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 5, "", "#/oneOf", "oneOf", {"passingSchemas": [0, 1]},
     "must match exactly one schema in oneOf"),
    ({"allOf": [{"type": "string"}]}, 1, "", "#/allOf/0/type", "type", {"type": "string"}, "must be string"),
    ({"$defs": {"s": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/s"}}}, {"a": 1}, "/a",
     "#/$defs/s/type", "type", {"type": "string"}, "must be string"),
    (False, 1, "", "#/false schema", "false schema", {}, "boolean schema is false"),
]


@pytest.mark.parametrize("schema,instance,ipath,spath,keyword,params,message", KEYWORD_CASES,
                         ids=[str(i) + "-" + (c[4]) for i, c in enumerate(KEYWORD_CASES)])
def test_keyword_issue(schema, instance, ipath, spath, keyword, params, message):
    issue = one(schema, instance)
    assert issue == {"instancePath": ipath, "schemaPath": spath, "keyword": keyword, "params": params,
                     "message": message}
    assert list(issue) == ["instancePath", "schemaPath", "keyword", "params", "message"]


def test_any_of_keeps_branch_issues_then_its_own():
    issues = SchemaValidator({"anyOf": [{"type": "string"}, {"type": "null"}]}).issues(1)
    assert [i["schemaPath"] for i in issues] == ["#/anyOf/0/type", "#/anyOf/1/type", "#/anyOf"]
    assert issues[-1]["message"] == "must match a schema in anyOf" and issues[-1]["params"] == {}


def test_if_then_reports_then_issues_and_the_if_issue():
    schema = {"if": {"properties": {"c": {"const": "US"}}}, "then": {"required": ["state"]},
              "else": {"required": ["zip"]}}
    issues = SchemaValidator(schema).issues({"c": "US"})
    assert issues[0]["schemaPath"] == "#/then/required"
    assert issues[1] == {"instancePath": "", "schemaPath": "#/if", "keyword": "if",
                         "params": {"failingKeyword": "then"}, "message": 'must match "then" schema'}
    assert SchemaValidator(schema).issues({"c": "CA"})[1]["params"] == {"failingKeyword": "else"}


def test_property_names_adds_property_name():
    issues = SchemaValidator({"propertyNames": {"maxLength": 2}}).issues({"abc": 1})
    assert issues == [
        {"instancePath": "", "schemaPath": "#/propertyNames/maxLength", "keyword": "maxLength",
         "params": {"limit": 2}, "message": "must NOT have more than 2 characters", "propertyName": "abc"},
        {"instancePath": "", "schemaPath": "#/propertyNames", "keyword": "propertyNames",
         "params": {"propertyName": "abc"}, "message": "property name must be valid"},
    ]


def test_contains_reports_item_issues_only_when_it_fails():
    v = SchemaValidator({"contains": {"type": "integer"}})
    assert v.issues(["a", 1]) == []
    assert [i["instancePath"] for i in v.issues(["a", "b"])] == ["/0", "/1", ""]


def test_ajv_order_type_after_enum_when_type_has_rules():
    schema = {"type": "string", "enum": ["a"], "minLength": 1}
    assert [i["keyword"] for i in SchemaValidator(schema).issues(5)] == ["enum", "type"]
    assert [i["keyword"] for i in SchemaValidator({"type": "string", "enum": ["a"]}).issues(5)] == ["type", "enum"]
    schema = {"type": "integer", "minimum": 3, "multipleOf": 5}
    assert [i["keyword"] for i in SchemaValidator(schema).issues(2.5)] == ["type", "minimum", "multipleOf"]


def test_keywords_that_test_the_instance_report_in_ajv_order():
    v = SchemaValidator({"type": "string", "maxLength": 1, "minLength": 3, "pattern": "^a", "enum": ["a", "bb"]})
    assert v.is_valid("bb") is False
    assert [i["keyword"] for i in v.issues("bb")] == ["maxLength", "minLength", "pattern"]
    assert [i["keyword"] for i in v.issues(7)] == ["enum", "type"]
    assert SchemaValidator({"type": "string", "maxLength": 3, "minLength": 1}).issues("ab") == []


def test_object_keys_in_javascript_order():
    issues = SchemaValidator({"additionalProperties": False}).issues({"b": 1, "10": 1, "a": 1, "2": 1})
    assert [i["params"]["additionalProperty"] for i in issues] == ["2", "10", "b", "a"]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_lone_surrogate_in_a_schema_key_is_written_into_the_schema_path(lazy):
    # JSON can write a lone surrogate ("\\ud800"), which has no UTF-8 form: encoding the key
    # for the schema path raised, at the compile (the service's boot: a traceback) or, for a
    # schema compiled at first use, at every call (a 500).  The official service validates it.
    for with_ref in (False, True):   # a $ref: the schema is compiled at once, lazy or not
        schema = {"$defs": {"s": {"type": "string"}}, "properties": {"\ud800": {"type": "string"}},
                  "patternProperties": {"^x\udfff": {"type": "integer"}}}
        if with_ref:
            schema["properties"]["a/\udc00~"] = {"$ref": "#/$defs/s"}
        v = SchemaValidator(schema, lazy=lazy)
        issues = v.issues({"\ud800": 1, "a/\udc00~": 2, "x\udfff": "y"})
        assert [(i["instancePath"], i["schemaPath"]) for i in issues] == [
            ("/\ud800", "#/properties/%ED%A0%80/type")] + [
            ("/a~1\udc00~0", "#/$defs/s/type")] * with_ref + [
            ("/x\udfff", "#/patternProperties/%5Ex%ED%BF%BF/type")]
        json.dumps(issues)


def test_recursive_ref_paths_restart_at_the_called_schema():
    schema = {"$ref": "#/$defs/node", "$defs": {"node": {
        "type": "object", "properties": {"name": {"type": "string"}, "kids": {"items": {"$ref": "#/$defs/node"}}}}}}
    issues = SchemaValidator(schema).issues({"name": "r", "kids": [{"name": 5}]})
    assert issues == [{"instancePath": "/kids/0/name", "schemaPath": "#/properties/name/type", "keyword": "type",
                       "params": {"type": "string"}, "message": "must be string"}]


ITEM = {"type": "object", "required": ["sku", "qty"], "additionalProperties": False,
        "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}$"},
                       "qty": {"type": "integer", "minimum": 1, "maximum": 9}}}
ORDER = {"type": "object", "required": ["items"], "properties": {
    "items": {"type": "array", "prefixItems": [{"const": "head"}], "items": ITEM, "uniqueItems": True}}}
PATTERNED = {"required": ["x1"], "additionalProperties": False, "patternProperties": {"^x": {"type": "string"}}}


@pytest.mark.parametrize("schema,instance,issue_at", [
    (ORDER, {"items": ["head", {"sku": "ABC", "qty": 1}, {"sku": "ABD", "qty": 9}]}, None),
    (ORDER, {"items": ["head", {"sku": "ABC", "qty": 1}, {"qty": 9}]}, "/items/2"),
    (ORDER, {"items": ["head", {"sku": "ABC", "qty": 1}, {"sku": "ABD", "qty": 9, "x": 0}]}, "/items/2"),
    (ORDER, {"items": ["head", {"sku": "ABC", "qty": 1}, {"sku": "ABD", "qty": 10}]}, "/items/2/qty"),
    (ORDER, {"items": ["head", {"sku": "ABC", "qty": 1}, {"qty": 1, "sku": "ABC"}]}, "/items"),
    (ORDER, {"items": ["tail", {"sku": "ABC", "qty": 1}]}, "/items/0"),
    (ORDER, {"items": [{"sku": "ABC", "qty": 1}]}, "/items/0"),
    ({"allOf": [{"required": ["a"], "properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False},
     {"a": 1}, None),
    ({"allOf": [{"required": ["a"], "properties": {"a": {"type": "integer"}}}], "unevaluatedProperties": False},
     {"a": 1, "b": 2}, ""),
    ({"allOf": [{"minItems": 1, "items": {"required": ["a"]}}], "unevaluatedItems": False}, [{"a": 1}], None),
    (PATTERNED, {"x1": "s"}, None),
    (PATTERNED, {"x1": "s", "y": 1}, ""),
    (PATTERNED, {"x1": 1}, "/x1"),
])
def test_whole_objects_and_arrays_as_one_test(schema, instance, issue_at):
    """Objects and arrays whose keywords only test the instance are validated as one test
    (is_valid's quick path); issues() and is_valid() still agree, member by member."""
    v = SchemaValidator(schema)
    issues = v.issues(instance)
    assert v.is_valid(instance) is (issue_at is None)
    assert [i["instancePath"] for i in issues][:1] == ([] if issue_at is None else [issue_at])


# ---------------------------------------------------------------------------
# JSON semantics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("schema,instance,valid", [
    ({"const": 1}, 1.0, True),
    ({"const": 1}, True, False),
    ({"const": False}, 0, False),
    ({"enum": [{"a": 1, "b": [1]}]}, {"b": [1.0], "a": 1}, True),
    ({"enum": [[1, 2]]}, [2, 1], False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"uniqueItems": True}, [[0], [False]], True),
    ({"uniqueItems": True}, [{"a": 1}, {"a": True}], True),
    ({"uniqueItems": True}, [{"a": 1, "b": "x"}, {"b": "x", "a": 1.0}], False),
    ({"uniqueItems": True}, [{"a": [1]}, {"a": [1.0]}], False),
    ({"type": "integer"}, 1.0, True),
    ({"type": "integer"}, True, False),
    ({"type": "number"}, None, False),
    ({"maxLength": 1}, "\U0001F600", True),
    ({"multipleOf": 0.01}, 0.3, True),
    ({"multipleOf": 3}, 10 ** 30, False),
    ({"type": "string", "format": "not-a-known-format"}, 1, False),
    ({"maxContains": 2}, [1, 1, 1], True),
    ({"$comment": "only a comment"}, 1, True),
    ({"type": "object", "properties": {"a": True}, "additionalProperties": True}, {"b": 1}, True),
])
def test_json_semantics(schema, instance, valid):
    assert SchemaValidator(schema).is_valid(instance) is valid
    assert (SchemaValidator(schema).issues(instance) == []) is valid


@pytest.mark.parametrize("pattern,text,found", [
    ("^a$", "a\n", False),
    ("^\\d+$", "\u0661\u0662", False),
    ("^\\w+$", "\u00e9", False),
    ("^\\s$", "\ufeff", True),
    ("^\\s$", "\x1c", False),
    ("^.$", "\r", False),
    ("^\\p{L}+$", "h\u00e9llo", True),
    ("^\\p{Lu}", "a", False),
    ("[^]", "\n", True),
    ("^[\\d-]+$", "1-2", True),
    ("\\u{1F600}", "\U0001F600", True),
    ("^(?<y>[0-9]{4})-\\k<y>$", "2024-2024", True),
    ("\\bx", "\u00e9x", True),
    ("^\\B$", "", True),   # Python's \B never matches in an empty string
    ("\\B", "", True),
    ("^\\B", " ", True),
    ("\\B", "a", False),
    ("(?<=\\B)a", "ba", True),
    (".", "\u2028", False),   # "." matches no line terminator: \n, \r, U+2028, U+2029
    ("^\\w$", "_", True),
    ("^[\\b]$", "\x08", True),   # in a class, \b is backspace
    ("^\\P{L}$", "1", True),
    ("^\\P{L}$", "a", False),
    ("^\\ca$", "\x01", True),
    ("^(?<$a>x)(?<_a>y)$", "xy", True),   # "$" in a group name must not collide with another name
    # \p{White_Space} was refused as an unknown property; Ajv 8.20.0 (V8) gives these answers
    ("^\\p{White_Space}+$", "\x85\u00a0\u3000\t", True),
    ("^\\p{White_Space}$", "\ufeff", False),   # unlike \s
    ("^\\p{space}$", "\x1c", False),
    ("^\\P{WSpace}$", "a", True),
    # a pattern with two named groups and a \k<name> was refused ("Invalid named capture referenced")
    ("^(?<y>\\d{4})-(?<m>\\d{2})/\\k<m>$", "2024-05/05", True),   # Ajv 8.20.0: valid
    ("^(?<y>\\d{4})-(?<m>\\d{2})/\\k<m>$", "2024-05/06", False),   # Ajv 8.20.0: invalid
    ("^(?<a>x)(?<b>y)\\k<a>\\k<b>$", "xyxy", True),   # Ajv 8.20.0: valid
    # a reference to a group that took no part in the match matches "" (Python's fails): Ajv 8.20.0 gives
    ("^(?:(a)|b)\\1$", "b", True),
    ("^(?:(a)|b)\\1$", "aa", True),
    ("^(?:(a)|b)\\1$", "a", False),
    ("^(a)?\\1$", "", True),
    ("^(?:(?<n>a)|b)\\k<n>c$", "bc", True),
    # ECMAScript's digits are ASCII: "\u0661" after \1 or \0 is a character (Python's isdigit()
    # took it into the number: a schema error, a RuntimeError on 3.6, a warning on 3.11)
    ("^(a)\\1\u0661$", "aa\u0661", True),
    ("^\\0\u0661$", "\x00\u0661", True),
    ("^(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)\\1\uff11$", "abcdefghijka\uff11", True),
])
def test_ecmascript_regex(pattern, text, found):
    assert SchemaValidator({"pattern": pattern}).is_valid(text) is found


@pytest.mark.parametrize("pattern", ["[unclosed", "(", "a{2,1}", "\\p{NotAProperty}", "\\q", "a**", "x{"])
def test_bad_pattern_is_schema_error(pattern):
    with pytest.raises(SchemaError) as info:
        SchemaValidator({"type": "string", "pattern": pattern})
    assert "pattern" in str(info.value) and "#/pattern" in str(info.value)


@pytest.mark.parametrize("pattern,reason", [
    ("\\u{110000}", "Invalid Unicode escape"), ("a{3,2}", "numbers out of order in {} quantifier"),
    ("[b-a]", "Range out of order in character class"), ("a???", "Nothing to repeat"),
])
def test_bad_pattern_gives_ecmascript_reason(pattern, reason):
    # ECMAScript's own words, not a Python re error (which would also refuse some of them)
    with pytest.raises(SchemaError, match="Invalid regular expression: /.*/u: %s$" % re.escape(reason)):
        SchemaValidator({"type": "string", "pattern": pattern})


@pytest.mark.parametrize("pattern,reason", [
    ("a++", "Nothing to repeat"), ("a*+", "Nothing to repeat"), ("a{2}+", "Nothing to repeat"),
    ("a??+", "Nothing to repeat"), ("a+?*", "Nothing to repeat"), ("^*", "Nothing to repeat"), ("$?", "Nothing to repeat"),
    ("\\b+", "Nothing to repeat"), ("\\B*", "Nothing to repeat"), ("|*", "Nothing to repeat"), ("(*)", "Nothing to repeat"),
    ("(?=a)*", "Invalid quantifier"), ("(?!a){2}", "Invalid quantifier"), ("(?<=a)+", "Invalid quantifier"),
])
def test_a_quantifier_must_follow_what_it_can_repeat(pattern, reason):
    # ECMAScript's refusals; Python 3.11+ took "a++" as possessive, and every version repeated lookarounds
    with pytest.raises(SchemaError, match="Invalid regular expression: /.*/u: %s" % reason):
        SchemaValidator({"type": "string", "pattern": pattern})
    assert SchemaValidator({"format": "regex"}).is_valid(pattern) is pattern.startswith(("(?=", "(?!"))   # Annex B


@pytest.mark.parametrize("pattern,reason", [
    ("(?<x>b)\\k<n>", "Invalid named capture referenced"), ("\\k<n>(?<x>b)", "Invalid named capture referenced"),
    ("(?<x>b)(?<x>b)", "Duplicate capture group name"), ("(?<x>a)|(?<x>b)", "Duplicate capture group name"),
])
def test_named_groups_are_checked_as_ecmascript_checks_them(pattern, reason):
    # The "regex" format only translates its string: these passed it, where ECMAScript refuses them
    assert SchemaValidator({"format": "regex"}).is_valid(pattern) is False
    with pytest.raises(SchemaError, match=reason):
        SchemaValidator({"type": "string", "pattern": pattern})


@pytest.mark.parametrize("pattern,reason", [
    ("\\1", "Invalid escape"), ("(a)\\2", "Invalid escape"), ("(a)\\10", "Invalid escape"),
    ("\\/\\\\\\1", "Invalid escape"), ("[(]\\1", "Invalid escape"), ("(?:a)\\1", "Invalid escape"),
    ("\\(a\\)\\1", "Invalid escape"),
    # what Python can't express, in the same words on every Python (no position in the translated text)
    ("\\1(a)", "cannot be translated to Python: invalid group reference 1"),
    ("\\p{L}(a\\1)", "cannot be translated to Python: cannot refer to an open group"),
    ("\\k<n>(?<n>a)", "cannot be translated to Python: unknown group name 'n'"),
])
def test_references_are_refused_in_the_same_words_on_every_python(pattern, reason):
    # V8 refuses a reference past the pattern's last group; the others it takes, Python can't
    with pytest.raises(SchemaError, match="Invalid regular expression: /.*/u: %s$" % re.escape(reason)):
        SchemaValidator({"type": "string", "pattern": pattern})


@pytest.mark.parametrize("pattern,text", [("^(?<n>a)\\1$", "aa"), ("^(?=(a))\\1a$", "aa"), ("^[\\]](a)\\1$", "]aa")])
def test_references_to_groups_ecmascript_counts(pattern, text):
    assert SchemaValidator({"type": "string", "pattern": pattern}).is_valid(text)


@pytest.mark.parametrize("pattern,text", [("^a+?$", "aa"), ("^(?:ab){1,2}?$", "abab"), ("^(a)*\\1$", "aa"),
                                          ("^a{2}?$", "aa"), ("^[a]*(?=b)b+$", "ab"), ("^a{$", "a{")])
def test_quantifiers_ecmascript_takes(pattern, text):
    v = SchemaValidator({"type": "string", "pattern": pattern}) if pattern != "^a{$" else None
    assert v is None or v.is_valid(text)
    assert SchemaValidator({"format": "regex"}).is_valid(pattern)


@pytest.mark.parametrize("opener", ["(", "(?:", "(?=", "(?<!", "(?<n>"])
def test_groups_nested_past_256_are_refused_alike_on_every_python(opener):
    # Python's re recursed out of its stack at about 485 to 491 levels, by version and caller,
    # with the RecursionError's text, which differs between versions
    inner = "(?:" * 255 + "a" + ")" * 255
    assert SchemaValidator({"pattern": opener + inner + ")"}).is_valid("a")
    for depth in (257, 490, 5000):
        with pytest.raises(SchemaError, match="/u: cannot be translated to Python: groups nested more than 256 deep$"):
            SchemaValidator({"pattern": opener + "(?:" * (depth - 1) + "a" + ")" * depth})
    assert SchemaValidator({"format": "regex"}).is_valid(opener + "(?:" * 999 + "a" + ")" * 1000)   # only translated


@pytest.mark.parametrize("pattern,text,found", [
    ("^a{0,4294967294}$", "aaa", True), ("^a{00,0002}$", "aa", True), ("^a{0002,}$", "a", False),
])
def test_quantifier_numbers_with_leading_zeros(pattern, text, found):
    assert SchemaValidator({"type": "string", "pattern": pattern}).is_valid(text) is found


@pytest.mark.parametrize("pattern", ["a{4294967295}", "a{0,99999999999}", "a{1,%s}" % ("9" * 5000), "a{%s}" % ("9" * 5000),
                                     "a{%s,}" % ("0" * 5000 + "9" * 11)])
def test_quantifier_numbers_python_cannot_take_are_refused_alike(pattern):
    # Past 4294967294 Python's re refuses a count; 5,000 digits gave Python 3.7.14+'s int() limit
    # instead ("Exceeds the limit (4300 digits)..."), where 3.6 refused it in re's words
    with pytest.raises(SchemaError, match="/u: cannot be translated to Python: the repetition number is too large$"):
        SchemaValidator({"pattern": pattern})
    assert SchemaValidator({"format": "regex"}).is_valid(pattern)   # ECMAScript takes it
    with pytest.raises(SchemaError, match="numbers out of order in {} quantifier$"):
        SchemaValidator({"pattern": "a{%s,1}" % ("9" * 5000)})


@pytest.mark.parametrize("fmt,text", [("uri", "\u017f:x"), ("uri", "http://\u212a.com"), ("uri", "a:\u0130"),
                                      ("uri-reference", "\u0131"), ("uri-reference", "/\u212a")])
def test_uri_formats_ignore_case_in_ascii_only(fmt, text):
    # Ajv 8.20.0 (ajv-formats' /i, no u flag) refuses each; Python's Unicode case folding took them
    assert SchemaValidator({"format": fmt}).is_valid(text) is False
    assert SchemaValidator({"format": fmt}).is_valid(text.encode("ascii", "replace").decode().replace("?", "K"))


@pytest.mark.parametrize("fmt,good,bad", [
    ("date", "2024-02-29", "2023-02-29"),
    ("time", "10:20:30Z", "10:20:30"),
    ("date-time", "2024-02-29 10:00:00+01:00", "2024-02-29T10:00:00"),
    ("email", "a@example.com", "a@b"),
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    ("uri", "https://x.y/z?q#f", "x y"),
    ("uri-reference", "../a#b", "\\\\"),
    ("hostname", "example.com", "-bad-.com"),
    ("ipv4", "192.168.0.1", "256.1.1.1"),
    ("ipv6", "::1", "12345::"),
    ("duration", "P1DT2H", "P"),
    ("json-pointer", "/a~1b", "a"),
    ("relative-json-pointer", "0/a", "-1"),
    ("regex", "^a(?<=a)", "(("),
    ("uri-template", "/x/{id}", "/x/{id"),
    ("byte", "aGk=", "a"),
])
def test_formats(fmt, good, bad):
    v = SchemaValidator({"format": fmt})
    assert v.is_valid(good) and not v.is_valid(bad)


@pytest.mark.parametrize("fmt,good,bad", [
    ("date", "2000-02-29", "1900-02-29"),        # a century is a leap year only when divisible by 400
    ("date", "2024-01-01", "2024-01-00"),
    ("time", "23:59:60Z", "10:00:60Z"),          # a leap second only at 23:59:60 UTC
    ("time", "10:00:00+23:59", "10:00:00+24:00"),
    ("hostname", ("a" * 63 + ".") * 3 + "a" * 61, ("a" * 63 + ".") * 3 + "a" * 62),   # 253 characters at most
    ("email", "k@example.com", "\u212a@example.com"),   # KELVIN SIGN: no ASCII letter, though Python's re.I folds it to "k"
    ("hostname", "s.com", "\u017f.com"),          # LATIN SMALL LETTER LONG S folds to "s" likewise
    ("regex", "a\\z", "a\\Z"),                   # ajv-formats refuses a pattern with \Z in it
    ("byte", "!!\naGk=", "!!\n??"),               # tested line by line: one well-formed line is enough
])
def test_format_edges(fmt, good, bad):
    v = SchemaValidator({"format": fmt})
    assert v.is_valid(good) and not v.is_valid(bad)
    assert v.is_valid(5)


def test_formats_are_built_when_a_schema_first_uses_them(monkeypatch):
    import subprocess
    fresh = subprocess.run([sys.executable, "-c", "import schema_lite; print(len(schema_lite._format_tests))"],
                           cwd=str(Path(__file__).resolve().parents[1]), capture_output=True, text=True,
                           timeout=60)
    assert fresh.stdout.strip() == "0"
    monkeypatch.setattr(schema_lite, "_format_tests", {})
    built = []

    def compile_one():
        built.append(SchemaValidator({"format": "url"}))

    import threading
    threads = [threading.Thread(target=compile_one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert list(schema_lite._format_tests) == ["url"]
    assert all(v.is_valid("https://example.com/") and not v.is_valid("nope") for v in built)


def test_unknown_format_is_an_annotation_unless_strict():
    assert SchemaValidator({"format": "idn-email"}).is_valid("anything")
    with pytest.raises(SchemaError, match='unknown format "idn-email"'):
        SchemaValidator({"type": "string", "format": "idn-email"}, strict=True)


# ---------------------------------------------------------------------------
# Defaults
# ---------------------------------------------------------------------------


def test_defaults_nested_and_never_mutating():
    schema = {"type": "object", "properties": {
        "limit": {"type": "integer", "default": 10},
        "options": {"type": "object", "default": {}, "properties": {"loud": {"type": "boolean", "default": False}}},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"w": {"default": 1}}}},
    }}
    given = {"tags": [{}, {"w": 2}]}
    snapshot = json.dumps(given)
    out = apply_defaults(schema, given)
    assert out == {"tags": [{"w": 1}, {"w": 2}], "limit": 10, "options": {"loud": False}}
    assert json.dumps(given) == snapshot
    out["options"]["loud"] = True
    assert apply_defaults(schema, {})["options"] == {"loud": False}


def test_defaults_in_place_fill_the_instance_itself_with_copies_of_the_defaults():
    schema = {"type": "object", "properties": {
        "options": {"type": "object", "default": {}, "properties": {"loud": {"type": "boolean", "default": False}}},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"w": {"default": 1}}}},
    }}
    v = SchemaValidator(schema)
    given = {"tags": [{}, {"w": 2}]}
    first_tag = given["tags"][0]
    assert v.apply_defaults(given, in_place=True) is given
    assert given == {"tags": [{"w": 1}, {"w": 2}], "options": {"loud": False}} and first_tag == {"w": 1}
    given["options"]["loud"] = True
    assert v.apply_defaults({}, in_place=True)["options"] == {"loud": False}


def test_defaults_follow_ajv_rules():
    schema = {
        "type": "object",
        "$defs": {"lang": {"type": "string", "default": "en"},
                  "money": {"type": "object", "properties": {"cur": {"default": "USD"}}}},
        "properties": {
            "lang": {"$ref": "#/$defs/lang"},
            "debug": {"$ref": "#/$defs/lang", "default": "x"},
            "price": {"$ref": "#/$defs/money"},
            "mode": {"enum": ["fast", "safe"]},
            "pick": {"anyOf": [{"type": "object", "properties": {"z": {"default": 1}}}]},
        },
        "allOf": [{"properties": {"a": {"default": "A"}}}],
        "if": {"properties": {"mode": {"const": "safe"}}, "required": ["mode"]},
        "then": {"properties": {"retries": {"default": 5}}},
        "else": {"properties": {"retries": {"default": 0}}},
        "additionalProperties": {"type": "object", "properties": {"n": {"default": 0}}},
    }
    v = SchemaValidator(schema)
    out = v.apply_defaults({"mode": "safe", "price": {}, "pick": {}, "extra": {}})
    assert out == {"mode": "safe", "price": {"cur": "USD"}, "pick": {}, "extra": {"n": 0},
                   "a": "A", "retries": 5, "debug": "x"}
    assert v.apply_defaults({})["retries"] == 0


def test_strict_refuses_defaults_ajv_would_ignore():
    schema = {"type": "object", "properties": {"a": {}}, "anyOf": [{"properties": {"a": {"type": "string",
                                                                                          "default": "x"}}}]}
    with pytest.raises(SchemaError, match="default is ignored"):
        SchemaValidator(schema, strict=True).apply_defaults({})
    assert SchemaValidator(schema).apply_defaults({}) == {}


@pytest.mark.parametrize("schema", [
    {"type": "object", "default": {}},
    {"type": "array", "contains": {"type": "object", "properties": {"a": {"default": 1}}}},
    {"type": "object", "if": {"type": "object", "minProperties": 1},
     "then": {"anyOf": [{"type": "object", "properties": {"a": {"default": 1}}}]}},
    {"type": "object", "if": {"type": "object", "minProperties": 1},
     "else": {"anyOf": [{"type": "object", "properties": {"a": {"default": 1}}}]}},
])
def test_strict_refuses_a_root_default_and_defaults_under_contains_or_in_then_else(schema):
    with pytest.raises(SchemaError, match="default is ignored"):
        SchemaValidator(schema, strict=True).apply_defaults({})
    SchemaValidator(schema).apply_defaults({})


def test_defaults_filled_into_a_nested_object_leave_the_given_one_alone():
    schema = {"type": "object", "properties": {
        "options": {"type": "object", "properties": {"loud": {"default": False}}}}}
    given = {"options": {}}
    out = SchemaValidator(schema).apply_defaults(given)
    assert out == {"options": {"loud": False}} and given == {"options": {}}


def test_defaults_on_an_instance_nested_10000_deep():
    schema = {"$defs": {"n": {"type": "object", "properties": {"d": {"default": 1}, "k": {"$ref": "#/$defs/n"}}}},
              "$ref": "#/$defs/n"}
    deep = {"leaf": "x"}
    for _ in range(10000):
        deep = {"k": deep}
    v = SchemaValidator(schema)
    out = v.apply_defaults(deep)   # too deep to fill: an unfilled copy, never a half-filled one
    assert out is not deep and "d" not in out and "d" not in deep
    a, b, levels = out, deep, 0
    while "k" in b:   # the copy is whole and shares no object with the instance
        assert "k" in a and a is not b
        a, b, levels = a["k"], b["k"], levels + 1
    assert levels == 10000 and a == {"leaf": "x"} and a is not b
    assert v.apply_defaults(deep, in_place=True) is deep and deep["d"] == 1   # in place: partly filled


RECURSION_AT_EVERY_DEPTH = r"""
import sys
sys.path.insert(0, sys.argv[1])
import schema_lite
fills_itself = schema_lite.SchemaValidator({"properties": {"a": {"$ref": "#", "default": {"b": 1}}}})
dynamic = schema_lite.SchemaValidator({"$dynamicAnchor": "n", "properties": {"d": {"$dynamicRef": "#n", "default": {}}}})
regexes = schema_lite.SchemaValidator({"$defs": {"n": {"anyOf": [{"type": "string", "format": "regex"},
                                                                  {"type": "array", "items": {"$ref": "#/$defs/n"}}]}},
                                       "$ref": "#/$defs/n"})
tail = "x"
for _ in range(150):
    tail = [tail]
def at_depth(n, call):
    return call() if n == 0 else at_depth(n - 1, call)
for n in range(40):
    assert at_depth(n, lambda: fills_itself.apply_defaults({})) == {}
    assert at_depth(n, lambda: dynamic.apply_defaults({})) == {}
for n in range(140, 190):
    deep = ["a", tail]
    for _ in range(n):
        deep = [deep]
    assert regexes.is_valid(deep) is False and regexes.issues(deep)
print("ok")
"""


def test_a_walk_too_deep_for_the_stack_never_aborts_the_process():
    """Under the service's interpreter ($KINDGI_TEST_PYTHON): defaults that fill themselves
    without end, and the regex format deep in an instance, at every stack depth.  A
    RecursionError caught deep in the walk (a default's copy, the format's test), after which
    the walk went on deeper, aborted Python 3.6-3.8: "Cannot recover from stack overflow"."""
    done = subprocess.run([os.environ.get("KINDGI_TEST_PYTHON") or sys.executable, "-c", RECURSION_AT_EVERY_DEPTH,
                           str(Path(__file__).resolve().parents[1])], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, b"ok"), done.stderr.decode()[-2000:]


def test_defaults_under_pattern_properties_dependent_schemas_and_prefix_items():
    schema = {"type": "object",
              "patternProperties": {"^p": {"type": "object", "properties": {"x": {"default": 1}}}},
              "additionalProperties": {"type": "object", "properties": {"y": {"default": 2}}},
              "dependentSchemas": {"d": {"properties": {"z": {"default": 3}}}},
              "properties": {"list": {"type": "array",
                                      "prefixItems": [{"type": "object", "properties": {"f": {"default": 0}}}],
                                      "items": {"type": "object", "properties": {"r": {"default": 9}}}}}}
    v = SchemaValidator(schema)
    # a key a pattern matches is not additional; items fills only the items after prefixItems
    assert v.apply_defaults({"p1": {}, "other": {}, "list": [{}, {}]}) == {
        "p1": {"x": 1}, "other": {"y": 2}, "list": [{"f": 0}, {"r": 9}]}
    assert v.apply_defaults({"d": 1}) == {"d": 1, "z": 3}   # a dependent schema only when its property is there


def test_defaults_through_dynamic_ref_follow_the_dynamic_scope():
    """Defaults were not filled below a $dynamicRef (a tree's children stayed bare)."""
    tree = {"$dynamicAnchor": "node", "type": "object",
            "properties": {"name": {"type": "string", "default": "x"},
                           "kids": {"type": "array", "items": {"$dynamicRef": "#node"}}}}
    # Ajv 8.20.0 (useDefaults) gives
    # {"kids": [{"name": "x"}, {"kids": [{"name": "y"}], "name": "x"}], "name": "x"}
    assert SchemaValidator(tree).apply_defaults({"kids": [{}, {"kids": [{"name": "y"}]}]}) == {
        "kids": [{"name": "x"}, {"kids": [{"name": "y"}], "name": "x"}], "name": "x"}
    extended = {"$id": "https://e.x/strict-tree", "$dynamicAnchor": "node", "$ref": "tree", "type": "object",
                "properties": {"flag": {"default": True}},
                "$defs": {"tree": {"$id": "https://e.x/tree", "$dynamicAnchor": "node", "type": "object",
                                   "properties": {"data": {"default": 0},
                                                  "children": {"type": "array",
                                                               "items": {"$dynamicRef": "#node"}}}}}}
    # Ajv 8.20.0 gives {"children": [{"children": [{"data": 0, "flag": true}], "data": 0, "flag": true}],
    # "data": 0, "flag": true}: the children are the outermost "node", the extending schema
    assert SchemaValidator(extended).apply_defaults({"children": [{"children": [{}]}]}) == {
        "children": [{"children": [{"data": 0, "flag": True}], "data": 0, "flag": True}],
        "data": 0, "flag": True}
    alone = dict(extended["$defs"]["tree"], **{"$id": "https://e.x/tree-alone"})
    assert SchemaValidator(alone).apply_defaults({"children": [{}]}) == {"children": [{"data": 0}], "data": 0}


def test_numbers_in_messages_read_as_javascript_prints_them():
    assert one({"maximum": 1e20}, 2e20)["message"] == "must be <= 100000000000000000000"
    assert one({"minimum": 1e-6}, 0)["message"] == "must be >= 0.000001"
    assert one({"minimum": 1e-7}, 0)["message"] == "must be >= 1e-7"
    limit = one({"maximum": 1e300}, 1e301)["params"]["limit"]
    assert limit == 1e300 and type(limit) is float   # beyond 2 ** 53 a double stays a double


def test_unique_items_of_non_finite_floats_answers():
    # no JSON value, but a caller's Python value: an answer, never an OverflowError
    assert SchemaValidator({"uniqueItems": True}).is_valid([float("inf"), float("inf")]) is False
    assert SchemaValidator({"uniqueItems": True}).is_valid([float("inf"), float("-inf")]) is True


def test_multiple_of_needs_a_quotient_below_1e21():
    # JavaScript's test parses the quotient's text: 1e21 reads "1e+21", parsed as 1
    v = SchemaValidator({"multipleOf": 1})
    assert v.is_valid(1e20) and not v.is_valid(1e21) and not v.is_valid(10 ** 21)


def test_unique_items_reports_the_last_duplicate_with_the_latest_equal_item():
    issue = one({"uniqueItems": True}, [[1], [1], [1]])
    assert issue["params"] == {"i": 2, "j": 1}


# ---------------------------------------------------------------------------
# Schema errors and strict mode
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("schema,words", [
    ([], "object or a boolean"),
    ({"type": "strin"}, 'unknown type "strin"'),
    ({"properties": {"a": {"minLength": -1}}}, "#/properties/a/minLength"),
    ({"properties": {"a": {"$ref": "#/$defs/nope"}}}, "can't resolve reference #/$defs/nope"),
    ({"allOf": [{}], "$ref": "#/allOf/\u00b2"}, "can't resolve reference #/allOf/\u00b2"),   # int("²") raised
    ({"allOf": [{}], "$ref": "#/allOf/00"}, "can't resolve reference #/allOf/00"),   # no array index, as in JavaScript
    # A $ref into a value no keyword makes a schema: its keywords are checked too (they raised a Python error)
    ({"$defs": {"x": {"default": {"minLength": "3"}}}, "$ref": "#/$defs/x/default"},
     '"minLength" at #/$defs/x/default/minLength: must be a non-negative integer'),
    ({"enum": [{"type": "nope"}], "properties": {"a": {"$ref": "#/enum/0"}}}, 'unknown type "nope"'),
    ({"x-spec": {"items": {"required": 1}}, "$ref": "#/x-spec/items"}, '"required" at #/x-spec/items/required'),
    ({"$defs": {"x": {"const": {"maximum": "9"}}}, "$dynamicRef": "#/$defs/x/const"},
     '"maximum" at #/$defs/x/const/maximum: must be a number'),
    ({"required": "a"}, "required"),
    ({"type": "object", "required": ["a", "b", "a"]}, "must be an array of unique strings"),
    ({"type": "object", "dependentRequired": {"a": ["b", "b"]}}, "must map names to arrays of unique strings"),
    ({"dependencies": {"a": ["b", 1]}}, "must map names to schemas or arrays of unique strings"),   # raised at a call
    ({"dependencies": {"a": {}, "b": ["c", "c"]}}, "must map names to schemas or arrays of unique strings"),
    ({"anyOf": []}, "anyOf"),
    ({"multipleOf": 0}, "multipleOf"),
])
def test_unusable_schemas(schema, words):
    with pytest.raises(SchemaError) as info:
        check_schema(schema)
    assert words in str(info.value)


def test_non_strict_accepts_what_python_packs_send():
    pydantic_like = {
        "$defs": {"Kind": {"enum": ["a", "b"], "title": "Kind", "type": "string"}},
        "properties": {"kind": {"$ref": "#/$defs/Kind", "default": "a"},
                       "when": {"anyOf": [{"format": "date-time", "type": "string"}, {"type": "null"}],
                                "default": None, "title": "When"},
                       "secret": {"format": "password", "type": "string", "writeOnly": True},
                       "pet": {"discriminator": {"propertyName": "t"}, "oneOf": [{"type": "object"}]}},
        "required": ["pet"], "title": "Input", "type": "object", "x-custom": 1,
    }
    v = SchemaValidator(pydantic_like)
    assert v.apply_defaults({"pet": {}}) == {"pet": {}, "kind": "a", "when": None}
    assert v.is_valid(v.apply_defaults({"pet": {}}))
    with pytest.raises(SchemaError, match="unknown keyword"):
        SchemaValidator(pydantic_like, strict=True)


# The official Python service (jsonschema's Draft202012Validator) takes each of these schemas and
# answers these instances so; they were refused here, so every call of such a tool failed.
@pytest.mark.parametrize("schema, valid, invalid", [
    # nullable is no draft 2020-12 keyword: a value other than true means nothing (was "must be a boolean")
    ({"type": "string", "nullable": None}, ["a"], [None, 1]),
    ({"type": "string", "nullable": "yes"}, ["a"], [None]),
    ({"properties": {"p": {"nullable": 1}}}, [{"p": 2}], []),
    # a count past the doubles' range (Python's JSON reads it exactly; was "must be a non-negative integer")
    ({"type": "string", "maxLength": 10 ** 400}, ["abc"], [1]),
    ({"type": "array", "minItems": 10 ** 400}, [], [[1, 2]]),
    ({"type": "array", "contains": {"type": "integer"}, "minContains": 1, "maxContains": 10 ** 400},
     [[1, 1]], [["a"]]),
])
def test_non_strict_accepts_what_the_official_service_accepts(schema, valid, invalid):
    for lazy in (False, True):
        v = SchemaValidator(schema, lazy=lazy)
        assert [v.is_valid(x) for x in valid + invalid] == [True] * len(valid) + [False] * len(invalid)
        assert [v.issues(x) == [] for x in valid] == [True] * len(valid)


def test_nullable_other_than_a_boolean_is_refused_in_strict_mode():
    with pytest.raises(SchemaError) as info:
        SchemaValidator({"type": "string", "nullable": None}, strict=True)
    assert str(info.value) == '"nullable" at #/nullable: must be a boolean'


@pytest.mark.parametrize("keyword", ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"])
def test_a_nan_limit_fails_no_number(keyword):
    # Python's JSON reads NaN; no number compares with it, and both upstreams test "x > limit"
    # (and the like) for a failure, so every number passes (here every number failed).
    v = SchemaValidator({"type": "number", keyword: float("nan")})
    assert [v.is_valid(x) for x in (0, -1.5, 10 ** 20, "a")] == [True, True, True, False]
    assert v.issues(3) == []


@pytest.mark.parametrize("schema", [
    {"properties": {"a": {"type": "string"}}},
    {"type": "object", "properties": {"a": {}}, "required": ["a", "b"]},
    {"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}},
    {"nullable": True},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object"},
    {"type": "object", "if": {"type": "object"}},
    # No keyword in 2020-12 (Ajv 2020 and jsonschema's Draft202012Validator take any value,
    # and ignore it): a draft-07 pack's leftover was refused as "must be a schema".
    {"type": "array", "prefixItems": [{"type": "string"}], "items": {}, "additionalItems": 1},
])
def test_strict_refuses_like_ajv(schema):
    SchemaValidator(schema)
    with pytest.raises(SchemaError):
        SchemaValidator(schema, strict=True)


# Ajv 8.20.0 (strict: true) refuses each of these (its message in the comment); strict mode accepted them.
@pytest.mark.parametrize("schema, words", [
    ({"type": "array", "contains": {"type": "integer"}, "minContains": 0},   # Ajv: the same words
     'strict mode: "minContains" == 0 without "maxContains": "contains" keyword ignored'),
    ({"type": "array", "contains": {"type": "integer"}, "minContains": 2, "maxContains": 1},   # the same
     'strict mode: "minContains" > "maxContains" is always invalid'),
    ({"type": "array", "contains": {"type": "integer"}, "maxContains": 0},   # the same
     'strict mode: "minContains" > "maxContains" is always invalid'),
    ({"title": 1},   # schema is invalid: data/title must be string
     '"title" at #/title: must be a string'),
    ({"type": "object", "properties": {"p": {"$comment": 1}}},   # data/properties/p/$comment must be string
     '"$comment" at #/properties/p/%24comment: must be a string'),
    ({"allOf": [{"deprecated": "yes"}]},   # data/allOf/0/deprecated must be boolean
     '"deprecated" at #/allOf/0/deprecated: must be a boolean'),
    ({"type": "object", "properties": {"p": {"type": "string", "readOnly": 1}}},   # .../readOnly must be boolean
     '"readOnly" at #/properties/p/readOnly: must be a boolean'),
    ({"examples": {"a": 1}},   # data/examples must be array
     '"examples" at #/examples: must be an array'),
    ({"type": ["string", "null"], "nullable": False},   # the same words, in every mode
     "type: null contradicts nullable: false"),
    ({"allOf": [{"foo": 1}]},   # the same words (compiling skips an always-valid subschema)
     'strict mode: unknown keyword: "foo"'),
    ({"type": "object", "properties": {"p": {"$anchor": "x"}}},   # the same words
     'strict mode: unknown keyword: "$anchor"'),
])
def test_strict_refuses_these_as_ajv_does(schema, words):
    SchemaValidator(schema)   # without strict: accepted, as before
    with pytest.raises(SchemaError) as info:
        SchemaValidator(schema, strict=True)
    assert str(info.value) == words


@pytest.mark.parametrize("schema", [
    {"type": "array", "contains": {"type": "integer"}, "minContains": 0, "maxContains": 0},
    {"type": "array", "contains": {"type": "integer"}, "minContains": 2, "maxContains": 2},
    {"title": "T", "description": "", "$comment": "c", "deprecated": False, "readOnly": True, "examples": []},
    {"type": "string", "nullable": False},
    {"$defs": {"unused": {"foo": 1}}},
])
def test_strict_accepts_these_as_ajv_does(schema):
    SchemaValidator(schema, strict=True)   # Ajv 8.20.0 (strict: true) compiles each


# ---------------------------------------------------------------------------
# Hostile input: never an exception escaping, never an endless loop
# ---------------------------------------------------------------------------


def nested_list(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


def test_instance_nested_10000_deep():
    v = SchemaValidator({"type": "array", "items": {"$ref": "#"}})
    deep = nested_list(10000)
    issues = v.issues(deep)
    assert issues and issues[0]["keyword"] == "depth"
    assert v.is_valid(deep) is False
    assert SchemaValidator({"type": "array"}).is_valid(deep)
    copy = v.apply_defaults(deep)
    assert copy is not deep and len(copy) == 1


def test_schema_nested_10000_deep():
    schema = {"type": "integer"}
    for _ in range(10000):
        schema = {"items": schema}
    with pytest.raises(SchemaError, match="nested too deeply"):
        SchemaValidator(schema)


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
    {"allOf": [{"$ref": "#"}]},
    {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/x"}], "$defs": {"x": {"not": {"$ref": "#"}}}},
])
def test_self_referencing_refs_are_schema_errors(schema):
    with pytest.raises(SchemaError, match="refers to itself without consuming the instance"):
        SchemaValidator(schema)


def test_recursion_through_the_instance_is_fine():
    v = SchemaValidator({"$defs": {"n": {"properties": {"k": {"$ref": "#/$defs/n"}}, "required": ["v"]}},
                         "$ref": "#/$defs/n"})
    assert v.issues({"v": 1, "k": {"v": 2, "k": {}}})[0]["instancePath"] == "/k/k"


def test_100000_items():
    started = time.monotonic()
    v = SchemaValidator({"type": "array", "uniqueItems": True, "items": {"type": "object"}})
    items = [{"i": i} for i in range(100000)]
    assert v.is_valid(items)
    items.append({"i": 5})
    assert v.issues(items)[0]["params"] == {"i": 100000, "j": 5}
    v = SchemaValidator({"type": "array", "uniqueItems": True, "items": {"type": "integer"}})
    assert v.issues(list(range(100000)) + [7])[0]["params"] == {"i": 7, "j": 100000}
    assert time.monotonic() - started < 30


def test_unique_items_of_integers_that_share_a_hash():
    # Python hashes an integer modulo 2 ** 61 - 1: these 6,000 all hash alike, which made
    # uniqueItems quadratic (seconds; a 10 MiB body of them, hours).  The official service sorts them.
    modulus = sys.hash_info.modulus
    numbers = [k * modulus + 7 for k in range(1, 6001)]
    started = time.monotonic()
    for schema, items, pair in (({"uniqueItems": True}, numbers, {"i": 6000, "j": 40}),
                                ({"items": {"type": "integer"}, "uniqueItems": True}, numbers, {"i": 40, "j": 6000}),
                                ({"uniqueItems": True}, [{"n": n} for n in numbers], {"i": 6000, "j": 40}),
                                ({"uniqueItems": True}, [[n] for n in numbers], {"i": 6000, "j": 40})):
        v = SchemaValidator(schema)
        assert v.is_valid(items)
        assert v.issues(items + [items[40]])[0]["params"] == pair   # Ajv's pair, as for any duplicate
    assert time.monotonic() - started < 2
    # Equal numbers still key alike, however they are written
    v = SchemaValidator({"uniqueItems": True})
    for a, b in ((2 ** 62, 2.0 ** 62), (-(2 ** 70), -(2.0 ** 70)), (int(1e300), 1e300),
                 (10 ** 5000, 10 ** 5000)):
        assert not v.is_valid([a, b]) and not v.is_valid([[a], [b]]) and not v.is_valid([{"n": a}, {"n": b}])
    assert v.is_valid([2 ** 62 + 1, 2.0 ** 62]) and v.is_valid([{"n": 2 ** 62 + 1}, {"n": 2.0 ** 62}])


def test_integers_with_thousands_of_digits():
    huge = 10 ** 5000
    for schema in ({"type": "integer"}, {"type": "number", "maximum": 5}, {"multipleOf": 3},
                   {"enum": [1, 2]}, {"const": 1}, {"format": "int32"}, {"uniqueItems": True},
                   {"maximum": -huge}, {"minimum": huge}):
        v = SchemaValidator(schema)
        issues = v.issues(huge) + v.issues([huge, huge]) + v.issues(-huge) + v.issues(5)
        json.dumps(issues)
    issue = SchemaValidator({"maximum": huge}).issues(10 ** 400 + 1)
    assert issue == []
    assert SchemaValidator({"minimum": huge}).issues(1)[0]["message"] == "must be >= Infinity"


def test_compiles_each_pattern_once(monkeypatch):
    calls = []
    real = schema_lite._RegexTranslator.translate
    monkeypatch.setattr(schema_lite, "_regex_cache", {})
    monkeypatch.setattr(schema_lite._RegexTranslator, "translate", lambda self: calls.append(1) or real(self))
    v = SchemaValidator({"type": "array", "items": {"type": "string", "pattern": "^q+$"}})
    for _ in range(50):
        v.is_valid(["q", "qq", "x"])
    assert len(calls) == 1


def test_a_dynamic_scope_on_a_thread_that_never_validated():
    # Each thread keeps its own dynamic scope: the first call on a new thread must set it up
    import threading
    schema = {"$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
              "if": {"$id": "https://example.com/cond", "type": "object"},   # run by the defaults walk, in scope
              "then": {"properties": {"a": {"default": 1}}},
              "properties": {"k": {"$dynamicRef": "#node"}}}
    out = []

    def work(first):
        v = SchemaValidator(schema)
        try:
            out.append(v.apply_defaults({}) if first == "defaults" else v.issues({"k": 1})[0]["instancePath"])
        except Exception as exc:
            out.append(repr(exc))
    for first in ("defaults", "issues"):
        t = threading.Thread(target=work, args=(first,))
        t.start()
        t.join(10)
    assert out == [{"a": 1}, "/k"]


def test_validator_is_thread_safe_and_reusable():
    import threading
    v = SchemaValidator({"properties": {"n": {"type": "integer"}}, "required": ["n"]})
    results = []

    def work(i):
        results.append(v.issues({"n": i} if i % 2 else {}) == ([] if i % 2 else v.issues({})))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == [True] * 16


# ---------------------------------------------------------------------------
# Members whose schema only tests the value are checked by one test first
# (the fast path of `properties`); a failing one still gets Ajv's issue
# ---------------------------------------------------------------------------

MEMBERS = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "kind": {"type": "string", "enum": ["a", "b"]},
        "count": {"type": "integer", "minimum": 1, "maximum": 9},
        "price": {"type": "number", "exclusiveMinimum": 0},
        "name": {"type": ["string", "null"], "minLength": 2},
    },
}


@pytest.mark.parametrize("member, value, schema_path, keyword", [
    ("sku", "AB1", "#/properties/sku/pattern", "pattern"),
    ("sku", 7, "#/properties/sku/type", "type"),
    ("kind", "c", "#/properties/kind/enum", "enum"),
    ("count", 2.5, "#/properties/count/type", "type"),
    ("count", 0, "#/properties/count/minimum", "minimum"),
    ("count", True, "#/properties/count/type", "type"),
    ("price", 0, "#/properties/price/exclusiveMinimum", "exclusiveMinimum"),
    ("price", "1", "#/properties/price/type", "type"),
    ("name", "x", "#/properties/name/minLength", "minLength"),
    ("name", 3, "#/properties/name/type", "type"),
])
def test_a_member_failing_its_value_test_gets_its_issue(member, value, schema_path, keyword):
    good = {"sku": "ABC", "kind": "a", "count": 3, "price": 0.5, "name": None}
    assert SchemaValidator(MEMBERS).is_valid(good)
    issue = one(MEMBERS, dict(good, **{member: value}))
    assert (issue["instancePath"], issue["schemaPath"], issue["keyword"]) == ("/" + member, schema_path, keyword)
