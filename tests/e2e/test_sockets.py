"""End-to-end: every connection's socket is closed when the connection ends, and the limits on
connections hold.

The service runs with the cyclic garbage collector off (``KINDGI_PACK_MIN_TEST=gc=off``), so a
socket, pipe or event loop that waits to be collected stays open for good and the count of
``/proc/PID/fd`` shows it.  Each path a connection can end by is taken many times: a normal close,
the keep-alive silence limit, an early answer over an unread body, 503 at the concurrency cap and
at the connection cap, a client reset, a head or body that takes too long, a service failure, the
drain.  Within 2 s of the last connection ending, the count is back to the idle count.

Then the limits: an answer nobody reads is dropped once the write limit passes; a connection that
never shows the token is closed sooner than one that did; while one client holds every connection
slot the probes are still answered; with too few file descriptors the service backs off instead
of spinning, says so, and recovers.  Limits are shortened for the test (``KINDGI_PACK_MIN_TEST``).
"""

import json
import os
import resource
import socket
import struct
import sys
import threading
import time

import pytest

from conftest import ROOT, TOKEN, PackWriter

sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402

TOOLS = '''\
import asyncio, time
from kindgi import tool


@tool(id="echo", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def echo(input, ctx):
    return input


@tool(id="sleep", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def sleep(input, ctx):
    time.sleep(min(float(input.get("s", 1)), 5))
    return {"slept": input.get("s", 1)}


@tool(id="async-echo", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
async def async_echo(input, ctx):
    await asyncio.sleep(0)
    return input


@tool(id="big", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def big(input, ctx):
    return {"s": "x" * int(input.get("n", 1000))}
'''

# Breaks the service itself when asked: the path of its own failure (a 500) must close sockets too.
SERVICE_BUG = '''\
import sys
from kindgi import tool

service = sys.modules.get("kindgi_pack_min") or sys.modules["__main__"]
run_tool = service.TARGETS["invoke"].run


def run_or_break(call):
    if call.target_id == "bug":
        raise RuntimeError("a bug in the service")
    return run_tool(call)


service.TARGETS["invoke"].run = run_or_break


@tool(id="bug", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def bug(input, ctx):
    return {}
'''

SETTINGS = "gc=off,silence=1,first_request=1,head=1,body=1,write=1,linger=0.3,drain=1,overflow=0.5,connections=24"


def write_pack(root):
    pack = PackWriter(root)
    pack.module("tools/t.py", TOOLS)
    pack.module("tools/bug.py", SERVICE_BUG)
    for tool_id in ("echo", "sleep", "async-echo", "big"):
        pack.tool(tool_id, "tools/t.py")
    pack.tool("bug", "tools/bug.py")
    return pack.write()


@pytest.fixture
def service(launcher, tmp_path):
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": SETTINGS,
                                                             "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "4"})
    warm_up(svc)
    svc.idle_fds = settled(open_fds, svc)
    return svc


def settled(count_of, service, seconds=5.0):
    """``count_of(service)`` (its open descriptors, its threads) once it has stayed the same for half a second."""
    count, since, end = count_of(service), time.monotonic(), time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.05)
        now = count_of(service)
        if now != count:
            count, since = now, time.monotonic()
        elif time.monotonic() - since >= 0.5:
            break
    return count


def open_fds(service):
    return len(os.listdir("/proc/%d/fd" % service.proc.pid))


def threads(service):
    return len(os.listdir("/proc/%d/task" % service.proc.pid))


def back_to_idle(service, seconds=2.0):
    """The count of open descriptors, once it is back at the idle count or ``seconds`` have passed."""
    end = time.monotonic() + seconds
    while True:
        count = open_fds(service)
        if count == service.idle_fds or time.monotonic() > end:
            return count
        time.sleep(0.05)


def message(tool_id="echo", input=None):
    return json.dumps({"v": 2, "kind": "invoke", "tool": {"id": tool_id}, "input": input or {"a": 1},
                       "ctx": {"tenantId": "t", "runId": "r"}}).encode()


def invoke(body=None, headers=(), token=TOKEN, **kw):
    return fuzz.invoke_request(message() if body is None else body, list(headers), token, **kw)


def warm_up(service):
    """Whatever the first calls make once (a code path's first import) is made before counting."""
    for data in (invoke(), invoke(message("async-echo")), fuzz.http_request("GET", "/healthz")):
        exchange_and_close(service, data)


def many(count, work, threads=8):
    """Run ``work(i)`` ``count`` times over a few threads; re-raise the first failure."""
    errors = []

    def worker(start):
        for i in range(start, count, threads):
            try:
                work(i)
            except Exception as exc:  # collected, re-raised below
                errors.append(exc)

    pool = [threading.Thread(target=worker, args=(n,)) for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join(60)
    assert not errors, errors[:3]


def reset(sock):
    """Close with SO_LINGER 0: the kernel sends RST instead of FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def exchange_and_close(service, data):
    """Send ``data`` on a new connection, read one answer, close."""
    with fuzz.connect(service.port) as sock:
        fuzz.send_quietly(sock, data)
        return fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=1.0)[0])[0]


def ask(sock, data):
    """Send ``data`` on an open connection; the status of the one answer (None if none came)."""
    fuzz.send_quietly(sock, data)
    answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=2)[0])
    return answers[0].status if answers else None


def connect_and_ask(service, data):
    """A new connection, kept open, and the status of the answer to ``data`` on it."""
    sock = fuzz.connect(service.port)
    return sock, ask(sock, data)


def showing_the_token(service):
    """A new connection that has shown the token (its /v1/info answered), kept open."""
    sock, status = connect_and_ask(service, fuzz.http_request("GET", "/v1/info",
                                                              headers=[("kindgi-pack-token", TOKEN)]))
    assert status == 200
    return sock


def statuses_of_five_invokes(service):
    """The statuses of invokes on five new connections, all open at once (then closed)."""
    held = []
    try:
        for _ in range(5):
            held.append(connect_and_ask(service, invoke()))
        return [status for _, status in held]
    finally:
        for sock, _ in held:
            sock.close()


# -- every path closes its socket -------------------------------------------------

def test_normal_close(service):
    many(100, lambda i: exchange_and_close(service, invoke(message("async-echo" if i % 2 else "echo"))))
    assert back_to_idle(service) == service.idle_fds


def test_keep_alive_silence(service):
    socks = []
    for _ in range(20):
        sock = fuzz.connect(service.port)
        sock.sendall(invoke(message("async-echo")))
        socks.append(sock)
    for sock in socks:
        assert fuzz.read_answers(sock, want=1)[0]
    time.sleep(1.5)   # the silence limit passes: the service closes them
    try:
        assert back_to_idle(service) == service.idle_fds
    finally:
        for sock in socks:
            sock.close()


def test_early_answers_over_unread_bodies(service):
    cases = [fuzz.http_request("POST", "/nowhere", b"x" * 5000), invoke(token="wrong"),
             invoke(content_type="text/plain"), invoke(chunks=[5, 5], token="wrong")]
    many(60, lambda i: exchange_and_close(service, cases[i % len(cases)]))
    assert back_to_idle(service) == service.idle_fds


def test_503_at_the_concurrency_cap(service):
    answers = []
    many(64, lambda i: answers.extend(exchange_and_close(service, invoke(message("sleep", {"s": 0.2})))),
         threads=16)
    assert {a.status for a in answers} == {200, 503}
    assert back_to_idle(service) == service.idle_fds


def test_503_at_the_connection_cap(service):
    """Over the cap a connection may only ask the probes; anything else, or nothing, is 503.

    The cap is held by connections that showed the token: one that never did would make room."""
    held = [showing_the_token(service) for _ in range(24)]   # the cap
    try:
        cases = [(invoke(), 503)] * 20 + [(fuzz.http_request("GET", "/healthz"), 200)] * 5 + [(b"", 503)] * 3

        def one(i):
            data, status = cases[i]
            sock = fuzz.connect(service.port)
            sock.sendall(data)
            answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=2)[0])
            sock.close()
            assert [a.status for a in answers] == [status], (i, answers)
            assert answers[0].header("date"), answers[0].headers   # on every answer, the cap's 503 too
            assert answers[0].closes, answers[0].headers   # over the cap: one answer, then the connection ends

        many(len(cases), one)
    finally:
        for sock in held:
            sock.close()
    assert back_to_idle(service) == service.idle_fds


def test_clients_that_reset(service):
    data = invoke(message("async-echo"))

    def one(i):
        sock = fuzz.connect(service.port)
        sock.sendall(data[:len(data) * (i % 3 + 1) // 4] if i % 4 else data)
        time.sleep(0.01)
        reset(sock)

    many(100, one)
    assert back_to_idle(service) == service.idle_fds


def test_heads_and_bodies_that_take_too_long(service):
    body = message()
    socks = []
    for i in range(20):
        sock = fuzz.connect(service.port)
        data = invoke(body)
        sock.sendall(data[:20] if i % 2 else data[:-len(body) // 2])   # half a head, or half a body
        socks.append(sock)
    try:
        time.sleep(2.0)
        assert back_to_idle(service) == service.idle_fds
    finally:
        for sock in socks:
            sock.close()


def test_the_service_failing(service):
    answers = []   # as many at once as the cap of 4: a fifth could be answered 503 overloaded
    many(24, lambda i: answers.extend(exchange_and_close(service, invoke(message("bug")))), threads=4)
    assert {a.status for a in answers} == {500}
    assert back_to_idle(service) == service.idle_fds
    assert service.wait_record("service-error", timeout=5)


def test_the_drain(service):
    """Calls in flight when SIGTERM comes: answered, then the process exits 0."""
    socks = []
    for _ in range(4):
        sock = fuzz.connect(service.port)
        sock.sendall(invoke(message("sleep", {"s": 0.3})))
        socks.append(sock)
    time.sleep(0.1)
    service.signal()
    try:
        for sock in socks:
            answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=3)[0])
            assert [a.json()["output"] for a in answers] == [{"slept": 0.3}]
    finally:
        for sock in socks:
            sock.close()
    assert service.wait_exit(10) == 0


# -- the limits -------------------------------------------------------------------

def test_an_answer_nobody_reads_is_dropped_when_the_write_limit_passes(service):
    """A reader that takes a little now and then can't hold a thread and an answer for ever."""
    sock = fuzz.connect(service.port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(invoke(message("big", {"n": 20000000})))
    received, start = 0, time.monotonic()
    try:
        while time.monotonic() - start < 10:
            chunk = sock.recv(4096)
            if not chunk:
                break
            received += len(chunk)
            time.sleep(0.2)
    except ConnectionResetError:
        pass
    finally:
        sock.close()
    assert received < 20000000, "the whole answer came: the reader was not slow enough"
    assert time.monotonic() - start < 8
    assert back_to_idle(service, 3) == service.idle_fds


def test_a_connection_that_never_showed_the_token_is_closed_sooner(launcher, tmp_path):
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "first_request=1,silence=4"})
    untrusted, trusted = fuzz.connect(svc.port), fuzz.connect(svc.port)
    try:
        untrusted.sendall(fuzz.http_request("GET", "/healthz"))
        trusted.sendall(fuzz.http_request("GET", "/v1/info", headers=[("kindgi-pack-token", TOKEN)]))
        for sock in (untrusted, trusted):
            assert fuzz.read_answers(sock, want=1)[0]
        time.sleep(2.0)
        assert fuzz.read_answers(untrusted, idle=0.2)[1], "the connection without the token is still open"
        trusted.sendall(invoke())
        answers, _ = fuzz.parse_answers(fuzz.read_answers(trusted, want=1)[0])
        assert [a.status for a in answers] == [200]
    finally:
        untrusted.close()
        trusted.close()


def test_probes_are_answered_while_every_connection_slot_is_held(launcher, tmp_path):
    """One client without the token holds every slot and reopens each as it is closed."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=32,first_request=1"})
    stop = threading.Event()
    held = []

    def hog():
        while not stop.is_set():
            while len(held) < 40 and not stop.is_set():
                try:
                    held.append(fuzz.connect(svc.port))
                except OSError:
                    break
            for sock in list(held):
                try:
                    if sock.recv(1, socket.MSG_DONTWAIT) == b"":
                        held.remove(sock)
                        sock.close()
                except BlockingIOError:
                    pass
                except OSError:
                    held.remove(sock)
            time.sleep(0.02)

    thread = threading.Thread(target=hog, daemon=True)
    thread.start()
    try:
        time.sleep(0.5)
        statuses = []
        for _ in range(20):
            statuses.append(svc.request("GET", "/healthz", token=False, timeout=5).status)
            time.sleep(0.05)   # the hog takes back every slot closed in between
        ready = svc.request("GET", "/readyz", token=False, timeout=5)
    finally:
        stop.set()
        thread.join(10)
        for sock in held:
            sock.close()
    assert statuses == [200] * 20
    assert (ready.status, ready.json) == (200, {"status": "ready"})


def test_a_probe_makes_room_by_closing_a_connection_that_only_lingers(launcher, tmp_path):
    """Over the cap, 64 connections ask /healthz with a body they never finish and keep the
    service reading it (a byte every 0.3 s): they have their answer, so a probe takes the place
    of one of them instead of meeting the 503."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=2,first_request=30"})
    held = [showing_the_token(svc) for _ in range(2)]   # the cap, by connections that can't be made to make room
    lingering = []
    stop = threading.Event()

    def keep_lingering():
        while not stop.wait(0.3):
            for sock in lingering:
                try:
                    sock.send(b"x")
                except OSError:
                    pass

    thread = threading.Thread(target=keep_lingering, daemon=True)
    try:
        for _ in range(64):   # the probe slots
            sock = fuzz.connect(svc.port)
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: a\r\ncontent-length: 100000\r\n\r\n")
            lingering.append(sock)
        thread.start()
        for sock in lingering:
            answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=2)[0])
            assert [a.status for a in answers] == [200]
        statuses = [svc.request("GET", "/healthz", token=False, timeout=5).status for _ in range(3)]
    finally:
        stop.set()
        thread.join(5)
        for sock in held + lingering:
            sock.close()
    assert statuses == [200] * 3


# Answered 401 on a connection kept alive: it has no body to leave unread.
WRONG_TOKEN = fuzz.http_request("GET", "/v1/info", headers=[("kindgi-pack-token", "wrong")])


def flood_without_the_token(service, count):
    """``count`` new connections, one after another, each asking with a wrong token and kept
    open; the status of each answer: 401 in a full slot, 503 in one kept for the probes."""
    flood = [connect_and_ask(service, WRONG_TOKEN) for _ in range(count)]
    return [sock for sock, _ in flood], [status for _, status in flood]


def test_callers_without_the_token_cannot_hold_the_connection_slots(launcher, tmp_path):
    """A caller without the token holds every slot, asking on each connection every 0.3 s (401,
    the connection kept alive) for longer than the silence limit of a connection that never showed
    the token.  A caller with the token still has its invoke served: the oldest of the flood's
    connections is shut to make room, and one record says so."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=8,first_request=1"})
    flood, statuses = flood_without_the_token(svc, 8)   # the cap
    try:
        for _ in range(5):   # 1.5 s: past first_request, they still hold their slots
            time.sleep(0.3)
            statuses += [ask(sock, WRONG_TOKEN) for sock in flood]
        assert statuses == [401] * 48
        answer = svc.call_tool("echo", {"a": 1}, timeout=5)
        assert (answer.status, answer.json.get("output")) == (200, {"a": 1}), answer
        assert fuzz.read_answers(flood[0], idle=1)[1], "the oldest connection without the token is still open"
        assert [ask(sock, WRONG_TOKEN) for sock in flood[1:]] == [401] * 7
    finally:
        for sock in flood:
            sock.close()
    record = svc.wait_record("connections-evicted", 5)
    assert (record["level"], record["count"]) == ("warn", 1), record
    assert "never showed the token" in record["message"], record


def test_an_idle_connection_that_showed_the_token_is_not_shut_to_make_room(launcher, tmp_path):
    """At a cap of 4, the first connection shows the token, then waits; 12 connections without it
    follow, the last 9 each taking the place of the oldest of them (401, not 503).  The first is
    older still, and waits between requests, yet it is left alone: it still serves."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=4"})
    trusted = showing_the_token(svc)
    flood = []
    try:
        flood, statuses = flood_without_the_token(svc, 12)
        assert statuses == [401] * 12
        assert ask(trusted, invoke()) == 200
    finally:
        for sock in [trusted] + flood:
            sock.close()


def test_a_connection_mid_call_is_not_shut_to_make_room(launcher, tmp_path):
    """At a cap of 4, a call runs for a second while 12 connections without the token come, the
    last 9 each taking the place of the oldest of them: the call's connection is left alone and
    answered."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=4"})
    calling = fuzz.connect(svc.port)
    flood = []
    try:
        calling.sendall(invoke(message("sleep", {"s": 1})))
        time.sleep(0.2)   # the call runs
        flood, statuses = flood_without_the_token(svc, 12)
        assert statuses == [401] * 12
        answers, _ = fuzz.parse_answers(fuzz.read_answers(calling, want=1, idle=3)[0])
        assert [(a.status, a.json()["output"]) for a in answers] == [(200, {"slept": 1})]
    finally:
        for sock in [calling] + flood:
            sock.close()


def test_the_cap_is_whole_after_connections_were_shut_to_make_room(launcher, tmp_path):
    """At a cap of 4, 20 connections without the token, 16 of them shut to make room; once all are
    closed, exactly the cap's worth of connections are served (no slot lost, none counted twice):
    4 held at once, and the fifth at the same time is told 503.  The 16 made one record: they came
    within 10 s."""
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "connections=4,gc=off"})
    warm_up(svc)
    svc.idle_fds = settled(open_fds, svc)
    flood, statuses = flood_without_the_token(svc, 20)
    for sock in flood:
        sock.close()
    assert statuses == [401] * 20
    assert back_to_idle(svc) == svc.idle_fds
    svc.wait_record("connections-evicted", 5)
    assert statuses_of_five_invokes(svc) == [200] * 4 + [503]   # the cap of 4 is whole again
    assert [r["count"] for r in svc.records_of("connections-evicted")] == [1]


def keep_writing(port, stop, held):
    """A connection without the token, kept writing answers until ``stop`` is set: thousands of
    requests pipelined, their answers read a little at a time (a small window and a small segment
    size keep the service's send buffer small), more requests sent as they are.  How long it
    stayed open is appended to ``held``."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 536)
    sock.connect(("127.0.0.1", port))
    opened = time.monotonic()
    sock.sendall(WRONG_TOKEN * 5000)
    sock.setblocking(False)
    try:
        while not stop.wait(0.5):
            try:
                if sock.recv(16384) + sock.recv(16384) == b"":
                    return
            except BlockingIOError:
                pass
            try:
                sock.send(WRONG_TOKEN * 40)
            except BlockingIOError:
                pass
    except OSError:
        pass
    finally:
        held.append(time.monotonic() - opened)
        sock.close()


def test_callers_without_the_token_cannot_hold_the_connection_slots_by_reading_slowly(launcher, tmp_path):
    """At a cap of 4, a caller without the token holds every slot writing answers: it pipelines
    requests and reads their answers slowly, so each write makes a little progress in time (past
    the 1.5 s silence limit of a connection that never showed the token here; past the write limit
    too, each answer having a limit of its own).  A caller with the token is still served: the
    oldest of those connections is shut to make room.  Once all are closed, the cap is whole."""
    svc = launcher.start(write_pack(tmp_path / "pack"),
                         env={"KINDGI_PACK_MIN_TEST": "connections=4,gc=off,first_request=1.5"})
    warm_up(svc)
    svc.idle_fds = settled(open_fds, svc)
    stop = threading.Event()
    held = []
    pool = [threading.Thread(target=keep_writing, args=(svc.port, stop, held), daemon=True) for _ in range(4)]
    for thread in pool:
        thread.start()
    try:
        time.sleep(2.5)
        answers = [svc.call_tool("echo", {"a": i}, timeout=5) for i in range(3)]
    finally:
        stop.set()
        for thread in pool:
            thread.join(10)
    assert [(a.status, a.json.get("output")) for a in answers] == [(200, {"a": i}) for i in range(3)], answers
    assert min(held) > 2.1, held   # past the silence limit, until the caller with the token came
    assert svc.wait_record("connections-evicted", 5)["count"] >= 1
    assert back_to_idle(svc, 5) == svc.idle_fds
    assert statuses_of_five_invokes(svc) == [200] * 4 + [503]


def test_out_of_file_descriptors_backs_off_and_recovers(launcher, tmp_path):
    """64 open files at most, 50 of them held by pack code: accept() fails with EMFILE below the cap."""
    def few_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    pack = PackWriter(tmp_path / "pack")
    pack.module("tools/files.py", HOLD_FILES)
    pack.tool("echo", "tools/files.py")
    svc = launcher.start(pack.write(), env={"KINDGI_PACK_MIN_TEST": "first_request=5"}, preexec_fn=few_files)
    socks = []
    try:
        for _ in range(40):
            socks.append(socket.create_connection(("127.0.0.1", svc.port), timeout=5))
        record = svc.wait_record("accept-failed", timeout=10)
        assert "Too many open files" in record["message"]
        start = cpu_seconds(svc)
        time.sleep(1.0)
        assert cpu_seconds(svc) - start < 0.5, "the accept loop spins"
    finally:
        for sock in socks:
            sock.close()
    statuses = []
    end = time.monotonic() + 10
    while time.monotonic() < end and not statuses:
        try:
            statuses = [svc.request("GET", "/healthz", token=False, timeout=2).status]
        except OSError:
            time.sleep(0.2)
    assert statuses == [200]
    assert len(svc.records_of("accept-failed")) <= 2, "the record is not rate-limited"


def test_a_pids_limit_caps_the_connections(launcher, cgroup, tmp_path):
    """Each connection is a thread: under a pids limit of 120, the cap leaves room for the
    service's own threads and pack code's, so a flood meets the cap's 503, not the thread limit."""
    pids = cgroup("pids")
    pids.limit(120)
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "first_request=5"},
                         preexec_fn=pids.join)
    cap = svc.records_of("listening")[0]["maxConnections"]
    assert 16 <= cap <= 120 - 32
    flood = [socket.create_connection(("127.0.0.1", svc.port), timeout=5) for _ in range(cap + 20)]
    try:
        settled(threads, svc)   # each connection the flood holds has its thread
        assert svc.request("GET", "/healthz", token=False, timeout=5).status == 200   # a probe's room is kept
    finally:
        for sock in flood:
            sock.close()
    assert not svc.records_of("out-of-threads")


def test_a_parent_cgroups_pids_limit_caps_the_connections_too(launcher, cgroup, tmp_path):
    """The service in a cgroup of its own with no limit, inside one limited to 120 pids."""
    parent = cgroup("pids")
    parent.limit(120)
    svc = launcher.start(write_pack(tmp_path / "pack"), preexec_fn=parent.child("service").join)
    assert 16 <= svc.records_of("listening")[0]["maxConnections"] <= 120 - 32


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_too_few_threads_to_boot_is_a_boot_failure(launcher, cgroup, tmp_path, limit):
    """The service's own threads (lifecycle, watchman, records) can't all start: one record, exit 1."""
    pids = cgroup("pids")
    pids.limit(limit)   # the interpreter's main thread is one
    svc = launcher.start(write_pack(tmp_path / "pack"), expect_listening=False, preexec_fn=pids.join)
    assert svc.wait_exit(10) == 1
    assert "limit of threads" in svc.wait_record("boot-failed", 5)["problems"][0]
    assert not [line for line in svc.raw_stderr if not line.startswith("{")], svc.raw_stderr


def test_out_of_threads_refuses_connections_and_still_keeps_deadlines_and_the_drain(launcher, cgroup, tmp_path):
    """A container's pids limit: once the service can't start a thread, a new connection is answered
    503, calls past their deadline are answered once a thread frees, the watchman lives on, and
    SIGTERM still drains and exits."""
    pids = cgroup("pids")
    svc = launcher.start(write_pack(tmp_path / "pack"), env={"KINDGI_PACK_MIN_TEST": "first_request=5"},
                         preexec_fn=pids.join)
    warm_up(svc)
    limit = settled(threads, svc) + 3   # room for three connections, and not a thread more
    pids.limit(limit)
    answers = []
    callers = [threading.Thread(target=lambda: answers.append(svc.call_tool(
        "sleep", {"s": 1}, headers={"kindgi-timeout-ms": "300"}, timeout=10))) for _ in range(3)]
    for caller in callers:
        caller.start()
    end = time.monotonic() + 5
    while threads(svc) < limit and time.monotonic() < end:
        time.sleep(0.02)
    refused = svc.raw(invoke(message()), timeout=5)
    assert refused.startswith(b"HTTP/1.1 503 Service Unavailable"), refused
    assert b"\r\nretry-after: 1\r\n" in refused and b"\r\nconnection: close\r\n" in refused, refused
    assert refused.endswith(b'\r\n\r\n{"error":"overloaded"}'), refused
    assert "limit of threads" in svc.wait_record("out-of-threads", 5)["message"]
    for caller in callers:
        caller.join(10)
    assert [a.status for a in answers] == [200] * 3
    assert all(a.json.get("code") == "deadline-exceeded" or "output" in a.json for a in answers), answers

    # The watchman lived through it: with threads free again, a deadline is kept on time.
    end = time.monotonic() + 5
    while threads(svc) > limit - 3 and time.monotonic() < end:   # the callers' threads end after their answers
        time.sleep(0.02)
    started = time.monotonic()
    late = svc.call_tool("sleep", {"s": 2}, headers={"kindgi-timeout-ms": "300"}, timeout=10)
    assert late.json.get("code") == "deadline-exceeded" and time.monotonic() - started < 1.5, late.json

    # Every thread taken again, by connections that ask nothing: SIGTERM still drains and exits.
    idle = [socket.create_connection(("127.0.0.1", svc.port), timeout=5) for _ in range(3)]
    end = time.monotonic() + 5
    while threads(svc) < limit and time.monotonic() < end:
        time.sleep(0.02)
    svc.signal()
    assert svc.wait_exit(10) == 0
    for sock in idle:
        sock.close()
    assert svc.records_of("draining") and svc.records_of("stopped")


@pytest.mark.parametrize("target", ["tool", "check"])
def test_out_of_threads_the_first_async_call_is_answered_503_and_the_next_one_runs(launcher, cgroup, tmp_path,
                                                                                  target):
    """In a pack that doesn't import asyncio, the event loop of async pack code starts at the
    first async call: when the process can't start its thread, that call is told to retry (503
    overloaded), not that its handler threw."""
    pids = cgroup("pids")
    pack = PackWriter(tmp_path / "pack")
    pack.module("tools/t.py", NO_ASYNCIO)
    pack.tool("async-echo", "tools/t.py")
    pack.guardrail("async-check", "tools/t.py")
    svc = launcher.start(pack.write(), env={"KINDGI_PACK_MIN_TEST": "first_request=5"}, preexec_fn=pids.join)
    for data in (invoke(message("no-such-tool")), fuzz.http_request("GET", "/healthz")):   # warm, nothing async
        exchange_and_close(svc, data)
    pids.limit(settled(threads, svc) + 1)   # room for the call's connection, and not a thread more
    call = ((lambda: svc.call_tool("async-echo", {"a": 1}, timeout=10)) if target == "tool" else
            (lambda: svc.call_check("async-check", timeout=10)))
    refused = call()
    assert refused.status == 503 and refused.json == {"error": "overloaded"}, refused.json
    assert refused.headers.get("retry-after") == "1"
    assert "event loop" in svc.wait_record("out-of-threads", 5)["message"]
    pids.limit("max")
    answer = call()
    assert answer.status == 200 and answer.json["kind"] in ("result", "check-result"), answer.json
    svc.wait_record("call", 5, where=lambda r: r["id"] in ("async-echo", "async-check"))
    outcomes = [r["outcome"] for r in svc.records_of("call") if r["id"] in ("async-echo", "async-check")]
    assert outcomes == ["ok"]   # the 503's call did not run: no record of it
    assert not svc.records_of("service-error")


NO_ASYNCIO = '''\
from kindgi import guardrail, tool


@tool(id="async-echo", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
async def async_echo(input, ctx):
    return input


@guardrail(id="async-check", on_violation="block")
async def async_check(config, trace):
    return True
'''


HOLD_FILES = '''\
import os
from kindgi import tool

HELD = [open(os.devnull) for _ in range(50)]


@tool(id="echo", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def echo(input, ctx):
    return input
'''


def cpu_seconds(service):
    with open("/proc/%d/stat" % service.proc.pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")   # utime + stime
