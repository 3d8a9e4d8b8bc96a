#!/usr/bin/env python3
"""Load, faults and a SIGTERM against kindgi_pack_min.py: does any answer get lost?

Usage (from anywhere):

    python3 tools/fault_campaign.py [--seconds S] [--clients N] [--cap N] [--seed N] [--python PY]

It starts the service on the pack of tools/fuzz.py (loopback, ``PORT=0``)
with a concurrency cap, then for *seconds*:

* *clients* threads call tools and checks on keep-alive connections (quick
  results, throws, 50 ms calls, calls that pass a 200 ms deadline), as fast
  as the answers come;
* fault threads meanwhile reset connections mid-answer and mid-call, leave
  request bodies half sent, trickle request heads a byte at a time, hold
  idle connections, and send mutated request bytes (tools/fuzz.py's cases).

Then it sends SIGTERM while the clients keep calling: every answer after the
signal must be a whole answer or 503 draining; a client stops at its first
503 draining, as a runtime routes elsewhere.  Every request a client sent
must get exactly one well-formed answer: a result, an error message, or a
503 with ``retry-after``.  Printed: requests sent, answers by kind, faults
injected, answers lost, the exit code and how long the drain took, and the
service's peak thread count and memory (from /proc).  Exit status 1 when an
answer was lost or malformed, the exit was not 0, or it took 9 s or more.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fuzz  # noqa: E402


def invoke(tool_id, input, headers=()):
    body = json.dumps({"v": 2, "kind": "invoke", "tool": {"id": tool_id}, "input": input,
                       "ctx": {"tenantId": "t", "runId": "r"}}).encode()
    return fuzz.invoke_request(body, headers)


CALLS = [
    lambda rng: invoke("echo", {"text": "x" * rng.randint(0, 500), "n": rng.randint(0, 9)}),
    lambda rng: invoke("boom", {"why": "on purpose"}),
    lambda rng: invoke("slow", {"ms": 50}),
    lambda rng: invoke("hang", {"s": 1}, [("kindgi-timeout-ms", "200")]),
    lambda rng: fuzz.invoke_request(json.dumps({"v": 2, "kind": "check-invoke", "check": {"id": "short"},
                                                "config": {"maxChars": 5},
                                                "trace": {"runId": "r", "tenantId": "t", "output": "hi"}}).encode()),
]


class Tally:
    """Counts shared by every thread."""

    def __init__(self):
        self.counts = {}
        self.lock = threading.Lock()
        self.examples = []

    def add(self, name, example=None):
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1
            if example is not None and len(self.examples) < 10:
                self.examples.append("%s: %r" % (name, example))

    def get(self, name):
        return self.counts.get(name, 0)


def answer_kind(answer):
    """What an answer is, for the tally: ``result``, ``error``, ``overloaded``, ``draining`` or ``malformed``."""
    if answer is None:
        return "lost"
    if fuzz.answer_problem(answer) or answer.status not in (200, 503):
        return "malformed"
    body = answer.json()
    if answer.status == 503:
        return body.get("error", "malformed")
    return "error" if body["kind"] == "error" else "result"


def client(port, seed, stop, tally):
    """Call until *stop* is set or the service says draining."""
    rng = random.Random(seed)
    sock = None
    while not stop.is_set():
        data = rng.choice(CALLS)(rng)
        try:
            if sock is None:
                sock = fuzz.connect(port)
        except OSError:
            tally.add("refused (listener closed)")
            return
        fuzz.send_quietly(sock, data)
        tally.add("requests sent")
        raw, _ = fuzz.read_answers(sock, want=1, idle=15)
        try:
            answers, _ = fuzz.parse_answers(raw)
        except fuzz.Malformed:
            answers = []
        kind = answer_kind(answers[0] if answers else None)
        tally.add(kind, raw[:200] if kind in ("lost", "malformed") else None)
        if kind in ("lost", "malformed") or answers[0].closes:
            sock.close()
            sock = None
        if kind in ("draining", "lost"):
            return
    if sock is not None:
        sock.close()


# -- faults ------------------------------------------------------------------------

def reset(sock):
    """Close with SO_LINGER 0: the peer gets RST, not FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def reset_mid_answer(port, rng):
    sock = fuzz.connect(port)
    sock.sendall(invoke("echo", {"tags": ["y" * 1000] * 2000}))
    sock.recv(100)
    reset(sock)


def reset_mid_call(port, rng):
    sock = fuzz.connect(port)
    sock.sendall(invoke("hang", {"s": 0.5}))
    time.sleep(0.05)
    reset(sock)


def half_body(port, rng):
    sock = fuzz.connect(port)
    data = invoke("echo", {"text": "half"})
    sock.sendall(data[:len(data) - rng.randint(1, 20)])
    return sock


def trickled_head(port, rng):
    sock = fuzz.connect(port)
    sock.sendall(b"POST /v1/invoke HTTP/1.1\r\n")
    return sock


def idle(port, rng):
    return fuzz.connect(port)


def garbage(port, rng):
    fuzz.exchange(port, fuzz.byte_case(rng), idle=0.2, total=2)


FAULTS = [reset_mid_answer, reset_mid_call, half_body, trickled_head, idle, garbage]
HELD = 40   # connections a fault thread keeps open at once (half bodies, slow heads, idle ones)


def faults(port, seed, stop, tally):
    """Inject faults at random until *stop*; keep up to HELD stalled sockets, trickling the slow ones."""
    rng = random.Random(seed)
    held = []
    while not stop.is_set():
        fault = rng.choice(FAULTS)
        try:
            sock = fault(port, rng)
        except OSError:
            continue
        tally.add("faults injected")
        tally.add("fault " + fault.__name__)
        if sock is not None:
            held.append(sock)
        if len(held) > HELD:
            held.pop(0).close()
        for sock in held:
            try:
                sock.send(b"x")
            except OSError:
                pass
        time.sleep(0.01)
    for sock in held:
        sock.close()


def watch_resources(pid, stop, peaks):
    """Sample the service's thread count and resident memory from /proc."""
    while not stop.is_set():
        try:
            with open("/proc/%d/status" % pid) as f:
                for line in f:
                    name, _, value = line.partition(":")
                    if name in ("Threads", "VmRSS"):
                        peaks[name] = max(peaks.get(name, 0), int(value.split()[0]))
        except OSError:
            return
        time.sleep(0.1)


def run(args):
    with tempfile.TemporaryDirectory(prefix="kindgi-faults-") as folder:
        proc, port, records = fuzz.start_service(args.python, fuzz.write_pack(folder),
                                                 {"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": str(args.cap)})
        tally = Tally()
        peaks = {}
        done = threading.Event()
        faults_done = threading.Event()
        threads = [threading.Thread(target=client, args=(port, args.seed + i, done, tally))
                   for i in range(args.clients)]
        threads += [threading.Thread(target=faults, args=(port, args.seed * 1000 + i, faults_done, tally))
                    for i in range(2)]
        threads.append(threading.Thread(target=watch_resources, args=(proc.pid, done, peaks)))
        try:
            for thread in threads:
                thread.start()
            time.sleep(args.seconds)
            faults_done.set()
            signalled = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(15)
            drain = time.monotonic() - signalled
            done.set()
            for thread in threads:
                thread.join(20)
        finally:
            done.set()
            faults_done.set()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return tally, peaks, code, drain, records


def main(argv=None):
    parser = fuzz.campaign_arguments(__doc__, 30.0)
    parser.add_argument("--clients", type=int, default=24)
    parser.add_argument("--cap", type=int, default=16)
    args = parser.parse_args(argv)
    tally, peaks, code, drain, records = run(args)
    errors = [r for r in records if r.get("kind") == "service-error"]
    print("kindgi_pack_min fault campaign: %.0f s of load, %d clients, cap %d, seed %d, Python %s"
          % (args.seconds, args.clients, args.cap, args.seed, args.python))
    for name in sorted(tally.counts):
        print("%-28s %d" % (name, tally.counts[name]))
    print("%-28s %d" % ("answers lost", tally.get("lost")))
    print("%-28s %d" % ("service errors", len(errors)))
    print("%-28s %s, %.2f s after SIGTERM" % ("exit", code, drain))
    print("%-28s %s threads, %s MiB resident" % ("peak", peaks.get("Threads"), peaks.get("VmRSS", 0) // 1024))
    for example in tally.examples:
        print("example  " + example)
    failed = tally.get("lost") or tally.get("malformed") or errors or code != 0 or drain >= 9
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
