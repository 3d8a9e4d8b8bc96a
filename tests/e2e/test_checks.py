"""End-to-end: guardrail checks (README: Protocol coverage).

Resolution by ``checkId`` then ``id``, ``configSchema`` validation without
defaults, the trace given as a ``RunTrace`` (or raw when the check asks for
another type), throws, and how each kind of return value is normalised or
refused.  One service, one pack with many checks.
"""

import pytest

from conftest import PackWriter

CHECKS = '''\
import asyncio, datetime
from typing import Any
from kindgi import guardrail, CheckResult, RunTrace

class LeavingMapping(dict):
    def items(self):
        raise SystemExit("leaving while being read")


@guardrail(id="g-one", check_id="chk-one", on_violation="block")
def one(config, trace):
    return CheckResult(passed=True, reason="one")

@guardrail(id="plain", on_violation="block")
def plain(config, trace):
    return True

@guardrail(id="own-id", check_id="other-check-id", on_violation="block")
def own_id(config, trace):
    return {"passed": True, "matched": "own id"}

@guardrail(id="config-echo", on_violation="block")
def config_echo(config, trace):
    return {"passed": True, "attributes": {"config": dict(config), "type": type(config).__name__}}

@guardrail(id="trace-view", on_violation="block")
def trace_view(config, trace):
    return {"passed": True, "attributes": {
        "isRunTrace": isinstance(trace, RunTrace),
        "run_id": trace.run_id, "tenant_id": trace.tenant_id, "project_id": trace.project_id,
        "org_id": trace.org_id, "agent_id": trace.agent_id, "output": trace.output, "mode": trace.mode,
        "user_input": trace.user_input, "turn_number": trace.turn_number,
        "total_cost_usd": trace.total_cost_usd,
        "tool_calls": [[c.tool_id, c.tool_name, c.arguments, c.at] for c in trace.tool_calls],
        "tool_results": [[r.tool_call_id, r.output, r.at] for r in trace.tool_results],
        "model_calls": [[m.provider_id, m.model, m.prompt_tokens, m.completion_tokens, m.at]
                        for m in trace.model_calls]}}

@guardrail(id="trace-raw", on_violation="block")
def trace_raw(config: dict, trace: Any):
    return {"passed": True, "attributes": {"trace": trace}}

@guardrail(id="trace-typed", on_violation="block")
def trace_typed(config, trace: RunTrace):
    return {"passed": True, "attributes": {"run": trace.run_id}}

@guardrail(id="returns", on_violation="block")
def returns(config, trace):
    kind = config["kind"]
    if kind == "check-result-full":
        return CheckResult(passed=False, reason="too long", judge_response="judged", attributes={"n": 3})
    if kind == "check-result-min":
        return CheckResult(passed=True)
    if kind == "check-result-camel":
        return CheckResult(passed=True, judgeResponse="camel")
    if kind == "check-result-extra":
        return CheckResult(passed=True, score=0.5, labels=["a"])
    if kind == "leaving-attributes":
        return {"passed": True, "attributes": LeavingMapping(a=1)}
    if kind == "dated":
        return {"passed": True, "attributes": {"at": datetime.date(2026, 1, 2), "tags": {"one"}}}
    return config["value"]

@guardrail(id="boom", on_violation="block")
def boom(config, trace):
    raise ValueError("check broke")

@guardrail(id="exit", on_violation="block")
def exit_check(config, trace):
    raise SystemExit("leaving")

@guardrail(id="async-check", on_violation="block")
async def async_check(config, trace):
    await asyncio.sleep(0.01)
    return CheckResult(passed=True, reason="async " + trace.run_id)

@guardrail(id="odd-wire", on_violation="block")
def odd_wire(config, trace):
    class Odd:
        def to_wire(self):
            raise RuntimeError("no wire today")
    return Odd()
'''

EMPTY = "VALUE = 1\n"

LIMIT_SCHEMA = {"type": "object", "required": ["maxChars"], "additionalProperties": False,
                "properties": {"maxChars": {"type": "integer", "exclusiveMinimum": 0, "default": 100},
                               "mode": {"type": "string", "default": "strict"}}}


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("checks"))
    pack.module("checks/main.py", CHECKS)
    pack.module("checks/limit.py", CHECKS.replace('id="config-echo"', 'id="limit"'))
    pack.module("checks/empty.py", EMPTY)
    pack.guardrail("g-one", "checks/main.py", check_id="chk-one")
    pack.guardrail("plain", "checks/main.py")
    pack.guardrail("other-check-id", "checks/main.py")
    pack.guardrail("config-echo", "checks/main.py")
    pack.guardrail("limit", "checks/limit.py", config_schema=LIMIT_SCHEMA)
    for name in ("trace-view", "trace-raw", "trace-typed", "returns", "boom", "exit", "async-check", "odd-wire"):
        pack.guardrail(name, "checks/main.py")
    pack.guardrail("ghost-guardrail", "checks/empty.py", check_id="ghost")
    return module_launcher.start(pack.write())


TRACE = {"runId": "run-1", "tenantId": "tenant-1"}


def check(service, check_id, config=None, trace=None):
    resp = service.call_check(check_id, config=config, trace=trace if trace is not None else dict(TRACE))
    assert resp.status == 200, resp
    return resp.json


def result_of(service, check_id, config=None, trace=None):
    answer = check(service, check_id, config, trace)
    assert answer["kind"] == "check-result", answer
    return answer["result"]


def error(code, message, check_id, **extra):
    answer = {"v": 2, "kind": "error", "code": code, "message": message, "checkId": check_id}
    answer.update(extra)
    return answer


# -- resolution ----------------------------------------------------------------------

def test_check_is_called_by_its_check_id(service):
    assert check(service, "chk-one") == {"v": 2, "kind": "check-result", "result": {"passed": True, "reason": "one"}}


def test_calling_by_id_when_a_different_check_id_exists_is_not_in_pack(service):
    assert check(service, "g-one") == error("check-not-in-pack", 'This pack has no check "g-one"', "g-one")


def test_check_without_check_id_is_called_by_its_id(service):
    assert result_of(service, "plain") == {"passed": True}


def test_module_guardrail_matches_by_its_own_id(service):
    assert result_of(service, "other-check-id") == {"passed": True, "matched": "own id"}


def test_unknown_check(service):
    assert check(service, "nope") == error("check-not-in-pack", 'This pack has no check "nope"', "nope")


def test_module_without_the_check_is_shape_invalid(service):
    assert check(service, "ghost") == error(
        "check-shape-invalid", "Module 'checks/empty.py' does not define check \"ghost\"", "ghost")


# -- config ----------------------------------------------------------------------------------

def test_config_schema_failure_message_names_the_place(service):
    answer = check(service, "limit", config={"maxChars": 0})
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Check "limit" config failed validation at /maxChars: must be > 0'
    assert answer["checkId"] == "limit"
    assert answer["issues"] == [{"instancePath": "/maxChars", "schemaPath": "#/properties/maxChars/exclusiveMinimum",
                                 "keyword": "exclusiveMinimum", "params": {"comparison": ">", "limit": 0},
                                 "message": "must be > 0"}]


def test_config_failure_at_the_root_has_no_place(service):
    answer = check(service, "limit", config={})
    assert answer["message"] == "Check \"limit\" config failed validation: must have required property 'maxChars'"
    assert answer["issues"][0]["keyword"] == "required"


def test_config_failure_for_an_extra_property(service):
    answer = check(service, "limit", config={"maxChars": 5, "bogus": 1})
    assert answer["message"] == 'Check "limit" config failed validation: must NOT have additional properties'


def test_config_type_failure(service):
    answer = check(service, "limit", config={"maxChars": "ten"})
    assert answer["message"] == 'Check "limit" config failed validation at /maxChars: must be integer'


def test_config_gets_no_schema_defaults(service):
    result = result_of(service, "limit", config={"maxChars": 5})
    assert result == {"passed": True, "attributes": {"config": {"maxChars": 5}, "type": "dict"}}


def test_config_without_schema_is_passed_as_sent(service):
    config = {"anything": [1, {"x": None}], "n": 1.5}
    assert result_of(service, "config-echo", config=config)["attributes"]["config"] == config


# -- trace ----------------------------------------------------------------------------------------

FULL_TRACE = {
    "runId": "run-7", "tenantId": "ten-7", "projectId": "proj", "orgId": "org", "agentId": "agent",
    "output": "final answer", "userInput": "question", "turnNumber": 2, "totalCostUsd": 0.25,
    "toolCalls": [{"toolId": "search", "toolName": "Search", "arguments": {"q": "x"}, "at": "2026-01-01T00:00:00Z"}],
    "toolResults": [{"toolCallId": "call-1", "output": {"hits": 1}, "at": "2026-01-01T00:00:01Z"}],
    "modelCalls": [{"providerId": "p", "model": "m", "promptTokens": 10, "completionTokens": 5,
                    "at": "2026-01-01T00:00:02Z"}],
    "somethingNew": {"kept": True},
}


def test_trace_is_a_run_trace(service):
    attributes = result_of(service, "trace-view", trace=FULL_TRACE)["attributes"]
    assert attributes == {
        "isRunTrace": True, "run_id": "run-7", "tenant_id": "ten-7", "project_id": "proj", "org_id": "org",
        "agent_id": "agent", "output": "final answer", "mode": "runtime", "user_input": "question",
        "turn_number": 2, "total_cost_usd": 0.25,
        "tool_calls": [["search", "Search", {"q": "x"}, "2026-01-01T00:00:00Z"]],
        "tool_results": [["call-1", {"hits": 1}, "2026-01-01T00:00:01Z"]],
        "model_calls": [["p", "m", 10, 5, "2026-01-01T00:00:02Z"]]}


def test_minimal_trace_has_empty_lists_and_runtime_mode(service):
    attributes = result_of(service, "trace-view")["attributes"]
    assert attributes["tool_calls"] == attributes["tool_results"] == attributes["model_calls"] == []
    assert attributes["mode"] == "runtime"
    assert attributes["output"] is None


@pytest.mark.parametrize("check_id", ["plain", "trace-typed"])
def test_trace_missing_run_id_fails_validation(service, check_id):
    answer = check(service, check_id, trace={"tenantId": "t"})
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Check "%s" trace failed validation' % check_id
    assert answer["checkId"] == check_id
    issue = answer["issues"][0]
    assert issue["instancePath"] == "/runId"
    assert issue["keyword"] == "missing"
    assert issue["message"] == "Field required"


def test_trace_that_is_not_an_object_fails_validation(service):
    answer = check(service, "plain", trace="just text")
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Check "plain" trace failed validation'
    assert answer["issues"][0]["instancePath"] == ""
    assert answer["issues"][0]["keyword"] == "model_type"


def test_missing_trace_fails_validation(service):
    resp = service.invoke({"v": 2, "kind": "check-invoke", "check": {"id": "plain"}, "config": {}})
    assert resp.json["code"] == "input-validation-failed"
    assert resp.json["message"] == 'Check "plain" trace failed validation'


def test_a_trace_with_many_issues_answers_the_first_thousand(service):
    """Each empty tool call lacks three fields: 1,200 issues, of which the answer carries 1,000
    and the message counts the rest (100,000 would be 38 MB of answer)."""
    answer = check(service, "plain", trace={"runId": "r", "tenantId": "t", "toolCalls": [{}] * 400})
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Check "plain" trace failed validation; 200 more issues left out'
    assert len(answer["issues"]) == 1000
    assert answer["issues"][-1]["instancePath"] == "/toolCalls/333/toolId"


def test_trace_with_a_run_id_of_the_wrong_type_fails(service):
    answer = check(service, "plain", trace={"runId": 5, "tenantId": "t"})
    assert answer["code"] == "input-validation-failed"
    assert answer["issues"][0]["instancePath"] == "/runId"


def test_other_annotation_gets_the_raw_trace(service):
    assert result_of(service, "trace-raw", trace="just text")["attributes"] == {"trace": "just text"}
    assert result_of(service, "trace-raw", trace={"x": [1]})["attributes"] == {"trace": {"x": [1]}}


# -- results ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kind,expected", [
    ("check-result-full", {"passed": False, "reason": "too long", "judgeResponse": "judged", "attributes": {"n": 3}}),
    ("check-result-min", {"passed": True}),
    ("check-result-camel", {"passed": True, "judgeResponse": "camel"}),
    ("check-result-extra", {"passed": True, "score": 0.5, "labels": ["a"]}),
])
def test_check_result_objects_become_camel_case_wire(service, kind, expected):
    assert result_of(service, "returns", config={"kind": kind}) == expected


@pytest.mark.parametrize("value,expected", [
    (True, {"passed": True}), (False, {"passed": False}),
    ({"passed": False, "reason": "r", "extra": [1]}, {"passed": False, "reason": "r", "extra": [1]}),
    ({"passed": True}, {"passed": True}),
])
def test_bools_and_dicts_are_accepted(service, value, expected):
    assert result_of(service, "returns", config={"kind": "value", "value": value}) == expected


@pytest.mark.parametrize("value,type_name", [
    (1, "int"), (0, "int"), ("yes", "str"), (None, "NoneType"), ([True], "list"), (1.0, "float"),
    ({"passed": 1}, "dict"), ({"passed": "true"}, "dict"), ({"reason": "no passed"}, "dict"), ({}, "dict"),
])
def test_other_results_are_refused_with_their_type(service, value, type_name):
    assert check(service, "returns", config={"kind": "value", "value": value}) == error(
        "output-validation-failed",
        'Check "returns" returned %s; a check returns a CheckResult, a dict with a boolean `passed`, or a bool'
        % type_name, "returns")


def test_a_dict_result_is_converted_as_the_sdk_converts_it(service):
    assert result_of(service, "returns", config={"kind": "dated"}) == {
        "passed": True, "attributes": {"at": "2026-01-02", "tags": ["one"]}}


def test_a_result_whose_to_wire_raises_is_an_answer_not_a_500(service):
    answer = check(service, "odd-wire")
    assert answer["code"] in ("handler-throw", "output-validation-failed")
    assert answer["checkId"] == "odd-wire"
    assert service.proc.poll() is None


def test_a_result_that_raises_system_exit_when_read_is_an_answer(service):
    for _ in range(2):
        resp = service.call_check("returns", config={"kind": "leaving-attributes"})
        assert resp.status == 200, resp
        assert resp.json["kind"] == "error"
        assert resp.json["checkId"] == "returns"
    assert result_of(service, "plain") == {"passed": True}


# -- running --------------------------------------------------------------------------------------

def test_check_throw(service):
    answer = check(service, "boom")
    assert answer["code"] == "handler-throw"
    assert answer["message"] == 'Check "boom" evaluate() threw: ValueError: check broke'
    assert answer["checkId"] == "boom"
    assert answer["cause"]["name"] == "ValueError"
    assert answer["cause"]["message"] == "check broke"
    assert "boom" in answer["cause"]["stack"]


def test_check_system_exit_is_a_throw_and_the_service_lives(service):
    answer = check(service, "exit")
    assert answer["message"] == 'Check "exit" evaluate() threw: SystemExit: leaving'
    assert result_of(service, "plain") == {"passed": True}


def test_async_check(service):
    assert result_of(service, "async-check", trace={"runId": "r-async", "tenantId": "t"}) == {
        "passed": True, "reason": "async r-async"}


def test_check_call_record(service):
    # The shared service has other tests' records of "plain", some still on their way: a trace id
    # of its own tells this call's.
    trace_id = "4bf92f3577b34da6a3ce929d0e0e4737"
    resp = service.call_check("plain", trace=dict(TRACE), headers={"traceparent": "00-%s-00f067aa0ba902b7-01" % trace_id})
    assert resp.status == 200 and resp.json["kind"] == "check-result", resp
    record = service.wait_record("call", where=lambda r: r.get("traceId") == trace_id)
    assert record["target"] == "check"
    assert record["id"] == "plain"
    assert record["outcome"] == "ok"


def test_of_two_entries_with_one_check_id_the_last_is_the_check(launcher, tmp_path):
    """As on the official service (the SDK's indexer writes both when one guardrail's check_id is
    another's id): the last entry's module and config schema answer, and /v1/info names it once."""
    pack = PackWriter(tmp_path / "pack")
    for name, passed in (("first", "True"), ("last", "False")):
        pack.module("checks/%s.py" % name, "from kindgi import guardrail\n\n"
                    "@guardrail(id=\"%s\", check_id=\"same\", on_violation=\"block\")\n"
                    "def check(config, trace):\n    return {\"passed\": %s, \"reason\": \"%s\"}\n"
                    % (name, passed, name))
    pack.guardrail("first", "checks/first.py", check_id="same", config_schema={"type": "object"})
    pack.guardrail("last", "checks/last.py", check_id="same", config_schema={"maxProperties": 0})
    service = launcher.start(pack.write())
    assert result_of(service, "same") == {"passed": False, "reason": "last"}
    assert check(service, "same", config={"a": 1})["code"] == "input-validation-failed"
    assert service.request("GET", "/v1/info").json["checks"] == ["same"]
