"""End-to-end: SDK-written packs run on the built-in ``kindgi`` stand-in (README: Writing a pack without the SDK).

The pack below uses every name and submodule of the SDK surface a pack
touches.  Its service runs with ``python -S`` (no site-packages), so
neither the real SDK nor pydantic can be imported and the stand-in is what
answers.  A second service proves pydantic models as input, output and
config types: with pydantic from the service's interpreter when it has
it, else from a copy installed once per interpreter with
``pip install --target`` into a cache under the temporary folder and linked
into the pack's module root (which is ``sys.path[0]`` for pack code, as a
vendored dependency would be).  Those tests skip, saying why, only when
that install fails.
"""

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from conftest import PYTHON, SERVICE, PackWriter, service_env

SURFACE = '''\
import asyncio
import kindgi
from kindgi import (tool, guardrail, http_tool, Tool, Guardrail, Agent, Flow, ToolContext, Cancellation,
                    CallCancelled, CheckResult, RunTrace, ToolCallRecord, ToolResultRecord, ModelCallRecord,
                    DefinitionError, __version__)
import kindgi.pack.context
import kindgi.pack.define
import kindgi.pack.trace
from kindgi.pack.context import ToolContext as ContextToolContext
from kindgi.log import get_logger, Logger, noop_logger, REDACTED, scrub_text
from kindgi.pack.context import CancelReason
from kindgi.pack.define import Primitive

NAMES = ("tool", "guardrail", "http_tool", "Tool", "Guardrail", "Agent", "Flow", "ToolContext", "Cancellation",
         "CallCancelled", "CheckResult", "RunTrace", "ToolCallRecord", "ToolResultRecord", "ModelCallRecord",
         "DefinitionError", "__version__")

module_log = get_logger("pack.surface")

web = http_tool(id="web", description="Fetch a page", input={"type": "object", "properties": {"q": {"type": "string"}}},
                output={},
                method="GET", url_template="https://example.test/{q}")

helper_agent = Agent(id="helper", version="1.0.0", name="Helper", instructions="Be brief.", tools=[web])
helper_flow = Flow(id="helper-flow", version="1.0.0", nodes=[{"id": "start"}], edges=[])


@tool(description="A test tool.", id="plain", input={"type": "object"}, output={})
def plain(input):
    return {"doubled": input["n"] * 2}


def raised(action):
    try:
        action()
    except BaseException as exc:
        return [type(exc).__name__, str(exc), getattr(exc, "reason", None)]
    return None


def cancellation_facts():
    c = Cancellation()
    before = [c.cancelled, c.reason, c.wait(0.01), raised(c.raise_if_cancelled)]
    c.cancel("cancelled")
    c.cancel("deadline-exceeded")
    after = [c.cancelled, c.reason, c.wait(), c.wait(0), raised(c.raise_if_cancelled)]
    loop = asyncio.new_event_loop()   # asyncio.run came with Python 3.7
    try:
        wait_async = loop.run_until_complete(c.wait_async())
    finally:
        loop.close()
    return {"before": before, "after": after, "waitAsync": wait_async,
            "callCancelledIsException": issubclass(CallCancelled, Exception)}


def check_result_facts():
    return {
        "snake": CheckResult(passed=True, judge_response="j", score=1).to_wire(),
        "camel": CheckResult(passed=False, judgeResponse="k").to_wire(),
        "full": CheckResult(passed=False, reason="r", judge_response="j", attributes={"a": 1}).to_wire(),
        "minimal": CheckResult(passed=True).to_wire(),
        "attribute": CheckResult(passed=True, judgeResponse="k").judge_response,
        "setLater": set_later(),
    }


def set_later():
    result = CheckResult(passed=False, verdict="old")
    result.score = 0.5
    result.verdict = "new"
    result.reason = "set later"
    result._private = 1
    result.gone = 1
    del result.gone
    return [result.to_wire(), result.score, result.model_extra]


def trace_facts():
    trace = RunTrace(run_id="r", tenant_id="t")
    call = ToolCallRecord(tool_id="search", tool_name="Search", at="2026-01-01T00:00:00Z")
    result = ToolResultRecord(tool_call_id="c1", output={"x": 1}, at="2026-01-01T00:00:01Z")
    model = ModelCallRecord(provider_id="p", model="m", prompt_tokens=3, completion_tokens=4, at="now")
    return {"mode": trace.mode, "lists": [trace.tool_calls, trace.tool_results, trace.model_calls],
            "optional": [trace.project_id, trace.org_id, trace.agent_id, trace.flow_id, trace.output,
                         trace.user_input, trace.retrieved_fact_ids, trace.conversation_id, trace.turn_number,
                         trace.total_cost_usd, trace.duration_ms, trace.attributes],
            "call": [call.tool_id, call.tool_name, call.arguments, call.at],
            "result": [result.tool_call_id, result.output, result.at],
            "model": [model.provider_id, model.model, model.prompt_tokens, model.completion_tokens, model.at]}


def context_facts():
    default = ToolContext.for_test()
    custom = ToolContext.for_test(tenant_id="ten-x", secrets={"apiKey": "sekrit-value"}, env={"A": "1"})
    return {"default": [default.tenant_id, default.run_id, default.request_id, dict(default.env),
                        default.cancellation.cancelled],
            "custom": [custom.tenant_id, custom.run_id, dict(custom.env), dict(custom.secrets)],
            "repr": repr(custom),
            "copied": copied_facts(custom)}


def copied_facts(ctx):
    import copy
    copied = copy.copy(ctx)
    return [type(copied) is ToolContext, copied.tenant_id, dict(copied.secrets),
            copied.cancellation is ctx.cancellation, copied.log is ctx.log]


@tool(description="A test tool.", id="surface", version="1.0.0", input={"type": "object"}, output={})
def surface(input, ctx):
    ctx.log.info("surface handler says hi", {"answer": 42})
    module_log.warn("module logger says hi", {"where": "module"})
    return {
        "missing": [n for n in NAMES if not hasattr(kindgi, n)],
        "version": isinstance(__version__, str) and bool(__version__),
        "submodules": [kindgi.pack.context.ToolContext is ToolContext, ContextToolContext is ToolContext,
                       kindgi.pack.trace.RunTrace is RunTrace, callable(kindgi.pack.define.tool)],
        "kinds": [isinstance(plain, Tool), isinstance(surface, Tool), isinstance(ok, Guardrail),
                  issubclass(DefinitionError, Exception)],
        "tool": [plain.id, plain.version, plain.is_async, plain.takes_context, surface.takes_context,
                 plain.module == __name__],
        "callable": plain({"n": 21}),
        "httpHandler": raised(lambda: web.handler({"q": "x"})),
        "agent": [helper_agent.id, helper_flow.id],
        "cancellation": cancellation_facts(),
        "checkResult": check_result_facts(),
        "trace": trace_facts(),
        "context": context_facts(),
        "ctxType": isinstance(ctx, ToolContext),
        "typing": [isinstance(ctx.log, Logger), callable(noop_logger.info), scrub_text("Bearer x") == "Bearer " + REDACTED,
                   isinstance(plain, Primitive), CancelReason is not None, isinstance(noop_logger, Logger),
                   isinstance(ToolContext.for_test().log, Logger)],
    }


@guardrail(id="ok", check_id="surface-check", on_violation="block")
def ok(config, trace: RunTrace):
    calls = [c.tool_id for c in trace.tool_calls]
    return CheckResult(passed=not calls, reason="saw %d calls" % len(calls), judge_response="none",
                       attributes={"run": trace.run_id, "extra": getattr(trace, "somethingNew", None)},
                       verdict="fine")


@guardrail(id="records-back", on_violation="block")
def records_back(config, trace: RunTrace):
    """Hands the trace's own records back, as the SDK writes its models: by alias, extras kept."""
    first = trace.tool_calls[0]
    return CheckResult(passed=False, attributes={"calls": trace.tool_calls, "first": first,
                                                 "dumped": first.model_dump(), "trace": RunTrace.model_validate(
                                                     {"runId": "r2", "tenantId": "t"}).model_dump(exclude_none=True)})
'''

RESERVED = '''\
from kindgi import guardrail

@guardrail(id="must-cite", on_violation="block")
def must_cite(config, trace):
    return True
'''

NEEDS_PYDANTIC = '''\
from kindgi import tool

class Thing:
    name: str

@tool(description="A test tool.", id="typed", input=Thing, output={})
def typed(input):
    return {}
'''

PYDANTIC_PACK = '''\
from typing import List
from pydantic import BaseModel, Field, field_validator
from kindgi import tool, guardrail, CheckResult, RunTrace


class GreetIn(BaseModel):
    name: str = Field(min_length=1)
    times: int = Field(default=1, ge=1)
    tags: List[str] = []


class GreetOut(BaseModel):
    greeting_text: str = Field(alias="greetingText")
    count: int


@tool(description="A test tool.", id="greet", input=GreetIn, output=GreetOut)
def greet(input: GreetIn) -> GreetOut:
    return GreetOut(greetingText=(input.name + " ") * input.times, count=input.times)


@tool(description="A test tool.", id="model-type", input=GreetIn, output={})
def model_type(input, ctx):
    return {"type": type(input).__name__, "times": input.times}


class Touchy(BaseModel):
    value: int

    @field_validator("value")
    @classmethod
    def leave_on_13(cls, value):
        if value == 13:
            raise SystemExit("validator exit")
        return value


@tool(description="A test tool.", id="touchy", input=Touchy, output={})
def touchy(input):
    return {"value": input.value}


class LimitConfig(BaseModel):
    max_chars: int = Field(default=10, alias="maxChars", gt=0)

    @field_validator("max_chars")
    @classmethod
    def leave_on_13(cls, value):
        if value == 13:
            raise KeyboardInterrupt("config validator interrupt")
        return value


class Opaque:
    pass


class Holder(BaseModel):
    model_config = {"arbitrary_types_allowed": True}
    held: Opaque


@tool(description="A test tool.", id="holds-opaque", input={"type": "object"}, output={})
def holds_opaque(input):
    return {"holder": Holder(held=Opaque())}


@tool(description="A test tool.", id="quoted")
def quoted(input: GreetIn) -> List["GreetOut"]:
    return [GreetOut(greetingText=input.name, count=1)]


@guardrail(id="limit", on_violation="block")
def limit(config: LimitConfig, trace: RunTrace) -> CheckResult:
    output = trace.output or ""
    return CheckResult(passed=len(output) <= config.max_chars,
                       attributes={"max": config.max_chars, "type": type(config).__name__})
'''


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("standin"))
    pack.module("tools/surface.py", SURFACE)
    pack.tool("surface", "tools/surface.py", version="1.0.0")
    pack.tool("plain", "tools/surface.py")
    pack.tool("web", "tools/surface.py", spec={"kind": "http", "method": "GET"})
    pack.guardrail("ok", "tools/surface.py", check_id="surface-check")
    pack.guardrail("records-back", "tools/surface.py")
    service = module_launcher.spawn(["-S", SERVICE, "--index", pack.write()], env=service_env())
    assert service.wait_listening(), "\n".join(service.raw_stderr)
    return service


@pytest.fixture(scope="module")
def facts(service):
    resp = service.call_tool("surface", {}, ctx={"tenantId": "t", "runId": "r", "requestId": "surface-1"})
    assert resp.json["kind"] == "result", resp
    return resp.json["output"]


# -- the surface ------------------------------------------------------------------------

def test_every_top_level_name_imports(facts):
    assert facts["missing"] == []
    assert facts["version"] is True


def test_submodules_offer_the_same_objects(facts):
    assert facts["submodules"] == [True, True, True, True]


def test_names_packs_import_for_type_hints_and_masking(facts):
    """``Logger``, ``noop_logger``, ``REDACTED``, ``scrub_text``, ``CancelReason``, ``Primitive``; the
    no-op logger a test's context gets is a ``Logger`` too, as the SDK's."""
    assert facts["typing"] == [True, True, True, True, True, True, True]


def test_definitions_are_tools_and_guardrails(facts):
    assert facts["kinds"] == [True, True, True, True]
    assert facts["tool"] == ["plain", None, False, False, True, True]


def test_a_tool_is_callable_like_its_handler(facts):
    assert facts["callable"] == {"doubled": 42}


def test_http_tool_handler_refuses_to_run(facts):
    name, message, _ = facts["httpHandler"]
    assert name == "RuntimeError"
    assert "web" in message


def test_calling_an_http_tool_through_the_service_is_a_throw(service):
    answer = service.call_tool("web", {"q": "x"}).json
    assert answer["code"] == "handler-throw"
    assert answer["message"].startswith('Handler for tool "web" threw: RuntimeError: ')


def test_agent_and_flow_build_at_import(facts):
    assert facts["agent"] == ["helper", "helper-flow"]


def test_cancellation(facts):
    c = facts["cancellation"]
    assert c["before"] == [False, None, False, None]
    assert c["after"] == [True, "cancelled", True, True, ["CallCancelled", "cancelled", "cancelled"]]
    assert c["waitAsync"] == "cancelled"
    assert c["callCancelledIsException"] is True


def test_check_result_wire_form(facts):
    c = facts["checkResult"]
    assert c["snake"] == {"passed": True, "judgeResponse": "j", "score": 1}
    assert c["camel"] == {"passed": False, "judgeResponse": "k"}
    assert c["full"] == {"passed": False, "reason": "r", "judgeResponse": "j", "attributes": {"a": 1}}
    assert c["minimal"] == {"passed": True}
    assert c["attribute"] == "k"
    # Fields set after it is made: extra ones go on the wire too, as with the SDK's model.
    assert c["setLater"] == [{"passed": False, "reason": "set later", "verdict": "new", "score": 0.5}, 0.5,
                             {"verdict": "new", "score": 0.5}]


def test_run_trace_and_records(facts):
    t = facts["trace"]
    assert t["mode"] == "runtime"
    assert t["lists"] == [[], [], []]
    assert t["optional"] == [None] * 12
    assert t["call"] == ["search", "Search", {}, "2026-01-01T00:00:00Z"]
    assert t["result"] == ["c1", {"x": 1}, "2026-01-01T00:00:01Z"]
    assert t["model"] == ["p", "m", 3, 4, "now"]


def test_tool_context_for_test(facts):
    c = facts["context"]
    assert c["default"] == ["tenant-test", "run-test", None, {}, False]
    assert c["custom"] == ["ten-x", "run-test", {"A": "1"}, {"apiKey": "sekrit-value"}]
    assert c["copied"] == [True, "ten-x", {"apiKey": "sekrit-value"}, True, True]   # copy.copy, as of the SDK's


def test_tool_context_repr_omits_secrets(facts):
    text = facts["context"]["repr"]
    assert "ten-x" in text
    assert "sekrit-value" not in text
    assert "secrets" not in text
    assert facts["ctxType"] is True


def test_ctx_log_writes_a_record(service, facts):
    record = wait_message(service, "surface handler says hi")
    assert record["subsystem"] == "pack.tool"
    assert record["level"] == "info"
    assert record["answer"] == 42
    assert record["requestId"] == "surface-1"


def test_module_logger_writes_a_record(service, facts):
    record = wait_message(service, "module logger says hi")
    assert record["subsystem"] == "pack.surface"
    assert record["level"] == "warn"
    assert record["where"] == "module"


def wait_message(service, message, seconds=5.0):
    """The first record with this message (records of pack code have no ``kind``)."""
    end = time.monotonic() + seconds
    while True:
        found = [r for r in list(service.records) if r.get("message") == message]
        if found or time.monotonic() > end:
            break
        time.sleep(0.02)
    assert found, "\n".join(service.raw_stderr[-20:])
    return found[0]


def test_check_with_check_result_and_run_trace(service):
    trace = {"runId": "r-9", "tenantId": "t", "toolCalls": [{"toolId": "a", "toolName": "A", "at": "x"}],
             "somethingNew": 5}
    assert service.call_check("surface-check", trace=trace).json == {"v": 2, "kind": "check-result", "result": {
        "passed": False, "reason": "saw 1 calls", "judgeResponse": "none",
        "attributes": {"run": "r-9", "extra": 5}, "verdict": "fine"}}


def test_a_check_may_hand_back_the_traces_records(service):
    """Records in a check's result are written as the SDK's pydantic models are: camelCase names,
    extra fields kept; ``model_dump`` and ``model_validate`` work as theirs."""
    trace = {"runId": "r-9", "tenantId": "t", "toolCalls": [{"toolId": "a", "toolName": "A", "at": "x", "new": 1}]}
    call = {"toolId": "a", "toolName": "A", "arguments": {}, "at": "x", "new": 1}
    assert service.call_check("records-back", trace=trace).json["result"] == {"passed": False, "attributes": {
        "calls": [call], "first": call, "dumped": {"tool_id": "a", "tool_name": "A", "arguments": {}, "at": "x", "new": 1},
        "trace": {"run_id": "r2", "tenant_id": "t", "tool_calls": [], "tool_results": [], "model_calls": [],
                  "mode": "runtime"}}}


# -- what the stand-in refuses at boot -----------------------------------------------------

def boot_problem(launcher, tmp_path, add_entry, entry_id, module_path, source):
    """Boot a one-module pack on the stand-in; it must fail with one problem about ``entry_id``."""
    pack = PackWriter(tmp_path)
    pack.module(module_path, source)
    add_entry(pack)(entry_id, module_path)
    service = launcher.spawn(["-S", SERVICE, "--index", pack.write()], env=service_env())
    assert service.wait_exit() == 1
    problems = service.records_of("boot-failed")[0]["problems"]
    assert len(problems) == 1
    assert problems[0].startswith(entry_id + ": ")
    return problems[0][len(entry_id) + 2:]


def test_reserved_check_id_fails_the_boot(launcher, tmp_path):
    text = boot_problem(launcher, tmp_path, lambda pack: pack.guardrail, "must-cite", "checks/reserved.py", RESERVED)
    assert "must-cite" in text
    assert "built-in" in text


def test_a_type_that_needs_pydantic_fails_the_boot_saying_so(launcher, tmp_path):
    text = boot_problem(launcher, tmp_path, lambda pack: pack.tool, "typed", "tools/typed.py", NEEDS_PYDANTIC)
    assert "pydantic" in text


@pytest.mark.parametrize("source, says", [
    ("import kindgi.client\n", "No module named 'kindgi.client'"),
    ("from kindgi.log import create_logger\n", "create_logger"),
])
def test_a_part_of_the_sdk_the_stand_in_lacks_fails_the_boot_saying_so(launcher, tmp_path, source, says):
    if "from" in source and subprocess.run([PYTHON, "-c", "import sys; sys.exit(sys.version_info < (3, 7))"]).returncode:
        pytest.skip("Python 3.6 doesn't say which module a failed `from ... import` read")
    text = boot_problem(launcher, tmp_path, lambda pack: pack.tool, "lacking", "tools/lacking.py", source)
    assert says in text
    assert "the kindgi SDK is not installed" in text and "stand-in" in text


def test_a_packs_own_missing_module_is_not_blamed_on_the_stand_in(launcher, tmp_path):
    text = boot_problem(launcher, tmp_path, lambda pack: pack.tool, "lacking", "tools/lacking.py",
                        "import kindgi_helpers_of_the_pack\n")
    assert text == "No module named 'kindgi_helpers_of_the_pack'"


# -- pydantic, when the pack brings it ---------------------------------------------------------

def run_python(code):
    return subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)


def vendored_pydantic():
    """A folder holding pydantic 2 for the service's interpreter, or None when it has it already."""
    if run_python("import pydantic, sys; sys.exit(pydantic.VERSION[0] != '2')").returncode == 0:
        return None
    tag = run_python("import sys, sysconfig; print('%d.%d-%s' % (sys.version_info[:2] + "
                     "(sysconfig.get_platform(),)))").stdout.strip()
    target = Path(tempfile.gettempdir()) / "kindgi-e2e-pydantic" / tag
    if (target / "pydantic").is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="install-", dir=str(target.parent)))
    done = subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--no-input", "--target", str(staging), "pydantic>=2,<3"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    if done.returncode != 0:
        shutil.rmtree(str(staging), ignore_errors=True)
        pytest.skip("pydantic is not importable by %s and `pip install --target` failed: %s"
                    % (PYTHON, done.stdout.strip()[-300:]))
    try:
        os.rename(str(staging), str(target))
    except OSError:  # another run installed it meanwhile
        shutil.rmtree(str(staging), ignore_errors=True)
    return target


@pytest.fixture(scope="module")
def pydantic_service(module_launcher, tmp_path_factory):
    root = tmp_path_factory.mktemp("pydantic")
    vendor = vendored_pydantic()
    if vendor is not None:
        for entry in vendor.iterdir():
            (root / entry.name).symlink_to(entry)
    pack = PackWriter(root)
    pack.module("tools/models.py", PYDANTIC_PACK)
    pack.tool("greet", "tools/models.py", input={"type": "object"}, output={"type": "object"})
    pack.tool("model-type", "tools/models.py", input={"type": "object"})
    pack.tool("touchy", "tools/models.py", input={"type": "object"})
    pack.tool("holds-opaque", "tools/models.py", input={"type": "object"})
    pack.tool("quoted", "tools/models.py", input={"type": "object"})
    pack.guardrail("limit", "tools/models.py")
    return module_launcher.start(pack.write(), env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "2"})


def test_pydantic_input_and_output_models(pydantic_service):
    answer = pydantic_service.call_tool("greet", {"name": "hi", "times": 2}).json
    assert answer == {"v": 2, "kind": "result", "output": {"greetingText": "hi hi ", "count": 2}}


def test_pydantic_input_is_parsed_into_the_model_with_its_defaults(pydantic_service):
    answer = pydantic_service.call_tool("model-type", {"name": "x"}).json
    assert answer["output"] == {"type": "GreetIn", "times": 1}


def test_pydantic_input_failure_is_input_validation_failed(pydantic_service):
    answer = pydantic_service.call_tool("greet", {"name": "", "times": 0}).json
    assert answer["code"] == "input-validation-failed"
    assert answer["message"] == 'Tool "greet" input failed validation'
    assert answer["toolId"] == "greet"
    by_path = {issue["instancePath"]: issue for issue in answer["issues"]}
    assert set(by_path) == {"/name", "/times"}
    assert by_path["/times"]["keyword"] == "greater_than_equal"
    assert by_path["/times"]["schemaPath"] == "#"
    assert by_path["/name"]["keyword"] == "string_too_short"
    assert all(issue["message"] for issue in answer["issues"])


def test_pydantic_list_item_failure_points_at_the_item(pydantic_service):
    answer = pydantic_service.call_tool("greet", {"name": "x", "tags": ["ok", 5]}).json
    assert answer["code"] == "input-validation-failed"
    assert [issue["instancePath"] for issue in answer["issues"]] == ["/tags/1"]


def test_pydantic_config_type_fills_its_defaults(pydantic_service):
    answer = pydantic_service.call_check("limit", config={}, trace={"runId": "r", "tenantId": "t",
                                                                    "output": "short"}).json
    assert answer == {"v": 2, "kind": "check-result",
                      "result": {"passed": True, "attributes": {"max": 10, "type": "LimitConfig"}}}


def test_pydantic_config_by_alias(pydantic_service):
    answer = pydantic_service.call_check("limit", config={"maxChars": 3}, trace={"runId": "r", "tenantId": "t",
                                                                                 "output": "too long"}).json
    assert answer["result"] == {"passed": False, "attributes": {"max": 3, "type": "LimitConfig"}}


def test_pydantic_config_failure_is_input_validation_failed(pydantic_service):
    answer = pydantic_service.call_check("limit", config={"maxChars": 0}).json
    assert answer["code"] == "input-validation-failed"
    assert answer["message"].startswith('Check "limit" config failed validation')
    assert answer["checkId"] == "limit"
    assert answer["issues"][0]["instancePath"] == "/maxChars"


def test_a_model_in_the_output_that_cant_be_dumped_says_why(pydantic_service):
    """The model is a JSON value; what its dump refused is the cause, told in pydantic's words
    (as the official service tells it), at the model's place."""
    answer = pydantic_service.call_tool("holds-opaque", {}).json
    assert answer["code"] == "output-validation-failed"
    assert answer["message"].startswith('Tool "holds-opaque" handler produced output that is not JSON: '
                                        '/holder could not be written as JSON: PydanticSerializationError: ')
    assert "Opaque" in answer["message"]
    assert [issue["instancePath"] for issue in answer["issues"]] == ["/holder"]


def test_a_name_quoted_inside_a_generic_is_the_model(pydantic_service):
    """``-> List["GreetOut"]`` loads (the SDK evaluates the quoted name) and dumps by alias."""
    answer = pydantic_service.call_tool("quoted", {"name": "hi"}).json
    assert answer == {"v": 2, "kind": "result", "output": [{"greetingText": "hi", "count": 1}]}


def assert_answered_as_a_throw(call, text):
    """Pack code raised while its input was parsed: every call answered, slots given back (cap is 2)."""
    for _ in range(3):
        resp = call()
        assert resp.status == 200, resp
        assert resp.json["code"] == "handler-throw"
        assert text in resp.json["message"]


def test_a_validator_raising_system_exit_is_an_answer(pydantic_service):
    assert_answered_as_a_throw(lambda: pydantic_service.call_tool("touchy", {"value": 13}),
                               "SystemExit: validator exit")
    assert pydantic_service.call_tool("touchy", {"value": 1}).json["output"] == {"value": 1}


def test_a_config_validator_raising_keyboard_interrupt_is_an_answer(pydantic_service):
    assert_answered_as_a_throw(lambda: pydantic_service.call_check("limit", config={"maxChars": 13}),
                               "KeyboardInterrupt: config validator interrupt")
    assert pydantic_service.call_check("limit", config={}).json["kind"] == "check-result"
