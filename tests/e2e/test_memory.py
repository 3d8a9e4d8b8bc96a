"""End-to-end: no single request can make the service take much memory, and all of them together
are held to a budget.

Measured the way the kernel does: ``VmHWM`` in ``/proc/PID/status``, the most memory the process
ever had, read after a warm-up call and again after the request.  A fresh service per test, so
the high-water mark is the request's own.

* A body of 200,000 unknown properties against ``additionalProperties: false``: the answer keeps
  the first 1,000 issues, in Ajv's order, and says how many were left out.
* 10 MiB of ``[{},{},...]``, of numbers, or of text whose one emoji makes it four bytes a
  character: refused with 413 before it is parsed, because its Python objects would take far more
  than the body.
* A body sent as one-byte chunks: refused with 413 once the chunk lines pass a mebibyte.
* 10 MiB of plain text, and a body of a few megabytes of records: answered.
* Sixteen 10 MiB uploads at once, each held by its handler until all have come: some are
  answered 503 ``overloaded``, the rest are served, and the whole process stays within the
  256 MiB budget (plus 64 MB for everything else).
"""

import json
import sys
import threading
import time

import pytest

from conftest import ROOT, TOKEN, PackWriter

sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402

MiB = 1024 * 1024
PER_REQUEST = 64 * MiB
BUDGET = 256 * MiB

TOOLS = '''\
import os
import time
import uuid
from kindgi import tool

HOLD_DIR = None   # set by the test that holds calls: a file per call held; "release" lets them go


@tool(id="strict", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def strict(input, ctx):
    return {"n": len(input)}


@tool(id="any", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def any_value(input, ctx):
    return {"type": type(input).__name__, "size": len(input)}


@tool(id="hold", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def hold(input, ctx):
    """Keeps its input until the test says, so that many are held at once."""
    open(os.path.join(HOLD_DIR, "held-" + uuid.uuid4().hex), "w").close()
    end = time.monotonic() + 300
    while not os.path.exists(os.path.join(HOLD_DIR, "release")) and time.monotonic() < end:
        time.sleep(0.05)
    return {"size": len(input)}


@tool(id="hold-echo", description="A test tool.", input={"type": "object"}, output={})
def hold_echo(input, ctx):
    """Holds its input as ``hold`` does, then answers it: the biggest call a body can make."""
    hold({}, ctx)
    return input
'''


@pytest.fixture
def service(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/t.py", TOOLS)
    pack.tool("strict", "tools/t.py", input={"type": "object", "additionalProperties": False,
                                             "properties": {"a": {"type": "integer"}}})
    pack.tool("any", "tools/t.py", input={})
    svc = launcher.start(pack.write(), env={"KINDGI_PACK_MIN_TEST": "body=120",
                                            "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "1"})
    assert answer(svc, body("any", "{}")).status == 200
    svc.idle_peak = peak(svc)
    return svc


def peak(service):
    """VmHWM, in bytes: the most resident memory the process has had."""
    with open("/proc/%d/status" % service.proc.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def body(tool_id, input_text):
    return ('{"v":2,"kind":"invoke","tool":{"id":"%s"},"ctx":{"tenantId":"t","runId":"r"},"input":%s}'
            % (tool_id, input_text)).encode()


def answer(service, data, chunks=None):
    with fuzz.connect(service.port, 120) as sock:
        fuzz.send_quietly(sock, fuzz.invoke_request(data, [], TOKEN, chunks=chunks))
        raw, _ = fuzz.read_answers(sock, want=1, idle=60, total=120)
    answers, _ = fuzz.parse_answers(raw)
    assert len(answers) == 1, raw[:300]
    return answers[0]


def assert_small_peak(service, limit=PER_REQUEST):
    grew = peak(service) - service.idle_peak
    assert grew < limit, "the process grew by %.1f MB" % (grew / 1e6)


def test_issues_are_capped_and_the_answer_says_how_many_were_left_out(service):
    extra = "{" + ",".join('"k%d":0' % i for i in range(200000)) + "}"
    reply = answer(service, body("strict", extra))
    message = reply.json()
    assert message["code"] == "input-validation-failed"
    assert message["message"] == 'Tool "strict" input failed validation; 199000 more issues left out'
    assert [issue["params"] for issue in message["issues"]] == [
        {"additionalProperty": "k%d" % i} for i in range(1000)]
    assert len(reply.body) < 300000
    assert_small_peak(service)


@pytest.mark.parametrize("input_text", [
    "[" + ",".join(["{}"] * 3300000) + "]",
    "[" + ",".join(["0"] * 5000000) + "]",
    json.dumps(["ab"] * 1600000),
    json.dumps("x" * (10 * MiB - 300) + "\U0001F600", ensure_ascii=False),
], ids=["empty-objects", "numbers", "short-strings", "text-with-one-emoji"])
def test_a_body_whose_json_would_take_too_much_memory_is_413(service, input_text):
    data = body("any", input_text)
    assert len(data) <= 10 * MiB
    reply = answer(service, data)
    assert (reply.status, reply.json()) == (413, {"error": "Request body too large"})
    assert_small_peak(service)


def test_a_body_sent_a_byte_at_a_time_is_413_without_a_million_objects(service):
    # A quarter of a million one-byte chunks: their framing passes the limit near the end, so
    # little is left to send after the 413 (a sender that then pauses a second, as on a busy
    # machine, would find the connection reset and the answer gone with it).
    data = body("any", json.dumps("x" * 250000))
    reply = answer(service, data, chunks=[1] * len(data))
    assert (reply.status, reply.json()) == (413, {"error": "Request body too large"})
    assert_small_peak(service, 16 * MiB)


@pytest.mark.parametrize("input_text, size", [
    (json.dumps("x" * (10 * MiB - 300)), 10 * MiB - 300),
    (json.dumps([{"name%d" % j: "value-%d-%d" % (i, j) for j in range(10)} for i in range(20000)]), 20000),
], ids=["ten-mebibytes-of-text", "five-megabytes-of-records"])
def test_big_bodies_that_fit_are_answered(service, input_text, size):
    reply = answer(service, body("any", input_text))
    assert reply.json()["output"]["size"] == size
    assert_small_peak(service)


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_many_big_uploads_at_once_stay_within_the_budget(launcher, tmp_path, chunked):
    """Bodies are read before a call's slot is taken, so the budget, not the cap, bounds them;
    a chunked body is held chunk by chunk as it comes."""
    held = tmp_path / "held"
    held.mkdir()
    pack = PackWriter(tmp_path)
    pack.module("tools/t.py", TOOLS.replace("HOLD_DIR = None", "HOLD_DIR = %r" % str(held)))
    pack.tool("any", "tools/t.py", input={})
    pack.tool("hold", "tools/t.py", input={})
    svc = launcher.start(pack.write(), env={"KINDGI_PACK_MIN_TEST": "body=120"})
    assert answer(svc, body("any", "{}")).status == 200
    svc.idle_peak = peak(svc)
    count = 40 if chunked else 16   # chunked: more than the budget holds, were chunks not counted as they come
    statuses = held_uploads(svc, "hold", count, held, chunks=[MiB] * 9 if chunked else None)
    assert sorted(set(statuses)) == [200, 503] and len(statuses) == count, statuses
    # A chunked body grows chunk by chunk, and Python gives a growing bytearray up to an eighth
    # more room than it holds, which the budget (of the bytes taken) doesn't count: 24 bodies
    # held, and a chunk in hand on each connection, came to 325 MiB at most (Python 3.8, a busy machine).
    # Unbounded, 40 uploads would hold 400 MiB and more.
    assert_small_peak(svc, BUDGET + PER_REQUEST + (BUDGET // 8 if chunked else 0))


def held_uploads(service, tool_id, count, held, chunks=None):
    """``count`` uploads of 10 MiB at once to a tool that holds each call until all have come
    (a file in ``held`` per call held): their statuses.  ``chunks``: sent chunked, in these sizes."""
    data = fuzz.invoke_request(body(tool_id, json.dumps("y" * (10 * MiB - 300))), [], TOKEN, chunks=chunks)
    statuses = []

    def upload():
        with fuzz.connect(service.port, 120) as sock:
            fuzz.send_quietly(sock, data)
            raw, _ = fuzz.read_answers(sock, want=1, idle=200, total=240)
        statuses.extend(a.status for a in fuzz.parse_answers(raw)[0])

    threads = [threading.Thread(target=upload) for _ in range(count)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 180   # until each upload is held or refused, however busy the machine
    while len(list(held.glob("held-*"))) + len(statuses) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    (held / "release").touch()
    for thread in threads:
        thread.join(60)
    return statuses


def test_in_a_container_the_budget_follows_its_memory_limit(launcher, cgroup, tmp_path):
    """A 192 MiB memory limit, where the 256 MiB budget would let the kernel kill the process:
    eight 10 MiB uploads held at once and echoed are each answered, or refused 503, and the
    process lives."""
    memory = cgroup("memory")
    memory.limit(192 * MiB)
    held = tmp_path / "held"
    held.mkdir()
    pack = PackWriter(tmp_path)
    pack.module("tools/t.py", TOOLS.replace("HOLD_DIR = None", "HOLD_DIR = %r" % str(held)))
    pack.tool("hold-echo", "tools/t.py", input={})
    svc = launcher.start(pack.write(), env={"KINDGI_PACK_MIN_TEST": "body=120"}, preexec_fn=memory.join)
    budget = svc.records_of("listening")[0]["memoryBudget"]
    assert 0 < budget < 192 * MiB // 3
    statuses = held_uploads(svc, "hold-echo", 8, held)
    assert svc.proc.poll() is None, "the process died: %s" % svc.raw_stderr[-3:]
    assert sorted(set(statuses)) == [200, 503] and len(statuses) == 8, statuses


def test_a_parent_cgroups_memory_limit_sets_the_budget_too(launcher, cgroup, tmp_path):
    """The service in a cgroup of its own with no limit, inside one limited to 192 MiB (a
    systemd slice, a pod): the parent's limit sizes the budget."""
    parent = cgroup("memory")
    parent.limit(192 * MiB)
    inner = parent.child("service")
    pack = PackWriter(tmp_path)
    pack.module("tools/t.py", TOOLS)
    pack.tool("hold-echo", "tools/t.py", input={})
    svc = launcher.start(pack.write(), preexec_fn=inner.join)
    assert 0 < svc.records_of("listening")[0]["memoryBudget"] < 192 * MiB // 3
