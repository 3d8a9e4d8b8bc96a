"""End-to-end: the messages of an invoke (README: Protocol coverage; the protocol's ``errorCode`` list).

Every envelope error with its exact text, and each of the 14 error
codes reached through the real service.  ``handler-import-failed`` is the
exception: the service imports every module before it listens and keeps
the modules, so an import that fails is a ``boot-failed`` problem and can't
come back at call time; ``test_an_import_failure_is_a_boot_problem`` pins
that.  ``cancelled`` has no answer (the caller left); it shows in the call
record.  The details of each code live in test_tools, test_checks and
test_deadlines; here each is reached once, with its exact message.
"""

import json
import socket
import time

import pytest

from conftest import TOKEN, PackWriter

TOOLS = '''\
import time
from kindgi import tool

@tool(description="A test tool.", id="echo", input={"type": "object"}, output={})
def echo(input):
    return {"input": input}

@tool(description="A test tool.", id="strict", input={"type": "object"}, output={})
def strict(input):
    return {"ok": True}

@tool(description="A test tool.", id="bad-out", input={"type": "object"}, output={})
def bad_out(input):
    return {"n": "not a number"}

@tool(description="A test tool.", id="not-json", input={"type": "object"}, output={})
def not_json(input):
    return {"s": {object()}}

@tool(description="A test tool.", id="boom", input={"type": "object"}, output={})
def boom(input):
    raise ValueError("it broke")

@tool(description="A test tool.", id="sleepy", input={"type": "object"}, output={})
def sleepy(input, ctx):
    ctx.cancellation.wait(5)
    return {}
'''

MULTI = '''\
from kindgi import tool

@tool(description="A test tool.", id="multi", version="%s", input={"type": "object"}, output={})
def multi(input):
    return {"version": "%s"}
'''

OTHER = '''\
from kindgi import tool

@tool(description="A test tool.", id="someone-else", input={"type": "object"}, output={})
def someone_else(input):
    return {}
'''

CHECKS = '''\
from kindgi import guardrail

@guardrail(id="ok", on_violation="block")
def ok(config, trace):
    return True

@guardrail(id="limit", on_violation="block")
def limit(config, trace):
    return True
'''

EMPTY = "X = 1\n"

STRICT_INPUT = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
INT_OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}}


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("messages"))
    pack.module("tools/main.py", TOOLS)
    pack.module("tools/multi1.py", MULTI % ("1.0.0", "1.0.0"))
    pack.module("tools/multi2.py", MULTI % ("2.0.0", "2.0.0"))
    pack.module("tools/other.py", OTHER)
    pack.module("checks/main.py", CHECKS)
    pack.module("checks/empty.py", EMPTY)
    pack.tool("echo", "tools/main.py", input={})
    pack.tool("strict", "tools/main.py", input=STRICT_INPUT)
    pack.tool("bad-out", "tools/main.py", output=INT_OUTPUT)
    pack.tool("not-json", "tools/main.py")
    pack.tool("boom", "tools/main.py")
    pack.tool("sleepy", "tools/main.py")
    pack.tool("multi", "tools/multi1.py", version="1.0.0")
    pack.tool("multi", "tools/multi2.py", version="2.0.0")
    pack.tool("shapeless", "tools/other.py")
    pack.guardrail("ok", "checks/main.py")
    pack.guardrail("limit", "checks/main.py",
                   config_schema={"type": "object",
                                  "properties": {"maxChars": {"type": "integer", "exclusiveMinimum": 0}}})
    pack.guardrail("ghost", "checks/empty.py")
    return module_launcher.start(pack.write())


def post(service, body):
    """POST raw bytes to /v1/invoke as JSON; the answer must be a 200 message."""
    resp = service.request("POST", "/v1/invoke", body=body, headers={"content-type": "application/json"})
    assert resp.status == 200, resp
    return resp


def send(service, message):
    return post(service, json.dumps(message).encode()).json


def error(code, message, **extra):
    answer = {"v": 2, "kind": "error", "code": code, "message": message}
    answer.update(extra)
    return answer


CTX = {"tenantId": "t", "runId": "r"}


def tool_message(**overrides):
    message = {"v": 2, "kind": "invoke", "tool": {"id": "echo"}, "input": {"a": 1}, "ctx": dict(CTX)}
    message.update(overrides)
    return {k: v for k, v in message.items() if v is not DROP}


def check_message(**overrides):
    message = {"v": 2, "kind": "check-invoke", "check": {"id": "ok"}, "config": {},
               "trace": {"runId": "r", "tenantId": "t"}}
    message.update(overrides)
    return {k: v for k, v in message.items() if v is not DROP}


DROP = object()
NOT_JSON = error("malformed-message", "Request body is not valid JSON")


# -- not JSON, not an object --------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"", b"not json", b"{", b'{"v":2,}', b"\xff\xfe{}", b'{"v":2,"kind":"invoke","x":"\xc3"}',
    b'{"v":NaN}', b'{"v":2,"x":Infinity}', b'{"v":2,"x":-Infinity}', b"{'v':2}", b'{"v":2} {}',
])
def test_body_that_is_not_json_is_malformed(service, body):
    resp = post(service, body)
    assert resp.body == b'{"v":2,"kind":"error","code":"malformed-message","message":"Request body is not valid JSON"}'


@pytest.mark.parametrize("body", [b"[]", b'[{"v":2}]', b'"invoke"', b"2", b"null", b"true", b"1.5"])
def test_body_that_is_not_an_object_is_malformed(service, body):
    assert post(service, body).json == error("malformed-message", "Message must be a JSON object")


def test_utf8_bom_is_not_json(service):
    assert post(service, b"\xef\xbb\xbf" + json.dumps(tool_message()).encode()).json == NOT_JSON


# -- v -------------------------------------------------------------------------------

@pytest.mark.parametrize("v,shown", [
    (DROP, "null"), (None, "null"), ("2", '"2"'), (True, "true"), (False, "false"), (1, "1"), (3, "3"),
    (2.5, "2.5"), (-2, "-2"), ([2], "[2]"), ("v2", '"v2"'), ({"a": [1, "\u00fc"]}, '{"a": [1, "\\u00fc"]}'),
])
def test_wrong_protocol_version(service, v, shown):
    """The value as the SDK's ``json.dumps`` shows it: non-ASCII escaped, ``, `` and ``: `` between items."""
    assert send(service, tool_message(v=v)) == error("unknown-protocol-version", "Expected protocol v2, got %s" % shown)


def test_v_2_point_0_is_accepted(service):
    assert post(service, b'{"v":2.0,"kind":"invoke","tool":{"id":"echo"},"input":{"a":1},'
                         b'"ctx":{"tenantId":"t","runId":"r"}}').json == {"v": 2, "kind": "result",
                                                                           "output": {"input": {"a": 1}}}


def test_version_is_checked_before_kind(service):
    assert send(service, {"v": 3, "kind": "bogus"})["code"] == "unknown-protocol-version"


# -- kind ----------------------------------------------------------------------------

@pytest.mark.parametrize("kind,shown", [
    (DROP, "null"), (None, "null"), ("result", '"result"'), ("Invoke", '"Invoke"'), (5, "5"),
    ("check", '"check"'), ("", '""'), ("\u00e9t\u00e9", '"\\u00e9t\\u00e9"'),
])
def test_unknown_kind(service, kind, shown):
    assert send(service, tool_message(kind=kind)) == error("unexpected-message-kind", "Unknown request kind %s" % shown)


# -- invoke fields ---------------------------------------------------------------------

@pytest.mark.parametrize("tool", [DROP, None, "echo", [], {}, {"id": ""}, {"id": 5}, {"id": None},
                                  {"version": "1.0.0"}])
def test_tool_id_is_required(service, tool):
    assert send(service, tool_message(tool=tool)) == error("malformed-message", "`tool.id` is required")


@pytest.mark.parametrize("version", [1, 1.0, True, [], {}])
def test_tool_version_must_be_a_string(service, version):
    assert send(service, tool_message(tool={"id": "echo", "version": version})) == \
        error("malformed-message", "`tool.version` must be a string")


def test_tool_version_null_is_no_version(service):
    assert send(service, tool_message(tool={"id": "echo", "version": None}))["kind"] == "result"


@pytest.mark.parametrize("ctx", [DROP, None, [], "ctx", {}, {"tenantId": "t"}, {"runId": "r"},
                                 {"tenantId": 1, "runId": "r"}, {"tenantId": "t", "runId": None}])
def test_ctx_needs_tenant_and_run(service, ctx):
    assert send(service, tool_message(ctx=ctx)) == error("malformed-message",
                                                         "`ctx` needs string `tenantId` and `runId`")


def test_empty_tenant_and_run_strings_are_accepted(service):
    assert send(service, tool_message(ctx={"tenantId": "", "runId": ""}))["kind"] == "result"


def test_input_is_not_checked_by_the_envelope(service):
    assert send(service, tool_message(input=DROP)) == {"v": 2, "kind": "result", "output": {"input": None}}
    assert send(service, tool_message(input=[1, "x"])) == {"v": 2, "kind": "result", "output": {"input": [1, "x"]}}


def test_envelope_fields_are_checked_in_order(service):
    assert send(service, tool_message(tool={"id": 1, "version": 1}, ctx=None))["message"] == "`tool.id` is required"
    assert send(service, tool_message(tool={"id": "echo", "version": 1}, ctx=None))["message"] == \
        "`tool.version` must be a string"


def test_unknown_fields_are_ignored(service):
    message = tool_message(extra={"x": 1}, ctx=dict(CTX, unknownKey=[1], requestId="req"))
    message["tool"]["extra"] = True
    assert send(service, message) == {"v": 2, "kind": "result", "output": {"input": {"a": 1}}}


# -- check-invoke fields ----------------------------------------------------------------

@pytest.mark.parametrize("check", [DROP, None, "ok", [], {}, {"id": ""}, {"id": 3}])
def test_check_id_is_required(service, check):
    assert send(service, check_message(check=check)) == error("malformed-message", "`check.id` is required")


@pytest.mark.parametrize("config", [DROP, None, [], "x", 0, True])
def test_config_must_be_an_object(service, config):
    assert send(service, check_message(config=config)) == error("malformed-message", "`config` must be an object")


def test_check_id_is_checked_before_config(service):
    assert send(service, check_message(check={}, config=None))["message"] == "`check.id` is required"


def test_trace_is_not_checked_by_the_envelope(service):
    answer = send(service, check_message(trace=DROP))
    assert answer["code"] != "malformed-message"
    assert answer["checkId"] == "ok"


def test_a_check_invoke_needs_no_ctx(service):
    assert send(service, check_message()) == {"v": 2, "kind": "check-result", "result": {"passed": True}}


# -- exact bytes and key order ------------------------------------------------------------

def test_error_key_order_and_bytes(service):
    resp = post(service, json.dumps(tool_message(tool={"id": "nope"})).encode())
    assert resp.body == b'{"v":2,"kind":"error","code":"tool-not-in-pack",' \
                        b'"message":"This pack has no tool \\"nope\\"",' \
                        b'"toolId":"nope"}'


def test_error_with_issues_key_order(service):
    resp = post(service, json.dumps(tool_message(tool={"id": "strict"}, input={})).encode())
    assert list(resp.json) == ["v", "kind", "code", "message", "toolId", "issues"]


def test_error_with_cause_key_order(service):
    resp = post(service, json.dumps(tool_message(tool={"id": "boom"})).encode())
    assert list(resp.json) == ["v", "kind", "code", "message", "toolId", "cause"]
    assert list(resp.json["cause"]) == ["name", "message", "stack"]


def test_non_ascii_ids_are_written_as_utf8(service):
    resp = post(service, json.dumps(tool_message(tool={"id": "t\u00f6\u00f6l-\u2603"})).encode())
    assert '"This pack has no tool \\"t\u00f6\u00f6l-\u2603\\""'.encode("utf-8") in resp.body


# -- the 14 error codes ------------------------------------------------------------------------

def test_code_input_validation_failed(service):
    answer = send(service, tool_message(tool={"id": "strict"}, input={}))
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Tool "strict" input failed validation'
    assert answer["toolId"] == "strict"
    assert answer["issues"] == [{"instancePath": "", "schemaPath": "#/required", "keyword": "required",
                                 "params": {"missingProperty": "name"},
                                 "message": "must have required property 'name'"}]


def test_code_output_validation_failed(service):
    answer = send(service, tool_message(tool={"id": "bad-out"}))
    assert answer["code"] == "output-validation-failed"
    assert answer["message"] == 'Tool "bad-out" handler produced output that failed validation'
    assert answer["issues"][0]["instancePath"] == "/n"


def test_code_output_validation_failed_for_output_that_is_not_json(service):
    answer = send(service, tool_message(tool={"id": "not-json"}))
    assert answer["code"] == "output-validation-failed"
    assert answer["message"].startswith('Tool "not-json" handler produced output that is not JSON: ')


def test_an_import_failure_is_a_boot_problem(launcher, tmp_path):
    """``handler-import-failed`` can't be reached: a failing import stops the boot instead."""
    pack = PackWriter(tmp_path)
    pack.module("tools/broken.py", "raise ImportError('no such thing')\n")
    pack.tool("broken", "tools/broken.py")
    service = launcher.start(pack.write(), expect_listening=False)
    assert service.wait_exit() == 1
    record = service.records_of("boot-failed")[0]
    assert record["problems"] == ["broken: no such thing"]
    assert not service.records_of("listening")


def test_code_handler_shape_invalid(service):
    assert send(service, tool_message(tool={"id": "shapeless"})) == error(
        "handler-shape-invalid", "Module 'tools/other.py' does not define handler \"shapeless\"", toolId="shapeless")


def test_code_handler_throw(service):
    answer = send(service, tool_message(tool={"id": "boom"}))
    assert answer["code"] == "handler-throw"
    assert answer["message"] == 'Handler for tool "boom" threw: ValueError: it broke'
    assert answer["cause"]["name"] == "ValueError"
    assert answer["cause"]["message"] == "it broke"


def test_code_check_shape_invalid(service):
    assert send(service, check_message(check={"id": "ghost"})) == error(
        "check-shape-invalid", "Module 'checks/empty.py' does not define check \"ghost\"", checkId="ghost")


def test_code_malformed_message(service):
    assert post(service, b"{").json == NOT_JSON


def test_code_unknown_protocol_version(service):
    assert send(service, tool_message(v=1))["code"] == "unknown-protocol-version"


def test_code_unexpected_message_kind(service):
    assert send(service, tool_message(kind="result"))["code"] == "unexpected-message-kind"


def test_code_tool_not_in_pack(service):
    assert send(service, tool_message(tool={"id": "nope"})) == error(
        "tool-not-in-pack", 'This pack has no tool "nope"', toolId="nope")


def test_code_check_not_in_pack(service):
    assert send(service, check_message(check={"id": "nope"})) == error(
        "check-not-in-pack", 'This pack has no check "nope"', checkId="nope")


def test_code_tool_version_mismatch(service):
    assert send(service, tool_message(tool={"id": "multi"})) == error(
        "tool-version-mismatch", 'Tool "multi" is 1.0.0, 2.0.0 in this pack; the caller named none', toolId="multi")
    assert send(service, tool_message(tool={"id": "multi", "version": "2.0.0"}))["output"] == {"version": "2.0.0"}


def test_code_input_validation_failed_for_a_check_config(service):
    answer = send(service, check_message(check={"id": "limit"}, config={"maxChars": 0}))
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Check "limit" config failed validation at /maxChars: must be > 0'
    assert answer["checkId"] == "limit"


def test_code_deadline_exceeded(service):
    resp = service.request("POST", "/v1/invoke", body=tool_message(tool={"id": "sleepy"}),
                           headers={"kindgi-timeout-ms": "200"})
    assert resp.status == 200
    assert resp.json == error("deadline-exceeded", "sleepy passed its deadline", toolId="sleepy")


def test_code_cancelled_is_in_the_call_record(service):
    body = json.dumps(tool_message(tool={"id": "sleepy"}, ctx=dict(CTX, requestId="cancel-me"))).encode()
    head = ("POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\ncontent-type: application/json\r\n"
            "content-length: %d\r\n\r\n" % (TOKEN, len(body))).encode()
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(head + body)
        time.sleep(0.3)
    record = service.wait_record("call", where=lambda r: r.get("requestId") == "cancel-me")
    assert record["outcome"] == "cancelled"
    assert record["message"].startswith("tool sleepy cancelled ")
