#!/usr/bin/env python3
"""A seeded fuzzer for kindgi_pack_min.py: hostile request bytes and messages.

Usage (from anywhere):

    python3 tools/fuzz.py [--seed N] [--cases N] [--seconds S] [--workers N] [--python PY]

It writes a small pack into a temporary folder, starts the service on it
(``PORT=0``, loopback only), and sends it cases made by
``random.Random(seed)``: the same seed gives the same cases.  Two kinds:

* byte cases: a valid request (any route, Content-Length or chunked body,
  sometimes several pipelined) with one to three byte-level mutations, sent
  on a fresh connection;
* message cases: well-framed ``POST /v1/invoke`` requests on keep-alive
  connections whose JSON bodies and headers are random or mutated.

Every answer is checked: a known status, a JSON body in UTF-8 with the right
``content-length``, ``retry-after`` on a 503, a protocol message on a 200
invoke, nothing after ``connection: close``.  A message case must get
exactly the answer its headers call for (401, 415, 413 or 200).  Failures
are counted as:

* crashes: the service process ended;
* 5xx: an answer 500 or above other than 503;
* answers lost: the service closed a connection without answering a request
  it had whole;
* malformed: an answer that breaks the rules above.

Byte cases that stay incomplete after a mutation (a Content-Length larger
than what was sent) are counted as "waiting" and are not failures.  The
script prints the figures and exits 1 when a failure count is not zero.
``tests/e2e/test_fuzz.py`` runs a short campaign with this code.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVICE = os.path.join(ROOT, "kindgi_pack_min.py")
TOKEN = "fuzz-token-0123456789"
KNOWN_STATUSES = frozenset((200, 400, 401, 404, 405, 413, 414, 415, 421, 431, 501, 503, 505))
ERROR_CODES = frozenset((
    "input-validation-failed", "output-validation-failed", "handler-import-failed",
    "handler-shape-invalid", "handler-throw", "check-shape-invalid", "malformed-message",
    "unknown-protocol-version", "unexpected-message-kind", "tool-not-in-pack", "check-not-in-pack",
    "tool-version-mismatch", "deadline-exceeded", "cancelled"))
MESSAGE_KINDS = {"result": "output", "check-result": "result", "error": "code"}


# ---------------------------------------------------------------------------
# The pack the campaign runs against
# ---------------------------------------------------------------------------

TOOLS_SOURCE = '''\
import time
from kindgi import tool


@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input, ctx):
    return input


@tool(description="A test tool.", input={"type": "object"}, output={}, id="boom")
def boom(input):
    raise ValueError(input)


@tool(description="A test tool.", input={"type": "object"}, output={}, id="slow")
def slow(input, ctx):
    time.sleep(min(abs(float(input.get("ms", 0))), 50) / 1000.0)
    return {"ok": True}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="hang")
def hang(input, ctx):
    time.sleep(min(abs(float(input.get("s", 0))), 30))
    return {"ok": True}
'''

CHECKS_SOURCE = '''\
from kindgi import guardrail, CheckResult


@guardrail(id="short", on_violation="block")
def short(config, trace):
    text = str(trace.get("output", "")) if isinstance(trace, dict) else ""
    limit = config.get("maxChars", 10)
    return CheckResult(passed=len(text) <= limit, reason="%d chars" % len(text))
'''

ECHO_INPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "default": "hi", "maxLength": 1000},
        "n": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "opts": {"type": "object", "default": {}, "properties": {"loud": {"type": "boolean", "default": False}}},
    },
}


def write_pack(folder):
    """Write the fuzz pack into *folder*; return the index path."""
    for path, source in (("tools/fuzz_tools.py", TOOLS_SOURCE), ("checks/short.py", CHECKS_SOURCE)):
        full = os.path.join(folder, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "w") as f:
            f.write(source)
    index = {
        "v": 1, "packId": "fuzz-pack", "packVersion": "1.0.0", "artifactVersion": "fuzz-1",
        "tools": [
            {"id": "echo", "version": "1.0.0", "modulePath": "tools/fuzz_tools.py",
             "input": ECHO_INPUT, "output": {"type": "object"}},
            {"id": "boom", "modulePath": "tools/fuzz_tools.py", "input": {}, "output": {}},
            {"id": "slow", "modulePath": "tools/fuzz_tools.py", "input": {"type": "object"},
             "output": {"type": "object"}},
            {"id": "hang", "modulePath": "tools/fuzz_tools.py", "input": {"type": "object"},
             "output": {"type": "object"}},
        ],
        "guardrails": [{"id": "short", "checkModulePath": "checks/short.py",
                        "configSchema": {"type": "object",
                                         "properties": {"maxChars": {"type": "integer", "exclusiveMinimum": 0}}}}],
        "env": {"required": [], "optional": []},
    }
    path = os.path.join(folder, "index.json")
    with open(path, "w") as f:
        json.dump(index, f)
    return path


# ---------------------------------------------------------------------------
# The wire: sending bytes, reading answers back
# ---------------------------------------------------------------------------

class Answer:
    """One HTTP answer read off the wire."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name)

    @property
    def closes(self):
        return "close" in self.headers.get("connection", "").lower()

    def json(self):
        return json.loads(self.body.decode("utf-8"))

    def __repr__(self):
        return "<Answer %d %r>" % (self.status, self.body[:200])


class Malformed(Exception):
    """Bytes from the service that are not an HTTP answer."""


def parse_answers(data):
    """Split *data* into complete answers; return ``(answers, leftover bytes)``.

    Raises ``Malformed`` for bytes that can't be an answer of this service
    (every answer it writes has a ``content-length``).
    """
    answers = []
    while data:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = data[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or parts[0] != "HTTP/1.1" or not parts[1].isdigit():
            raise Malformed("bad status line %r" % lines[0])
        headers = {}
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon:
                raise Malformed("bad header line %r" % line)
            headers[name.strip().lower()] = value.strip()
        status = int(parts[1])
        if status == 100:
            data = data[end + 4:]
            continue
        if not headers.get("content-length", "").isdigit():
            raise Malformed("answer %d without a content-length" % status)
        size = int(headers["content-length"])
        if len(data) < end + 4 + size:
            break
        answers.append(Answer(status, headers, data[end + 4:end + 4 + size]))
        data = data[end + 4 + size:]
    return answers, data


def connect(port, timeout=10.0):
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def send_quietly(sock, data):
    """Send *data*; a service that closed early is the reader's business."""
    try:
        sock.sendall(data)
    except OSError:
        pass


def read_answers(sock, want=None, idle=0.5, total=10.0):
    """Read until *want* answers came, the peer closed, or it stays quiet for *idle* s.

    Returns ``(data, closed)``: the bytes read, and whether the service
    ended the connection.
    """
    data = b""
    deadline = time.monotonic() + total
    while time.monotonic() < deadline:
        sock.settimeout(max(0.01, min(idle, deadline - time.monotonic())))
        try:
            chunk = sock.recv(262144)
        except socket.timeout:
            return data, False
        except OSError:
            return data, True
        if not chunk:
            return data, True
        data += chunk
        if want is not None:
            try:
                if len(parse_answers(data)[0]) >= want:
                    return data, False
            except Malformed:
                return data, False
    return data, False


def exchange(port, data, idle=0.5, total=10.0):
    """Send *data* on a new connection; ``(bytes read, closed)`` as read_answers."""
    with connect(port, total) as sock:
        send_quietly(sock, data)
        return read_answers(sock, idle=idle, total=total)


def http_request(method, path, body=b"", headers=(), chunks=None):
    """The bytes of one request; *chunks* (a list of sizes) sends the body chunked."""
    lines = ["%s %s HTTP/1.1" % (method, path), "host: 127.0.0.1"]
    lines += ["%s: %s" % h for h in headers]
    if chunks is None:
        if body or method == "POST":
            lines.append("content-length: %d" % len(body))
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    lines.append("transfer-encoding: chunked")
    out = [("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")]
    at = 0
    for size in chunks:
        piece = body[at:at + size]
        at += len(piece)
        if piece:
            out.append(b"%x\r\n%s\r\n" % (len(piece), piece))
    if at < len(body):
        out.append(b"%x\r\n%s\r\n" % (len(body) - at, body[at:]))
    out.append(b"0\r\n\r\n")
    return b"".join(out)


def invoke_request(body, headers=(), token=TOKEN, content_type="application/json", chunks=None):
    head = [("kindgi-pack-token", token)] if token is not None else []
    if content_type is not None:
        head.append(("content-type", content_type))
    return http_request("POST", "/v1/invoke", body, head + list(headers), chunks)


# ---------------------------------------------------------------------------
# Checking answers
# ---------------------------------------------------------------------------

def answer_problem(answer):
    """What is wrong with one answer, or None."""
    if answer.status not in KNOWN_STATUSES:
        return "status %d" % answer.status
    if answer.header("content-type") != "application/json; charset=utf-8":
        return "content-type %r" % answer.header("content-type")
    if answer.status == 503 and answer.header("retry-after") != "1":
        return "503 without retry-after: 1"
    try:
        body = answer.json()
    except (UnicodeDecodeError, ValueError) as exc:
        return "body is not UTF-8 JSON (%s)" % exc
    if not isinstance(body, dict):
        return "body is not an object"
    if answer.status == 200 and "v" in body:
        return message_problem(body)
    return None


def message_problem(message):
    """What is wrong with a response message, or None."""
    if message.get("v") != 2 or message.get("kind") not in MESSAGE_KINDS:
        return "not a response message: %r" % (message,)
    if message["kind"] == "error" and (message.get("code") not in ERROR_CODES
                                       or not isinstance(message.get("message"), str)):
        return "bad error message: %r" % (message,)
    if MESSAGE_KINDS[message["kind"]] not in message:
        return "no %s in %r" % (MESSAGE_KINDS[message["kind"]], message)
    return None


def server_fault(status):
    """A 5xx that means the service failed (501, 503 and 505 are answers about the request)."""
    return status >= 500 and status not in (501, 503, 505)


class Figures:
    """What a campaign counted, and the first few examples of each failure."""

    FAILURES = ("crashes", "5xx", "answers lost", "malformed")

    def __init__(self):
        self.counts = dict.fromkeys(("cases", "requests", "answers", "waiting") + self.FAILURES, 0)
        self.statuses = {}
        self.examples = []
        self.lock = threading.Lock()

    def add(self, name, n=1):
        with self.lock:
            self.counts[name] += n

    def saw(self, answer, case):
        """Count an answer; check it; return what is wrong with it, or None."""
        with self.lock:
            self.counts["answers"] += 1
            self.statuses[answer.status] = self.statuses.get(answer.status, 0) + 1
        if server_fault(answer.status):
            self.fail("5xx", answer, case)
        problem = answer_problem(answer)
        if problem:
            self.fail("malformed", problem, case)
        return problem

    def fail(self, name, detail, case):
        with self.lock:
            self.counts[name] += 1
            if len(self.examples) < 20:
                self.examples.append("%s: %r  case=%r" % (name, detail, case[:400] if case else case))

    @property
    def failures(self):
        return sum(self.counts[name] for name in self.FAILURES)

    def report(self):
        lines = ["%-14s %d" % (name, value) for name, value in self.counts.items()]
        lines.append("statuses       %s" % ", ".join("%d: %d" % kv for kv in sorted(self.statuses.items())))
        lines += ["example  " + e for e in self.examples]
        return "\n".join(lines)


def judge(figures, case, data, closed):
    """Count one byte case's answers and failures."""
    try:
        answers, leftover = parse_answers(data)
    except Malformed as exc:
        figures.fail("malformed", str(exc), case)
        return
    for i, answer in enumerate(answers):
        figures.saw(answer, case)
        if answer.closes and (i + 1 < len(answers) or leftover):
            figures.fail("malformed", "bytes after connection: close", case)
    if leftover and closed:
        figures.fail("malformed", "a partial answer %r" % leftover[:100], case)
    elif closed and not answers:
        figures.fail("answers lost", "closed without an answer", case)
    elif not closed and not answers:
        figures.add("waiting")


# ---------------------------------------------------------------------------
# Making cases
# ---------------------------------------------------------------------------

STRINGS = ["", "hi", "é", "\u2028", "\x00", "\ud800", "\udfff", "\U0001f600", "a" * 300, "\"\\/", "\u0000x",
           "echo", "short", "boom", "slow", "../../etc/passwd", "%00", "1.0.0", "tenant-1"]
NUMBERS = [0, -1, 1, 2, 2.0, 1.5, 10 ** 30, -(10 ** 30), 1e308, 5e-324, 2 ** 63, -0.0]


def random_json(rng, depth=0):
    """A random JSON value, small and often nested a little."""
    roll = rng.random()
    if depth > 4 or roll < 0.45:
        return rng.choice([None, True, False, rng.choice(STRINGS), rng.choice(NUMBERS),
                           rng.randint(-5, 5), rng.choice(STRINGS) * rng.randint(1, 3)])
    if roll < 0.7:
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {rng.choice(STRINGS + ["v", "kind", "id", "text", "n"]): random_json(rng, depth + 1)
            for _ in range(rng.randint(0, 4))}


def random_message(rng):
    """A message that is mostly right, with fields dropped or replaced at random."""
    if rng.random() < 0.6:
        message = {"v": 2, "kind": "invoke",
                   "tool": {"id": rng.choice(["echo", "echo", "boom", "slow", rng.choice(STRINGS)])},
                   "input": {"text": rng.choice(STRINGS), "n": rng.choice(NUMBERS), "ms": rng.randint(0, 30),
                             "tags": [rng.choice(STRINGS)], "opts": {"loud": rng.random() < 0.5}},
                   "ctx": {"tenantId": "tenant-1", "runId": "run-1", "env": {"A": "b"}}}
        if rng.random() < 0.3:
            message["tool"]["version"] = rng.choice(["1.0.0", "2.0.0", None, 1])
    else:
        message = {"v": 2, "kind": "check-invoke", "check": {"id": rng.choice(["short", "nope"])},
                   "config": {"maxChars": rng.choice(NUMBERS)},
                   "trace": {"runId": "r", "tenantId": "t", "output": rng.choice(STRINGS)}}
    for _ in range(rng.randint(0, 3)):
        target = message
        keys = list(target)
        while keys and isinstance(target, dict) and rng.random() < 0.4:
            child = target[rng.choice(keys)]
            if not isinstance(child, dict) or not child:
                break
            target, keys = child, list(child)
        if not isinstance(target, dict) or not keys:
            continue
        key = rng.choice(keys)
        if rng.random() < 0.3:
            del target[key]
        else:
            target[key] = random_json(rng)
    return message


def encode_message(rng, message):
    """JSON text of *message* as bytes, sometimes with invalid UTF-8 (raw surrogates)."""
    text = json.dumps(message, ensure_ascii=rng.random() < 0.5, separators=(",", ":"))
    return text.encode("utf-8", "surrogatepass")


INTERESTING = [b"\r", b"\n", b"\r\n", b"\x00", b" ", b":", b"\x80", b"\xff", b"9", b"-", b";", b"\t",
               b"{", b"\"", b"\\u", b"0", b"NaN", b"Infinity", b"[" * 50]


def mutate_bytes(rng, data, times):
    """*data* with *times* random byte-level changes."""
    data = bytearray(data)
    for _ in range(times):
        at = rng.randrange(len(data) + 1)
        roll = rng.random()
        if roll < 0.3:
            data[at:at] = rng.choice(INTERESTING)
        elif roll < 0.5 and data:
            del data[at:at + rng.randint(1, 8)]
        elif roll < 0.65 and data:
            data[min(at, len(data) - 1)] = rng.randrange(256)
        elif roll < 0.8:
            piece = data[at:at + rng.randint(1, 40)]
            data[at:at] = piece
        elif roll < 0.9:
            data[at:at] = rng.choice([b"\r\ntransfer-encoding: chunked", b"\r\ncontent-length: 3",
                                      b"\r\nx-long: " + b"a" * rng.choice([100, 9000]),
                                      b"\r\nexpect: 100-continue", b"\r\nconnection: close"])
        else:
            del data[at:]
    return bytes(data)


def byte_case(rng):
    """Raw bytes: one to three valid requests, then a few mutations."""
    requests = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        roll = rng.random()
        if roll < 0.6:
            body = encode_message(rng, random_message(rng))
            chunks = [rng.randint(1, 30) for _ in range(rng.randint(1, 4))] if rng.random() < 0.3 else None
            requests.append(invoke_request(body, chunks=chunks))
        elif roll < 0.8:
            requests.append(http_request("GET", "/v1/info", headers=[("kindgi-pack-token", TOKEN)]))
        else:
            requests.append(http_request(rng.choice(["GET", "POST", "PUT", "DELETE"]),
                                         rng.choice(["/healthz", "/readyz", "/x?y=1", "/v1/invoke"])))
    data = b"".join(requests)
    return mutate_bytes(rng, data, rng.randint(1, 3)) if rng.random() < 0.9 else data


def text_mutation(rng, body):
    """Invalid JSON from valid JSON: a character cut, doubled or swapped, or the text cut short."""
    if not body:
        return body
    at = rng.randrange(len(body))
    roll = rng.random()
    if roll < 0.3:
        return body[:at] + body[at + 1:]
    if roll < 0.5:
        return body[:at] + rng.choice(INTERESTING) + body[at:]
    if roll < 0.7:
        return body[:at]
    return body[:at] + body[at:at + 1] * rng.randint(2, 5) + body[at + 1:]


TIMEOUTS = ["", "0", "-5", "1.5", "abc", " 700 ", "2000", "1" * 30, "9" * 400, "\t5000"]


def message_case(rng):
    """``(request bytes, expected status)`` for a well-framed invoke with a random body and headers."""
    body = encode_message(rng, random_message(rng))
    if rng.random() < 0.35:
        body = text_mutation(rng, body)
    headers = []
    if rng.random() < 0.3:
        headers.append(("kindgi-timeout-ms", rng.choice(TIMEOUTS)))
    if rng.random() < 0.2:
        headers.append(("traceparent", rng.choice(["00-%032x-%016x-01" % (rng.getrandbits(128), rng.getrandbits(64)),
                                                   "zz", "00-" + "0" * 32 + "-" + "0" * 16 + "-00"])))
    token = TOKEN if rng.random() < 0.9 else rng.choice(["", "wrong", TOKEN + "x"])
    content_type = rng.choice(["application/json"] * 8 + ["text/plain", "application/json; charset=utf-8", None])
    expected = 401 if token != TOKEN else 415 if "application/json" not in (content_type or "") else 200
    chunks = [rng.randint(1, 64) for _ in range(3)] if rng.random() < 0.2 else None
    return invoke_request(body, headers, token, content_type, chunks), expected


# ---------------------------------------------------------------------------
# Running a campaign
# ---------------------------------------------------------------------------

class Campaign:
    """Cases from one seed, spread over worker threads, bounded in count and time."""

    def __init__(self, port, seed, cases, seconds, workers=8, alive=lambda: True, idle=0.3):
        self.port = port
        self.rng = random.Random(seed)
        self.cases = cases
        self.deadline = time.monotonic() + seconds
        self.workers = workers
        self.alive = alive
        self.idle = idle
        self.figures = Figures()
        self.lock = threading.Lock()
        self.made = 0

    def next_case(self):
        """The next case as ``(kind, case)``; drawn under a lock, so one seed gives one sequence."""
        with self.lock:
            if self.made >= self.cases or time.monotonic() >= self.deadline:
                return None
            self.made += 1
            if self.rng.random() < 0.5:
                return "bytes", byte_case(self.rng)
            return "message", message_case(self.rng)

    def run(self):
        threads = [threading.Thread(target=self.work, daemon=True) for _ in range(self.workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(max(0.0, self.deadline - time.monotonic()) + 15)
        return self.figures

    def work(self):
        sock = None
        while True:
            if not self.alive():
                self.figures.fail("crashes", "the service process ended", None)
                return
            case = self.next_case()
            if case is None:
                break
            self.figures.add("cases")
            kind, case = case
            try:
                if kind == "bytes":
                    self.figures.add("requests", case.count(b" HTTP/1."))
                    judge(self.figures, case, *exchange(self.port, case, idle=self.idle))
                else:
                    sock = self.send_message(sock, *case)
            except OSError as exc:
                self.figures.fail("answers lost", "could not connect: %s" % exc, None)
                sock = None
        if sock is not None:
            sock.close()

    def send_message(self, sock, data, expected):
        """One message case on the worker's keep-alive connection; returns the connection to reuse."""
        self.figures.add("requests")
        if sock is None:
            sock = connect(self.port)
        send_quietly(sock, data)
        raw, closed = read_answers(sock, want=1, idle=10.0)
        try:
            answers, leftover = parse_answers(raw)
        except Malformed as exc:
            answers, leftover = [], raw
            self.figures.fail("malformed", str(exc), data)
        if not answers:
            self.figures.fail("answers lost", "closed without an answer" if closed else "no answer in 10 s", data)
            sock.close()
            return None
        answer = answers[0]
        problem = self.figures.saw(answer, data)
        if problem is None and answer.status not in (expected, 503):
            problem = "status %d where %d was due" % (answer.status, expected)
            self.figures.fail("malformed", problem, data)
        elif problem is None and (len(answers) > 1 or leftover):
            problem = "more bytes than one answer"
            self.figures.fail("malformed", problem, data)
        if answer.closes or problem:
            sock.close()
            return None
        return sock


# ---------------------------------------------------------------------------
# The script: start the service, run, print the figures
# ---------------------------------------------------------------------------

def start_service(python, index, extra_env=None):
    """Start the service on *index*; return ``(process, port, records)``."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PORT": "0", "KINDGI_LOG_FORMAT": "json",
           "KINDGI_PACK_SERVICE_TOKEN": TOKEN, "KINDGI_LOG_LEVEL": "error", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra_env or {})
    proc = subprocess.Popen([python, SERVICE, "--index", index], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    records = []
    listening = threading.Event()

    def read_stderr():
        for line in proc.stderr:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            records.append(record)
            if record.get("kind") == "listening":
                listening.set()

    threading.Thread(target=read_stderr, daemon=True).start()
    if not listening.wait(30):
        proc.kill()
        raise SystemExit("the service did not start")
    port = [r["port"] for r in records if r.get("kind") == "listening"][0]
    return proc, port, records


def campaign_arguments(doc, seconds):
    """An argument parser with the options every campaign script takes: seed, seconds, python."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=seconds)
    parser.add_argument("--python", default=sys.executable, help="the interpreter that runs the service")
    return parser


def main(argv=None):
    parser = campaign_arguments(__doc__, 120.0)
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kindgi-fuzz-") as folder:
        index = write_pack(folder)
        proc, port, records = start_service(args.python, index)
        started = time.monotonic()
        try:
            figures = Campaign(port, args.seed, args.cases, args.seconds, args.workers,
                               alive=lambda: proc.poll() is None).run()
            proc.send_signal(signal.SIGTERM)
            try:
                code = proc.wait(12)
            except subprocess.TimeoutExpired:
                code = None
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    errors = [r for r in records if r.get("kind") == "service-error"]
    print("kindgi_pack_min fuzz: seed %d, %d workers, %.1f s, Python %s"
          % (args.seed, args.workers, time.monotonic() - started, args.python))
    print(figures.report())
    print("%-14s %d" % ("service errors", len(errors)))
    print("%-14s %s" % ("exit on TERM", code))
    failed = figures.failures or errors or code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
