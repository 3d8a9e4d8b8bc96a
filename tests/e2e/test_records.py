"""End-to-end: the records the service writes on stderr (README: Configuration, Security).

One JSON object a line; fixed keys first (time, level, severity, subsystem,
message), then the correlation ids present in their fixed order, then the
rest; ``event`` and ``kind`` agree.  ``call`` records describe each parsed
call; a valid W3C ``traceparent`` gives them the caller's ``traceId`` and a
fresh ``spanId``.  ``KINDGI_LOG_LEVEL`` filters everything but lifecycle
records, ``KINDGI_LOG_FORMAT=pretty`` writes lines for humans, and what pack
code prints goes to stdout, line by line, never into an answer.
"""

import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

from conftest import PYTHON, ROOT, TOKEN, PackWriter, Service, program_args, service_env

FIXED = ["time", "level", "severity", "subsystem", "message"]
CORRELATION = ["traceId", "spanId", "requestId", "tenantId", "projectId", "orgId", "runId", "toolId"]
SEVERITY = {"error": "ERROR", "warn": "WARNING", "info": "INFO", "debug": "DEBUG", "trace": "DEBUG"}
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
FULL_CTX = {"tenantId": "tenant-1", "runId": "run-full", "requestId": "req-1", "projectId": "proj-1",
            "orgId": "org-1"}

PACK_CODE = '''
import datetime, decimal, os, sys, threading, time
from kindgi import tool, guardrail

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input, ctx):
    return input

@tool(description="A test tool.", input={"type": "object"}, output={}, id="chatty", version="1.0.0")
def chatty(input, ctx):
    ctx.log.info("pack code says hello", {"zeta": 1}, alpha=2)
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="structured", version="1.0.0")
def structured(input, ctx):
    try:
        raise ValueError("it broke")
    except ValueError as exc:
        ctx.log.error("failed", err=exc, at=datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, datetime.timezone.utc),
                      price=decimal.Decimal("1.50"), level="mine", message="mine too", self="me", event="forged",
                      kind="listening", port=1)
        ctx.log.warn("noted", err=exc)
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="big", version="1.0.0")
def big(input, ctx):
    ctx.log.info("a long record", blob=input["mark"] * input["size"])
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="boom", version="1.0.0")
def boom(input, ctx):
    raise ValueError("boom")

@tool(description="A test tool.", input={"type": "object"}, output={}, id="printer", version="1.0.0")
def printer(input, ctx):
    """Prints a line, then waits for the release file: the line must be out before the return."""
    print(input["line"])
    end = time.monotonic() + 10
    while time.monotonic() < end and not os.path.exists(input["release"]):
        time.sleep(0.02)
    return {"printed": True}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="unicode", version="1.0.0")
def unicode_text(input, ctx):
    """Prints non-ASCII text, and reads a UTF-8 file with open()'s default encoding."""
    print(input["line"])
    with open(input["path"]) as f:
        return {"read": f.read()}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="to-stderr", version="1.0.0")
def to_stderr(input, ctx):
    """What a pack's own logging does by default: a plain line on stderr."""
    sys.stderr.write(input["line"] + "\\n")
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="print-stderr", version="1.0.0")
def print_stderr(input, ctx):
    """print() to stderr: the line, then its newline, in two writes."""
    print(input["line"], file=sys.stderr)
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="chatter", version="1.0.0")
def chatter(input, ctx):
    """Starts a thread that writes long lines to stderr without a pause, for 20 s."""
    def chat():
        end = time.monotonic() + 20
        while time.monotonic() < end:
            sys.stderr.write("chatter " + "x" * 10000 + "\\n")
    threading.Thread(target=chat, daemon=True).start()
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="quiet-stderr", version="1.0.0")
def quiet_stderr(input, ctx):
    """Closes descriptor 2, or points it at /dev/null (as code that quiets a noisy library does)."""
    if input["how"] == "close":
        os.close(2)
    else:
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    return {}

@guardrail(id="g", on_violation="block")
def g(config, trace):
    return True
'''


@pytest.fixture(scope="module")
def pack_index(tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("records"))
    pack.module("tools/code.py", PACK_CODE)
    for tool_id in ("echo", "chatty", "structured", "big", "boom", "printer", "to-stderr", "unicode", "quiet-stderr",
                    "print-stderr", "chatter"):
        pack.tool(tool_id, "tools/code.py", version="1.0.0")
    pack.guardrail("g", "tools/code.py")
    return pack.write()


@pytest.fixture(scope="module")
def service(module_launcher, pack_index):
    return module_launcher.start(pack_index)


def call_record(service, run_id):
    return service.wait_record("call", where=lambda r: r.get("runId") == run_id)


def traced_call(service, run_id, traceparent):
    response = service.call_tool("echo", {}, ctx={"tenantId": "t", "runId": run_id},
                                 headers={"traceparent": traceparent})
    assert response.status == 200, response
    return call_record(service, run_id)


def assert_shape(record):
    """Fixed keys, then correlation ids in order, then the rest; event == kind."""
    keys = list(record)
    assert keys[:5] == FIXED, keys
    ids = [k for k in keys if k in CORRELATION]
    assert keys[5:5 + len(ids)] == sorted(ids, key=CORRELATION.index), keys
    assert TIME.match(record["time"]), record["time"]
    assert record["severity"] == SEVERITY[record["level"]]
    assert record["event"] == record["kind"]


# -- shape ----------------------------------------------------------------------

def test_every_record_has_the_shape(service):
    service.call_tool("boom", {})
    service.call_check("g")
    service.wait_record("call", where=lambda r: r.get("checkId") == "g")
    assert len(service.records) >= 3
    for record in service.records:
        if record.get("subsystem") == "pack":
            assert_shape(record)


def test_pack_code_records_have_the_shape_too(service):
    service.call_tool("chatty", {}, ctx={"tenantId": "t", "runId": "run-chatty"})
    record = service.wait_record(None, where=lambda r: r.get("message") == "pack code says hello")
    assert list(record) == FIXED + ["tenantId", "runId", "toolId", "packId", "artifactVersion", "target", "zeta",
                                    "alpha"]
    assert (record["level"], record["tenantId"], record["runId"], record["toolId"]) == (
        "info", "t", "run-chatty", "chatty")
    assert record["subsystem"].startswith("pack")


def test_pack_code_fields_are_written_as_the_sdk_writes_them(service):
    """An exception as its name and message (and stack at error), a datetime in ISO 8601, other
    objects as text; any name can be a field, and the record's own names go under ``fields``, so
    pack code can't forge a lifecycle record."""
    service.call_tool("structured", {}, ctx={"tenantId": "t", "runId": "run-structured"})
    failed = service.wait_record(None, where=lambda r: r.get("message") == "failed")
    noted = service.wait_record(None, where=lambda r: r.get("message") == "noted")
    assert (failed["err"]["name"], failed["err"]["message"]) == ("ValueError", "it broke")
    assert 'raise ValueError("it broke")' in failed["err"]["stack"]
    assert noted["err"] == {"name": "ValueError", "message": "it broke"}
    assert (failed["at"], failed["price"], failed["port"]) == ("2026-01-02T03:04:05.006Z", "1.50", 1)
    assert failed["fields"] == {"level": "mine", "message": "mine too", "event": "forged", "kind": "listening"}
    assert failed["self"] == "me"
    assert (failed["level"], "event" in failed, "kind" in failed) == ("error", False, False)


def test_listening_record(service):
    record = service.records_of("listening")[0]
    assert (record["level"], record["subsystem"]) == ("info", "pack")
    assert record["message"] == "Listening on port %d" % service.port
    assert (record["packId"], record["artifactVersion"]) == ("test-pack", "art-1")


def test_call_record_fields_and_order(service):
    traceparent = "00-%s-%s-01" % (TRACE_ID, PARENT_ID)
    response = service.call_tool("echo", {"x": 1}, ctx=FULL_CTX, headers={"traceparent": traceparent})
    assert response.status == 200, response
    record = call_record(service, "run-full")
    assert list(record)[:13] == FIXED + CORRELATION
    assert_shape(record)
    assert record["level"] == "info"
    assert record["message"] == "tool echo ok %dms" % record["durationMs"]
    assert isinstance(record["durationMs"], int) and record["durationMs"] >= 0
    expected = {"requestId": "req-1", "tenantId": "tenant-1", "projectId": "proj-1", "orgId": "org-1",
                "runId": "run-full", "toolId": "echo", "packId": "test-pack", "artifactVersion": "art-1",
                "target": "tool", "id": "echo", "outcome": "ok", "event": "call", "kind": "call",
                "inMessage": ["target", "id", "outcome", "durationMs"]}
    assert {k: record.get(k) for k in expected} == expected


def test_call_record_keys_in_full_order(service):
    traceparent = "00-%s-%s-01" % (TRACE_ID, PARENT_ID)
    service.call_tool("echo", {}, ctx=FULL_CTX, headers={"traceparent": traceparent})
    assert list(call_record(service, "run-full")) == FIXED + CORRELATION + [
        "event", "kind", "packId", "artifactVersion", "target", "id", "outcome", "durationMs", "inMessage"]
    own_trace = "5" * 32
    service.call_check("g", headers={"traceparent": "00-%s-%s-01" % (own_trace, PARENT_ID)})
    record = service.wait_record("call", where=lambda r: r.get("checkId") == "g" and r.get("traceId") == own_trace)
    assert list(record) == FIXED + ["traceId", "spanId", "event", "kind", "checkId", "packId", "artifactVersion",
                                    "target", "id", "outcome", "durationMs", "inMessage"]


def test_call_record_carries_any_caller_string_intact(service):
    """Quotes, backslashes, controls, non-ASCII and a lone surrogate from the caller stay one JSON line."""
    awkward = 'q"uote \\ back\nslash \u00e9\u2028 \ud800 end'
    ctx = {"tenantId": awkward, "runId": "run-awkward", "requestId": awkward + "-r"}
    assert service.call_tool("echo", {}, ctx=ctx).status == 200
    record = call_record(service, "run-awkward")
    assert (record["tenantId"], record["requestId"]) == (awkward, awkward + "-r")
    assert_shape(record)
    assert len(service.records) == len(service.raw_stderr), "a line is not a JSON record"


def test_records_are_the_same_without_the_json_accelerator(launcher, pack_index, tmp_path):
    """An interpreter whose json has no C part (``_json``) writes the same records, in Python."""
    (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['_json'] = None\n")
    slow = launcher.start(pack_index, env={"PYTHONPATH": str(tmp_path)})
    slow.call_tool("chatty", {}, ctx=FULL_CTX, headers={"traceparent": "00-%s-%s-01" % (TRACE_ID, PARENT_ID)})
    assert list(call_record(slow, "run-full")) == FIXED + CORRELATION + [
        "event", "kind", "packId", "artifactVersion", "target", "id", "outcome", "durationMs", "inMessage"]
    record = slow.wait_record(None, where=lambda r: r.get("message") == "pack code says hello")
    assert (record["zeta"], record["alpha"], record["toolId"]) == (1, 2, "chatty")
    assert len(slow.records) == len(slow.raw_stderr), "a line is not a JSON record"


def test_long_and_short_records_written_at_once_never_mix(service):
    """Records longer than a pipe holds, written while other calls write theirs: every line whole."""
    size = 200000
    errors = []

    def calls(n):
        for i in range(n):
            if service.call_tool("echo", {}, ctx={"tenantId": "t", "runId": "run-mix"}).status != 200:
                errors.append(i)

    threads = [threading.Thread(target=calls, args=(40,)) for _ in range(6)]
    for thread in threads:
        thread.start()
    for mark in "abcdefgh":
        assert service.call_tool("big", {"mark": mark, "size": size}).status == 200
    for thread in threads:
        thread.join(60)
    assert errors == [] and not any(thread.is_alive() for thread in threads)

    def seen():
        return ([r["blob"] for r in service.records if "blob" in r],
                [r for r in service.records_of("call") if r.get("runId") == "run-mix"])

    deadline = time.monotonic() + 10
    while [len(found) for found in seen()] != [8, 240] and time.monotonic() < deadline:
        time.sleep(0.05)   # the test's reader may still be taking the last lines off the pipe
    blobs, calls = seen()
    assert sorted(blobs) == [mark * size for mark in "abcdefgh"]
    assert len(calls) == 240
    assert len(service.records) == len(service.raw_stderr), "a line is not a JSON record"


def call_side_by_side(service, plan):
    """For each ``(tool_id, input, n)`` of ``plan``, a thread making ``n`` calls on a connection
    of its own, all at once; every answer must be a 200."""
    errors = []

    def calls(tool_id, input, n):
        conn = service.connection()
        for i in range(n):
            if service.call_tool(tool_id, input, conn=conn).status != 200:
                errors.append((tool_id, i))

    threads = [threading.Thread(target=calls, args=step) for step in plan]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and not any(thread.is_alive() for thread in threads)


def test_lines_pack_code_writes_to_stderr_never_land_inside_a_record(launcher, pack_index):
    """Batches of records are written in pieces a pipe never splits: a batch in one write, on a
    pipe that is full, went out in parts, and a line pack code wrote meanwhile landed between them."""
    own = launcher.start(pack_index)
    fcntl.fcntl(own.proc.stderr.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)   # fills at once
    line = "pack code wrote this line to stderr " + "x" * 200
    call_side_by_side(own, [("to-stderr", {"line": line}, 150)] * 4)
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    broken = [text for text in own.raw_stderr if text != line and not text.startswith('{"time"')]
    assert broken == [] and own.raw_stderr.count(line) == 600
    assert len(own.records_of("call")) == 600


@pytest.mark.parametrize("tool_id", ["to-stderr", "print-stderr"])
def test_a_record_never_lands_inside_a_long_line_pack_code_writes_to_stderr(launcher, pack_index, tool_id):
    """A line longer than a pipe takes at once goes out in parts: a record written between them
    landed inside it, mid-line, where a log collector that reads lines lost it."""
    own = launcher.start(pack_index)
    fcntl.fcntl(own.proc.stderr.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)   # fills at once
    line = "a long line of pack code's " + "x" * 60000
    call_side_by_side(own, [(tool_id, {"line": line}, 40)] + [("echo", {}, 60)] * 3)   # one: print() isn't atomic
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    broken = [text[:80] for text in own.raw_stderr if text != line and not text.startswith('{"time"')]
    assert broken == [] and own.raw_stderr.count(line) == 40
    assert len(own.records_of("call")) == 220


def test_a_record_after_a_line_pack_code_finished_follows_it_without_an_empty_line(launcher, pack_index):
    """print() of a long line writes its newline apart, in a short write: that write ends the
    line, so the next record follows it at once, not after an empty line of its own making."""
    own = launcher.start(pack_index)
    line = "a long line of pack code's " + "x" * 60000
    for i in range(3):
        run_id = "run-finished-line-%d" % i
        assert own.call_tool("print-stderr", {"line": line}, ctx={"tenantId": "t", "runId": run_id}).status == 200
        call_record(own, run_id)   # written before the next call begins its line
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    assert "" not in own.raw_stderr and own.raw_stderr.count(line) == 3


def test_pack_code_that_never_stops_writing_to_stderr_holds_up_neither_records_nor_the_drain(launcher, pack_index):
    """Its long lines hold the records' lock while they are written: the records still go out
    between them, and the drain still ends as soon as the calls are done."""
    own = launcher.start(pack_index)
    assert own.call_tool("chatter", {}).status == 200
    for _ in range(5):
        assert own.call_tool("echo", {}, ctx={"tenantId": "t", "runId": "run-chatter"}).status == 200
    deadline = time.monotonic() + 5
    while len([r for r in own.records_of("call") if r.get("runId") == "run-chatter"]) < 5:
        assert time.monotonic() < deadline, "the call records did not come out"
        time.sleep(0.02)
    started = time.monotonic()
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    assert time.monotonic() - started < 3
    assert own.records_of("stopped")


LOGS_IN_A_SIGNAL_HANDLER = '''
import fcntl, signal, sys
from kindgi import tool
from kindgi.log import get_logger

log = get_logger("pack")
signal.signal(signal.SIGALRM, lambda signum, frame: log.info("tick from the handler"))
fcntl.fcntl(2, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)   # the long line below takes a while to go out
line = "y" * (8 * 1024 * 1024) + "\\n"
signal.setitimer(signal.ITIMER_REAL, 0.02)
sys.stderr.write(line)

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input):
    return input
'''


def test_pack_code_that_logs_from_a_signal_handler_amid_its_long_stderr_line_does_not_hang(launcher, pack):
    """The long line holds the records' lock; a record written on that thread meanwhile (a
    signal handler, a finalizer) waited for it for ever: the boot never ended."""
    pack.module("tools/t.py", LOGS_IN_A_SIGNAL_HANDLER)
    pack.tool("echo", "tools/t.py", version="1.0.0")
    code, service = launcher.run(["--index", pack.write(), "--check"], timeout=20)
    assert code == 0, service.raw_stderr[-3:]
    assert service.records_of("check-passed")


FINISHES_ITS_LINE = '''
import sys
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="progress", version="1.0.0")
def progress(input, ctx):
    """A line in two writes, the first flushed on its own: the second, short, ends it."""
    sys.stderr.write("working...")
    sys.stderr.flush()
    sys.stderr.write(" done\\n")
    return {}
'''


def test_a_line_pack_code_finishes_in_a_short_write_leaves_no_empty_line_before_the_next_record(launcher, pack):
    """The unfinished first part made the next record begin a line of its own; the short write
    that ended the line didn't say so, and that record came after an empty line."""
    pack.module("tools/p.py", FINISHES_ITS_LINE)
    pack.tool("progress", "tools/p.py", version="1.0.0")
    own = launcher.start(pack.write())
    for _ in range(3):
        assert own.call_tool("progress", {}).status == 200
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    assert own.raw_stderr.count("working... done") == 3 and "" not in own.raw_stderr, own.raw_stderr

@pytest.mark.parametrize("how", ["close", "devnull"])
def test_records_go_on_to_stderr_when_pack_code_closes_or_redirects_it(launcher, pack_index, how):
    """The records have a descriptor of stderr of their own: they go on where they went, and never
    into the caller's socket that takes the number 2 once pack code closed it."""
    own = launcher.start(pack_index)
    assert own.call_tool("quiet-stderr", {"how": how}).status == 200
    conn = own.connection()
    response = own.call_tool("echo", {"after": how}, ctx={"tenantId": "t", "runId": "after-" + how}, conn=conn)
    assert response.status == 200 and response.json["output"] == {"after": how}
    assert call_record(own, "after-" + how)["outcome"] == "ok"
    conn.sock.settimeout(0.5)
    with pytest.raises(socket.timeout):
        conn.sock.recv(65536)   # nothing after the answer


STREAM_CLOSING_CODE = '''
import os, sys
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="close", version="1.0.0")
def close(input, ctx):
    """Closes a standard stream's descriptor, as code that quiets a library the wrong way does."""
    os.close(input["fd"])
    return {}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="noisy", version="1.0.0")
def noisy(input, ctx):
    print("printed by pack code")
    sys.stderr.write("written to sys.stderr by pack code\\n")
    os.write(2, b"written to descriptor 2 by pack code\\n")
    return {}
'''


@pytest.mark.parametrize("fds", [[1], [2], [0, 1, 2]], ids=["stdout", "stderr", "all"])
def test_what_pack_code_writes_after_closing_a_standard_stream_never_reaches_a_caller(launcher, tmp_path, fds):
    """The next connection took the number pack code left free: its prints, or what it wrote to
    descriptor 2, went into that caller's answer."""
    pack = PackWriter(tmp_path)
    pack.module("tools/streams.py", STREAM_CLOSING_CODE)
    pack.tool("close", "tools/streams.py", version="1.0.0")
    pack.tool("noisy", "tools/streams.py", version="1.0.0")
    own = launcher.start(pack.write())
    for fd in fds:
        assert own.call_tool("close", {"fd": fd}).status == 200
    body = json.dumps({"v": 2, "kind": "invoke", "tool": {"id": "noisy"}, "input": {},
                       "ctx": {"tenantId": "t", "runId": "r"}}).encode()
    request = (b"POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\ncontent-type: application/json\r\n"
               b"content-length: %d\r\nconnection: close\r\n\r\n%s" % (TOKEN.encode(), len(body), body))
    for _ in range(4):   # each new connection could take a number pack code left free
        answer = own.raw(request)
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
        assert answer.endswith(b'\r\n\r\n{"v":2,"kind":"result","output":{}}'), answer
    deadline = time.monotonic() + 10   # the records go on to stderr as before
    while len([r for r in own.records_of("call") if r.get("toolId") == "noisy"]) < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [r["outcome"] for r in own.records_of("call") if r.get("toolId") == "noisy"] == ["ok"] * 4
    assert own.request("GET", "/healthz", token=False).status == 200


def test_records_written_in_batches_still_come_before_draining_and_stopped(launcher, pack_index):
    """Once serving, records wait a few milliseconds for the writer thread; a lifecycle record
    writes those first, so a stop right after the calls loses none and keeps the order."""
    own = launcher.start(pack_index)
    conn = own.connection()
    for i in range(50):
        assert own.call_tool("chatty", {}, ctx={"tenantId": "t", "runId": "run-batch-%d" % i},
                             conn=conn).status == 200
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    kinds = [(r["kind"] if "kind" in r else r["message"], r.get("runId")) for r in own.records]
    expected = []
    for i in range(50):
        expected += [("pack code says hello", "run-batch-%d" % i), ("call", "run-batch-%d" % i)]
    assert kinds[kinds.index(("listening", None)) + 1:] == expected + [("draining", None), ("stopped", None)]


def test_call_record_for_a_failed_call_is_a_warning(service):
    service.call_tool("boom", {}, ctx={"tenantId": "t", "runId": "run-boom"})
    record = call_record(service, "run-boom")
    assert (record["level"], record["severity"], record["outcome"]) == ("warn", "WARNING", "handler-throw")
    assert record["message"] == "tool boom handler-throw %dms" % record["durationMs"]


def test_check_call_record(service):
    service.call_check("g", headers={"traceparent": "00-%s-%s-00" % (TRACE_ID, PARENT_ID)})
    record = service.wait_record("call", where=lambda r: r.get("checkId") == "g" and "traceId" in r)
    assert (record["target"], record["id"], record["outcome"]) == ("check", "g", "ok")
    assert record["message"] == "check g ok %dms" % record["durationMs"]
    assert "toolId" not in record and "runId" not in record


# -- trace ids ------------------------------------------------------------------

def test_valid_traceparent_gives_the_callers_trace_and_a_fresh_span(service):
    traceparent = "00-%s-%s-01" % (TRACE_ID, PARENT_ID)
    first = traced_call(service, "run-trace-1", traceparent)
    second = traced_call(service, "run-trace-2", traceparent)
    for record in (first, second):
        assert record["traceId"] == TRACE_ID
        assert re.match(r"^[0-9a-f]{16}$", record["spanId"]), record["spanId"]
        assert record["spanId"] != PARENT_ID
    assert first["spanId"] != second["spanId"]


def test_future_version_may_carry_more_fields(service):
    record = traced_call(service, "run-trace-future", "01-%s-%s-01-future-field" % (TRACE_ID, PARENT_ID))
    assert record["traceId"] == TRACE_ID


INVALID_TRACEPARENTS = {
    "uppercase": "00-%s-%s-01" % (TRACE_ID.upper(), PARENT_ID),
    "version-ff": "ff-%s-%s-01" % (TRACE_ID, PARENT_ID),
    "zero-trace": "00-%s-%s-01" % ("0" * 32, PARENT_ID),
    "zero-parent": "00-%s-%s-01" % (TRACE_ID, "0" * 16),
    "00-too-long": "00-%s-%s-01-extra" % (TRACE_ID, PARENT_ID),
    "00-too-short": "00-%s-%s-1" % (TRACE_ID, PARENT_ID),
    "short-trace": "00-%s-%s-01" % (TRACE_ID[:-1], PARENT_ID),
    "garbage": "not a traceparent",
}


@pytest.mark.parametrize("name", sorted(INVALID_TRACEPARENTS))
def test_invalid_traceparent_gives_no_trace_fields(service, name):
    record = traced_call(service, "run-bad-trace-" + name, INVALID_TRACEPARENTS[name])
    assert "traceId" not in record and "spanId" not in record


# -- stdout ---------------------------------------------------------------------

def test_prints_go_to_stdout_line_by_line_and_never_into_answers(service, tmp_path):
    line = "printed-by-pack-code-5a1c"
    release = tmp_path / "release"
    answers = []
    thread = threading.Thread(target=lambda: answers.append(
        service.call_tool("printer", {"line": line, "release": str(release)})))
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while line not in service.stdout and time.monotonic() < deadline:
            time.sleep(0.02)
        assert line in service.stdout, "the print is not on stdout while the handler still runs"
        assert thread.is_alive()
    finally:
        release.touch()
        thread.join(15)
    assert answers[0].json == {"v": 2, "kind": "result", "output": {"printed": True}}
    assert line.encode() not in answers[0].body
    assert all(line not in r.get("message", "") for r in service.records)


def test_in_the_c_locale_text_is_utf8_as_on_python_3_7_and_later(launcher, pack_index, tmp_path):
    """A minimal image sets no locale: pack code's print("é") and open() of UTF-8 text still work
    (on Python 3.6, as 3.7 and later make the C locale UTF-8)."""
    service = launcher.start(pack_index, env={"LANG": None, "LC_ALL": "C"})
    text = "h\u00e9llo \u2713"
    path = tmp_path / "utf8.txt"
    path.write_bytes(text.encode("utf-8"))
    reply = service.call_tool("unicode", {"line": text, "path": str(path)})
    assert reply.json == {"v": 2, "kind": "result", "output": {"read": text}}
    deadline = time.monotonic() + 5
    while text not in service.stdout and time.monotonic() < deadline:
        time.sleep(0.02)
    assert text in service.stdout


# -- configuration --------------------------------------------------------------

def test_log_level_warn_hides_ok_calls_but_not_lifecycle(launcher, pack_index):
    quiet = launcher.start(pack_index, env={"KINDGI_LOG_LEVEL": "warn"})
    assert quiet.call_tool("echo", {}, ctx={"tenantId": "t", "runId": "run-ok"}).status == 200
    quiet.call_tool("boom", {}, ctx={"tenantId": "t", "runId": "run-warn"})
    assert call_record(quiet, "run-warn")["outcome"] == "handler-throw"
    assert [r for r in quiet.records_of("call") if r.get("runId") == "run-ok"] == []
    quiet.signal(signal.SIGTERM)
    assert quiet.wait_exit(10) == 0
    assert [r["kind"] for r in quiet.records if r["level"] == "info"] == ["listening", "draining", "stopped"]


def test_pretty_format_writes_lines_that_are_not_json(launcher, pack_index):
    pretty = launcher.start(pack_index, env={"KINDGI_LOG_FORMAT": "pretty", "DROPPED_FOR_PRETTY": "1"},
                            expect_listening=False)
    deadline = time.monotonic() + 20
    while not any("Listening on port" in line for line in pretty.raw_stderr) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any("Listening on port" in line for line in pretty.raw_stderr), pretty.raw_stderr
    assert any("DROPPED_FOR_PRETTY" in line for line in pretty.raw_stderr), pretty.raw_stderr
    pretty.port = int(re.search(r"Listening on port (\d+)", "".join(pretty.raw_stderr)).group(1))
    assert pretty.call_tool("echo", {}, ctx={"tenantId": "t", "runId": "run-pretty"}).status == 200
    while not any("tool echo ok" in line for line in pretty.raw_stderr) and time.monotonic() < deadline:
        time.sleep(0.02)
    line = [line for line in pretty.raw_stderr if "tool echo ok" in line][0]
    assert line.split()[1:3] == ["INFO", "pack"] and 'runId="run-pretty"' in line, line
    assert pretty.records == []


FORGED = "evil\n12:00:00.000 ERROR pack The pack service failed to boot\x1b]0;pwned\x07\x1b[2J\x9b31m"


def test_pretty_lines_escape_what_a_terminal_or_a_line_reader_acts_on(launcher, pack_index):
    """A caller's tool id with a newline can't forge a line; escape sequences never reach the terminal."""
    pretty = launcher.start(pack_index, env={"KINDGI_LOG_FORMAT": "pretty"}, expect_listening=False)
    deadline = time.monotonic() + 20
    while not any("Listening on port" in line for line in pretty.raw_stderr) and time.monotonic() < deadline:
        time.sleep(0.02)
    pretty.port = int(re.search(r"Listening on port (\d+)", "".join(pretty.raw_stderr)).group(1))
    assert pretty.call_tool(FORGED, {}, ctx={"tenantId": "t\u2028u", "runId": "run-forged"}).status == 200
    while not any("run-forged" in line for line in pretty.raw_stderr) and time.monotonic() < deadline:
        time.sleep(0.02)
    lines = [line for line in pretty.raw_stderr if "run-forged" in line]
    assert len(lines) == 1, pretty.raw_stderr
    assert "tool evil\\u000a12:00:00.000 ERROR pack" in lines[0], lines[0]
    assert not any(line.startswith("12:00:00.000") for line in pretty.raw_stderr)
    assert not any(c in "".join(pretty.raw_stderr) for c in "\x1b\x07\x9b\u2028")


def test_json_lines_escape_line_and_paragraph_separators(service):
    """U+2028, U+2029 and U+0085 split a line for some readers: written as \\u escapes."""
    awkward = "a\u2028b\u2029c\x85d\x9be"
    assert service.call_tool("echo", {}, ctx={"tenantId": awkward, "runId": "run-separators"}).status == 200
    record = call_record(service, "run-separators")
    assert record["tenantId"] == awkward
    line = [line for line in service.raw_stderr if "run-separators" in line][0]
    assert "\\u2028" in line and "\\u2029" in line and "\\u0085" in line and "\\u009b" in line
    assert not any(c in line for c in "\u2028\u2029\x85\x9b")


def test_a_callers_strings_are_cut_to_1024_characters_in_records(service):
    """A 10 MiB call must not make a 20 MiB record: each string from the caller is cut, with a marker."""
    long_id = "t" * 5000
    response = service.call_tool(long_id, {}, ctx={"tenantId": "x" * 100000, "runId": "run-long",
                                                   "requestId": "r" * 2000})
    assert response.json["toolId"] == long_id
    record = call_record(service, "run-long")
    assert record["tenantId"] == "x" * 1024 + "...[98976 more characters]"
    assert record["requestId"] == "r" * 1024 + "...[976 more characters]"
    assert record["toolId"] == record["id"] == "t" * 1024 + "...[3976 more characters]"
    assert record["message"] == "tool %s tool-not-in-pack %dms" % (record["id"], record["durationMs"])
    line = [line for line in service.raw_stderr if "run-long" in line][0]
    assert len(line) < 6000


def test_a_callers_string_of_1024_characters_is_kept_whole_and_one_more_is_cut(service):
    service.call_tool("missing", {}, ctx={"tenantId": "t", "runId": "run-edge", "projectId": "p" * 1025,
                                          "orgId": "o" * 1024})
    record = call_record(service, "run-edge")
    assert (record["projectId"], record["orgId"]) == ("p" * 1024 + "...[1 more characters]", "o" * 1024)


def test_a_callers_strings_have_secrets_masked_in_records(service):
    """The call record masks the known shapes of secrets in the caller's ids, as the official
    service's records do, and before the cut: a credential the cut would split is still masked."""
    split = "x" * 1009 + " Bearer " + "c" * 40
    ctx = {"tenantId": "t", "runId": "run-masked", "requestId": "Bearer abc.def-123",
           "projectId": "postgres://app:hunter2@db/x", "orgId": split}
    response = service.call_tool("kgi_sk_0123456789abcdefghij", {}, ctx=ctx)
    assert response.json["toolId"] == "kgi_sk_0123456789abcdefghij"
    record = call_record(service, "run-masked")
    assert (record["requestId"], record["projectId"]) == ("Bearer [redacted]", "postgres://app:***@db/x")
    assert record["orgId"] == "x" * 1009 + " Bearer [redact...[3 more characters]"
    assert record["toolId"] == record["id"] == "kgi_sk_\u2026ghij"
    line = [line for line in service.raw_stderr if "run-masked" in line][0]
    assert "hunter2" not in line and "abc.def" not in line and "cccc" not in line and "0123456789" not in line


def test_a_callers_string_whose_head_masks_short_still_says_the_rest_was_cut(service):
    """Masking looks at a bounded head; one that masked into a short text (a long credential)
    showed it alone, as if the id ended there, its other characters neither shown nor counted."""
    service.call_tool("missing", {}, ctx={"tenantId": "t", "runId": "run-masked-short",
                                          "requestId": "Bearer " + "c" * 2100 + "-tail"})
    record = call_record(service, "run-masked-short")
    assert record["requestId"] == "Bearer [redacted]...[64 more characters]"


def test_auto_format_writes_json_when_stderr_is_not_a_terminal(launcher, pack_index):
    code, checked = launcher.run(["--check", "--index", pack_index], env={"KINDGI_LOG_FORMAT": "auto"})
    assert code == 0
    assert checked.raw_stderr and len(checked.records) == len(checked.raw_stderr)


@pytest.mark.parametrize("name, value, message", [
    ("KINDGI_LOG_LEVEL", "loud",
     'KINDGI_LOG_LEVEL must be one of error, warn, info, debug, trace, got "loud".'),
    ("KINDGI_LOG_FORMAT", "x", 'KINDGI_LOG_FORMAT must be auto, json or pretty, got "x".'),
    ("KINDGI_LOG_LEVELS", "pack", 'KINDGI_LOG_LEVELS: "pack" isn\'t subsystem=level '
                                  '(levels: error, warn, info, debug, trace).'),
])
def test_bad_log_setting_is_config_invalid_with_that_message(launcher, pack_index, name, value, message):
    code, failed = launcher.run(["--index", pack_index], env={name: value})
    assert code == 1
    record = failed.wait_record("config-invalid")
    assert (record["message"], record["problems"], record["level"]) == (message, [message], "error")
    assert failed.records_of("listening") == []


def test_a_short_line_pack_code_writes_never_lands_inside_a_long_record(launcher, pack_index):
    """A record longer than a pipe takes at once goes out in parts; a short whole line pack code
    wrote to stderr meanwhile, without the records' lock, landed between them, inside the record."""
    own = launcher.start(pack_index)
    fcntl.fcntl(own.proc.stderr.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)   # fills at once
    line = "pack code wrote this line to stderr " + "x" * 200
    call_side_by_side(own, [("to-stderr", {"line": line}, 150)] * 2 + [("big", {"mark": "b", "size": 30000}, 40)])
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    broken = [text[:80] for text in own.raw_stderr if text != line and not text.startswith('{"time"')]
    assert broken == [] and own.raw_stderr.count(line) == 300
    assert [r["blob"] for r in own.records if "blob" in r] == ["b" * 30000] * 40


LAST_WORDS_ON_STDERR = '''
import atexit, sys
from kindgi import tool

def last_words():
    sys.stderr.write("the exit handler's line\\n")
    sys.stderr.write("its last words, unfinished")   # no newline: they wait in sys.stderr's buffer

atexit.register(last_words)

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input):
    return input
'''


def test_what_pack_codes_exit_handlers_write_to_stderr_is_written_before_the_exit(launcher, pack):
    """Its lines go out at once at the exit, not to the writer thread, where ``os._exit`` would cut
    them off; the unfinished text left in sys.stderr's buffer comes after ``stopped``."""
    pack.module("tools/t.py", LAST_WORDS_ON_STDERR)
    pack.tool("echo", "tools/t.py", version="1.0.0")
    own = launcher.start(pack.write())
    assert own.call_tool("echo", {}).status == 200
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    assert own.raw_stderr[-3] == "the exit handler's line", own.raw_stderr[-3:]
    assert own.raw_stderr[-2].startswith('{"time"') and '"kind":"stopped"' in own.raw_stderr[-2]
    assert own.raw_stderr[-1] == "its last words, unfinished"


WRITES_A_NUMBER = '''
import sys
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="number", version="1.0.0")
def number(input, ctx):
    """Writes a number to sys.stderr's buffer, as a slip of pack code's would."""
    try:
        sys.stderr.buffer.write(input["n"])
    except TypeError as exc:
        return {"raised": type(exc).__name__}
    return {"raised": None}
'''


def test_a_number_written_to_the_stderr_buffer_is_refused_not_written_as_zero_bytes(launcher, pack):
    """A buffer's write takes bytes-like objects: a number was taken as a length, and written as
    that many zero bytes (a megabyte of them for a million)."""
    pack.module("tools/t.py", WRITES_A_NUMBER)
    pack.tool("number", "tools/t.py", version="1.0.0")
    own = launcher.start(pack.write())
    response = own.call_tool("number", {"n": 1000000})
    assert response.status == 200 and response.json["output"] == {"raised": "TypeError"}
    own.signal(signal.SIGTERM)
    assert own.wait_exit(10) == 0
    assert not any("\0" in line for line in own.raw_stderr)


LOGS_FROM_A_SIGNAL_HANDLER_AMID_SHORT_LINES = '''
import signal, sys, threading, time
from kindgi import tool
from kindgi.log import get_logger

log = get_logger("pack")

def tick(signum, frame):
    log.info("tick from the handler")
    if not done:
        signal.setitimer(signal.ITIMER_REAL, 0.005)   # once the handler is done: handlers never nest

signal.signal(signal.SIGALRM, tick)

def long_records():
    while not done:
        log.info("a long record", blob="z" * 8000)

done = False
threading.Thread(target=long_records, daemon=True).start()
signal.setitimer(signal.ITIMER_REAL, 0.005)
end = time.monotonic() + 2
while time.monotonic() < end:
    sys.stderr.write("a short line of pack code's\\n")
done = True
signal.setitimer(signal.ITIMER_REAL, 0)

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input):
    return input
'''


def test_pack_code_that_logs_from_a_signal_handler_amid_its_short_stderr_lines_does_not_hang(launcher, pack):
    """A short line holds the lock that a record longer than a pipe takes: a signal handler run
    amid it waits for the records' lock, held by a thread writing such a record, which waited for
    the short line's lock for ever: the boot never ended."""
    pack.module("tools/t.py", LOGS_FROM_A_SIGNAL_HANDLER_AMID_SHORT_LINES)
    pack.tool("echo", "tools/t.py", version="1.0.0")
    code, service = launcher.run(["--index", pack.write(), "--check"], timeout=15)
    assert code == 0, service.raw_stderr[-3:]
    assert service.records_of("check-passed")


LONG_WRITES = '''
import sys
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="long", version="1.0.0")
def long(input, ctx):
    """A record and a line of pack code's, each far longer than the pipe takes at once."""
    ctx.log.info("a long record", blob="r" * 1000000)
    sys.stderr.write("p" * 1000000 + "\\n")
    return {}
'''


def test_a_stderr_its_parent_left_non_blocking_gets_every_record_and_line_whole(launcher, pack):
    """The parent made its stderr pipe non-blocking, which this process shares: a write that found
    the pipe full (EAGAIN) gave up, cutting the record in the middle and losing the rest, and pack
    code's line with it.  The writer now waits for the pipe to take more, as a blocking write does."""
    pack.module("tools/t.py", LONG_WRITES)
    pack.tool("long", "tools/t.py", version="1.0.0")
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), 4096)   # fills at once
    os.set_blocking(write_end, False)
    try:
        proc = subprocess.Popen([PYTHON] + program_args(None) + ["--index", str(pack.write())], env=service_env(),
                                cwd=str(ROOT), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=write_end)
    finally:
        os.close(write_end)
    proc.stderr = os.fdopen(read_end, "rb")
    own = Service(proc)
    launcher.started.append(own)
    assert own.wait_listening()
    for number in range(3):
        response = own.call_tool("long", {}, ctx={"tenantId": "t", "runId": "long-%d" % number})
        assert response.status == 200, response
    own.signal(signal.SIGTERM)
    assert own.wait_exit(15) == 0
    assert [len(r.get("blob", "")) for r in own.records if r["message"] == "a long record"] == [1000000] * 3
    assert own.raw_stderr.count("p" * 1000000) == 3
    assert [r["runId"] for r in own.records_of("call")] == ["long-0", "long-1", "long-2"]
    assert '"kind":"stopped"' in own.raw_stderr[-1], own.raw_stderr[-3:]


CHATTERS_ON = '''
import sys, threading
from kindgi import tool

def chat(name):
    number = 0
    while True:
        number += 1
        sys.stderr.write("%s %d\\n" % (name, number))

for name in ("first", "second", "third"):
    threading.Thread(target=chat, args=(name,), daemon=True).start()

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input):
    return input
'''


def test_stopped_is_the_last_line_though_pack_code_never_stops_writing_to_stderr(launcher, pack):
    """Once the writer thread stops, pack code's threads write to stderr at once: the lines they
    wrote between ``stopped`` and the exit came after it."""
    pack.module("tools/t.py", CHATTERS_ON)
    pack.tool("echo", "tools/t.py", version="1.0.0")
    for _ in range(2):
        own = launcher.start(pack.write())
        assert own.call_tool("echo", {}).status == 200
        own.signal(signal.SIGTERM)
        assert own.wait_exit(10) == 0
        assert '"kind":"stopped"' in own.raw_stderr[-1], own.raw_stderr[-3:]
        own.stop()
