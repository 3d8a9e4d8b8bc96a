"""A closed-loop HTTP/1.1 load generator: hundreds of requests in flight from one process.

`http.client` spends more time per request than a small server does, so it
cannot saturate one.  This module drives raw non-blocking sockets from a single
`selectors` loop instead: every request is pre-built bytes, every response is
framed by its Content-Length (chunked and read-to-close bodies are handled too,
for robustness), and each connection sends its next request as soon as the
previous answer is complete.

A *stream* is a group of connections sending one request: `Stream("echo",
request, 8)` keeps 8 requests in flight.  Several streams can run at once (for
example echo calls measured while CPU-heavy calls load the server); each gets
its own figures.

A run has three phases: a warm-up whose answers are not counted, a measured
window (bounded by time and, optionally, by a number of answers), and a drain
that lets the requests in flight finish without counting them.  A request
still unanswered when the drain times out counts as an error.

    python3 bench/loadgen.py --port 8080 --path /v1/invoke --body-file req.json \\
        --header 'kindgi-pack-token: tok' -c 32 --duration 5
"""

import argparse
import errno
import selectors
import socket
import sys
import time

__all__ = ["Stream", "build_request", "run", "percentile"]

RECV_SIZE = 65536


# -- requests ---------------------------------------------------------------


def build_request(path, body=b"", headers=(), host="127.0.0.1", keepalive=True,
                  method="POST"):
    """The bytes of one HTTP/1.1 request; `headers` is a sequence of (name, value)."""
    lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % host]
    lines.extend("%s: %s" % (name, value) for name, value in headers)
    if body or method == "POST":
        lines.append("Content-Length: %d" % len(body))
    if not keepalive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Stream:
    """Connections sending one request over and over, and what they measured."""

    def __init__(self, name, request, concurrency, keepalive=True, expect=None):
        self.name = name
        self.request = request
        self.concurrency = concurrency
        self.keepalive = keepalive
        self.expect = expect            # bytes every good body contains, or None
        self.latencies = []             # seconds, answers completed in the window
        self.non200 = 0
        self.bad = 0                    # 200s whose body lacks `expect`
        self.errors = 0
        self.error_kinds = {}

    def error(self, kind, counted):
        """Record a failed request (only counted inside the measured window)."""
        if counted:
            self.errors += 1
            self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1

    def summary(self, seconds):
        """The figures of this stream over a window of `seconds`."""
        done = sorted(self.latencies)
        count = len(done)
        return {
            "name": self.name,
            "concurrency": self.concurrency,
            "keepalive": self.keepalive,
            "requests": count,
            "seconds": round(seconds, 3),
            "rps": round(count / seconds, 1) if seconds > 0 else 0.0,
            "p50_ms": round(percentile(done, 0.50) * 1000, 3),
            "p99_ms": round(percentile(done, 0.99) * 1000, 3),
            "max_ms": round(done[-1] * 1000, 3) if done else 0.0,
            "non200": self.non200,
            "bad": self.bad,
            "errors": self.errors,
            "error_kinds": dict(self.error_kinds),
        }


def percentile(ordered, fraction):
    """Nearest-rank percentile of an ascending list (0.0 when empty)."""
    if not ordered:
        return 0.0
    rank = int(fraction * len(ordered) + 0.999999)
    return ordered[min(len(ordered), max(rank, 1)) - 1]


# -- response framing -------------------------------------------------------


def _parse_head(buf, head_end):
    """(status, content_length or None, chunked, close) from a response head."""
    lines = buf[:head_end].split(b"\r\n")
    status = int(lines[0][9:12])
    length, chunked, close = None, False, lines[0][5:8] == b"1.0"
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"transfer-encoding":
            chunked = b"chunked" in value.lower()
        elif name == b"connection":
            value = value.strip().lower()
            close = value == b"close" or (close and value != b"keep-alive")
    return status, length, chunked, close


def _chunked_end(buf, pos):
    """Index just past a complete chunked body starting at `pos`, or -1."""
    while True:
        line_end = buf.find(b"\r\n", pos)
        if line_end < 0:
            return -1
        size = int(buf[pos:line_end].split(b";")[0], 16)
        if size == 0:
            trailer_end = buf.find(b"\r\n\r\n", line_end)
            if buf[line_end:line_end + 4] == b"\r\n\r\n":
                return line_end + 4
            return -1 if trailer_end < 0 else trailer_end + 4
        pos = line_end + 2 + size + 2
        if pos > len(buf):
            return -1


class _Response:
    """Incremental framing of one response on a connection."""

    __slots__ = ("buf", "head_end", "status", "length", "chunked", "close")

    def __init__(self):
        self.buf = b""
        self.head_end = -1

    def feed(self, data):
        """Add received bytes; the body when the response is complete, else None."""
        self.buf += data
        if self.head_end < 0:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return None
            self.head_end = end + 4
            self.status, self.length, self.chunked, self.close = _parse_head(self.buf, end)
        start = self.head_end
        if self.chunked:
            end = _chunked_end(self.buf, start)
            return None if end < 0 else self.buf[start:end]
        if self.length is None:
            return None                 # read to close: finished by eof()
        if len(self.buf) - start >= self.length:
            return self.buf[start:start + self.length]
        return None

    def eof(self):
        """The body when the connection closing completes the response, else None."""
        if self.head_end >= 0 and self.length is None and not self.chunked:
            self.close = True
            return self.buf[self.head_end:]
        return None


# -- the loop ---------------------------------------------------------------


class _Conn:
    """One connection slot of a stream: at most one request in flight."""

    __slots__ = ("stream", "sock", "sent", "started", "response", "connecting")

    def __init__(self, stream):
        self.stream = stream
        self.sock = None
        self.sent = 0
        self.started = 0.0
        self.response = None
        self.connecting = False


class _Loop:
    """The selector loop driving every connection of every stream."""

    def __init__(self, address, streams, timeout):
        self.address = address
        self.streams = streams
        self.timeout = timeout
        self.selector = selectors.DefaultSelector()
        self.issuing = True
        self.window = (float("inf"), float("inf"))   # measured [start, end)
        self.counted = 0
        self.limit = None
        self.inflight = set()
        self.broken = []                # slots to reconnect on the next turn

    # connection lifecycle

    def open(self, conn):
        """Connect the slot's socket (non-blocking) and start its next request."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock = sock
        conn.started = time.perf_counter()
        conn.sent = 0
        conn.response = _Response()
        self.inflight.add(conn)
        code = sock.connect_ex(self.address)
        if code in (0, errno.EISCONN):
            conn.connecting = False
            self.selector.register(sock, selectors.EVENT_READ, conn)
            self.send(conn)
        elif code in (errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
            conn.connecting = True
            self.selector.register(sock, selectors.EVENT_WRITE, conn)
        else:
            self.fail(conn, "connect:" + errno.errorcode.get(code, str(code)))

    def close(self, conn):
        if conn.sock is not None:
            try:
                self.selector.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.sock.close()
            conn.sock = None

    def fail(self, conn, kind):
        """A request failed: record it, drop the connection; the loop reconnects it."""
        self.inflight.discard(conn)
        conn.stream.error(kind, self.in_window(time.perf_counter()))
        self.close(conn)
        self.broken.append(conn)

    def in_window(self, now):
        return self.window[0] <= now < self.window[1]

    # one request

    def start(self, conn):
        """Send the next request on an open keep-alive connection."""
        conn.started = time.perf_counter()
        conn.sent = 0
        conn.response = _Response()
        self.inflight.add(conn)
        self.send(conn)

    def send(self, conn):
        """Send what is left of the request; wait for writability if it does not all fit."""
        request = conn.stream.request
        try:
            conn.sent += conn.sock.send(request[conn.sent:] if conn.sent else request)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as exc:
            self.fail(conn, "send:" + (errno.errorcode.get(exc.errno) or type(exc).__name__))
            return
        wanted = selectors.EVENT_READ if conn.sent >= len(request) else (
            selectors.EVENT_READ | selectors.EVENT_WRITE)
        if self.selector.get_key(conn.sock).events != wanted:
            self.selector.modify(conn.sock, wanted, conn)

    def on_event(self, conn, mask):
        if conn.connecting:
            code = conn.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                self.fail(conn, "connect:" + errno.errorcode.get(code, str(code)))
                return
            conn.connecting = False
            self.send(conn)
            return
        if mask & selectors.EVENT_WRITE and conn.sent < len(conn.stream.request):
            self.send(conn)
            if conn.sock is None:
                return
        if mask & selectors.EVENT_READ:
            self.receive(conn)

    def receive(self, conn):
        try:
            data = conn.sock.recv(RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self.fail(conn, "recv:" + (errno.errorcode.get(exc.errno) or type(exc).__name__))
            return
        response = conn.response
        try:
            body = response.feed(data) if data else response.eof()
        except ValueError:
            self.fail(conn, "bad-response")
            return
        if body is None:
            if not data:
                self.fail(conn, "closed")
            return
        self.complete(conn, response, body)

    def complete(self, conn, response, body):
        """Record an answered request and issue the next one."""
        now = time.perf_counter()
        stream = conn.stream
        self.inflight.discard(conn)
        if self.in_window(now):
            if response.status != 200:
                stream.non200 += 1
            elif stream.expect is not None and stream.expect not in body:
                stream.bad += 1
            stream.latencies.append(now - conn.started)
            self.counted += 1
            if self.limit is not None and self.counted >= self.limit:
                self.window = (self.window[0], now)
        if not self.issuing:
            self.close(conn)
        elif stream.keepalive and not response.close:
            self.start(conn)
        else:
            self.close(conn)
            self.open(conn)

    # phases

    def expire(self, now):
        """Fail requests older than the timeout."""
        for conn in [c for c in self.inflight if now - c.started > self.timeout]:
            self.fail(conn, "timeout")

    def run(self, warmup, duration, max_requests):
        """Warm up, measure, drain; the length of the measured window in seconds."""
        conns = [_Conn(s) for s in self.streams for _ in range(s.concurrency)]
        begin = time.perf_counter()
        self.window = (begin + warmup, begin + warmup + duration)
        self.limit = max_requests
        for conn in conns:
            self.open(conn)
        last_expiry = begin
        drain_deadline = None
        while True:
            now = time.perf_counter()
            if self.issuing and now >= self.window[1]:
                self.issuing = False
                drain_deadline = now + self.timeout
                for conn in conns:
                    if conn not in self.inflight:
                        self.close(conn)
            if not self.issuing and (not self.inflight or now >= drain_deadline):
                break
            if self.broken:
                broken, self.broken = self.broken, []
                for conn in broken:
                    if self.issuing:
                        self.open(conn)
            if now - last_expiry > 0.1:
                self.expire(now)
                last_expiry = now
            for key, mask in self.selector.select(0.05):
                if key.data.sock is not None:
                    self.on_event(key.data, mask)
        for conn in list(self.inflight):
            conn.stream.error("unfinished", True)
            self.close(conn)
        self.selector.close()
        return self.window[1] - self.window[0]


def run(address, streams, duration, warmup=0.5, max_requests=None, timeout=10.0):
    """Drive `streams` against `address`; one summary dict per stream.

    The window ends after `duration` seconds or `max_requests` answers,
    whichever comes first; a request slower than `timeout` is an error.
    """
    window = _Loop(address, streams, timeout).run(warmup, duration, max_requests)
    return [stream.summary(window) for stream in streams]


# -- command line -----------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--path", default="/")
    parser.add_argument("--method", default="POST")
    parser.add_argument("--body-file", help="request body (default: empty)")
    parser.add_argument("--header", action="append", default=[], help="'name: value'")
    parser.add_argument("-c", "--concurrency", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=0.5)
    parser.add_argument("--requests", type=int, help="stop after this many answers")
    parser.add_argument("--close", action="store_true", help="a connection per request")
    args = parser.parse_args(argv)
    body = b""
    if args.body_file:
        with open(args.body_file, "rb") as handle:
            body = handle.read()
    headers = [tuple(part.strip() for part in h.split(":", 1)) for h in args.header]
    request = build_request(args.path, body, headers, args.host, not args.close, args.method)
    stream = Stream("load", request, args.concurrency, keepalive=not args.close)
    result = run((args.host, args.port), [stream], args.duration, args.warmup, args.requests)[0]
    for key, value in result.items():
        print("%-12s %s" % (key, value))
    return 0 if result["errors"] == 0 and result["non200"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
