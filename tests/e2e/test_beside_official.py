"""End-to-end, side by side: this service and the official SDK's, on one pack, the same calls.

Where the protocol leaves it to the SDK (what a handler's return value
becomes on the wire, what ``ctx.log`` writes, which context variables a call
sees), the official service is the reference: each test sends the same calls
to both and compares what comes back, and the records pack code wrote.  The
official service (kindgi 0.1.10, Python 3.11+) runs from .venv-sdk/, made
once and reused (tests/e2e/indexing.py); without it the tests skip and say
why.  Runs only on the main interpreter.  The pack reuses test_tools.py's
modules for context variables and converted output, whose expectations
these tests prove against the official service.  A second pack, typed with
pydantic models, runs on ours with the stand-in and the SDK's pydantic (an
image with the pack's dependencies but not the SDK) beside the SDK itself.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import PackWriter, service_env
from indexing import require_sdk as sdk_python, without_kindgi
from test_tools import CONTEXT_VARS, CONVERTED

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KINDGI_TEST_PYTHON")) or sys.version_info < (3, 11),
    reason="the official service needs Python 3.11+; compared once, on the main interpreter")

PACK_CODE = CONTEXT_VARS + CONVERTED + '''
import dataclasses
from kindgi import guardrail
from kindgi.log import get_logger


@dataclasses.dataclass
class Point:
    x: int
    seen: datetime.date


@dataclasses.dataclass(frozen=True)
class Spot:
    x: int


@tool(description="A test tool.", id="converted-more", input={"type": "object"}, output={})
def converted_more(input):
    return {"point": Point(1, datetime.date(2026, 1, 1)), "pair": (1, "two"),
            "time": datetime.time(3, 4, 5, 500), "back": datetime.timedelta(days=-1, seconds=1),
            "complex": [complex(1, 2), complex(0, -1), complex(-1.5, -0.0), complex(1e20, 1e-7),
                        complex(float("inf"), float("nan"))]}


@tool(description="A test tool.", id="keyed", input={"type": "object"}, output={})
def keyed(input):
    return {"byDay": {datetime.date(2026, 1, 2): 5}, "byPair": {(1, ("a", 2.5)): True}, "byColor": {Color.RED: 1},
            "byNumber": {7: "int", 1.5: "float", True: "bool", float("inf"): "inf"}, "plain": {"a": 1},
            "bySpot": {Spot(1): "spot", (Spot(2), 3): "pair"}}


@tool(description="A test tool.", id="logs", input={"type": "object"}, output={})
def logs(input, ctx):
    try:
        raise ValueError("it broke")
    except ValueError as exc:
        ctx.log.warn("noted", err=exc, at=datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, UTC),
                     price=decimal.Decimal("1.50"), level="mine", message="mine too", self="me", n=1)
    ctx.log.info("stated", {"a": 1, "b": "two"}, in_message=["a", "missing"])
    ctx.log.child({"component": "db"}).info("from a child", {"q": 1})
    get_logger().info("from get_logger", {"r": 2})
    ctx.log.info("correlated", {"zeta": 1, "approvalId": "ap", "agentId": "ag", "flowVersion": "1.0.0",
                                "conversationId": "cv", "runTraceId": "rt", "parentRunId": "pr"})
    return {}


class Coded(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


@tool(description="A test tool.", id="secrets", input={"type": "object"}, output={})
def secrets(input, ctx):
    try:
        try:
            raise KeyError("inner kgi_sk_0123456789abcdefWXYZ")
        except KeyError as exc:
            raise Coded("outer Authorization: Bearer abc.def", 42) from exc
    except Coded as exc:
        ctx.log.error("masked Bearer xyz, postgres://app:pw@db/x", err=exc, other=exc, nested={"e": [exc]},
                      token="t", pass_word="p", Pass_Phrase="pp", promptTokens=12, url="ftp://u:p@h",
                      keys=["kgi_ak_short"])
    loop = {"n": 1}
    loop["self"] = loop
    ctx.log.info("shapes", loop=loop, deep={"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}},
                 at=datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, datetime.timezone(datetime.timedelta(hours=2))),
                 naive=datetime.datetime(2026, 1, 2), raw=b"kgi_bt_x", pair=(1, "Bearer q"))
    ctx.log.child({"subsystem": "audit"}).warn("from a bound subsystem", err="Bearer as text")
    return {}


@tool(description="A test tool.", id="awaits-cancel", input={"type": "object"}, output={})
async def awaits_cancel(input, ctx):
    import asyncio
    try:
        reason = await asyncio.wait_for(ctx.cancellation.wait_async(), 10)
    except asyncio.CancelledError:
        ctx.log.info("stopped at its await", {"reason": ctx.cancellation.reason, "run": input["run"]})
        raise
    ctx.log.info("went on past its await", {"reason": reason, "run": input["run"]})
    return {}


@tool(description="A test tool.", id="throws", input={"type": "object"}, output={})
def throws(input):
    raise {"value": ValueError, "exit": SystemExit, "lookup": KeyError}[input["kind"]]("went wrong")


@tool(description="A test tool.", id="not-json", input={"type": "object"}, output={})
def not_json(input):
    return {"fine": datetime.date(2026, 1, 2), "odd": object()}


@guardrail(id="dated", on_violation="block")
def dated(config, trace):
    return {"passed": True, "attributes": {"at": datetime.date(2026, 1, 2), "tags": {"one"}}}


class Wired:
    def to_wire(self):
        return {"passed": True}


@guardrail(id="wired", on_violation="block")
def wired(config, trace):
    return Wired()


@guardrail(id="nested-result", on_violation="block")
def nested_result(config, trace):
    from kindgi import CheckResult
    return CheckResult(passed=True, attributes={"trace": trace, "ratio": float("nan"), "pair": (float("inf"), 1)})
'''

CTX = {"tenantId": "tenant-beside", "runId": "run-beside", "requestId": "req-beside"}


@pytest.fixture(scope="module")
def both(module_launcher, tmp_path_factory):
    """``(ours, official)``, serving the same index."""
    sdk = sdk_python()
    pack = PackWriter(tmp_path_factory.mktemp("beside"))
    pack.module("tools/code.py", PACK_CODE)
    for tool_id in ("sync-user", "async-user", "converted", "converted-more", "keyed", "logs", "secrets", "awaits-cancel", "throws", "not-json"):
        pack.tool(tool_id, "tools/code.py")
    pack.guardrail("dated", "tools/code.py")
    pack.guardrail("wired", "tools/code.py")
    pack.guardrail("nested-result", "tools/code.py")
    index = pack.write()
    ours = module_launcher.start(index)
    official = module_launcher.spawn(["-m", "kindgi.pack", "serve", "--index", index], env=service_env(),
                                     python=sdk)
    if not official.wait_listening():
        pytest.fail("the official service did not start:\n%s" % "\n".join(official.raw_stderr[-20:]))
    return ours, official


def answers(service, calls):
    """The JSON answers to ``calls`` (tool id, input), one after another on one connection."""
    conn = service.connection()
    try:
        return [service.call_tool(tool_id, input, ctx=CTX, conn=conn).json for tool_id, input in calls]
    finally:
        conn.close()


def test_each_call_sees_the_context_variables_the_imports_set_and_none_a_call_set(both):
    calls = [(tool_id, {"user": "user-%d" % i})
             for i, tool_id in enumerate(["sync-user", "sync-user", "async-user", "async-user", "sync-user"])]
    ours, official = (answers(service, calls) for service in both)
    assert ours == official
    assert ours[1]["output"] == {"before": "nobody", "setAtImport": "yes"}


def test_what_a_handler_returns_becomes_the_same_json(both):
    ours, official = (answers(service, [("converted", {}), ("converted-more", {})]) for service in both)
    assert ours == official
    assert ours[1]["output"]["point"] == {"x": 1, "seen": "2026-01-01"}


def test_dict_keys_become_the_same_text(both):
    ours, official = (answers(service, [("keyed", {})]) for service in both)
    assert ours == official
    assert ours[0]["output"]["byPair"] == {"1,a,2.5": True}


def test_a_dict_check_result_becomes_the_same_json(both):
    ours, official = (service.call_check("dated").json for service in both)
    assert ours == official == {"v": 2, "kind": "check-result",
                                "result": {"passed": True, "attributes": {"at": "2026-01-02", "tags": ["one"]}}}


def test_an_object_with_a_to_wire_is_not_a_check_result_alike(both):
    ours, official = (service.call_check("wired").json for service in both)
    assert ours == official == {
        "v": 2, "kind": "error", "code": "output-validation-failed", "checkId": "wired",
        "message": 'Check "wired" returned Wired; a check returns a CheckResult, a dict with a boolean '
                   '`passed`, or a bool'}


def test_a_check_result_holding_a_trace_and_nan_becomes_the_same_json(both):
    """``to_wire``: the trace in its attributes without its None fields, NaN and infinities null."""
    trace = {"runId": "r", "tenantId": "t", "toolCalls": [{"toolId": "x", "toolName": "n", "at": "a"}]}
    ours, official = (service.call_check("nested-result", trace=trace).json for service in both)
    assert ours == official == {"v": 2, "kind": "check-result", "result": {"passed": True, "attributes": {
        "trace": {"runId": "r", "tenantId": "t", "toolCalls": [{"toolId": "x", "toolName": "n", "arguments": {}, "at": "a"}],
                  "toolResults": [], "modelCalls": [], "mode": "runtime"},
        "ratio": None, "pair": [None, 1]}}}


@pytest.mark.parametrize("tool_id, messages", [
    ("logs", ["noted", "stated", "from a child", "from get_logger", "correlated"]),
    ("secrets", ["masked Bearer [redacted], postgres://app:***@db/x", "shapes", "from a bound subsystem"]),
])
def test_pack_code_writes_the_same_records(both, tool_id, messages):
    """``ctx.log`` and ``kindgi.log.get_logger``: fields, errors, and the secrets masked in
    them.  This service also puts the pack's id and artifact version last on every record, as
    the upstream 2.7.0 service does; the SDK's ``get_logger`` records lack them."""
    written = []
    for service in both:
        assert answers(service, [(tool_id, {})])[0]["kind"] == "result"
        written.append([service.wait_record(None, where=lambda r, m=message: r.get("message") == m)
                        for message in messages])
    for ours, official in zip(*written):
        ours, official = dict(ours), dict(official)
        del ours["time"], official["time"]
        if "packId" not in official:
            assert list(ours)[-2:] == ["packId", "artifactVersion"]
            del ours["packId"], ours["artifactVersion"]
        assert (list(ours), ours) == (list(official), official)


def test_an_async_handler_past_its_deadline_stops_at_its_await_alike(both):
    """Even when it awaits ``wait_async`` (through ``wait_for``, a task of its own that wakes
    first): the task is cancelled before that can return, and the reason is set by then; the
    ``call`` record comes before what the handler logs."""
    for service in both:
        run = "deadline-%s" % id(service)
        answer = service.call_tool("awaits-cancel", {"run": run}, ctx=CTX, headers={"kindgi-timeout-ms": "200"}).json
        assert answer["code"] == "deadline-exceeded"
        stopped = service.wait_record(None, where=lambda r: r.get("run") == run)
        assert (stopped["message"], stopped["reason"]) == ("stopped at its await", "deadline-exceeded")
        ordered = [r for r in list(service.records) if r.get("run") == run or r.get("id") == "awaits-cancel"]
        assert [r["message"] for r in ordered][:2] == ["tool awaits-cancel deadline-exceeded %dms"
                                                       % ordered[0]["durationMs"], "stopped at its await"]


@pytest.mark.parametrize("head", [b"GET /healthz HTTP/1.1\r\n\r\n",
                                  b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                                  b"GET /healthz HTTP/1.0\r\n\r\n"])
def test_the_host_header_is_required_alike(both, head):
    """HTTP/1.1 needs exactly one Host (RFC 9112 section 3.2); HTTP/1.0 none."""
    ours, official = (service.raw(head, timeout=5).split(b" ", 2)[1] for service in both)
    assert ours == official


@pytest.mark.parametrize("kind", ["value", "exit", "lookup"])
def test_a_throw_is_the_same_answer(both, kind):
    """All but the stack, whose outer frames are each service's own."""
    ours, official = (answers(service, [("throws", {"kind": kind})])[0] for service in both)
    assert ours["cause"].pop("stack") and official["cause"].pop("stack")
    assert ours == official


def test_output_that_stays_not_json_is_refused_alike(both):
    """The code and the tool; the message's detail is each service's own words."""
    ours, official = (answers(service, [("not-json", {})])[0] for service in both)
    assert (ours["code"], ours["toolId"]) == (official["code"], official["toolId"]) == (
        "output-validation-failed", "not-json")
    prefix = 'Tool "not-json" handler produced output that is not JSON: '
    assert ours["message"].startswith(prefix) and official["message"].startswith(prefix)


# -- typed with pydantic: the stand-in beside the SDK ----------------------------------------------

TYPED_CODE = '''
import datetime
from typing import List, Optional
from pydantic import BaseModel, Field
from kindgi import tool


class Item(BaseModel):
    sku: str = Field(min_length=2)
    qty: int = Field(ge=1, default=1)


class OrderIn(BaseModel):
    customer_id: str = Field(alias="customerId")
    items: List[Item]
    when: Optional[datetime.date] = None


class OrderOut(BaseModel):
    total_items: int = Field(alias="totalItems")
    first: Item
    when: Optional[datetime.date] = None
    model_config = {"populate_by_name": True}


@tool(id="order", version="1.0.0")
def order(input: OrderIn, ctx) -> OrderOut:
    """Totals an order."""
    return OrderOut(total_items=sum(i.qty for i in input.items), first=input.items[0], when=input.when)


@tool(id="untyped-output", version="1.0.0")
def untyped_output(input: OrderIn) -> dict:
    """A dict holding a model."""
    return {"first": input.items[0], "count": len(input.items)}


@tool(id="which-kindgi", version="1.0.0")
def which_kindgi(input: dict) -> dict:
    """The kindgi module pack code got."""
    import kindgi
    return {"standIn": (kindgi.__doc__ or "").startswith("Stand-in")}

'''

# Guardrails are indexed from guardrails/ (elsewhere they are a file error, and no check is served).
TYPED_CHECK_CODE = '''
from pydantic import BaseModel, Field, field_validator
from kindgi import CheckResult, RunTrace, guardrail


class Limit(BaseModel):
    max_chars: int = Field(gt=0, default=10, alias="maxChars")

    @field_validator("max_chars")
    @classmethod
    def not_unlucky(cls, value):
        if value == 13:
            raise ValueError("13 is unlucky")
        return value


@guardrail(id="limit", on_violation="block")
def limit(config: Limit, trace: RunTrace):
    return CheckResult(passed=len(trace.output or "") <= config.max_chars, reason="long",
                       attributes={"max": config.max_chars, "calls": len(trace.tool_calls)})
'''

TRACE = {"runId": "r", "tenantId": "t", "output": "hello!",
         "toolCalls": [{"toolId": "x", "toolName": "n", "arguments": {}, "at": "2026-01-01T00:00:00Z"}]}


@pytest.fixture(scope="module")
def typed(module_launcher, tmp_path_factory):
    """``(ours, official)`` on a pack typed with pydantic models; ours with the stand-in and the SDK's
    pydantic (a user's image that has the pack's dependencies but not the SDK)."""
    sdk = sdk_python()
    folder = tmp_path_factory.mktemp("typed")
    (folder / "tools").mkdir()
    (folder / "tools" / "typed.py").write_text(TYPED_CODE)
    (folder / "guardrails").mkdir()
    (folder / "guardrails" / "limit.py").write_text(TYPED_CHECK_CODE)
    (folder / "pyproject.toml").write_text('[tool.kindgi.pack]\nid = "typed"\nversion = "1.0.0"\n'
                                           'description = "Typed"\n')
    index = folder / "index.json"
    subprocess.run([sdk, "-m", "kindgi.pack", "index", "--pack-dir", str(folder), "--artifact-version", "a1",
                    "--output", str(index)], check=True, stdout=subprocess.DEVNULL, timeout=120)
    *prefix, python, no_site = without_kindgi(sdk)   # env PYTHONPATH=<its packages but kindgi> python -S
    ours = module_launcher.start(index, prefix=prefix, python=python, flags=[no_site])
    official = module_launcher.spawn(["-m", "kindgi.pack", "serve", "--index", index], env=service_env(),
                                     python=sdk)
    assert official.wait_listening(), "\n".join(official.raw_stderr[-20:])
    return ours, official


TYPED_CALLS = [
    ("order", {"customerId": "c1", "items": [{"sku": "ab", "qty": 2}, {"sku": "cd"}], "when": "2026-01-02"}),
    ("order", {"customerId": "c1", "items": [{"sku": "a"}]}),     # the model refuses it
    ("order", {"customer_id": "c1", "items": []}),                # the schema refuses it
    ("untyped-output", {"customerId": "c1", "items": [{"sku": "ab"}]}),
]


def test_ours_runs_the_typed_pack_with_the_stand_in(typed):
    assert [answers(service, [("which-kindgi", {})])[0]["output"] for service in typed] == [
        {"standIn": True}, {"standIn": False}]


def test_typed_tools_answer_alike(typed):
    ours, official = (answers(service, TYPED_CALLS) for service in typed)
    assert ours == official
    assert ours[0]["output"] == {"totalItems": 3, "first": {"sku": "ab", "qty": 2}, "when": "2026-01-02"}


@pytest.mark.parametrize("config, trace", [({"maxChars": 5}, TRACE), ({}, {"runId": "r", "tenantId": "t"}),
                                           ({"maxChars": 0}, TRACE), ({}, {"tenantId": "t"}),
                                           ({"maxChars": 13}, TRACE)])
def test_typed_checks_answer_alike(typed, config, trace):
    ours, official = (service.call_check("limit", config=config, trace=trace).json for service in typed)
    assert ours == official
    assert ours["kind"] == "check-result" or ours["code"] == "input-validation-failed", ours


def test_a_config_its_type_refuses_is_told_in_the_message_alike(typed):
    """The schema lets it through, the model's own validator refuses it: the message says where
    and what, as it does for the schema's refusal (a runtime reports a check's error by its message)."""
    ours, official = (service.call_check("limit", config={"maxChars": 13}, trace=TRACE).json for service in typed)
    assert ours["message"] == official["message"] == (
        'Check "limit" config failed validation at /maxChars: Value error, 13 is unlucky')
