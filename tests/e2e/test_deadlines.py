"""End-to-end: deadlines, cancellation and late handlers (README: Protocol coverage).

``kindgi-timeout-ms`` parsing, the deadline answered on time while pack
code still runs, the call's ``Cancellation`` firing (seen by the handler,
which writes a marker file), ``handler-finished-late`` records, late
handlers still counting toward the cap, an ``async`` handler that blocks its
thread, and a caller that hangs up mid-call.

The shared service has a cap of 8, so the late handlers earlier tests leave
behind don't refuse later tests' calls; the cap tests start a service of
their own with a cap of 2.  Handlers that wait for their cancellation return
as soon as it fires, which keeps the file fast; the bounds asserted on
elapsed time are loose (seconds apart), they only tell "answered at the
deadline" from "answered when the handler ended".
"""

import json
import os
import socket
import threading
import time

import pytest

from conftest import TOKEN, PackWriter

TOOLS = '''\
import asyncio, os, time
from kindgi import tool, guardrail

def mark(input, text):
    with open(os.path.join(input["dir"], input["name"]), "a") as f:
        f.write(text + "\\n")

@tool(description="A test tool.", id="echo", input={"type": "object"}, output={})
def echo(input):
    return input

@tool(description="A test tool.", id="nap", input={"type": "object"}, output={})
def nap(input):
    time.sleep(input["seconds"])
    return {"slept": input["seconds"]}

@tool(description="A test tool.", id="wait-cancel", input={"type": "object"}, output={})
def wait_cancel(input, ctx):
    mark(input, "started")
    fired = ctx.cancellation.wait(input.get("limit", 10))
    mark(input, "fired=%s reason=%s" % (fired, ctx.cancellation.reason))
    return {"fired": fired}

@tool(description="A test tool.", id="async-wait", input={"type": "object"}, output={})
async def async_wait(input, ctx):
    mark(input, "started")
    try:
        await asyncio.sleep(input.get("limit", 10))
    except asyncio.CancelledError:
        mark(input, "async-cancelled reason=%s" % ctx.cancellation.reason)
        raise
    mark(input, "not cancelled")
    return {}

@tool(description="A test tool.", id="async-block", input={"type": "object"}, output={})
async def async_block(input, ctx):
    mark(input, "started")
    time.sleep(input["seconds"])
    mark(input, "ended")
    return {}

@tool(description="A test tool.", id="bad-callback", input={"type": "object"}, output={})
def bad_callback(input, ctx):
    def on_cancel(reason):   # pack code's: it takes its time, then raises what an except Exception misses
        time.sleep(input["callback_seconds"])
        raise SystemExit("the callback's own exit")
    ctx.cancellation.add_callback(on_cancel)
    time.sleep(input["seconds"])
    return {}

@guardrail(id="slow-check", on_violation="block")
def slow_check(config, trace):
    time.sleep(config["seconds"])
    return True

@guardrail(id="stubborn-check", on_violation="block")
async def stubborn_check(config, trace):
    end = time.monotonic() + config["seconds"]
    while time.monotonic() < end:   # its cancellation is swallowed: it finishes late
        try:
            await asyncio.sleep(end - time.monotonic())
        except asyncio.CancelledError:
            pass
    return True
'''


def write_pack(folder):
    pack = PackWriter(folder)
    pack.module("tools/main.py", TOOLS)
    for name in ("echo", "nap", "wait-cancel", "async-wait", "async-block", "bad-callback"):
        pack.tool(name, "tools/main.py")
    pack.guardrail("slow-check", "tools/main.py")
    pack.guardrail("stubborn-check", "tools/main.py")
    return pack.write()


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    return module_launcher.start(write_pack(tmp_path_factory.mktemp("deadlines")),
                                 env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "8"})


@pytest.fixture
def capped(launcher, tmp_path):
    """A service of its own with a cap of 2."""
    return launcher.start(write_pack(tmp_path / "capped"), env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "2"})


def timed_call(service, tool_id, input, timeout_ms=None, ctx=None):
    headers = {} if timeout_ms is None else {"kindgi-timeout-ms": timeout_ms}
    start = time.monotonic()
    resp = service.call_tool(tool_id, input, headers=headers, ctx=ctx)
    return resp, time.monotonic() - start


def deadline_answer(target_id, key="toolId"):
    return {"v": 2, "kind": "error", "code": "deadline-exceeded",
            "message": "%s passed its deadline" % target_id, key: target_id}


def marker(tmp_path, name):
    return {"dir": str(tmp_path), "name": name}


def wait_for_lines(path, count, seconds=10):
    """The marker file's lines once it has ``count`` of them (or what it has at the end)."""
    end = time.monotonic() + seconds
    lines = []
    while time.monotonic() < end:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            break
        time.sleep(0.02)
    return lines


def in_thread(fn, *args, **kw):
    holder = {}

    def run():
        holder["value"] = fn(*args, **kw)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, holder


# -- kindgi-timeout-ms ---------------------------------------------------------------

@pytest.mark.parametrize("header,ms", [(" 700 ", 700), ("400", 400), ("\t400", 400)])
def test_timeout_header_sets_the_deadline(service, tmp_path, header, ms):
    resp, elapsed = timed_call(service, "wait-cancel", marker(tmp_path, "m"), timeout_ms=header)
    assert resp.status == 200
    assert resp.json == deadline_answer("wait-cancel")
    assert ms / 1000.0 - 0.05 <= elapsed < 5
    assert int(resp.header("kindgi-duration-ms")) >= ms - 10


@pytest.mark.parametrize("header", ["abc", "0", "-5", "1.5", "", "1e2", "0x10", "+50", "7 0"])
def test_bad_timeout_header_means_the_default(service, header):
    """Misread as a small number, each of these would expire before the 0.15 s nap ends."""
    resp, _ = timed_call(service, "nap", {"seconds": 0.15}, timeout_ms=header)
    assert resp.json == {"v": 2, "kind": "result", "output": {"slept": 0.15}}


def test_no_timeout_header_means_the_default(service):
    resp, _ = timed_call(service, "nap", {"seconds": 0.15})
    assert resp.json["kind"] == "result"


# -- the deadline answer ------------------------------------------------------------------

def test_deadline_is_answered_while_a_sync_handler_sleeps(service):
    resp, elapsed = timed_call(service, "nap", {"seconds": 2.5}, timeout_ms="300",
                               ctx={"tenantId": "t", "runId": "r", "requestId": "nap-late"})
    assert resp.status == 200
    assert resp.body == b'{"v":2,"kind":"error","code":"deadline-exceeded","message":"nap passed its deadline",' \
                        b'"toolId":"nap"}'
    assert resp.header("kindgi-artifact-version") == "art-1"
    assert resp.header("connection") == "close"   # the handler still holds the connection's thread
    assert elapsed < 2.0
    record = service.wait_record("call", where=lambda r: r.get("requestId") == "nap-late")
    assert record["outcome"] == "deadline-exceeded"
    assert record["level"] == "warn"


def test_late_handler_is_logged_with_after_ms(service):
    resp, _ = timed_call(service, "nap", {"seconds": 0.8}, timeout_ms="200",
                         ctx={"tenantId": "t", "runId": "r", "requestId": "nap-logged"})
    assert resp.json["code"] == "deadline-exceeded"
    record = service.wait_record("handler-finished-late", timeout=10,
                                 where=lambda r: r.get("requestId") == "nap-logged")
    assert (record["level"], record["toolId"], record["target"]) == ("warn", "nap", "tool")
    assert 800 <= record["afterMs"] < 5000
    assert record["message"] == "tool nap finished %d ms after its call ended" % record["afterMs"]


def test_deadline_fires_the_cancellation(service, tmp_path):
    resp, elapsed = timed_call(service, "wait-cancel", marker(tmp_path, "m"), timeout_ms="300",
                               ctx={"tenantId": "t", "runId": "r", "requestId": "wait-deadline"})
    assert resp.json == deadline_answer("wait-cancel")
    assert wait_for_lines(tmp_path / "m", 2) == ["started", "fired=True reason=deadline-exceeded"]
    record = service.wait_record("handler-finished-late", where=lambda r: r.get("requestId") == "wait-deadline")
    assert record["afterMs"] >= 300


def test_deadline_cancels_an_async_handler_at_its_next_await(service, tmp_path):
    resp, elapsed = timed_call(service, "async-wait", marker(tmp_path, "m"), timeout_ms="300")
    assert resp.json == deadline_answer("async-wait")
    assert elapsed < 5
    assert wait_for_lines(tmp_path / "m", 2) == ["started", "async-cancelled reason=deadline-exceeded"]


@pytest.mark.parametrize("callback_seconds", [0, 3], ids=["raises", "blocks"])
def test_a_cancellation_callback_can_not_hold_up_or_lose_the_deadline_answer(service, callback_seconds):
    """The callbacks run once the answer is out: one that blocks for 3 s, or raises SystemExit, is pack code's
    affair."""
    resp, elapsed = timed_call(service, "bad-callback", {"seconds": 2, "callback_seconds": callback_seconds},
                               timeout_ms="300")
    assert resp.json == deadline_answer("bad-callback")
    assert elapsed < 1.5
    assert service.request("GET", "/healthz", token=False).status == 200


def test_check_deadline(service):
    start = time.monotonic()
    resp = service.call_check("slow-check", config={"seconds": 1.5}, headers={"kindgi-timeout-ms": "250"})
    assert time.monotonic() - start < 1.4
    assert resp.json == deadline_answer("slow-check", "checkId")


@pytest.mark.parametrize("check_id", ["slow-check", "stubborn-check"])
def test_a_check_finishing_after_its_deadline_is_logged(service, check_id):
    """As a tool is: the official service writes it for an async check."""
    resp = service.call_check(check_id, config={"seconds": 0.6}, headers={"kindgi-timeout-ms": "150"})
    assert resp.json == deadline_answer(check_id, "checkId")
    record = service.wait_record("handler-finished-late", where=lambda r: r.get("checkId") == check_id)
    assert (record["level"], record["target"]) == ("warn", "check")
    assert record["message"] == "check %s finished %d ms after its call ended" % (check_id, record["afterMs"])
    assert record["afterMs"] >= 600


# -- the cap and late handlers ---------------------------------------------------------------

def test_late_handlers_still_count_toward_the_cap(capped):
    """A deadline answers the caller, but the handler still runs: it keeps its slot until it returns."""
    for i in range(2):
        resp, _ = timed_call(capped, "nap", {"seconds": 1.5}, timeout_ms="150",
                             ctx={"tenantId": "t", "runId": "r", "requestId": "late-%d" % i})
        assert resp.json["code"] == "deadline-exceeded"
    resp, _ = timed_call(capped, "echo", {"during": "late"})
    assert (resp.status, resp.json, resp.header("retry-after")) == (503, {"error": "overloaded"}, "1")
    for i in range(2):
        capped.wait_record("handler-finished-late", where=lambda r, i=i: r.get("requestId") == "late-%d" % i)
    resp, _ = timed_call(capped, "echo", {"after": "late"})
    assert resp.json == {"v": 2, "kind": "result", "output": {"after": "late"}}


def test_async_handler_that_blocks_stalls_nothing_else(service, tmp_path):
    thread, holder = in_thread(timed_call, service, "async-block",
                               dict(marker(tmp_path, "m"), seconds=2), timeout_ms="500")
    assert wait_for_lines(tmp_path / "m", 1) == ["started"]
    try:
        start = time.monotonic()
        assert service.request("GET", "/healthz", token=False).status == 200
        assert service.request("GET", "/readyz", token=False).status == 200
        resp, _ = timed_call(service, "echo", {"during": "block"})
        assert resp.json == {"v": 2, "kind": "result", "output": {"during": "block"}}
        assert time.monotonic() - start < 1.5
    finally:
        thread.join(10)
    resp, elapsed = holder["value"]
    assert resp.json == deadline_answer("async-block")
    assert elapsed < 1.6


def test_two_blocking_async_handlers_keep_their_own_deadlines(service, tmp_path):
    calls = [in_thread(timed_call, service, "async-block", dict(marker(tmp_path, "m%d" % i), seconds=1.5),
                       timeout_ms="300") for i in range(2)]
    for thread, _ in calls:
        thread.join(10)
    for _, holder in calls:
        resp, elapsed = holder["value"]
        assert resp.json == deadline_answer("async-block")
        assert elapsed < 1.3


def test_an_async_call_whose_deadline_passed_before_it_began_leaves_no_warning(service, tmp_path):
    """While one async handler holds the loop, another call's deadline passes before its task begins:
    its coroutine, never awaited, must not say so on stderr (lines that are not records)."""
    thread, holder = in_thread(timed_call, service, "async-block", dict(marker(tmp_path, "m"), seconds=1.5),
                               timeout_ms="5000")
    assert wait_for_lines(tmp_path / "m", 1) == ["started"]
    resp, elapsed = timed_call(service, "async-wait", marker(tmp_path, "w"), timeout_ms="200")
    assert resp.json == deadline_answer("async-wait") and elapsed < 1.3
    thread.join(10)
    assert holder["value"][0].status == 200
    assert timed_call(service, "async-wait", dict(marker(tmp_path, "free"), limit=0))[0].status == 200
    assert not (tmp_path / "w").exists(), "its task began"
    assert not [line for line in service.raw_stderr if "never awaited" in line]


# -- a caller that leaves ---------------------------------------------------------------------

def invoke_bytes(message, extra_headers=""):
    """An invoke request as raw HTTP/1.1 bytes."""
    body = json.dumps(message).encode()
    head = ("POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\ncontent-type: application/json\r\n"
            "%scontent-length: %d\r\n\r\n" % (TOKEN, extra_headers, len(body))).encode()
    return head + body


def send_and_hang_up(service, message, wait):
    """Send an invoke on a socket of its own, call ``wait()``, then close the socket mid-call."""
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(invoke_bytes(message))
        wait()


def test_deadline_holds_when_the_caller_pipelines_its_next_request(service):
    """The next request arriving mid-call makes the socket readable; that is not a hang-up."""
    message = {"v": 2, "kind": "invoke", "tool": {"id": "nap"}, "input": {"seconds": 2.5},
               "ctx": {"tenantId": "t", "runId": "r"}}
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(invoke_bytes(message, "kindgi-timeout-ms: 600\r\n"))
        time.sleep(0.3)   # mid-call, the socket watched: sent with the invoke, it would only be buffered
        sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        data = sock.recv(65536)
    assert time.monotonic() - start < 2.0
    assert data.startswith(b"HTTP/1.1 200 ")
    assert data.endswith(b'{"v":2,"kind":"error","code":"deadline-exceeded","message":"nap passed its deadline",'
                         b'"toolId":"nap"}')


def test_a_caller_that_pipelined_its_next_request_and_left_is_seen_to_leave(service):
    """The waiting bytes of the next request hide the close from a read: the call ran to its end,
    and the next request ran too, answered into nothing.  The peer's close is asked about itself."""
    run_id = "pipelined-then-gone"
    message = {"v": 2, "kind": "invoke", "tool": {"id": "nap"}, "input": {"seconds": 2.5},
               "ctx": {"tenantId": "t", "runId": run_id}}
    following = dict(message, tool={"id": "echo"}, input={"after": "the nap"})
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(invoke_bytes(message))
        time.sleep(0.3)   # mid-call, the socket watched
        sock.sendall(invoke_bytes(following))
        time.sleep(0.2)
    record = service.wait_record("call", where=lambda r: r.get("runId") == run_id)
    assert (record["toolId"], record["outcome"]) == ("nap", "cancelled"), record
    assert time.monotonic() - start < 2.0
    service.wait_record("handler-finished-late", where=lambda r: r.get("runId") == run_id)
    time.sleep(0.3)   # the next request would have run by now
    assert [r["toolId"] for r in service.records_of("call") if r.get("runId") == run_id] == ["nap"]


@pytest.mark.parametrize("tool_id,fired", [
    ("wait-cancel", "fired=True reason=cancelled"),
    ("async-wait", "async-cancelled reason=cancelled"),
])
def test_caller_hanging_up_cancels_the_call(service, tmp_path, tool_id, fired):
    request_id = "hangup-" + tool_id
    message = {"v": 2, "kind": "invoke", "tool": {"id": tool_id}, "input": marker(tmp_path, "m"),
               "ctx": {"tenantId": "t", "runId": "r", "requestId": request_id}}
    start = time.monotonic()
    send_and_hang_up(service, message, lambda: wait_for_lines(tmp_path / "m", 1))
    assert wait_for_lines(tmp_path / "m", 2) == ["started", fired]
    assert time.monotonic() - start < 5
    record = service.wait_record("call", where=lambda r: r.get("requestId") == request_id)
    assert record["outcome"] == "cancelled"
    assert record["toolId"] == tool_id
    assert record["message"].startswith("tool %s cancelled " % tool_id)


def test_hang_up_is_recorded_without_waiting_for_a_sync_handler(capped):
    """``nap`` ignores its cancellation: the call is settled when the caller leaves, and the
    handler keeps its slot until it returns."""
    start = time.monotonic()
    for i in range(2):
        message = {"v": 2, "kind": "invoke", "tool": {"id": "nap"}, "input": {"seconds": 1.5},
                   "ctx": {"tenantId": "t", "runId": "r", "requestId": "nap-hangup-%d" % i}}
        send_and_hang_up(capped, message, lambda: time.sleep(0.2))
        record = capped.wait_record("call", where=lambda r: r.get("requestId") == "nap-hangup-%d" % i)
        assert record["outcome"] == "cancelled"
    assert time.monotonic() - start < 1.4
    resp, _ = timed_call(capped, "echo", {"during": "hang-ups"})
    assert resp.json == {"error": "overloaded"}
    for i in range(2):
        capped.wait_record("handler-finished-late", where=lambda r, i=i: r.get("requestId") == "nap-hangup-%d" % i)
    resp, _ = timed_call(capped, "echo", {"after": "hang-ups"})
    assert resp.json == {"v": 2, "kind": "result", "output": {"after": "hang-ups"}}


def test_hung_up_calls_free_their_slots(capped, tmp_path):
    """A handler that returns when its cancellation fires gives its slot back at once."""
    service = capped
    for i in range(3):  # more than the cap of 2
        name = "m%d" % i
        message = {"v": 2, "kind": "invoke", "tool": {"id": "wait-cancel"},
                   "input": dict(marker(tmp_path, name), limit=3), "ctx": {"tenantId": "t", "runId": "r"}}
        send_and_hang_up(service, message, lambda: wait_for_lines(tmp_path / name, 1))
        assert wait_for_lines(tmp_path / name, 2)[1].startswith("fired=True")
    resp, _ = timed_call(service, "echo", {"ok": 1})
    assert resp.status == 200
    assert service.proc.poll() is None
    assert os.path.exists(str(tmp_path / "m2"))
