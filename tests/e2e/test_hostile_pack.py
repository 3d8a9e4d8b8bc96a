"""End-to-end: pack code that misbehaves.

Handlers that raise every kind of BaseException, call sys.exit, never return,
print megabytes, return huge, circular or non-JSON output, start threads and
subprocesses, change the working folder or sys.path, mutate their input;
checks returning odd types; a module that fails on its second import, one
that sets a default socket timeout.  Each
must give a clean 200 response message, and the service keeps serving: after
every test /healthz answers and no ``service-error`` record was written.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from conftest import PackWriter

TOOLS = '''\
import asyncio
import os
import subprocess
import sys
import threading
import time
from kindgi import tool


class Custom(BaseException):
    pass


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no")


class NotAString(Exception):
    def __str__(self):
        return 42


class SlyText(str):
    def __str__(self):
        raise RuntimeError("no text for you")


class TextThatFailsAgain(Exception):
    """Its message is a str whose own str() raises: formatting the message a second time failed."""
    def __str__(self):
        return SlyText("boom")


def recurse(n):
    return recurse(n + 1)


RAISES = {
    "Exception": lambda: Exception("plain"),
    "SystemExit0": lambda: SystemExit(0),
    "SystemExit3": lambda: SystemExit(3),
    "KeyboardInterrupt": lambda: KeyboardInterrupt(),
    "GeneratorExit": lambda: GeneratorExit(),
    "MemoryError": lambda: MemoryError(),
    "CancelledError": lambda: asyncio.CancelledError(),
    "StopIteration": lambda: StopIteration(),
    "Custom": lambda: Custom("custom"),
    "Unprintable": lambda: Unprintable(),
    "NotAString": lambda: NotAString(),
    "TextThatFailsAgain": lambda: TextThatFailsAgain(),
}


def throw(kind):
    if kind == "RecursionError":
        recurse(0)
    if kind == "sys.exit":
        sys.exit("bye")
    raise RAISES[kind]()


@tool(description="A test tool.", input={"type": "object"}, output={}, id="raise")
def raise_(input, ctx):
    throw(input["kind"])


@tool(description="A test tool.", input={"type": "object"}, output={}, id="araise")
async def araise(input, ctx):
    await asyncio.sleep(0)
    throw(input["kind"])


@tool(description="A test tool.", input={"type": "object"}, output={}, id="self-cancel")
def self_cancel(input, ctx):
    ctx.cancellation.cancel(input["reason"])
    throw("CancelledError")


@tool(description="A test tool.", input={"type": "object"}, output={}, id="aself-cancel")
async def aself_cancel(input, ctx):
    ctx.cancellation.cancel(input["reason"])
    helper = asyncio.ensure_future(asyncio.sleep(60))
    await asyncio.sleep(0)
    helper.cancel()
    await helper


@tool(description="A test tool.", input={"type": "object"}, output={}, id="aecho")
async def aecho(input, ctx):
    await asyncio.sleep(0)
    return input


@tool(description="A test tool.", input={"type": "object"}, output={}, id="forever")
def forever(input, ctx):
    threading.Event().wait()


@tool(description="A test tool.", input={"type": "object"}, output={}, id="aforever")
async def aforever(input, ctx):
    await asyncio.sleep(3600)


@tool(description="A test tool.", input={"type": "object"}, output={}, id="printer")
def printer(input, ctx):
    line = "p" * 1023
    for _ in range(5 * 1024):
        print(line)
    sys.stderr.write("a line of pack chatter on stderr\\n")
    return {"printed": 5 * 1024 * 1024}


class ItemsRaise(dict):
    def items(self):
        raise ZeroDivisionError("items")


def circular():
    value = {"a": [1]}
    value["a"].append(value)
    return value


def deep(n):
    value = []
    for _ in range(n):
        value = [value]
    return value


OUTPUTS = {
    "huge": lambda: {"s": "x" * (20 * 1024 * 1024)},
    "circular": circular,
    "set": lambda: {"s": {object()}},
    "bytes": lambda: {"b": b"\\xff"},
    "object": lambda: {"o": object()},
    "nan": lambda: {"n": float("nan")},
    "inf": lambda: [float("inf")],
    "set-key": lambda: {frozenset([1, 2]): 3},
    "deep": lambda: deep(100000),
    "items-raise": lambda: ItemsRaise(a=1),
    "generator": lambda: (object() for i in range(3)),
    "raising-generator": lambda: {"g": (1 // i for i in (1, 0))},
    "bigint": lambda: {"n": 10 ** 5000},
}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="output")
def output(input, ctx):
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)
    return OUTPUTS[input["kind"]]()


@tool(description="A test tool.", input={"type": "object"}, output={}, id="spawn")
def spawn(input, ctx):
    forever_thread = threading.Thread(target=threading.Event().wait)
    forever_thread.start()
    threading.Thread(target=lambda: 1 / 0, daemon=True).start()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    return {"pid": child.pid}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="wander")
def wander(input, ctx):
    os.chdir("/")
    sys.path[:] = ["/nonexistent"]
    return {"cwd": os.getcwd()}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="mutate")
def mutate(input, ctx):
    input["opts"]["n"] += 1
    input["list"].append("more")
    result = {"n": input["opts"]["n"], "list": list(input["list"])}
    input.clear()
    return result
'''

TWICE = '''\
import builtins
from kindgi import tool

if getattr(builtins, "_kindgi_twice_loaded", False):
    raise ImportError("imported a second time")
builtins._kindgi_twice_loaded = True


@tool(description="A test tool.", input={"type": "object"}, output={}, id="once-a")
def once_a(input, ctx):
    return {"a": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="once-b")
def once_b(input, ctx):
    return {"b": True}
'''

CHECKS = '''\
from kindgi import guardrail, CheckResult


class WireRaises(CheckResult):
    """A CheckResult whose own to_wire raises."""
    def to_wire(self):
        raise RuntimeError("to_wire broke")


class GetattrRaises:
    def __getattr__(self, name):
        raise ZeroDivisionError(name)


class BadMapping(dict):
    def get(self, key, default=None):
        raise KeyError(key)


class Liar(dict):
    """Says its ``passed`` is True, whatever it holds."""
    def get(self, key, default=None):
        return True if key == "passed" else dict.get(self, key, default)


def raise_text_that_fails_again():
    from ..tools.bad import TextThatFailsAgain   # the tools' module, imported before this one
    raise TextThatFailsAgain()


def wire_of(wire):
    """A CheckResult whose wire form is ``wire``, not a check result's."""
    class WireOf(CheckResult):
        def to_wire(self):
            return wire
    return WireOf(passed=True)


class NotACheckResult:
    """Has a to_wire with a check result's shape, but is no CheckResult."""
    def to_wire(self):
        return {"passed": True}


class NaNThatCantCompare(float):
    def __eq__(self, other):
        raise RuntimeError("compared")
    __hash__ = float.__hash__


class ClassRaises:
    @property
    def __class__(self):
        raise RuntimeError("looked at")


ODD = {
    "int": lambda: 1, "str": lambda: "yes", "none": lambda: None, "list": lambda: [True],
    "no-passed": lambda: {"reason": "x"}, "passed-str": lambda: {"passed": "yes"},
    "passed-int": lambda: {"passed": 1}, "wire-raises": lambda: WireRaises(passed=True), "getattr-raises": GetattrRaises,
    "bad-mapping": lambda: BadMapping(passed=True), "not-json": lambda: {"passed": True, "s": {object()}},
    "float-nan": lambda: float("nan"),
    "wire-str": lambda: wire_of("ok"), "wire-no-passed": lambda: wire_of({"reason": "r"}),
    "wire-passed-str": lambda: wire_of({"passed": "no"}), "wire-list": lambda: wire_of([1]),
    "not-a-check-result": NotACheckResult,
    "nan-cant-compare": lambda: {"passed": True, "x": NaNThatCantCompare("nan")},
    "class-raises": lambda: {"passed": True, "x": ClassRaises()},
    "liar": lambda: Liar(passed="definitely not"),
    "raises-text-that-fails-again": raise_text_that_fails_again,
}


@guardrail(id="odd", on_violation="block")
def odd(config, trace):
    return ODD[config["kind"]]()


@guardrail(id="fine", on_violation="block")
def fine(config, trace):
    return CheckResult(passed=True, reason="ok")
'''


def write_pack(root):
    pack = PackWriter(root)
    pack.module("tools/bad.py", TOOLS)
    pack.module("tools/twice.py", TWICE)
    pack.module("checks/odd.py", CHECKS)
    for tool_id in ("raise", "araise", "self-cancel", "aself-cancel", "aecho", "forever", "aforever", "printer", "output", "spawn", "wander"):
        pack.tool(tool_id, "tools/bad.py")
    pack.tool("mutate", "tools/bad.py", input={
        "type": "object",
        "properties": {"opts": {"type": "object", "default": {"n": 0}},
                       "list": {"type": "array", "default": ["first"]}}})
    pack.tool("once-a", "tools/twice.py").tool("once-b", "tools/twice.py")
    pack.guardrail("odd", "checks/odd.py").guardrail("fine", "checks/odd.py")
    return pack.write()


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    return module_launcher.start(write_pack(tmp_path_factory.mktemp("pack")))


@pytest.fixture(autouse=True)
def still_serving(request):
    yield
    if "service" in request.fixturenames:
        svc = request.getfixturevalue("service")
        assert svc.request("GET", "/healthz", token=False, timeout=10).status == 200
        assert svc.call_tool("aecho", {"still": "here"}).json["output"] == {"still": "here"}
        assert not svc.records_of("service-error"), svc.records_of("service-error")


def message_of(response):
    """A 200 response message decoded as strict UTF-8 JSON."""
    assert response.status == 200, response
    return json.loads(response.body.decode("utf-8"))


def error_of(response, code):
    message = message_of(response)
    assert message["kind"] == "error" and message["code"] == code, message
    return message


KINDS = ["Exception", "SystemExit0", "SystemExit3", "sys.exit", "KeyboardInterrupt", "GeneratorExit",
         "MemoryError", "CancelledError", "StopIteration", "Custom", "Unprintable", "NotAString",
         "TextThatFailsAgain"]


@pytest.mark.parametrize("kind", KINDS + ["RecursionError"])
def test_sync_handler_raising_any_base_exception(service, kind):
    message = error_of(service.call_tool("raise", {"kind": kind}), "handler-throw")
    assert message["message"].startswith('Handler for tool "raise" threw: ')
    assert set(message["cause"]) == {"name", "message", "stack"}


@pytest.mark.parametrize("kind", KINDS)
def test_async_handler_raising_any_base_exception(service, kind):
    """Raised on the pack's event loop; the next async call, on the same connection too, still runs."""
    conn = service.connection()
    try:
        response = service.call_tool("araise", {"kind": kind}, conn=conn)
        if kind == "CancelledError":
            assert message_of(response)["kind"] == "error"
        else:
            error_of(response, "handler-throw")
        assert service.call_tool("aecho", {"x": 1}, conn=conn).json["output"] == {"x": 1}
    finally:
        conn.close()


@pytest.mark.parametrize("tool_id", ["self-cancel", "aself-cancel"])
@pytest.mark.parametrize("reason", ["cancelled", "deadline-exceeded"])
def test_a_cancelled_error_after_pack_code_fired_its_own_cancellation_is_answered(service, tool_id, reason):
    """Pack code may fire ``ctx.cancellation`` itself (to stop its helpers): the call is still its
    caller's, so the ``CancelledError`` that follows is a throw, answered at once, not a call the
    service ended, left unanswered and recorded as its caller gone."""
    started = time.monotonic()
    response = service.call_tool(tool_id, {"reason": reason}, timeout=5)
    assert time.monotonic() - started < 3
    message = error_of(response, "handler-throw")
    assert message["cause"]["name"] == "CancelledError"
    record = service.wait_record("call", where=lambda r: r.get("id") == tool_id and r.get("outcome") != "ok")
    assert record["outcome"] == "handler-throw"


@pytest.mark.parametrize("tool_id", ["forever", "aforever"])
def test_never_returning_handler_gets_the_deadline(service, tool_id):
    response = service.call_tool(tool_id, {}, headers={"kindgi-timeout-ms": "300"})
    assert error_of(response, "deadline-exceeded")["message"] == "%s passed its deadline" % tool_id


def test_deadline_answer_closes_the_connection(service):
    """The connection's thread is still inside pack code: the answer must tell the client to go."""
    conn = service.connection(10)
    try:
        response = service.call_tool("forever", {}, headers={"kindgi-timeout-ms": "300"}, conn=conn)
        assert response.header("connection") == "close"
    finally:
        conn.close()


def test_printing_megabytes(service):
    assert message_of(service.call_tool("printer", {}))["output"] == {"printed": 5 * 1024 * 1024}
    assert service.call_tool("aecho", {"after": "print"}).json["output"] == {"after": "print"}


def test_huge_output_is_answered_whole(service):
    response = service.call_tool("output", {"kind": "huge"}, timeout=60)
    assert len(message_of(response)["output"]["s"]) == 20 * 1024 * 1024


@pytest.mark.parametrize("kind", ["circular", "set", "bytes", "object", "nan", "inf", "set-key", "deep",
                                  "items-raise", "generator", "raising-generator", "bigint"])
def test_output_that_is_not_json(service, kind):
    message = error_of(service.call_tool("output", {"kind": kind}, timeout=60), "output-validation-failed")
    assert message["message"].startswith('Tool "output" handler produced output that is not JSON')
    if kind == "bigint":   # written, then refused when read back (before 3.11) or when written: the same answer
        assert message["message"].endswith("/n must have at most 4300 digits"), message
        assert [issue["instancePath"] for issue in message["issues"]] == ["/n"]


@pytest.mark.parametrize("kind", ["wire-str", "wire-no-passed", "wire-passed-str", "wire-list",
                                  "not-a-check-result", "nan-cant-compare", "class-raises", "liar"])
def test_check_result_that_is_not_a_check_result_is_output_validation_failed(service, kind):
    """A CheckResult's wire form has a check result's shape, as a dict does; an object that only has a
    to_wire is no check result; a value whose own methods raise as it is looked at is not JSON, and
    never a 500; a dict whose own ``get`` says ``passed`` is True is read as copied (its ``passed``
    went on the wire as the text it was)."""
    response = service.call_check("odd", {"kind": kind})
    message = error_of(response, "output-validation-failed")
    assert message["checkId"] == "odd"


@pytest.mark.parametrize("kind", ["int", "str", "none", "list", "no-passed", "passed-str", "passed-int",
                                  "wire-raises", "getattr-raises", "not-json", "float-nan",
                                  "raises-text-that-fails-again"])
def test_check_returning_odd_types(service, kind):
    message = message_of(service.call_check("odd", {"kind": kind}))
    assert message["kind"] == "error" and message["code"] in ("output-validation-failed", "handler-throw"), message
    assert message["checkId"] == "odd"


def test_a_mapping_a_check_returns_is_read_as_its_copy_as_the_sdk_reads_it(service):
    """The SDK copies a mapping into a plain dict before it looks at ``passed``: a dict subclass
    whose own ``get`` raises is read as what it holds (the "liar" above, as what it holds too)."""
    assert message_of(service.call_check("odd", {"kind": "bad-mapping"}))["result"] == {"passed": True}
    assert message_of(service.call_check("fine"))["result"] == {"passed": True, "reason": "ok"}


def test_wandering_handler_does_not_break_the_next_calls(service):
    """os.chdir and a wiped sys.path in one call; later calls, throws and async code still work."""
    assert message_of(service.call_tool("wander", {}))["output"] == {"cwd": "/"}
    error_of(service.call_tool("raise", {"kind": "Exception"}), "handler-throw")
    assert message_of(service.call_tool("once-a", {}))["output"] == {"a": True}
    assert message_of(service.call_check("fine"))["kind"] == "check-result"


def test_mutating_the_input_does_not_leak_into_later_calls(service):
    """The handler changes its input (and the defaults filled into it): the next call starts fresh."""
    for _ in range(3):
        assert message_of(service.call_tool("mutate", {}))["output"] == {"n": 1, "list": ["first", "more"]}


def test_module_imported_once(service):
    """A module that fails when imported a second time: two tools in it, called repeatedly."""
    for _ in range(3):
        assert message_of(service.call_tool("once-a", {}))["output"] == {"a": True}
        assert message_of(service.call_tool("once-b", {}))["output"] == {"b": True}


def test_threads_and_subprocesses_do_not_hold_the_exit(launcher, tmp_path):
    """A handler leaves a non-daemon thread and a child process behind; SIGTERM still exits 0 in time."""
    svc = launcher.start(write_pack(tmp_path))
    pid = message_of(svc.call_tool("spawn", {}))["output"]["pid"]
    try:
        assert message_of(svc.call_tool("aecho", {"x": 1}))["output"] == {"x": 1}
        started = time.monotonic()
        svc.signal(signal.SIGTERM)
        assert svc.proc.wait(12) == 0   # not wait_exit: the child still holds the stderr pipe
        assert time.monotonic() - started < 9
        svc.wait_record("stopped", 5)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


SHORT_DEFAULT_TIMEOUT = '''
import socket
socket.setdefaulttimeout(0.5)   # for its own sockets, as a pack might
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="plain", version="1.0.0")
def plain(input, ctx):
    return {"timeout": socket.getdefaulttimeout()}
'''


def test_a_default_socket_timeout_set_by_pack_code_leaves_the_connections_alone(launcher, tmp_path):
    """``socket.setdefaulttimeout(0.5)`` at import reaches every socket made afterwards, the
    service's connections too: an idle keep-alive connection was closed after half a second, and
    the runtime's next call on it failed.  The service's connections keep its own limits."""
    pack = PackWriter(tmp_path)
    pack.module("tools/short.py", SHORT_DEFAULT_TIMEOUT)
    pack.tool("plain", "tools/short.py", version="1.0.0")
    svc = launcher.start(pack.write())
    conn = svc.connection()
    assert message_of(svc.call_tool("plain", {}, conn=conn))["output"] == {"timeout": 0.5}
    time.sleep(1.5)
    assert message_of(svc.call_tool("plain", {}, conn=conn))["output"] == {"timeout": 0.5}
    conn.close()


NEVER_AWAITED = '''
import functools
from kindgi import guardrail, tool


def plain_wrapper(fn):
    """A sync decorator around an async def: calling the handler gives a coroutine, never awaited."""
    @functools.wraps(fn)
    def wrapper(*args):
        return fn(*args)
    return wrapper


async def later():
    return {"passed": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="wrapped")
@plain_wrapper
async def wrapped(input, ctx):
    return {"never": "awaited"}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="forgot-await")
async def forgot_await(input, ctx):
    return later()


@tool(description="A test tool.", input={"type": "object"}, output={}, id="forgot-await-inside")
def forgot_await_inside(input, ctx):
    return {"data": later(), "more": [later(), later()]}


@guardrail(id="check-forgot-await-inside", on_violation="block")
def check_forgot_await_inside(config, trace):
    return {"passed": True, "attributes": {"data": later()}}


@guardrail(id="check-wrapped", on_violation="block")
@plain_wrapper
async def check_wrapped(config, trace):
    return {"passed": True}
'''


def test_a_coroutine_returned_and_never_awaited_leaves_stderr_json(launcher, tmp_path):
    """Answered as output that is not JSON, as on the official service; and Python's "never
    awaited" warning, which is not a record, doesn't reach stderr: for one inside the output
    either."""
    pack = PackWriter(tmp_path)
    pack.module("tools/never.py", NEVER_AWAITED)
    pack.tool("wrapped", "tools/never.py").tool("forgot-await", "tools/never.py")
    pack.tool("forgot-await-inside", "tools/never.py")
    pack.guardrail("check-wrapped", "tools/never.py").guardrail("check-forgot-await-inside", "tools/never.py")
    service = launcher.start(pack.write())
    for tool_id in ("wrapped", "forgot-await"):
        message = error_of(service.call_tool(tool_id, {}), "output-validation-failed")
        assert message["message"].endswith("(root) must be JSON, not coroutine"), message
    message = error_of(service.call_tool("forgot-await-inside", {}), "output-validation-failed")
    assert sorted(issue["instancePath"] for issue in message["issues"]) == ["/data", "/more/0", "/more/1"], message
    for check_id in ("check-wrapped", "check-forgot-await-inside"):
        assert error_of(service.call_check(check_id), "output-validation-failed")["checkId"] == check_id
    service.signal(signal.SIGTERM)
    assert service.wait_exit() == 0
    for line in service.raw_stderr:
        assert isinstance(json.loads(line), dict), line


FAILING_DUMP = '''
from kindgi import tool


class Model:
    """A model whose serializer fails as the tool writes it (``model_dump``)."""

    def model_dump(self, **options):
        raise ValueError("a serializer that fails")


@tool(description="A test tool.", input={"type": "object"}, output={}, id="failing-dump")
def failing_dump(input, ctx):
    return Model()
'''


def test_output_whose_dump_raises_is_not_json_not_a_throw(launcher, tmp_path):
    """The handler returned: what its output's own writing raised is output that is not JSON, as
    on the official service, not ``handler-throw``."""
    pack = PackWriter(tmp_path)
    pack.module("tools/dump.py", FAILING_DUMP)
    pack.tool("failing-dump", "tools/dump.py")
    service = launcher.start(pack.write())
    message = error_of(service.call_tool("failing-dump", {}), "output-validation-failed")
    assert message["message"] == ('Tool "failing-dump" handler produced output that is not JSON: (root) could not '
                                  'be written as JSON: ValueError: a serializer that fails'), message


LONE_SURROGATE_KEYS = '''
from kindgi import tool


@tool(description="A test tool.", input={"type": "object"}, output={}, id="lone")
def lone(input, ctx):
    return {"got": sorted(input)}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="lone-ref")
def lone_ref(input, ctx):
    return {"got": sorted(input)}
'''


def test_a_schema_with_a_lone_surrogate_in_a_key_is_served(launcher, tmp_path):
    """A property name JSON writes as a lone surrogate ("\\ud800") has no UTF-8 form: writing it
    into a schema path raised, so a schema compiled at boot (one with a $ref) stopped the boot
    with a traceback, and one compiled at its first use answered every call with a 500.  Both
    validate now, as on the official service."""
    pack = PackWriter(tmp_path)
    pack.module("tools/lone.py", LONE_SURROGATE_KEYS)
    pack.tool("lone", "tools/lone.py", input={"type": "object", "properties": {"\ud800": {"type": "string"}}})
    pack.tool("lone-ref", "tools/lone.py", input={"$defs": {"s": {"type": "string"}}, "type": "object",
                                                  "properties": {"\ud800": {"$ref": "#/$defs/s"}}})
    service = launcher.start(pack.write())
    for tool_id, schema_path in (("lone", "#/properties/%ED%A0%80/type"), ("lone-ref", "#/$defs/s/type")):
        message = error_of(service.call_tool(tool_id, {"\ud800": 1}), "input-validation-failed")
        assert [(i["instancePath"], i["schemaPath"]) for i in message["issues"]] == [("/\ud800", schema_path)]
        assert message_of(service.call_tool(tool_id, {"\ud800": "text"}))["output"] == {"got": ["\ud800"]}
    assert not service.records_of("service-error")


UNCOMPILABLE_SCHEMAS = {
    # Array-valued "dependencies" must name properties: a number among them raised at a call (500)
    "dependency-not-a-name": ({"type": "object", "dependencies": {"a": ["b", 1]}},
                              '"dependencies" at #/dependencies: must map names to schemas or arrays of unique strings'),
    # A pointer's array index in other digits than ASCII ones ("²" is a digit to str.isdigit): the boot's traceback
    "pointer-index": ({"allOf": [{"type": "object"}], "$ref": "#/allOf/\u00b2"},
                      '"$ref" at #/$ref: can\'t resolve reference #/allOf/\u00b2 from id #'),
    # A $ref to a value no keyword makes a schema (a default): its keywords were not checked (the boot's traceback)
    "ref-to-a-default": ({"$defs": {"x": {"default": {"minLength": "3"}}}, "$ref": "#/$defs/x/default"},
                         '"minLength" at #/$defs/x/default/minLength: must be a non-negative integer'),
}


ECHO = '''
from kindgi import tool


@tool(description="A test tool.", input={"type": "object"}, output={}, id="%s")
def echo(input):
    return input
'''


def test_a_schema_that_cannot_compile_is_answered_at_each_call(launcher, tmp_path):
    """The boot goes on; each call of the tool says why its schema can't be used, never a 500."""
    pack = PackWriter(tmp_path)
    for tool_id, (schema, _) in UNCOMPILABLE_SCHEMAS.items():
        module_path = "tools/%s.py" % tool_id.replace("-", "_")
        pack.module(module_path, ECHO % tool_id)
        pack.tool(tool_id, module_path, input=schema)
    service = launcher.start(pack.write())
    for tool_id, (_, reason) in UNCOMPILABLE_SCHEMAS.items():
        message = error_of(service.call_tool(tool_id, {"a": 1}), "input-validation-failed")
        assert message["message"] == 'Tool "%s" input schema failed to compile: %s' % (tool_id, reason)
    assert not service.records_of("service-error")
