"""End-to-end: tool calls (README: Protocol coverage).

Version selection, defaults filled before validation, input and output
validation with Ajv-shaped issues, sync and async handlers with one or two
parameters, every ``ToolContext`` field, output that is not JSON, every
kind of ``BaseException`` from a handler, and the way pack modules import
(relative imports, folders without ``__init__.py``).  One service, one pack
with many tools; and, with a pack of its own, the context variables each call
starts from.
"""

import subprocess

import pytest

from conftest import PYTHON, PackWriter

MULTI = '''\
from kindgi import tool

@tool(description="A test tool.", id="multi", version="%(v)s", input={"type": "object"}, output={})
def multi(input):
    return {"version": "%(v)s"}
'''

MIXED = '''
@tool(description="A test tool.", id="mixed", version=%(mixed)s, input={"type": "object"}, output={})
def mixed(input):
    return {"version": %(mixed)s}
'''

TWICE = '''\
from kindgi import tool

@tool(description="A test tool.", id="twice", version="1.0.0", input={"type": "object"}, output={})
def twice_first(input):
    return {"ran": "1.0.0"}

@tool(description="A test tool.", id="twice", version="2.0.0", input={"type": "object"}, output={})
def twice_second(input):
    return {"ran": "2.0.0"}
'''

BASIC = '''\
import asyncio
from kindgi import tool

@tool(description="A test tool.", id="single", version="1.0.0", input={"type": "object"}, output={})
def single(input):
    return {"single": True}

@tool(description="A test tool.", id="plain", input={"type": "object"}, output={})
def plain(input):
    return {"plain": True}

@tool(description="A test tool.", id="blank", input={"type": "object"}, output={})
def blank(input):
    return {"blank": True}

@tool(description="A test tool.", id="seen", input={"type": "object"}, output={})
def seen(input):
    return {"seen": input}

@tool(description="A test tool.", id="mutator", input={"type": "object"}, output={})
def mutator(input):
    seen = {"options": dict(input["options"]), "tags": list(input["tags"])}
    input["options"]["mutated"] = True
    input["tags"].append("mutated")
    return seen

@tool(description="A test tool.", id="sync-one", input={"type": "object"}, output={})
def sync_one(input):
    return {"args": 1, "input": input}

@tool(description="A test tool.", id="sync-two", input={"type": "object"}, output={})
def sync_two(input, ctx):
    return {"args": 2, "input": input, "tenant": ctx.tenant_id}

@tool(description="A test tool.", id="async-one", input={"type": "object"}, output={})
async def async_one(input):
    await asyncio.sleep(0)
    return {"args": 1, "async": True, "input": input}

@tool(description="A test tool.", id="async-two", input={"type": "object"}, output={})
async def async_two(input, ctx):
    await asyncio.sleep(0.01)
    return {"args": 2, "async": True, "run": ctx.run_id}

@tool(description="A test tool.", id="returns", input={"type": "object"}, output={})
def returns(input):
    return input["value"]

@tool(description="A test tool.", id="anything", input={"type": "object"}, output={})
def anything(input):
    return input["value"]

@tool(description="A test tool.", id="bad-output", input={"type": "object"}, output={})
def bad_output(input):
    return input["value"]
'''

CONTEXT = '''\
from kindgi import tool, Cancellation, ToolContext

def attempt(action):
    """What changing the context does: the base class of the refusal, if any."""
    try:
        action()
    except TypeError:
        return "TypeError"
    except AttributeError:
        return "AttributeError"
    return "allowed"

@tool(description="A test tool.", id="context", input={"type": "object"}, output={})
def context(input, ctx):
    def set_env():
        ctx.env["NEW"] = "x"
    def set_secret():
        ctx.secrets["NEW"] = "x"
    def set_tenant():
        ctx.tenant_id = "other"
    return {
        "type": type(ctx).__name__,
        "isToolContext": isinstance(ctx, ToolContext),
        "tenant_id": ctx.tenant_id, "run_id": ctx.run_id, "project_id": ctx.project_id,
        "org_id": ctx.org_id, "request_id": ctx.request_id, "idempotency_key": ctx.idempotency_key,
        "env": dict(ctx.env), "secrets": dict(ctx.secrets), "config": dict(ctx.config),
        "settings": {k: dict(v) for k, v in ctx.settings.items()},
        "isCancellation": isinstance(ctx.cancellation, Cancellation),
        "cancelled": ctx.cancellation.cancelled, "reason": ctx.cancellation.reason,
        "hasLog": all(callable(getattr(ctx.log, n, None)) for n in ("error", "warn", "info", "debug", "trace")),
        "setEnv": attempt(set_env), "setSecret": attempt(set_secret), "setTenant": attempt(set_tenant),
        "hasUnknown": hasattr(ctx, "unknownKey") or hasattr(ctx, "unknown_key"),
        "secretsInRepr": "s3cret" in repr(ctx),
    }
'''

NOT_JSON = '''\
import math
from kindgi import tool

class Thing:
    pass

def circular():
    d = {"a": 1}
    d["self"] = d
    return d

def circular_list():
    items = [1]
    items.append(items)
    return {"items": items}

class RaisingMapping(dict):
    def items(self):
        raise RuntimeError("no items today")

class LeavingMapping(dict):
    def items(self):
        raise SystemExit("leaving while being read")

SHARED = {"x": 1}

OUTPUTS = {
    "set": lambda: {"ok": 1, "s": {Thing()}},
    "nan": lambda: {"values": [1.0, float("nan")]},
    "inf": lambda: {"deep": {"x": [1, {"y": float("inf")}]}},
    "circular": circular,
    "circular-list": circular_list,
    "object": lambda: {"obj": Thing()},
    "root-object": lambda: Thing(),
    "bytes": lambda: {"b": b"raw \\xff"},
    "slash-key": lambda: {"a/b": {"c~d": Thing()}},
    "shared": lambda: {"one": SHARED, "two": SHARED, "three": [SHARED, SHARED]},
    "raising-mapping": lambda: {"m": RaisingMapping(a=1)},
    "leaving-mapping": lambda: {"list": [LeavingMapping(a=1)]},
}

@tool(description="A test tool.", id="not-json", input={"type": "object"}, output={})
def not_json(input):
    return OUTPUTS[input["kind"]]()
'''

CONVERTED = '''\
import datetime, decimal, enum, uuid
from kindgi import tool

class Color(enum.Enum):
    RED = "red"

UTC = datetime.timezone.utc

@tool(description="A test tool.", id="converted", input={"type": "object"}, output={})
def converted(input):
    return {
        "at": datetime.datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        "local": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=-5))),
        "naive": datetime.datetime(2026, 1, 2, 3, 4, 5),
        "day": datetime.date(2026, 1, 2),
        "time": datetime.time(3, 4, 5, tzinfo=UTC),
        "took": datetime.timedelta(days=400, seconds=5400.5),
        "back": datetime.timedelta(seconds=-1),
        "price": decimal.Decimal("1.50"),
        "id": uuid.UUID(int=5),
        "color": Color.RED,
        "tags": {"only"},
        "raw": b"bytes",
        "rows": (n * n for n in range(3)),
    }
'''

THROWS = '''\
import asyncio
from kindgi import tool

class PackError(Exception):
    pass

RAISE = {
    "value-error": lambda: ValueError("bad value"),
    "empty": lambda: RuntimeError(),
    "custom": lambda: PackError("custom one"),
    "system-exit": lambda: SystemExit("bye"),
    "system-exit-code": lambda: SystemExit(3),
    "keyboard-interrupt": lambda: KeyboardInterrupt("stop"),
    "cancelled-error": lambda: asyncio.CancelledError("not really"),
    "generator-exit": lambda: GeneratorExit("gen"),
    "base-exception": lambda: BaseException("base"),
}

def fail_here(kind):
    raise RAISE[kind]()

@tool(description="A test tool.", id="throw", input={"type": "object"}, output={})
def throw(input):
    fail_here(input["kind"])

@tool(description="A test tool.", id="async-throw", input={"type": "object"}, output={})
async def async_throw(input):
    await asyncio.sleep(0)
    fail_here(input["kind"])
'''

RELATIVE = '''\
from kindgi import tool
from .helpers import shout
from ...lib.words import WORDS
from lib import words as top_level_words

@tool(description="A test tool.", id="relative", input={"type": "object"}, output={})
def relative(input):
    return {"shout": shout(input["text"]), "words": WORDS, "topLevel": top_level_words.WORDS,
            "module": __name__, "package": __package__}
'''

HELPERS = '''\
def shout(text):
    return text.upper() + "!"
'''

WORDS = 'WORDS = ["alpha", "beta"]\n'

DEFAULTS_SCHEMA = {
    "type": "object",
    "required": ["text", "mode"],
    "properties": {
        "text": {"type": "string"},
        "mode": {"type": "string", "default": "fast"},
        "options": {"type": "object", "default": {},
                    "properties": {"loud": {"type": "boolean", "default": False},
                                   "level": {"type": "integer", "default": 2}}},
        "count": {"type": "integer", "default": 1},
        "list": {"type": "array", "items": {"type": "object", "properties": {"n": {"default": 0}}}},
        "pair": {"type": "array", "prefixItems": [{"type": "object", "properties": {"first": {"default": "a"}}},
                                                   {"type": "object", "properties": {"second": {"default": "b"}}}]},
        "viaRef": {"$ref": "#/$defs/withDefault"},
        "viaAllOf": {"allOf": [{"type": "object", "properties": {"fromAllOf": {"default": True}}}]},
        "viaAnyOf": {"anyOf": [{"type": "object", "properties": {"fromAnyOf": {"default": True}}}]},
        "viaOneOf": {"oneOf": [{"type": "object", "properties": {"fromOneOf": {"default": True}}}]},
    },
    "$defs": {"withDefault": {"type": "object", "properties": {"fromRef": {"default": "ref"}}}},
}

MUTATOR_SCHEMA = {"type": "object", "properties": {
    "options": {"type": "object", "default": {"level": 1}},
    "tags": {"type": "array", "default": ["x"]}}}

STRICT_INPUT = {
    "type": "object",
    "required": ["name", "age"],
    "additionalProperties": False,
    "properties": {"name": {"type": "string", "minLength": 2},
                   "age": {"type": "integer", "minimum": 0},
                   "tags": {"type": "array", "items": {"type": "string"}}},
}

STRICT_OUTPUT = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}},
                 "additionalProperties": False}


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("tools"))
    pack.module("tools/v1.py", (MULTI + MIXED) % {"v": "1.0.0", "mixed": "None"})
    pack.module("tools/v2.py", (MULTI + MIXED) % {"v": "2.0.0", "mixed": '"2.0.0"'})
    pack.module("tools/v11.py", MULTI % {"v": "1.1.0"})
    pack.module("tools/twice.py", TWICE)
    pack.module("tools/strict.py", BASIC.replace('id="seen"', 'id="strict"'))
    pack.module("tools/basic.py", BASIC)
    pack.module("tools/context.py", CONTEXT)
    pack.module("tools/not_json.py", NOT_JSON)
    pack.module("tools/converted.py", CONVERTED)
    pack.module("tools/throws.py", THROWS)
    pack.module("tools/sub/relative.py", RELATIVE)
    pack.module("tools/sub/helpers.py", HELPERS)
    pack.module("lib/words.py", WORDS)
    pack.tool("multi", "tools/v1.py", version="1.0.0")
    pack.tool("multi", "tools/v2.py", version="2.0.0")
    pack.tool("multi", "tools/v11.py", version="1.1.0")
    pack.tool("mixed", "tools/v1.py")
    for version in ("1.0.0", "2.0.0", "3.0.0"):   # 3.0.0: an index the module doesn't match
        pack.tool("twice", "tools/twice.py", version=version)
    pack.tool("mixed", "tools/v2.py", version="2.0.0")
    pack.tool("single", "tools/basic.py", version="1.0.0")
    pack.tool("plain", "tools/basic.py")
    pack.tool("blank", "tools/basic.py", version="")
    pack.tool("seen", "tools/basic.py", input=DEFAULTS_SCHEMA)
    pack.tool("strict", "tools/strict.py", input=STRICT_INPUT)
    pack.tool("mutator", "tools/basic.py", input=MUTATOR_SCHEMA)
    for name in ("sync-one", "sync-two", "async-one", "async-two", "anything"):
        pack.tool(name, "tools/basic.py")
    pack.tool("returns", "tools/basic.py", output={"type": "object",
                                                   "properties": {"d": {"type": "string", "default": "x"}}})
    pack.tool("bad-output", "tools/basic.py", output=STRICT_OUTPUT)
    pack.tool("context", "tools/context.py")
    pack.tool("not-json", "tools/not_json.py", output={"type": "object"})
    pack.tool("converted", "tools/converted.py")
    pack.tool("throw", "tools/throws.py")
    pack.tool("async-throw", "tools/throws.py")
    pack.tool("relative", "tools/sub/relative.py")
    return module_launcher.start(pack.write())


def call(service, tool_id, input=None, version=None, ctx=None):
    resp = service.call_tool(tool_id, {} if input is None else input, version=version, ctx=ctx)
    assert resp.status == 200, resp
    return resp.json


def output_of(service, tool_id, input=None, **kw):
    answer = call(service, tool_id, input, **kw)
    assert answer["kind"] == "result", answer
    return answer["output"]


def mismatch(tool_id, listed, tail):
    return {"v": 2, "kind": "error", "code": "tool-version-mismatch",
            "message": 'Tool "%s" is %s in this pack; the caller %s' % (tool_id, listed, tail), "toolId": tool_id}


# -- version selection ---------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.0.0", "2.0.0", "1.1.0"])
def test_the_named_version_runs(service, version):
    assert output_of(service, "multi", version=version) == {"version": version}


def test_several_versions_and_none_named(service):
    assert call(service, "multi") == mismatch("multi", "1.0.0, 2.0.0, 1.1.0", "named none")


@pytest.mark.parametrize("asked", ["3.0.0", "1.0.0 ", "v1.0.0", "1", ""])
def test_several_versions_and_another_named(service, asked):
    assert call(service, "multi", version=asked) == mismatch("multi", "1.0.0, 2.0.0, 1.1.0", "asked for %s" % asked)


def test_unversioned_entry_prints_unversioned(service):
    assert call(service, "mixed") == mismatch("mixed", "unversioned, 2.0.0", "named none")
    assert output_of(service, "mixed", version="2.0.0") == {"version": "2.0.0"}


def test_two_versions_in_one_module_each_run_their_own_code(service):
    """The official service runs the module's first tool with the id, whatever its version: a
    call for 2.0.0 ran 1.0.0's code.  Where no tool has the entry's version, the first runs."""
    assert output_of(service, "twice", version="1.0.0") == {"ran": "1.0.0"}
    assert output_of(service, "twice", version="2.0.0") == {"ran": "2.0.0"}
    assert output_of(service, "twice", version="3.0.0") == {"ran": "1.0.0"}


def test_single_version_runs_when_none_is_named(service):
    assert output_of(service, "single") == {"single": True}
    assert output_of(service, "single", version="1.0.0") == {"single": True}


def test_single_version_refuses_another(service):
    assert call(service, "single", version="1.0.1") == mismatch("single", "1.0.0", "asked for 1.0.1")


def test_unversioned_tool_refuses_a_named_version(service):
    assert output_of(service, "plain") == {"plain": True}
    assert call(service, "plain", version="1.0.0") == mismatch("plain", "unversioned", "asked for 1.0.0")


def test_an_empty_version_in_the_index_is_the_one_a_caller_names_empty(service):
    """The entry whose version string equals the one asked for, exactly: "" too, as on the official service."""
    assert output_of(service, "blank", version="") == {"blank": True}
    assert output_of(service, "blank") == {"blank": True}
    assert call(service, "blank", version="1.0.0") == mismatch("blank", "unversioned", "asked for 1.0.0")


# -- defaults, then validation -------------------------------------------------------------

def test_defaults_are_filled_before_validation(service):
    # "mode" is required and has a default: the input passes only because it is filled first
    got = output_of(service, "seen", {"text": "hi"})["seen"]
    assert got["mode"] == "fast"
    assert got["count"] == 1


def test_nested_default_inside_an_inserted_default(service):
    got = output_of(service, "seen", {"text": "hi"})["seen"]
    assert got["options"] == {"loud": False, "level": 2}


def test_defaults_fill_present_objects_and_keep_given_values(service):
    got = output_of(service, "seen", {"text": "hi", "mode": "slow", "options": {"level": 5}, "count": 9})["seen"]
    assert got["mode"] == "slow" and got["count"] == 9
    assert got["options"] == {"level": 5, "loud": False}


def test_defaults_through_items_prefix_items_ref_and_all_of(service):
    got = output_of(service, "seen", {"text": "hi", "list": [{}, {"n": 5}], "pair": [{}, {}],
                                      "viaRef": {}, "viaAllOf": {}})["seen"]
    assert got["list"] == [{"n": 0}, {"n": 5}]
    assert got["pair"] == [{"first": "a"}, {"second": "b"}]
    assert got["viaRef"] == {"fromRef": "ref"}
    assert got["viaAllOf"] == {"fromAllOf": True}


def test_defaults_are_not_taken_from_any_of_or_one_of(service):
    got = output_of(service, "seen", {"text": "hi", "viaAnyOf": {}, "viaOneOf": {}})["seen"]
    assert got["viaAnyOf"] == {}
    assert got["viaOneOf"] == {}


def test_exact_defaulted_input(service):
    assert output_of(service, "seen", {"text": "x"}) == {"seen": {
        "text": "x", "mode": "fast", "options": {"loud": False, "level": 2}, "count": 1}}


def test_defaults_are_copies_a_handler_cannot_change(service):
    first = output_of(service, "mutator")
    second = output_of(service, "mutator")
    assert first == second == {"options": {"level": 1}, "tags": ["x"]}


def test_output_is_not_defaulted(service):
    assert output_of(service, "returns", {"value": {}}) == {}


# -- input and output validation -------------------------------------------------------------

def test_input_validation_issues_are_ajv_shaped(service):
    answer = call(service, "strict", {"name": "a", "age": -1, "extra": 1, "tags": ["ok", 5]})
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Tool "strict" input failed validation'
    assert answer["toolId"] == "strict"
    issues = sorted(answer["issues"], key=lambda i: (i["instancePath"], i["keyword"]))
    assert issues == [
        {"instancePath": "", "schemaPath": "#/additionalProperties", "keyword": "additionalProperties",
         "params": {"additionalProperty": "extra"}, "message": "must NOT have additional properties"},
        {"instancePath": "/age", "schemaPath": "#/properties/age/minimum", "keyword": "minimum",
         "params": {"comparison": ">=", "limit": 0}, "message": "must be >= 0"},
        {"instancePath": "/name", "schemaPath": "#/properties/name/minLength", "keyword": "minLength",
         "params": {"limit": 2}, "message": "must NOT have fewer than 2 characters"},
        {"instancePath": "/tags/1", "schemaPath": "#/properties/tags/items/type", "keyword": "type",
         "params": {"type": "string"}, "message": "must be string"},
    ]


def test_input_missing_required(service):
    answer = call(service, "strict", {"name": "abc"})
    assert answer["issues"] == [{"instancePath": "", "schemaPath": "#/required", "keyword": "required",
                                 "params": {"missingProperty": "age"},
                                 "message": "must have required property 'age'"}]


def test_empty_or_absent_input_is_validated_too(service):
    """``{}`` and no ``input`` at all are checked like any other input, not let through."""
    answer = call(service, "strict", {})
    assert answer["code"] == "input-validation-failed"
    assert {i["params"].get("missingProperty") for i in answer["issues"]} >= {"name"}
    resp = service.invoke({"v": 2, "kind": "invoke", "tool": {"id": "strict"},
                           "ctx": {"tenantId": "tenant-1", "runId": "run-1"}})
    assert resp.status == 200 and resp.json["code"] == "input-validation-failed"
    assert resp.json["issues"] == [{"instancePath": "", "schemaPath": "#/type", "keyword": "type",
                                    "params": {"type": "object"}, "message": "must be object"}]


def test_input_not_an_object(service):
    answer = call(service, "strict", [1])
    assert answer["code"] == "input-validation-failed"
    assert answer["issues"] == [{"instancePath": "", "schemaPath": "#/type", "keyword": "type",
                                 "params": {"type": "object"}, "message": "must be object"}]


def test_valid_input_runs(service):
    assert output_of(service, "strict", {"name": "abc", "age": 3})["seen"] == {"name": "abc", "age": 3}


def test_output_validation_issues(service):
    answer = call(service, "bad-output", {"value": {"n": "one", "more": 1}})
    assert answer["code"] == "output-validation-failed"
    assert answer["message"] == 'Tool "bad-output" handler produced output that failed validation'
    assert answer["toolId"] == "bad-output"
    issues = sorted(answer["issues"], key=lambda i: i["instancePath"])
    assert issues == [
        {"instancePath": "", "schemaPath": "#/additionalProperties", "keyword": "additionalProperties",
         "params": {"additionalProperty": "more"}, "message": "must NOT have additional properties"},
        {"instancePath": "/n", "schemaPath": "#/properties/n/type", "keyword": "type",
         "params": {"type": "integer"}, "message": "must be integer"},
    ]


def test_output_valid(service):
    assert output_of(service, "bad-output", {"value": {"n": 4}}) == {"n": 4}


# -- handlers: sync, async, one or two parameters ------------------------------------------------

def test_sync_handler_with_input_only(service):
    assert output_of(service, "sync-one", {"a": 1}) == {"args": 1, "input": {"a": 1}}


def test_sync_handler_with_context(service):
    assert output_of(service, "sync-two", {"a": 2}) == {"args": 2, "input": {"a": 2}, "tenant": "tenant-1"}


def test_async_handler_with_input_only(service):
    assert output_of(service, "async-one", {"b": 1}) == {"args": 1, "async": True, "input": {"b": 1}}


def test_async_handler_with_context(service):
    assert output_of(service, "async-two", ctx={"tenantId": "t", "runId": "run-async"}) == \
        {"args": 2, "async": True, "run": "run-async"}


@pytest.mark.parametrize("value", [None, 0, "text", [1, "two", None], True, 1.5])
def test_any_json_output_is_returned(service, value):
    assert call(service, "anything", {"value": value}) == {"v": 2, "kind": "result", "output": value}


# -- ToolContext -------------------------------------------------------------------------------

FULL_CTX = {
    "tenantId": "ten-1", "runId": "run-9", "projectId": "proj-2", "orgId": "org-3", "requestId": "req-4",
    "idempotencyKey": "6b1c7d1e-2f0a-5b6c-8d9e-0f1a2b3c4d5e",
    "env": {"API_URL": "https://x.test", "MODE": "fast"},
    "secrets": {"apiKey": "s3cret"},
    "config": {"feature": True},
    "settings": {"block-a": {"temperature": 0.2, "nested": {"k": [1, 2]}}},
    "unknownKey": "dropped",
}


@pytest.fixture(scope="module")
def full_context(service):
    return output_of(service, "context", ctx=FULL_CTX)


@pytest.mark.parametrize("field,value", [
    ("tenant_id", "ten-1"), ("run_id", "run-9"), ("project_id", "proj-2"), ("org_id", "org-3"),
    ("request_id", "req-4"), ("idempotency_key", "6b1c7d1e-2f0a-5b6c-8d9e-0f1a2b3c4d5e"),
    ("env", {"API_URL": "https://x.test", "MODE": "fast"}), ("secrets", {"apiKey": "s3cret"}),
    ("config", {"feature": True}), ("settings", {"block-a": {"temperature": 0.2, "nested": {"k": [1, 2]}}}),
])
def test_context_field(full_context, field, value):
    assert full_context[field] == value


def test_context_is_a_tool_context_with_a_cancellation(full_context):
    assert full_context["isToolContext"] is True
    assert full_context["isCancellation"] is True
    assert full_context["cancelled"] is False
    assert full_context["reason"] is None
    assert full_context["hasLog"] is True


def test_context_mappings_are_read_only_and_the_context_frozen(full_context):
    assert full_context["setEnv"] == "TypeError"
    assert full_context["setSecret"] == "TypeError"
    assert full_context["setTenant"] == "AttributeError"


def test_context_drops_unknown_keys_and_hides_secrets_from_repr(full_context):
    assert full_context["hasUnknown"] is False
    assert full_context["secretsInRepr"] is False


def test_context_with_only_the_required_fields(service):
    got = output_of(service, "context", ctx={"tenantId": "t", "runId": "r"})
    assert (got["tenant_id"], got["run_id"]) == ("t", "r")
    for name in ("project_id", "org_id", "request_id", "idempotency_key"):
        assert got[name] is None, name
    for name in ("env", "secrets", "config", "settings"):
        assert got[name] == {}, name


# -- output that is not JSON ---------------------------------------------------------------------

@pytest.mark.parametrize("kind,path", [
    ("set", "/s/0"), ("nan", "/values/1"), ("inf", "/deep/x/1/y"), ("circular", "/self"),
    ("circular-list", "/items/1"), ("object", "/obj"), ("root-object", ""), ("bytes", "/b"),
    ("slash-key", "/a~1b/c~0d"), ("raising-mapping", "/m"), ("leaving-mapping", "/list/0"),
])
def test_output_that_is_not_json(service, kind, path):
    answer = call(service, "not-json", {"kind": kind})
    assert answer["code"] == "output-validation-failed"
    assert answer["toolId"] == "not-json"
    assert answer["message"].startswith('Tool "not-json" handler produced output that is not JSON: ')
    assert answer["issues"], answer
    assert answer["issues"][0]["instancePath"] == path
    for issue in answer["issues"]:
        assert set(issue) >= {"instancePath", "message"}
        assert isinstance(issue["message"], str) and issue["message"]


def test_values_the_sdk_converts_are_converted_as_it_does(service):
    """What pydantic's to_jsonable_python makes of them, as on the official service."""
    assert output_of(service, "converted") == {
        "at": "2026-01-02T03:04:05.120000Z", "local": "2026-01-02T03:04:05-05:00",
        "naive": "2026-01-02T03:04:05", "day": "2026-01-02", "time": "03:04:05Z",
        "took": "P1Y35DT1H30M0.5S", "back": "-PT1S", "price": "1.50",
        "id": "00000000-0000-0000-0000-000000000005", "color": "red",
        "tags": ["only"], "raw": "bytes", "rows": [0, 1, 4]}


def test_shared_values_are_not_circular(service):
    assert output_of(service, "not-json", {"kind": "shared"}) == {
        "one": {"x": 1}, "two": {"x": 1}, "three": [{"x": 1}, {"x": 1}]}


def test_not_json_output_leaves_the_service_serving(service):
    assert call(service, "not-json", {"kind": "circular"})["code"] == "output-validation-failed"
    assert output_of(service, "plain") == {"plain": True}


# -- throws: every BaseException is an answer ----------------------------------------------------

@pytest.mark.parametrize("tool_id", ["throw", "async-throw"])
@pytest.mark.parametrize("kind,name,text", [
    ("value-error", "ValueError", "bad value"),
    ("empty", "RuntimeError", ""),
    ("custom", "PackError", "custom one"),
    ("system-exit", "SystemExit", "bye"),
    ("system-exit-code", "SystemExit", "3"),
    ("keyboard-interrupt", "KeyboardInterrupt", "stop"),
    ("cancelled-error", "CancelledError", "not really"),
    ("generator-exit", "GeneratorExit", "gen"),
    ("base-exception", "BaseException", "base"),
])
def test_a_throw_is_handler_throw_and_the_service_keeps_serving(service, tool_id, kind, name, text):
    answer = call(service, tool_id, {"kind": kind})
    assert answer["code"] == "handler-throw", answer
    assert answer["message"] == 'Handler for tool "%s" threw: %s: %s' % (tool_id, name, text)
    assert answer["toolId"] == tool_id
    cause = answer["cause"]
    assert list(cause) == ["name", "message", "stack"]
    assert cause["name"] == name
    assert cause["message"] == text
    assert "fail_here" in cause["stack"] and "throws.py" in cause["stack"]
    assert name in cause["stack"].rstrip().splitlines()[-1]
    assert service.proc.poll() is None
    assert service.request("GET", "/healthz", token=False).status == 200
    assert output_of(service, "plain") == {"plain": True}


# -- how pack modules import ------------------------------------------------------------------------

def test_relative_imports_and_folders_without_init(service):
    got = output_of(service, "relative", {"text": "hey"})
    assert got == {"shout": "HEY!", "words": ["alpha", "beta"], "topLevel": ["alpha", "beta"],
                   "module": "_kindgi_pack.tools.sub.relative", "package": "_kindgi_pack.tools.sub"}


# -- the call record ------------------------------------------------------------------------------

def test_call_record_fields(service):
    ctx = {"tenantId": "ten-r", "runId": "run-r", "projectId": "proj-r", "orgId": "org-r", "requestId": "req-record"}
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736"
    resp = service.call_tool("plain", {}, ctx=ctx, headers={"traceparent": "00-%s-00f067aa0ba902b7-01" % trace_id})
    assert resp.json["kind"] == "result"
    record = service.wait_record("call", where=lambda r: r.get("requestId") == "req-record")
    assert list(record)[:14] == ["time", "level", "severity", "subsystem", "message", "traceId", "spanId",
                                 "requestId", "tenantId", "projectId", "orgId", "runId", "toolId", "event"]
    assert record["traceId"] == trace_id
    assert len(record["spanId"]) == 16 and record["spanId"] != "00f067aa0ba902b7"
    assert (record["tenantId"], record["projectId"], record["orgId"], record["runId"]) == \
        ("ten-r", "proj-r", "org-r", "run-r")
    assert (record["level"], record["kind"], record["target"], record["id"], record["toolId"], record["outcome"]) == \
        ("info", "call", "tool", "plain", "plain", "ok")
    assert (record["packId"], record["artifactVersion"]) == ("test-pack", "art-1")
    assert isinstance(record["durationMs"], int)
    assert record["message"] == "tool plain ok %dms" % record["durationMs"]
    assert record["inMessage"] == ["target", "id", "outcome", "durationMs"]


def test_call_record_of_a_failed_call_is_a_warning(service):
    call(service, "throw", {"kind": "value-error"})
    record = service.wait_record("call", where=lambda r: r.get("toolId") == "throw")
    assert record["level"] == "warn"
    assert record["outcome"] == "handler-throw"


# -- context variables ----------------------------------------------------------------------------

CONTEXT_VARS = '''
import contextvars
from kindgi import tool

USER = contextvars.ContextVar("user", default="nobody")
SET_AT_IMPORT = contextvars.ContextVar("set_at_import", default="no")
SET_AT_IMPORT.set("yes")


def swap_user(input):
    before = USER.get()
    USER.set(input["user"])
    return {"before": before, "setAtImport": SET_AT_IMPORT.get()}


@tool(description="A test tool.", id="sync-user", input={"type": "object"}, output={})
def sync_user(input):
    return swap_user(input)


@tool(description="A test tool.", id="async-user", input={"type": "object"}, output={})
async def async_user(input):
    return swap_user(input)
'''


def test_each_call_starts_from_the_context_variables_the_imports_set(launcher, tmp_path):
    """What one call sets in a ContextVar (a library's current user, say) is not seen by the next
    call on the same connection, and what a module set at import is seen by every call."""
    if subprocess.run([PYTHON, "-c", "import contextvars"], stderr=subprocess.DEVNULL, timeout=60).returncode:
        pytest.skip("Python 3.6 has no context variables")
    pack = PackWriter(tmp_path)
    pack.module("tools/users.py", CONTEXT_VARS)
    pack.tool("sync-user", "tools/users.py")
    pack.tool("async-user", "tools/users.py")
    service = launcher.start(pack.write())
    conn = service.connection()
    outputs = [service.call_tool(tool_id, {"user": "user-%d" % i}, conn=conn).json.get("output")
               for i, tool_id in enumerate(["sync-user", "sync-user", "async-user", "async-user", "sync-user"])]
    assert outputs == [{"before": "nobody", "setAtImport": "yes"}] * 5
