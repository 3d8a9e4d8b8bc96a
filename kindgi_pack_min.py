#!/usr/bin/env python3
"""kindgi-pack-min: a Kindgi pack service in one file, standard library only.

A Kindgi runtime sends this service tool calls and guardrail checks over HTTP
(Pack protocol v2, schema 2.7.0); the service runs the pack's Python code and
answers.

    KINDGI_PACK_SERVICE_TOKEN=... python3 kindgi_pack_min.py --index /app/index.json
    python3 kindgi_pack_min.py index --pack-dir ./my-pack       # build index.json

The contract:

* Routes: ``POST /v1/invoke`` and ``GET /v1/info`` need the
  ``kindgi-pack-token`` header; ``GET /healthz`` and ``GET /readyz`` are open.
* Every outcome of running pack code is a 200 response message (``result``,
  ``check-result``, or ``error`` with one of the protocol's error codes).
  Other statuses are the transport's: 400/404/405/413/414/415/431/501/505
  for requests that can't be served, 401 for a bad token, 421 for another
  tenant, 503 (with ``retry-after``) when draining, missing env or at a
  limit, 500 when the service itself failed (logged; the process lives on).
* ``kindgi-timeout-ms`` (default 120000) is answered on time with
  ``deadline-exceeded``; a caller that leaves gets its call cancelled.
  Either way the call's ``Cancellation`` fires.
* Process: the token and undeclared environment variables are put out of
  pack code's reach; every pack module is imported before listening; a
  ``listening`` JSON line goes to stderr; SIGTERM or SIGINT drains in-flight
  calls for up to 8 s, then ``stopped`` and exit 0.

The path of a request, and the functions that take it:

    PackHTTPServer.process_request    accept; a thread per connection; at the cap, one that
                                      never showed the token and waits makes room; else a few
                                      for the probes only (ProbeRequestHandler), then 503
    PackRequestHandler.handle         one request after another on the connection
      read_request_head               the head, parsed and checked (parse_head)
      route                           404, 405, then for token routes: 503 on a probes-only
                                      connection, 401 (TokenCheck), 421
      invoke                          503 not ready / overloaded, 415, body (read_body: 413),
                                      read_envelope (200 errors), 421 for ctx.tenantId,
                                      PackService.admit (503 overloaded)
      run_call                        the call runs in this thread, in a copy of the boot's
                                      context: call_tool / call_check (run_pack_code: async
                                      pack code on the event loop, or 503 if it can't start)
      Call.settle                     exactly once, by whichever comes first: the result,
                                      the deadline (Watchman), the caller leaving, the drain
        PackService.call_record       the ``call`` record, before the answer (so records
                                      come in the order callers see answers)
        answer_invoke / answer        the answer leaves, in one write (two for a big body)
      Call.cancel                     for a deadline, a caller gone or the drain's end: the
                                      call's cancellation fires (pack code's callbacks), after
                                      the answer

Threads, and what they share:

    thread           started by               does
    main             the interpreter          boots, then accepts connections (serve_forever)
    connection       process_request          reads requests, runs its own calls' sync pack code
    watchman         serve()                  deadlines, callers who leave, stalled phases
    deadline         the watchman             answers a call past its deadline (runs its callbacks)
    hang-up          the watchman             settles a call whose caller left (runs its callbacks)
    records          serve()                  writes every record made once serving (but ``listening``
                                              and ``stopped``), in batches
    lifecycle, drain Lifecycle                signals (their numbers, from C, on a pipe): drain, then exit
    cancelling       the drain's end, or a    fires the cancellations of the calls it gave up on
                     second signal
    exit handlers    Lifecycle.stop           pack code's atexit handlers, after the drain (1 s at most)
    last words       Lifecycle.stop           writes ``stopped``, flushes pack code's output (1 s at most)
    saying draining  begin_drain              writes ``draining`` (``stop`` waits for it, 1 s at most)
    event loop       main(), or the first     runs all async pack code, and the tasks it leaves;
                     async call               ends before the exit handlers (stop_event_loop)
    child            asyncio (3.6 and 3.7)    waits for one child process of async pack code
                                              (threaded_child_watcher)

The service's threads come from ``start_thread``, and each has a way on
when the process is at its limit of threads: a new connection is answered
503, a settle is tried again next tick, the drain and the last records run
in the thread at hand, and the first async call is answered 503
(``OutOfThreads``; the next one starts the loop).  Only a child's thread is
started by asyncio's call into the watcher: one that can't start fails pack
code's own subprocess call.

    lock                       guards
    Records.lock               (an RLock: a signal handler or a finalizer amid a write may write too)
                               stderr: every write of records and of pack code's ``sys.stderr``
                               (PackStderr), the batch being written, ``mid_line``, ``ended_pack_line``
                               and ``texts_written``;
                               kept by the last words from ``stopped`` to the exit
    Records.queue_lock         the records and pack code's text waiting for the writer thread, their
                               bytes, and the counts of them queued; taken for 1 s at most (its own
                               thread may hold it, in a finalizer or a signal handler)
    Records.wake               (a Condition on Records.queue_lock) what waits, and ``hurried``: the
                               writer thread waits on it for something to write, then for a batch
                               to gather unless hurried (a long record, room wanted)
    Records.text_out           (a Condition on Records.queue_lock) pack code's text written: a thread
                               whose text waits among the records waits on it (20 ms at a time)
    Records.room               (a Condition on Records.queue_lock) room among them: the thread
                               making a record waits on it while MAX_WAITING_RECORDS or
                               MAX_WAITING_BYTES wait; the writer notifies it as it takes them
    PackService.lock           running / unanswered counts, the memory budget, draining
    PackService.loop_lock      starting the event loop of async pack code, and stopping it at the exit
    PackService.settled        (a Condition on PackService.lock) each call's ``done``: the
                               connection thread that lost the race to settle its call waits on it
    Call.lock                  the call's outcome: the first party to settle wins
    Watchman.lock              the calls being watched (and their sockets in its selector), and
                               those held for a thread to settle them
    PackHTTPServer.count_lock  the counts of open connections and of probes-only ones, and
                               ``counted_out`` (the connections shut to make room, counted out then)
    Lifecycle.lock             ``listening`` versus ``stopped``
    Lifecycle.exit_handlers_once  taken, never given back, by the first stop: it alone runs pack
                               code's exit handlers
    Lifecycle.last_words_once  taken, never given back, by the stop that writes ``stopped`` and
                               exits: the other one returns

Read without a lock, because a stale value is harmless: ``draining`` (set once,
never cleared), ``saying_draining`` (set once, to a thread already started),
``running`` for the early 503 (``admit`` checks again under the lock),
``unanswered`` in ``wait_drained`` (the drain polls it: a stale one is read again
25 ms later), ``PackHTTPServer.open_connections`` (a count in a record), a
handler's phase and its deadline (the sweep sees the next value within half a
second), a handler's ``trusted`` (set once, while its phase is ``busy``, which
no connection shut to make room is in), ``PackService.answering`` (a set: one
``add`` or ``discard`` is atomic), ``Records.queued`` and ``Records.written`` in
``written_out`` (a stale count is read again 25 ms later), ``Records.waiting``
in ``_write_waiting`` (whether anything waits: one added just then goes out with
the next batch), ``Records.texts_written`` in ``_wait_until_written`` (it only
grows: a stale one is read again 20 ms later at most), ``Records.dropped``
(records dropped while stderr takes no writes: a count one short is harmless),
``Records.stuck`` as ``_write_to`` clears it (one record
more dropped at once as stderr comes back is harmless), ``Records.writes`` (a
waiter sees the count change a round later at worst),
``PackService.loop_stopped`` in the loop's thread (set once, before the
``loop.stop`` that makes that thread read it), ``Call.stop_task`` (set once
when the task starts, ``settle`` setting the outcome first: see
``Call.cancel``; cleared once the task is over, and read once),
``PackHTTPServer.last_accepted`` (the drain polls it: a stale one is read again
25 ms later), and ``Records.writer`` (cleared once, by ``stop_writer`` at the
exit: a write that still finds it queues, and ``stopped`` writes what waits).

The sections below: limits; records; configuration; the environment (the
token, the filter, which ``kindgi`` pack code gets); the pack; HTTP heads and
bodies; messages; connections (the request's path above); running pack code;
settling a call and the watchman; the service and the server; the process
(boot, serve, drain, and ``main``, which hands the ``index`` command to
kindgi_pack_index.py); and, as an appendix, the stand-in ``kindgi`` module
that pack code imports when the SDK is not installed.

It runs on CPython 3.6 to 3.13.  The few lines that exist only for 3.6 and
3.7 carry a comment starting "Python 3.6" (or "Python 3.6 and 3.7"): when
support for those ends, those lines go and nothing else changes.
"""

import signal
import sys

if __name__ == "__main__":
    # Hold SIGTERM and SIGINT until main() has handlers for them: a held signal
    # waits, where an unhandled one kills the service (or, as PID 1, is ignored).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})

import atexit  # noqa: E402  (the imports below take time the signals must not be lost in)
import codecs
import errno
import fcntl      # fcntl and resource are used after the pack's modules load, whose folder is first
import functools  # on sys.path then: imported later, a pack's own resource.py would stand in for them
import gc
import importlib
import importlib.machinery
import io
import json
import math
import os
import re
import resource
import select
import selectors
import socket
import socketserver
import stat
import threading
import time
import types
import warnings
from array import array               # socket's own import: for a struct timeval
from collections.abc import Iterator, Mapping, MutableMapping


def _import_http_server():
    """http.server, loaded without OpenSSL.

    http.server imports http.client, which imports ssl when it can: 4 MB of
    OpenSSL, a fifth of this service's memory, for HTTPS it never speaks.  So
    ssl is out of reach while they load (http.client does without it), and
    that http.client is dropped from sys.modules afterwards: pack code that
    imports http.client gets its own, with HTTPS.
    """
    if "ssl" in sys.modules:   # already loaded (an embedding program): nothing to save
        import http.server
        return http.server
    sys.modules["ssl"] = None
    try:
        import http.server
    finally:
        del sys.modules["ssl"]
        sys.modules.pop("http.client", None)
    return http.server


BaseHTTPRequestHandler = _import_http_server().BaseHTTPRequestHandler

try:   # the C function hmac.compare_digest wraps; hmac itself loads OpenSSL
    from _operator import _compare_digest as compare_digest
except ImportError:
    from hmac import compare_digest

try:   # the built-in SHA-256: hashlib would set up all of OpenSSL's digests for one
    from _sha2 import sha256           # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:                # a build without the built-in hashes
        from hashlib import sha256

try:
    import contextvars
except ImportError:                    # Python 3.6 has no context variables: nothing can leak through them
    contextvars = None

try:
    from http.server import ThreadingHTTPServer
except ImportError:                    # Python 3.6 has no ThreadingHTTPServer: the same, composed
    from http.server import HTTPServer

    class ThreadingHTTPServer(socketserver.ThreadingMixIn, HTTPServer):
        daemon_threads = True

try:
    import schema_lite
except ModuleNotFoundError as exc:   # schema_lite itself; an ImportError from inside it is shown as it is
    if exc.name != "schema_lite" or __name__ != "__main__":
        raise
    sys.exit("kindgi_pack_min.py: module schema_lite not found: put schema_lite.py beside this file "
             "and run it without -I or -P (they leave this file's folder off sys.path), or copy one "
             "file alone: `python3 tools/build.py` writes dist/kindgi_pack_min.py and dist/kindgi_pack_min.pyz")

__all__ = [
    "main",
    "Config",
    "read_config",
    "Limits",
    "Records",
    "Index",
    "Pack",
    "PackService",
    "PackHTTPServer",
    "PackRequestHandler",
    "parse_head",
    "read_envelope",
    "install_standin",
]

__version__ = "0.2.0"

PROTOCOL = 2
PROTOCOL_SCHEMA_VERSION = "2.7.0"
MAX_BODY = 10 * 1024 * 1024          # 10 MiB; exactly this much is accepted
MAX_INDEX_BYTES = 64 * 1024 * 1024   # the pack index file (read_index)
MAX_CHUNK_FRAMING = 1024 * 1024      # chunk-size lines and extensions of one chunked body
MAX_PARSE_BYTES = 56 * 1024 * 1024   # memory one body's JSON may take once parsed (json_parse_cost)
MEMORY_BUDGET = 256 * 1024 * 1024    # bodies and their parsed JSON, all requests at once (memory_budget)
DEFAULT_TIMEOUT_MS = 120000
MAX_TIMEOUT_MS = 10 ** 12            # "no upper cap": this is 31 years
DEFAULT_MAX_CONCURRENCY = 32
MAX_CONNECTIONS = 1024               # open connections served by a thread each
PROBE_CONNECTIONS = 64               # more, over the cap, that may only ask /healthz or /readyz
FD_HEADROOM = 128                    # file descriptors kept for everything but connections
THREAD_HEADROOM = 32                 # threads kept, under a pids limit, for everything but connections
MAX_HEAD_LINE = 8192
MAX_HEAD_BYTES = 65536
MAX_HEADERS = 100
MAX_HEADER_VALUE = 1024              # a value the service writes into a header
MAX_INT_DIGITS = 4300                # Python 3.11+'s int/str limit, kept on every version
TOO_MANY_DIGITS = 10 ** MAX_INT_DIGITS   # the least int with more digits than that
MAX_ISSUES = 1000                    # validation issues in one answer
MAX_CALLER_TEXT = 1024               # characters of a caller's string in a record
RECORD_BATCH_SECONDS = 0.02          # how long a record may wait to be written with others
MAX_WAITING_RECORDS = 4096           # beyond these, the thread making a record waits for room
MAX_WAITING_BYTES = 4 * 1024 * 1024  # and beyond these bytes (a record alone longer still waits, if none do)
LONG_RECORD = 4096                   # a longer record wakes the writer thread at once, not after the gather
STUCK_STDERR_SECONDS = 1.0           # once serving, how long a record waits for a stuck stderr before it is dropped
PIPE_WRITE = 4096                    # a pipe never splits a write this long (PIPE_BUF on Linux; POSIX: 512+)
JSON_CONTENT_TYPE = "application/json; charset=utf-8"
# The reason phrase of each status the service writes, RFC 9110's: fixed here, because
# http.server's differ by version (3.6 has none for 421; 3.13 renamed 413 and 414).
REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found", 405: "Method Not Allowed",
           413: "Content Too Large", 414: "URI Too Long", 415: "Unsupported Media Type", 421: "Misdirected Request",
           431: "Request Header Fields Too Large", 500: "Internal Server Error", 501: "Not Implemented",
           503: "Service Unavailable", 505: "HTTP Version Not Supported"}
BIG_ANSWER = 64 * 1024               # a longer answer body goes out in a write of its own, not copied after its head
TEST_SETTINGS_VAR = "KINDGI_PACK_MIN_TEST"
MAX_TEST_LIMIT = 3600.0              # a limit a test sets, in seconds: longer ones overflow a wait's deadline


class Limits:
    """The time limits of a connection, the drain and the exit, in seconds, each named once.

    ``silence`` and ``first_request`` are kernel socket timeouts: a read or a
    write that makes no progress for that long ends the connection (the
    shorter one until the connection has shown the token).  An index on a
    pipe that stays silent as long fails the boot (``read_stream``).  ``head``,
    ``body`` and ``write`` bound a whole phase, however slowly the bytes
    trickle; the watchman enforces them.  Tests shorten them through
    ``KINDGI_PACK_MIN_TEST`` (see ``read_test_settings``).

    The records' pace (RECORD_BATCH_SECONDS, STUCK_STDERR_SECONDS) and the
    watchman's (``Watchman.TICK``, ``SWEEP``) are named beside the code they
    time; the waits of a second or less for a lock or for the last words
    (``lock_timeout``, ``Lifecycle.stop``) and the 10 s between two records
    of one resource problem are written where they wait.
    """

    silence = 10.0         # no progress reading or writing, once the token was shown; an index on a pipe
    first_request = 3.0    # no progress before the connection has shown the token
    head = 10.0            # a request head, from its first byte
    body = 30.0            # a whole request body
    write = 30.0           # a whole answer
    drain = 8.0            # calls in flight after SIGTERM
    exit_handlers = 1.0    # pack code's atexit handlers, once the drain is over
    linger = 10.0          # reading and dropping an unread body before closing (a pause of 1 s ends it)
    overflow = 1.0         # a request on a connection over the cap (probes only)
    quiet = 0.1            # after the drain, no new connection for this long before the exit

    NAMES = ("silence", "first_request", "head", "body", "write", "drain", "exit_handlers", "linger", "overflow",
             "quiet")


AT_THREAD_LIMIT = "the process is at its limit of threads (a container's pids limit, or ulimit -u)"


class OutOfThreads(Exception):
    """A call needs a thread the process can't start (the event loop of async pack code): it is
    answered 503 ``overloaded``, to be retried, as a connection the service can't take is."""


def start_thread(target, name, *args):
    """Start a daemon thread running ``target(*args)``: the thread, or None when the process
    can't have another (a container's pids limit, ``ulimit -u``, no memory for its stack).

    Every thread of the service's goes through here.  At boot, one that
    can't start fails the boot; once serving, each caller has a way on
    without one: a service at its thread limit still answers, keeps
    deadlines and drains.
    """
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:   # "can't start new thread"
        return None
    return thread


# ---------------------------------------------------------------------------
# Records: JSON lines on stderr
# ---------------------------------------------------------------------------

LEVELS = ("error", "warn", "info", "debug", "trace")
SEVERITY = {"error": "ERROR", "warn": "WARNING", "info": "INFO", "debug": "DEBUG", "trace": "DEBUG"}
# Correlation ids, first after the fixed keys, in this order, wherever a record has them: the
# service's own (the first two and the requestId to toolId run), and the others the SDK's logger
# puts there too when pack code logs them.
CORRELATION_KEYS = ("traceId", "spanId", "runTraceId", "requestId", "tenantId", "projectId", "orgId", "runId",
                    "parentRunId", "agentId", "agentVersion", "flowId", "flowVersion", "toolId",
                    "conversationId", "approvalId")
# Names a pack's field can't take in its record: they go under "fields" instead.
RESERVED_KEYS = ("time", "level", "severity", "subsystem", "message", "event", "kind", "inMessage")
# A field whose name, lowercased without "-" and "_", holds one of these words, or ends in
# "token", is written "[redacted]": every name the SDK's logger redacts, and a few more
# (``secretKey``, ``passwordHash``), but not ``promptTokens`` or ``tokenizer``.
SECRET_KEY = re.compile(r"secret|passw|passphrase|apikey|privatekey|credential|authorization|cookie|token$")
# Known shapes of secrets, masked in every string of a pack's record: a Kindgi token (kept:
# its kind, and the last four characters of a long one), the credentials after "Bearer",
# and the password in a URL, after a user name or none (``redis://:pw@host``).  A URL's scheme
# is looked for only from the start of a run of scheme characters (the lookbehind): from every
# letter of "a.a.a…" it took quadratic time.
KINDGI_TOKEN = re.compile(r"\bkgi_([a-z]{2,3})_([A-Za-z0-9._~+/=-]+)", re.ASCII)
BEARER_CREDENTIALS = re.compile(r"\b(Bearer)\s+[^\s\"',;]+", re.ASCII | re.IGNORECASE)
URL_PASSWORD = re.compile(r"(?<![a-z0-9+.-])([0-9+.-]*[a-z][a-z0-9+.-]*://[^\s:/@]*):[^\s@/]+@",
                          re.ASCII | re.IGNORECASE)
MAX_FIELD_DEPTH = 8   # deeper containers in a pack's record are written "[too deep]"
# Characters that line splitters or terminals act on: C1 controls (U+0085 is NEL), the
# Unicode line and paragraph separators; in pretty lines C0 controls and DEL too, and the
# bidirectional controls, with which a caller's id would make the rest of the line read reversed.
LINE_BREAKING = re.compile("[\x80-\x9f\u2028\u2029]")
UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def is_finite(number):
    """Not NaN and not infinite: what JSON can hold of a float."""
    return number == number and number not in (float("inf"), float("-inf"))


def is_too_long(number):
    """An int of more than MAX_INT_DIGITS digits, which Python 3.11+ refuses to write (compared,
    not counted: counting its digits would take as long as writing it)."""
    return not -TOO_MANY_DIGITS < number < TOO_MANY_DIGITS


@functools.lru_cache(maxsize=1024)   # the same few names in every record
def is_secret_key(key):
    """A record field's name that looks secret (``SECRET_KEY``)."""
    return SECRET_KEY.search(key.lower().replace("-", "").replace("_", "")) is not None


def _mask_kindgi_token(match):
    kind, body = match.groups()
    return "kgi_%s_\u2026%s" % (kind, body[-4:] if len(body) >= 16 else "")


def scrub_text(text, token=None):
    """Text from pack code with the secrets in it masked: all of it when it is exactly the
    service token, else the known shapes of secrets (``KINDGI_TOKEN`` and the two after it)."""
    if token is not None and token.is_token(text):
        return "[redacted]"
    if "kgi_" in text:   # each substitution only where its search finds something: ten times quicker
        text = KINDGI_TOKEN.sub(_mask_kindgi_token, text)
    if BEARER_CREDENTIALS.search(text):
        text = BEARER_CREDENTIALS.sub(r"\1 [redacted]", text)
    if "://" in text:
        text = URL_PASSWORD.sub(r"\1:***@", text)
    return text


def redact_fields(value, token=None, depth=0, on_path=None):
    """A copy of pack code's record fields, as the SDK's logger writes them.

    A secret-looking key's value becomes ``[redacted]`` and every string is
    scrubbed (``scrub_text``); a datetime becomes its UTC time to the
    millisecond (a naive one is taken as UTC), a tuple a list, any other
    object its scrubbed ``str()``.  A container inside itself is written
    ``[circular]``; one nested deeper than ``MAX_FIELD_DEPTH``, ``[too deep]``.
    A value that raises as it is looked at (its ``items()``, its iteration,
    its comparisons) is written as its text: a log call never fails the pack
    code that makes it.
    """
    try:
        return _redacted(value, token, depth, on_path)
    except Exception:   # pack code's own methods
        return scrub_text(_safe_str(value), token)


def _redacted(value, token, depth, on_path):
    """``redact_fields`` of one value; pack code's subclasses of str, float and int are read as
    the plain type, whose methods it can't change."""
    if isinstance(value, str):
        return scrub_text(value if type(value) is str else str.__str__(value), token)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, float):   # NaN is not JSON: null, as JavaScript's loggers write it
        value = float.__float__(value)
        return value if is_finite(value) else None
    if isinstance(value, int):   # the SDK loses a record with one too long
        value = int.__int__(value)
        return "[an integer of %d bits, too long to write]" % value.bit_length() if is_too_long(value) else value
    datetime = sys.modules.get("datetime")
    if datetime is not None and isinstance(value, datetime.datetime):
        try:
            utc = value.astimezone(datetime.timezone.utc) if value.tzinfo else value
            return utc.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"
        except (OverflowError, ValueError):   # out of range in UTC (year 1 east of Greenwich)
            pass
    if not isinstance(value, (Mapping, list, tuple)):
        return scrub_text(_safe_str(value), token)
    on_path = set() if on_path is None else on_path
    if id(value) in on_path:
        return "[circular]"
    if depth >= MAX_FIELD_DEPTH:
        return "[too deep]"
    on_path.add(id(value))
    try:
        if isinstance(value, Mapping):
            named = ((field_name(key, token), item) for key, item in value.items())
            return {name: "[redacted]" if is_secret_key(name) else redact_fields(item, token, depth + 1, on_path)
                    for name, item in named}
        return [redact_fields(item, token, depth + 1, on_path) for item in value]
    finally:
        on_path.discard(id(value))


def _is_exception(value):
    """Whether pack code's value is an exception (not one whose ``__class__`` raises as it is read)."""
    try:
        return isinstance(value, BaseException)
    except Exception:
        return False


def field_name(key, token=None):
    """A key of pack code's record fields as the record writes it: never the service token."""
    name = _safe_str(key)
    return "[redacted]" if token is not None and token.is_token(name) else name


def error_fields(exc, with_stack, token=None, depth=0):
    """An exception in a pack's record: its name, message, ``code`` (an ``OSError``'s or an HTTP
    error's, say), stack when asked, and the exception it was raised from; ``redact_fields``
    masks them with the rest.  A message that is the service token is masked in the stack too,
    where it is only part of the text."""
    message = _safe_str(exc)
    fields = {"name": type(exc).__name__, "message": message}
    try:
        code = getattr(exc, "code", None)
    except Exception:  # pack code's property
        code = None
    if isinstance(code, (str, int)) and not isinstance(code, bool):
        fields["code"] = _safe_str(code)
    if with_stack:
        fields["stack"] = masked_stack(exc, message, token)
    try:
        cause = exc.__cause__
    except Exception:  # pack code's property
        cause = None
    if _is_exception(cause) and depth < 3:
        fields["cause"] = error_fields(cause, with_stack, token, depth + 1)
    return fields


def masked_stack(exc, message, token):
    """The exception's stack, where its message, when that is the service token, says
    ``[redacted]``: the stack quotes the message inside longer text, which no mask of whole
    values finds."""
    stack = format_stack(exc)
    if token is not None and message and token.is_token(message):
        return stack.replace(message, "[redacted]")
    return stack


def service_failed(records, exc, what):
    """The service itself failed at ``what``: a ``service-error`` record with the stack; returns
    the error's text, ``TypeError: ...``.

    An error whose message is the service token (a caller's value it quoted) says
    ``[redacted]`` instead, in its stack too, as pack code's errors do.
    """
    token = records.token   # the text may hold pack code's values: masked as its records are
    message = _safe_str(exc)
    stack = masked_stack(exc, message, token)
    if token is not None and message and token.is_token(message):
        message = "[redacted]"
    text = "%s: %s" % (type(exc).__name__, message)
    records.write("error", "%s failed inside the service: %s" % (what, scrub_text(text, token)),
                  event="service-error", fields={"stack": scrub_text(stack, token)})
    return text


def _escape_char(match):
    return "\\u%04x" % ord(match.group())


def _utc_now():
    now = time.time()
    return _utc_second(int(now)) + ".%03dZ" % (int(now * 1000) % 1000)


@functools.lru_cache(maxsize=2)
def _utc_second(second):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


_dump_record = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr,
                                check_circular=False).encode   # fields are copies: never cyclic


class Records:
    """Writes the service's records to a file descriptor, one per line.

    JSON by default (``pretty`` for a human at a terminal).  Lifecycle records
    pass whatever the level; others are filtered by the level of their
    subsystem (``KINDGI_LOG_LEVELS``), else ``KINDGI_LOG_LEVEL``.  ``bound``
    fields (the pack's id and artifact version, once the index is read) go on
    every record that doesn't name them itself.  Once serving, a thread of
    its own writes them all but ``listening`` and ``stopped``: a stderr
    nobody reads holds up no call (see ``_emit``).

    What pack code writes to ``sys.stderr`` (PackStderr) is written, as
    PackText, by the thread that writes it, after the records waiting
    (``write_text``).  Whoever writes does so under ``lock``, so a record
    and pack code's text never land inside one another, and keeps track of
    the line there.  A record after a line pack code left unfinished
    begins a line of its own (``mid_line``); the newline pack code writes
    next is then dropped (``ended_pack_line``), not left as an empty line.
    """

    def __init__(self, fd=2, level="info", levels=None, pretty=False):
        self.fd = fd
        self.rank = LEVELS.index(level)
        self.ranks = {name: LEVELS.index(lv) for name, lv in (levels or {}).items()}
        self.known = {}                # (level, subsystem) -> enabled, as worked out
        self.pretty = pretty
        self.bound = {}
        self.token = None              # a TokenCheck, for what pack code writes
        # Held through every write to stderr; an RLock, as a signal handler or a finalizer run
        # amid a write on the thread holding it may write too: it writes at once, never waits for itself.
        self.lock = threading.RLock()
        self.queue_lock = threading.Lock()             # held to add to ``waiting`` or take it
        self.room = threading.Condition(self.queue_lock)   # notified once the waiting records are taken
        self.wake = threading.Condition(self.queue_lock)   # notified for the writer thread to take them
        self.text_out = threading.Condition(self.queue_lock)   # notified once pack code's text is written
        self.hurried = False           # a long record waits, or room is wanted: no gathering
        self.waiting = []              # encoded records and PackText for the writer thread, in order
        self.waiting_bytes = 0         # their length in all
        self.queued = 0                # records (not PackText) queued so far, and written so far: the
        self.written = 0               # drain waits for the records, not for pack code's endless chatter
        self.texts_queued = 0          # PackText queued so far (under queue_lock), and written so far
        self.texts_written = 0         # (under lock): pack code's write waits for its own
        self.writer = None             # the writer thread, once start_writer() has run
        self.stuck = False             # a record waited STUCK_STDERR_SECONDS in vain: drop the next at once
        self.dropped = 0               # records dropped so, for the writer thread to report
        self.writes = 0                # write(2)s that went through: stderr is slow, not stuck, while it grows
        self.seen_writes = None        # ``writes`` when written_out() last saw it change, and when
        self.seen_at = 0.0
        self.mid_line = False          # pack code's sys.stderr last wrote a line without its end (PackStderr)
        self.ended_pack_line = False   # a record ended that line for it: the newline pack code writes next is dropped

    def enabled(self, level, subsystem="pack"):
        try:
            return self.known[level, subsystem]
        except KeyError:
            answer = LEVELS.index(level) <= self.rank_for(subsystem)
            if len(self.known) < 256:   # pack code names subsystems: keep the table small
                self.known[level, subsystem] = answer
            return answer

    def rank_for(self, subsystem):
        """The level of ``subsystem``: its own, else its nearest dotted parent's in
        KINDGI_LOG_LEVELS (``pack.tool`` for ``pack.tool.db``), else KINDGI_LOG_LEVEL's.

        The names set are matched against it, not its parents looked up one by one: cutting a
        subsystem of pack code's with many dots down a dot at a time took quadratic time."""
        nearest = None
        for name in self.ranks:
            if (subsystem == name or subsystem.startswith(name + ".")) and (
                    nearest is None or len(name) > len(nearest)):
                nearest = name
        return self.rank if nearest is None else self.ranks[nearest]

    def write(self, level, message, event=None, subsystem="pack", always=False, fields=None,
              lock_timeout=-1, at_once=None):
        """Write one record; ``always`` is for lifecycle records, written whatever the level and,
        unless ``at_once`` is False, at once; ``at_once`` is for the writer thread's own.

        With ``lock_timeout``, a lifecycle record that can't have the lock in
        time is written anyway, on a line of its own: the last words of a
        process whose stderr is stuck mid-record.  Another record that can't
        have the queue's lock in time (its own thread holds it: a task's
        ``__del__`` run by the collector) is dropped, and counted.
        """
        if not always and not self.enabled(level, subsystem):
            return
        record = {"time": _utc_now(), "level": level, "severity": SEVERITY[level],
                  "subsystem": subsystem, "message": str(message)}
        if fields:
            for key in CORRELATION_KEYS:
                if key in fields:
                    record[key] = fields[key]
        if event:
            record["event"] = record["kind"] = event
        if fields:
            for key, value in fields.items():
                if key not in record:   # the correlation ids are in already
                    record[key] = value
        for key, value in self.bound.items():
            if key not in record:
                record[key] = value
        self._emit(self._line(record), lock_timeout, at_once=always if at_once is None else at_once)

    def _line(self, record):
        """The record as one line of UTF-8 with its newline."""
        if self.pretty:
            line = self._pretty(record)
        else:
            line = _dump_record(record)
        data = (line + "\n").encode("utf-8", "backslashreplace")
        if len(data) != len(line) + 1 and LINE_BREAKING.search(line):   # not ASCII: maybe C1, U+2028/9
            data = (LINE_BREAKING.sub(_escape_char, line) + "\n").encode("utf-8", "backslashreplace")
        return data

    @staticmethod
    def _pretty(record):
        rest = " ".join("%s=%s" % (k, json.dumps(v, ensure_ascii=False, default=repr))
                        for k, v in record.items()
                        if k not in ("time", "level", "severity", "subsystem", "message", "kind"))
        line = "%s %-5s %s %s%s" % (record["time"][11:23], record["level"].upper(),
                                    record["subsystem"], record["message"], "  " + rest if rest else "")
        return UNPRINTABLE.sub(_escape_char, line)

    def _emit(self, data, lock_timeout=-1, at_once=False):
        """Leave one record (or PackText) for the writer thread, or write it.

        Once serving, records are written by the writer thread: they wait up
        to RECORD_BATCH_SECONDS and go out together (a write(2) per call hands
        the interpreter to another thread and back, a fifth of a small call),
        and a stderr nobody reads (a log collector that stopped) can't hold up
        a call's answer.  Lifecycle records (but ``draining``), pack code's
        text (write_text), and everything before serving, after stop_writer()
        or in a forked child, are written at once, after what waits, so the
        order holds.
        """
        if self.writer is not None and not at_once:
            return self._queue(data, lock_timeout)
        if not self.lock.acquire(timeout=lock_timeout):
            return self._write_all(b"\n" + data)   # stderr is stuck mid-record: last words on their own line
        try:
            self._write_waiting()
            self._write_entry(data, type(data))
        finally:
            self.lock.release()

    def _queue(self, data, lock_timeout):
        """Add the record (or PackText) to what waits, once there is room: MAX_WAITING_RECORDS,
        MAX_WAITING_BYTES.  For PackText, its number among them (None when dropped).

        The thread making it waits for room as long as stderr takes writes
        (a log collector that reads slowly loses no record); once it took none
        for STUCK_STDERR_SECONDS, and at once while it is found stuck, the
        record is dropped, and counted: the writer thread reports the count
        once stderr takes its writes again.
        """
        size = len(data)
        # The queue's lock is held for moments only (waiting for room lets go of it): a thread
        # that can't have it in time holds it itself, in a finalizer the collector runs there (a
        # task's __del__, pack code's own).  Its record is dropped, not waited for for ever.
        if not self.queue_lock.acquire(True, STUCK_STDERR_SECONDS if lock_timeout < 0 else lock_timeout):
            self.dropped += 1
            return
        try:
            if not self._has_room(size) and not self._wait_for_room(size):
                self.stuck = True
                self.dropped += 1
                return
            self.waiting.append(data)
            self.waiting_bytes += size
            if type(data) is PackText:   # pack code waits for it: no gathering
                self.texts_queued += 1
                self.hurried = True
                self.wake.notify()
                return self.texts_queued
            self.queued += 1
            if size > LONG_RECORD:
                self.hurried = True
                self.wake.notify()
            elif len(self.waiting) == 1:   # the writer thread may be idle
                self.wake.notify()
        finally:
            self.queue_lock.release()

    def _has_room(self, size):
        """Whether a record of ``size`` bytes may join those waiting; the caller holds the queue's lock."""
        waiting = self.waiting
        return not waiting or (len(waiting) < MAX_WAITING_RECORDS
                               and self.waiting_bytes + size <= MAX_WAITING_BYTES)

    def _wait_for_room(self, size):
        """Wait for room as long as stderr takes writes: False once it took none for
        STUCK_STDERR_SECONDS (at once while it is found stuck).  The caller holds the queue's lock."""
        if self.stuck:
            return False
        self.hurried = True   # no gathering: the writer thread makes room as it takes those waiting
        self.wake.notify()
        writes = self.writes
        deadline = time.monotonic() + STUCK_STDERR_SECONDS
        while not self._has_room(size):
            left = deadline - time.monotonic()
            if left <= 0:
                if self.writes == writes:
                    return False
                writes, deadline = self.writes, deadline + STUCK_STDERR_SECONDS
            else:
                self.room.wait(left)
        return True

    def write_text(self, text):
        """Write what pack code wrote to ``sys.stderr`` (PackText), and return once it is out, as a
        plain stream's write does: a line written before a crash, ``os._exit`` or a close of
        descriptor 2 is not lost.

        While nothing is being written, the thread that wrote it writes, under
        ``lock``, the records waiting and then its text, so the order holds
        and neither lands inside the other.  While something is, the text
        joins the records waiting and this thread waits until it is out,
        written by the writer thread or by itself once the lock is free: a
        thread waiting for the lock lost it to the writer thread's next batch,
        again and again (2 lines in 2 s under a heavy load of records).  A
        stderr that takes no writes holds pack code as a plain stream does,
        or, while its text waits, as a record: 1 s, then it is dropped and
        counted.  The writer thread's own text (a finalizer run there) just
        waits for its next batch.
        """
        if self.writer is None or threading.current_thread() is self.writer:
            self._emit(text, at_once=self.writer is None)
        elif self.lock.acquire(False):
            try:
                self._write_waiting()
                self._write_entry(text, PackText)
            finally:
                self.lock.release()
        else:
            ticket = self._queue(text, -1)
            if ticket is not None:
                self._wait_until_written(ticket)

    def _wait_until_written(self, ticket):
        """Wait until pack code's text number ``ticket`` is out, writing what waits whenever the
        lock is free (the writer thread may be stopped, or taking its time)."""
        while self.texts_written < ticket:
            if self.lock.acquire(False):
                try:
                    self._write_waiting()
                finally:
                    self.lock.release()
            elif self.queue_lock.acquire(True, STUCK_STDERR_SECONDS):
                try:
                    if self.texts_written < ticket:
                        self.text_out.wait(RECORD_BATCH_SECONDS)
                finally:
                    self.queue_lock.release()

    def written_out(self):
        """Whether every record queued so far is written (what pack code writes is not waited for),
        for the drain to wait for them before the exit: True too once stderr took no write for
        STUCK_STDERR_SECONDS, as they can't be."""
        if self.written == self.queued:
            return True
        now = time.monotonic()
        if self.writes != self.seen_writes:
            self.seen_writes, self.seen_at = self.writes, now
        return now - self.seen_at >= STUCK_STDERR_SECONDS

    def after_fork(self):
        """In a child pack code forked: its records are written at once, under a lock of its own.

        The child has no writer thread, the records waiting are the parent's
        to write, and the lock may be held by a thread only the parent has.
        """
        self.lock = threading.RLock()
        self.queue_lock = threading.Lock()
        self.room = threading.Condition(self.queue_lock)
        self.wake = threading.Condition(self.queue_lock)
        self.text_out = threading.Condition(self.queue_lock)
        self.waiting = []
        self.waiting_bytes = 0
        self.queued = self.written = self.texts_queued = self.texts_written = 0
        self.writer = None

    def start_writer(self):
        """From now on, records are written in batches by a thread of their own: False when the
        process can't start one."""
        self.writer = start_thread(self._write_batches, "records")
        return self.writer is not None

    def stop_writer(self):
        """From now on, write at once, as before serving: at the exit, what would wait for the
        writer thread could be cut off by ``os._exit``.  The writer thread stays, idle."""
        self.writer = None

    def _write_batches(self):
        """The writer thread: batch after batch, for as long as the process lives.  A batch that
        fails (MemoryError, say) is lost and reported, at most every 10 s; the thread goes on, or
        every record after it would wait in vain and then be dropped."""
        next_report = 0.0
        while True:
            try:
                self._write_a_batch()
            except Exception as exc:
                now = time.monotonic()
                try:
                    if now >= next_report:
                        next_report = now + 10.0
                        service_failed(self, exc, "Writing records")
                except Exception:
                    pass  # no memory even for that: the next batch may fare better
                time.sleep(RECORD_BATCH_SECONDS)   # a failure that repeats is not a busy loop

    def _write_a_batch(self):
        # The wake-ups are Conditions on the queue's lock, which is taken for 1 s at most: an Event's
        # set() takes a lock of its own, which a signal handler amid it, setting it again, waited for ever.
        with self.queue_lock:
            while not self.waiting:
                self.wake.wait()
            if not self.hurried:
                self.wake.wait(RECORD_BATCH_SECONDS)   # let a batch gather, unless hurried
            self.hurried = False
        with self.lock:
            self._write_waiting()
        dropped, self.dropped = self.dropped, 0
        if dropped:   # written by this thread, which can't wait for room it alone makes
            self.write("warn", "%d %s dropped: stderr took no writes for a while"
                       % (dropped, "record was" if dropped == 1 else "records were"),
                       event="records-dropped", fields={"count": dropped}, at_once=True)

    def _write_waiting(self):
        """Write what waits for the writer thread; the caller holds the lock.

        It is taken all at once, which makes room for the threads waiting
        for it.  Records go out whole, in writes of at most PIPE_WRITE bytes:
        a pipe writes those in one piece, where a longer write to a full pipe
        goes out in parts, and what writes to stderr without this service (a
        child process, C code) would land inside a record.  PackText between
        them goes out as pack code wrote it.
        """
        if not self.waiting:   # as before serving: the queue's lock isn't even taken
            return
        # For 1 s at most: its own thread may hold it, amid taking a batch, in a signal handler or
        # a finalizer that writes.  What waits then goes out with the next write.
        if not self.queue_lock.acquire(True, STUCK_STDERR_SECONDS):
            return
        try:
            batch, self.waiting, self.waiting_bytes = self.waiting, [], 0
            queued, texts = self.queued, self.texts_queued
            self.room.notify_all()
        finally:
            self.queue_lock.release()
        try:
            start = size = 0
            for end, data in enumerate(batch):
                if size and (size + len(data) > PIPE_WRITE or type(data) is not type(batch[start])):
                    self._write_entry(b"".join(batch[start:end]), type(batch[start]))
                    start, size = end, 0
                size += len(data)
            if batch:
                self._write_entry(b"".join(batch[start:]), type(batch[start]))
        finally:   # written, or lost with a write that failed: neither the drain nor pack code waits for it
            self.written = max(self.written, queued)   # a write amid this one (a signal handler's) took a later batch
            if texts > self.texts_written:
                self.texts_written = texts
                if self.queue_lock.acquire(True, STUCK_STDERR_SECONDS):   # else they see it 20 ms later
                    try:
                        self.text_out.notify_all()
                    finally:
                        self.queue_lock.release()

    def _write_entry(self, data, kind):
        """Write records (``kind`` bytes) or pack code's text (PackText); the caller holds the lock."""
        if kind is PackText:
            self._write_pack_text(data)
        else:
            self._write_all(data)

    def _write_all(self, data):
        """Write a record (or records) whole, on a line of its own."""
        if self.mid_line:   # pack code stopped mid-line: the record begins a line of its own
            self.mid_line, self.ended_pack_line = False, True
            data = b"\n" + data
        self._write_to(self.fd, data)

    def _write_pack_text(self, data):
        """Write what pack code wrote to ``sys.stderr`` to descriptor 2, minding the line it leaves."""
        if self.ended_pack_line:   # the line is ended already: print()'s own newline would leave an empty one
            self.ended_pack_line = False
            data = data[1:] if data.startswith(b"\n") else data
        if data:
            # Unfinished while it goes out: a record a signal handler writes amid it begins a line.
            self.mid_line = True
            self._write_to(2, data)
            self.mid_line = not data.endswith(b"\n")

    def _write_to(self, fd, data):
        """Write ``data`` whole, PIPE_WRITE bytes a write(2) at most, each counted in ``writes``:
        one write of a long record to a slow reader showed no progress until its end, and the
        drain took stderr for stuck and cut it off.

        A stderr left non-blocking (by the parent, whose pipe this process
        shares) is waited on as a blocking one would be: a full pipe (EAGAIN)
        cut the record in the middle, and lost the rest.
        """
        view = memoryview(data)
        try:
            while view:
                try:
                    view = view[os.write(fd, view[:PIPE_WRITE]):]
                except BlockingIOError:
                    wait_writable(fd)
                    continue
                self.writes += 1   # stderr takes writes: what waits for room isn't dropped
                self.stuck = False
        except OSError:
            pass  # stderr gone: nothing better to do than keep serving


def wait_writable(fd):
    """Wait until ``fd`` takes a write, for as long as a write to a blocking one would."""
    poller = select.poll()   # not select.select: it refuses a descriptor over 1023
    poller.register(fd, select.POLLOUT)
    poller.poll()


class PackText(bytes):
    """What pack code wrote to ``sys.stderr``: it goes to descriptor 2 as written, where a record
    goes whole on a line of its own to the records' descriptor."""


class PackStderr(io.RawIOBase):
    """Descriptor 2 as pack code's ``sys.stderr`` writes to it: through the records' writer.

    What pack code writes is written under the records' lock, after the
    records waiting for the writer thread (``Records.write_text``): a line
    longer than a pipe takes at once goes out in parts, and a record written
    by another thread between them landed inside it, where a log collector
    lost it.  The write returns once its text is out, as a plain stream's
    does.
    """

    name = "<stderr>"

    def __init__(self, records, replaced):
        super().__init__()
        self.records = records
        self.replaced = replaced   # the stream it replaces, kept: collected, it would close the buffer it shares

    def writable(self):
        return True

    def fileno(self):
        return 2

    def isatty(self):
        return os.isatty(2)

    def write(self, data):
        text = PackText(memoryview(data))   # bytes-like only: bytes(n) of an int n would be n zero bytes
        self.records.write_text(text)
        return len(text)


def pack_stderr(records):
    """Point ``sys.stderr`` at descriptor 2 through PackStderr, with its encoding and errors."""
    stream = sys.stderr
    try:
        stream.flush()
        sys.stderr = io.TextIOWrapper(PackStderr(records, stream), stream.encoding, stream.errors,
                                      line_buffering=True)
        sys.stderr.mode = "w"
    except (AttributeError, ValueError, OSError):
        pass  # no stderr, or not a standard stream (replaced by an embedding program)


def _log_at(level):
    """PackLogger's method for one level: ``log(message, fields=None, /, *, in_message=None, **kw)``."""
    def log(*args, in_message=None, **kw):
        logger, message, fields = _log_arguments(level, args)
        logger._log(level, message, fields, in_message, kw)
    log.__name__, log.__qualname__ = level, "PackLogger." + level
    return log


def _log_arguments(name, args):
    """``(logger, message, fields)`` from a log method's positional arguments.

    ``message`` and ``fields`` are positional-only, as in the SDK, so that a
    field may be called anything (``level``, ``message``, ``self``).  Python
    3.6 and 3.7 have no ``/``: ``*args`` stands for it.
    """
    if not 2 <= len(args) <= 3:
        raise TypeError("%s() takes a message and an optional dict of fields (%d positional arguments given)"
                        % (name, len(args) - 1))
    return args[0], args[1], args[2] if len(args) == 3 else None


_NO_ERROR = object()


class PackLogger:
    """The logger pack code gets as ``ctx.log`` and from ``kindgi.log``.

    It holds the records writer and its own bindings, nothing else: pack
    code can reach everything on it.
    """

    def __init__(self, records, subsystem="pack", bindings=None):
        self._records = records
        if not isinstance(subsystem, str) or subsystem == "":   # None, "" or 5: "root", as the SDK's logger takes them
            subsystem = "root"
        self._subsystem = field_name(subsystem, records.token)
        self._bindings = dict(bindings or {})

    def _log(self, level, message, fields, in_message, kw):
        """One record: the bindings, then the fields, then the keywords, masked as the SDK's
        logger masks them (``redact_fields``); errors as ``error_fields``; ``err`` last."""
        records = self._records
        if not records.enabled(level, self._subsystem):
            return
        merged = dict(self._bindings)
        if fields is not None:
            try:
                merged.update(fields)
            except Exception:  # not a dict (a list, say): the SDK loses the record; here it is kept
                merged["fields"] = fields
        merged.update(kw)
        token = records.token
        reserved = {key: merged.pop(key) for key in RESERVED_KEYS if key in merged}
        err = merged.pop("err", _NO_ERROR)
        out = redact_fields({key: error_fields(value, level == "error", token) if _is_exception(value)
                             else value for key, value in merged.items()}, token)
        if reserved:   # kept, but where they can't pass for the record's own (a `listening` of pack code's)
            out["fields"] = redact_fields(reserved, token)
        if err is not _NO_ERROR:   # the error last, as the SDK writes it; its stack at error, or when debugging
            with_stack = level == "error" or records.enabled("debug", self._subsystem)
            err = error_fields(err, with_stack, token) if _is_exception(err) else _safe_str(err)
            out["err"] = redact_fields(err, token)
        stated = [key for key in in_message or () if key in out and key != "err"]
        if stated:   # the fields the message states, of those the record has: a pretty line leaves them out
            out["inMessage"] = stated
        records.write(level, scrub_text(_safe_str(message), token), subsystem=self._subsystem, fields=out)

    error, warn, info, debug, trace = (_log_at(level) for level in LEVELS)
    warning = warn

    def child(*args, **kw):
        """A logger whose records also carry the bindings (a dict, then any keywords, by any
        name); a ``subsystem`` among them replaces the parent's."""
        if not 1 <= len(args) <= 2:
            raise TypeError("child() takes an optional dict of bindings (%d positional arguments given)"
                            % (len(args) - 1))
        self = args[0]
        merged = dict(self._bindings)
        merged.update(args[1] if len(args) == 2 and args[1] else {})
        merged.update(kw)
        return PackLogger(self._records, merged.pop("subsystem", self._subsystem), merged)

    def is_level_enabled(self, level):
        return level in LEVELS and self._records.enabled(level, self._subsystem)


# ---------------------------------------------------------------------------
# Configuration: arguments and environment, every problem at once
# ---------------------------------------------------------------------------

USAGE = """\
usage: kindgi_pack_min.py [--index PATH] [--module-root DIR] [--host ADDR] [--check]
                          [--help] [--version]
       kindgi_pack_min.py index --pack-dir DIR [...]   (build index.json; index --help)

Serve a Kindgi pack's tools and guardrail checks (Pack protocol v2).

options:
  --index PATH        the pack index (else $KINDGI_PACK_INDEX, else /app/index.json)
  --module-root DIR   where the index's module paths start (else the index's folder)
  --host ADDR         the address to listen on (else all interfaces)
  --check             boot (config, index, imports, env) without listening; exit 0 or 1
  --help              show this help and exit
  --version           show the version and exit

environment:
  KINDGI_PACK_SERVICE_TOKEN            required; callers send it as kindgi-pack-token
  PORT                                 port to listen on (default 8080; 0 picks a free one)
  KINDGI_PACK_SERVICE_MAX_CONCURRENCY  pack code running at once before 503 overloaded (default 32)
  KINDGI_PACK_TENANT_ID                pin the service to one tenant's id, a UUID (protocol 2.7.0)
  KINDGI_PACK_ENV_CHECK                strict (default) or warn: missing env.required names
  KINDGI_PACK_ENV_FILTER               on (default) or off: drop undeclared variables
  KINDGI_LOG_LEVEL                     error, warn, info (default), debug or trace
  KINDGI_LOG_LEVELS                    per subsystem, e.g. pack=debug,pack.tool=warn
  KINDGI_LOG_FORMAT                    auto (default), json or pretty
"""

DIGITS = re.compile(r"[0-9]+\Z")       # str.isdigit() also takes other scripts' digits
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z", re.I)
NO_TENANT = "00000000-0000-4000-8000-000000000000"   # the id no tenant has
# What JavaScript's trim() removes: the pin is read as the upstream TypeScript service reads it.
# str.strip() would also remove \x1c-\x1f and \x85 (so a pin of those alone served unpinned, where
# upstream refuses to boot) and keep \ufeff.
JS_TRIMMED = ("\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
              "\u2028\u2029\u202f\u205f\u3000\ufeff")
MANY = 10 ** 18   # what read_decimal makes of a number past 18 digits


def read_decimal(text):
    """The number ``text`` writes in ASCII digits only, else None.

    Past 18 digits it is read as MANY, past every limit: such a number is
    never converted (Python 3.11+ refuses 4,300 digits or more, and a caller
    may send 8 KB of them).
    """
    if not DIGITS.match(text):
        return None
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else MANY


class TokenCheck:
    """Tells the service token from other text, knowing only the token's SHA-256 digest.

    The token itself is kept nowhere in the process (pack code could find
    it), and a 256-bit random token can't be recovered from its digest.
    """

    def __init__(self, digest, length):
        self.digest = digest
        self.length = length

    def matches(self, given):
        """``given`` (a header's value) is the token: the digests compared in constant time."""
        return compare_digest(sha256(given.encode("latin-1")).digest(), self.digest)

    def is_token(self, text):
        """Any text, from a caller or from pack code, that is exactly the token."""
        return len(text) == self.length and compare_digest(
            sha256(text.encode("utf-8", "surrogatepass")).digest(), self.digest)

    def handoff(self):
        return {"digest": self.digest.hex(), "length": self.length}


class Config:
    """What the arguments and the environment say, checked.

    The token itself is not kept: only a ``TokenCheck``.
    """

    def __init__(self):
        self.index_path = "/app/index.json"
        self.module_root = None
        self.host = ""
        self.port = 8080
        self.token = None            # a TokenCheck
        self.max_concurrency = DEFAULT_MAX_CONCURRENCY
        self.env_check = "strict"
        self.env_filter = True
        self.tenant_id = None        # lower-cased
        self.check_only = False
        self.action = None           # "help" or "version"
        self.log_level = "info"
        self.log_levels = {}
        self.log_format = "auto"
        self.limits = Limits()
        self.max_connections = MAX_CONNECTIONS
        self.collect_garbage = True
        self.dropped = None          # the env filter's names, when a first image already hid them
        self.handed_index = None     # (descriptor, SHA-256 hex) of the index the first image read


def read_log_config(environ, config):
    """The three logging variables; a problem here is reported alone."""
    raw = environ.get("KINDGI_LOG_LEVEL", "")
    level = raw.strip().lower()
    if level:
        if level not in LEVELS:
            return 'KINDGI_LOG_LEVEL must be one of error, warn, info, debug, trace, got "%s".' % raw
        config.log_level = level
    for entry in filter(None, (e.strip() for e in environ.get("KINDGI_LOG_LEVELS", "").split(","))):
        name, _, lv = entry.partition("=")
        if not name.strip() or lv.strip().lower() not in LEVELS:
            return ('KINDGI_LOG_LEVELS: "%s" isn\'t subsystem=level '
                    '(levels: error, warn, info, debug, trace).' % entry)
        config.log_levels[name.strip()] = lv.strip().lower()
    raw = environ.get("KINDGI_LOG_FORMAT", "")
    fmt = raw.strip().lower()
    if fmt:
        if fmt not in ("auto", "json", "pretty"):
            return 'KINDGI_LOG_FORMAT must be auto, json or pretty, got "%s".' % raw
        config.log_format = fmt
    return None


def _take_arguments(argv, config, problems):
    """Read the command line; unknown arguments are ignored, as upstream does."""
    needs_value = {"--index": ("index_path", "a path"), "--module-root": ("module_root", "a folder"),
                   "--host": ("host", "an address")}
    index_given = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in needs_value:
            attr, what = needs_value[name]
            if not eq:
                if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                    value = argv[i + 1]
                    i += 1
                else:
                    value = ""
            if not value:
                problems.append("%s needs %s" % (name, what))
            else:
                setattr(config, attr, value)
                index_given = index_given or name == "--index"
        elif arg == "--check":
            config.check_only = True
        elif arg in ("--help", "-h"):
            config.action = config.action or "help"
        elif arg == "--version":
            config.action = config.action or "version"
        i += 1
    return index_given


def _read_token(environ, config, problems):
    token = environ.get("KINDGI_PACK_SERVICE_TOKEN", "").strip()
    if not token:
        problems.append("KINDGI_PACK_SERVICE_TOKEN is required")
    elif any(not 0x21 <= ord(c) <= 0x7E for c in token):
        problems.append("KINDGI_PACK_SERVICE_TOKEN may hold only printable ASCII without spaces "
                        "(it travels in an HTTP header). Use a random value such as "
                        "`openssl rand -hex 32`.")
    else:
        config.token = TokenCheck(sha256(token.encode("ascii")).digest(), len(token))


def _read_tenant(environ, config, problems):
    tenant = environ.get("KINDGI_PACK_TENANT_ID", "").strip(JS_TRIMMED)
    if not tenant:
        return
    if not UUID.match(tenant):
        problems.append("KINDGI_PACK_TENANT_ID must be the tenant's id, a UUID such as "
                        "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b. Got a value that isn't one.")
    elif tenant.lower() == NO_TENANT:
        problems.append("KINDGI_PACK_TENANT_ID is %s, the id no tenant has: no pack call carries it. "
                        "Set the tenant's own id." % NO_TENANT)
    else:
        config.tenant_id = tenant.lower()


def read_test_settings(raw, config):
    """``KINDGI_PACK_MIN_TEST``, for the project's tests only: shorter limits, fewer connections.

    ``name=value`` pairs separated by commas: any ``Limits`` name in seconds,
    ``connections`` (the connection cap) and ``gc=off`` (no cyclic garbage
    collector, to prove that nothing waits for one).  Returns a problem or None.
    """
    for entry in filter(None, raw.split(",")):
        name, _, value = entry.partition("=")
        name, value = name.strip(), value.strip()
        try:
            if name in Limits.NAMES and 0 < float(value) <= MAX_TEST_LIMIT:   # not NaN, not forever
                setattr(config.limits, name, float(value))
            elif name == "connections" and DIGITS.match(value) and int(value) > 0:
                config.max_connections = int(value)
            elif name == "gc" and value in ("on", "off"):
                config.collect_garbage = value == "on"
            else:
                raise ValueError(entry)
        except ValueError:
            return "%s: %s is not a test setting this service knows" % (TEST_SETTINGS_VAR, json.dumps(entry))
    return None


def read_config(argv, environ, handoff=None):
    """Return ``(config, problems)``: every problem found, not just the first.

    ``handoff`` is what a re-executed service received from its first image
    (see ``hide_secrets``): the token's digest, the token being gone.
    """
    config = Config()
    problems = []
    log_problem = read_log_config(environ, config)
    index_given = _take_arguments(argv, config, problems)
    if config.action:   # --help and --version answer whatever the environment holds
        return config, []
    if log_problem:
        return config, [log_problem]
    if not index_given and environ.get("KINDGI_PACK_INDEX"):
        config.index_path = environ["KINDGI_PACK_INDEX"]
    if handoff is None:
        _read_token(environ, config, problems)
    else:
        config.token = TokenCheck(bytes.fromhex(handoff["digest"]), handoff["length"])
        config.dropped = handoff["dropped"]
        config.handed_index = (handoff["index"], handoff["indexDigest"])
    port = environ.get("PORT")
    if port is not None:
        number = read_decimal(port)
        if number is not None and number <= 65535:
            config.port = number
        else:
            problems.append("PORT must be a port number, got %s" % json.dumps(port))
    cap = environ.get("KINDGI_PACK_SERVICE_MAX_CONCURRENCY")
    if cap is not None:
        number = read_decimal(cap)   # digits only, as PORT
        if number is not None and number >= 1:
            config.max_concurrency = number
        else:
            problems.append("KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer")
    check = environ.get("KINDGI_PACK_ENV_CHECK", "")
    if check not in ("", "strict", "warn"):
        problems.append("KINDGI_PACK_ENV_CHECK must be `strict` or `warn`, not %s" % json.dumps(check))
    config.env_check = check or "strict"
    env_filter = environ.get("KINDGI_PACK_ENV_FILTER", "")
    if env_filter not in ("", "on", "off"):
        problems.append("KINDGI_PACK_ENV_FILTER must be `on` or `off`, not %s" % json.dumps(env_filter))
    config.env_filter = env_filter != "off"
    _read_tenant(environ, config, problems)
    test_problem = read_test_settings(environ.get(TEST_SETTINGS_VAR, ""), config)
    if test_problem:
        problems.append(test_problem)
    relative = [path for path in (config.index_path, config.module_root) if path and not os.path.isabs(path)]
    if relative:
        try:
            os.getcwd()
        except OSError as exc:   # the folder it was started in was removed since: a relative path leads nowhere
            problems.extend("%s is a relative path, and the current folder is gone (%s)"
                            % (json.dumps(path), exc.strerror) for path in relative)
            return config, problems
    if config.module_root is None:
        config.module_root = os.path.dirname(os.path.abspath(config.index_path))
    return config, problems


# ---------------------------------------------------------------------------
# The environment: the token and undeclared variables, out of pack code's reach
#
# Pack code runs in this process, so what the process keeps, pack code can
# find.  The service keeps only the token's SHA-256 digest.  The token and
# the variables the env filter drops are removed from os.environ (so child
# processes don't inherit them; its dict is posix.environ, the interpreter's
# only copy).  That is not enough: /proc/self/environ
# shows the environment block the process was started with, in the process's
# own memory.  So their bytes in that block are overwritten (through
# /proc/self/mem; the block's bounds are in /proc/self/stat and nothing
# points at those bytes any more), and the file is read back to prove it.
# Where that can't be done (a sandbox that refuses /proc/self/mem, no such
# /proc fields), the interpreter re-executes itself with the clean
# environment; the digest travels over an inherited pipe, read and closed
# before any pack module loads, and so do the index's bytes (in an anonymous
# file): the new image would find a pipe empty, or a file replaced.
# ---------------------------------------------------------------------------

TOKEN_VAR = "KINDGI_PACK_SERVICE_TOKEN"
HANDOFF_VAR = "KINDGI_PACK_HANDOFF_FD"
HANDOFF_MAX_BYTES = 1 << 20   # the hand-off is written whole into its pipe before the exec: Linux lets one hold 1 MiB
KEPT_PREFIXES = ("KINDGI_", "LC_", "PYTHON", "OTEL_", "CLOUD_RUN_", "CONTAINER_APP_")
KEPT_NAMES = frozenset("""
PATH HOME HOSTNAME USER LANG LANGUAGE TZ TMPDIR TMP TEMP PWD SHLVL _ __CF_USER_TEXT_ENCODING
NODE_ENV NODE_VERSION YARN_VERSION NODE_OPTIONS NODE_EXTRA_CA_CERTS
JAVA_HOME JAVA_VERSION JAVA_TOOL_OPTIONS JDK_JAVA_OPTIONS _JAVA_OPTIONS VIRTUAL_ENV PORT
HTTP_PROXY HTTPS_PROXY NO_PROXY http_proxy https_proxy no_proxy
SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE K_SERVICE K_REVISION K_CONFIGURATION
AWS_REGION AWS_DEFAULT_REGION AWS_EXECUTION_ENV AWS_CONTAINER_CREDENTIALS_RELATIVE_URI
AWS_CONTAINER_CREDENTIALS_FULL_URI AWS_CONTAINER_AUTHORIZATION_TOKEN
AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN
ECS_CONTAINER_METADATA_URI ECS_CONTAINER_METADATA_URI_V4 IDENTITY_ENDPOINT IDENTITY_HEADER
MSI_ENDPOINT MSI_SECRET AZURE_CLIENT_ID AZURE_TENANT_ID AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST
""".split())


def kept_by_filter(name, declared):
    """The env filter keeps declared names and the platform's own."""
    return name in declared or name in KEPT_NAMES or name.startswith(KEPT_PREFIXES)


def read_index(path, silence):
    """The index file's bytes, the problem that fails the boot (a str), or None when a stop
    signal came while a pipe's writer was awaited.

    Read once, for the env filter and the boot both: a pipe (``--index <(...)``)
    can be read only once, and a file replaced between two reads would give the
    filter another index's names.  At most MAX_INDEX_BYTES: a device such as
    /dev/zero would take all the memory there is, with the stop signals held.
    """
    try:
        mode = os.stat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raw = read_stream(path, silence)
            if not isinstance(raw, bytes):
                return raw
        else:
            with open(path, "rb") as f:
                raw = f.read(MAX_INDEX_BYTES + 1)
    except OSError as exc:
        return "Cannot read the pack index: %s" % exc
    if len(raw) > MAX_INDEX_BYTES:
        return "Cannot read the pack index: %s is larger than %d MiB" % (path, MAX_INDEX_BYTES >> 20)
    return raw


def read_stream(path, silence):
    """The bytes of a pipe or a device, up to MAX_INDEX_BYTES + 1, as its writer writes them.

    The stop signals are held while the index is read, and opening a named
    pipe or reading a terminal would wait for a writer for ever.  So the file
    is opened without waiting and read as bytes come: ``silence`` seconds
    without a byte is a problem (a str), and a pending stop signal ends the wait (None).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        chunks, size = [], 0
        deadline = time.monotonic() + silence
        while size <= MAX_INDEX_BYTES:
            if STOP_SIGNALS & signal.sigpending():
                return None
            if time.monotonic() > deadline:
                return "Cannot read the pack index: nothing came from %s for %g s" % (path, silence)
            if not poller.poll(100):   # a named pipe with no writer yet is not readable: read would say its end
                continue
            try:
                chunk = os.read(fd, min(1 << 20, MAX_INDEX_BYTES + 1 - size))
            except BlockingIOError:
                continue
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            deadline = time.monotonic() + silence
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_handed_index(fd, digest):
    """The index's bytes a first image handed over (``hand_over_index``), or the problem that
    fails the boot (a str).

    The descriptor must be an anonymous file (no name on any disk: nothing from outside can put
    one there), its bytes exactly those the first image read: their SHA-256 is ``digest``.
    """
    try:
        info = os.fstat(fd)
        if not (stat.S_ISREG(info.st_mode) and info.st_nlink == 0):
            return "Cannot read the pack index handed over by the first image: descriptor %d is not its copy" % fd
        with open(fd, "rb") as f:   # closed once read
            f.seek(0)
            raw = f.read(MAX_INDEX_BYTES + 1)
    except (OSError, OverflowError) as exc:
        return "Cannot read the pack index handed over by the first image: %s" % exc
    if sha256(raw).hexdigest() != digest:
        return "Cannot read the pack index handed over by the first image: its bytes changed"
    return raw


def declared_env_names(raw):
    """The env names the index (its bytes, from ``read_index``) declares, or None when they can't
    be read from it.

    A broken index fails the boot later, with a problem that names it.
    """
    try:
        env = json.loads(raw).get("env") or {}
        return set(env.get("required") or ()) | set(env.get("optional") or ())
    except (ValueError, RecursionError, AttributeError, TypeError):
        return None


def hidden_names(config, environ, raw):
    """Return ``(hidden, dropped)``: every name pack code must not see, and the filter's, sorted."""
    declared = declared_env_names(raw) if config.env_filter else None
    dropped = [] if declared is None else sorted(
        name for name in environ if name != TOKEN_VAR and not kept_by_filter(name, declared))
    return dropped + [TOKEN_VAR] * (TOKEN_VAR in environ), dropped


def forget_variables(names):
    """Unset the variables (os.environ holds the interpreter's only copy of them: posix.environ)."""
    for name in names:
        os.environ.pop(name, None)


def read_environ_block(block):
    """Read /proc/self/environ into the bytearray ``block``; return how many bytes it holds.

    A buffer the caller overwrites once done: a ``bytes`` read, once freed, left every value in
    the process's heap, where pack code reading /proc/self/mem found the ones the filter dropped."""
    filled = 0
    with open("/proc/self/environ", "rb", buffering=0) as f:
        view = memoryview(block)
        try:
            while filled < len(block):
                count = f.readinto(view[filled:])
                if not count:
                    break
                filled += count
        finally:
            view.release()
    return filled


def scrub_environ_block(names):
    """Overwrite the named variables in the process's initial environment block.

    True when /proc/self/environ, read back, no longer holds any of them.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])   # env_start, env_end (fields 50, 51)
        wanted = {name.encode("utf-8", "surrogateescape") for name in names}
        block = bytearray(max(0, end - start))
        try:
            filled = read_environ_block(block)
            offset = 0
            with open("/proc/self/mem", "r+b", buffering=0) as memory:   # this process's own memory
                while offset < filled:
                    stop = block.find(b"\0", offset, filled)
                    stop = filled if stop < 0 else stop
                    equals = block.find(b"=", offset, stop)
                    if bytes(block[offset:stop if equals < 0 else equals]) in wanted and start + stop <= end:
                        memory.seek(start + offset)
                        memory.write(bytes(stop - offset))
                    offset = stop + 1
        finally:
            block[:] = bytes(len(block))   # the values were read into this buffer: it must not keep them
        with open("/proc/self/environ", "rb") as f:
            left = {entry.split(b"=", 1)[0] for entry in f.read().split(b"\0")}
        return not (left & wanted)
    except (OSError, ValueError, IndexError, OverflowError):
        return False


def interpreter_flags():
    """The command-line flags that made this interpreter, to start it again the same way."""
    flags = sys.flags
    args = ["-I"] if flags.isolated else (["-E"] * bool(flags.ignore_environment)
                                          + ["-s"] * bool(flags.no_user_site)
                                          + ["-P"] * bool(getattr(flags, "safe_path", False)))   # 3.11+
    args += ["-S"] * bool(flags.no_site) + ["-B"] * bool(flags.dont_write_bytecode)
    args += ["-b"] * flags.bytes_warning + ["-O"] * flags.optimize + ["-W" + w for w in sys.warnoptions]
    for key, value in getattr(sys, "_xoptions", {}).items():
        args += ["-X", key if value is True else "%s=%s" % (key, value)]
    return args


def hand_over_index(raw):
    """A descriptor the re-executed image inherits, holding ``raw`` (the index's bytes).

    The new image serves the very bytes this one read and checked: a pipe or a device
    (``--index <(...)``, a named pipe, /dev/stdin) gave them to this image only, and a file
    could be replaced between the two reads.  They go into an anonymous in-memory file (where
    there is none, before Python 3.8 or in a sandbox that refuses it, an unlinked temporary
    file).  Raises OSError.
    """
    try:
        f = open(os.memfd_create("kindgi-pack-index"), "wb")
    except (AttributeError, OSError):
        import tempfile
        f = tempfile.TemporaryFile()
    with f:
        f.write(raw)
        f.flush()
        fd = os.dup(f.fileno())
    os.set_inheritable(fd, True)
    return fd


def write_handoff(handoff):
    """The read end of a pipe that holds ``handoff`` (as JSON) whole, its writer closed; None
    when it can't be made.

    Nothing reads the pipe before the exec, so it must hold it all: a large environment's
    dropped names take more than a pipe's 64 KiB, and a write that waited for room would hang
    the boot, the stop signals held.  So the pipe is grown to fit, and written without waiting.
    """
    data = json.dumps(handoff).encode()
    if len(data) > HANDOFF_MAX_BYTES:
        return None
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    written = 0
    try:
        if len(data) > 65536 and sys.platform.startswith("linux"):
            fcntl.fcntl(write_end, getattr(fcntl, "F_SETPIPE_SZ", 1031), len(data))
        os.set_blocking(write_end, False)
        written = os.write(write_end, data)
    except OSError:
        pass   # no room: not handed over
    finally:
        os.close(write_end)
    if written == len(data):
        return read_end
    os.close(read_end)
    return None


def program_args(argv):
    """The arguments that run this program again: ``-m`` and the module's name when it was run
    so (run as a file, a package's module loses its package: its relative imports fail, and
    sys.path starts with its folder instead of the current one), else the file it was run from."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name != "__main__":   # "__main__": a folder or a zip, run by its path
        return ["-m", spec.name]
    return [os.path.abspath(argv[0]) if argv and argv[0] not in ("", "-c") else __file__]


def reexec_with(handoff, argv):
    """Start this program again in the (cleaned) environment, ``handoff`` on a pipe.

    Returns only if exec fails.  The stop signals are held (``main`` takes
    them only after this), and a held signal stays pending across the exec.
    """
    read_end = write_handoff(handoff)
    if read_end is None:
        return
    os.set_inheritable(read_end, True)
    env = dict(os.environ, **{HANDOFF_VAR: str(read_end)})
    flush_output()   # what is buffered would go with this image; a stream closed at start is None
    try:
        os.execve(sys.executable, [sys.executable] + interpreter_flags() + program_args(argv) + list(argv[1:]), env)
    except OSError:
        os.close(read_end)


def hide_secrets(config, argv, records, raw):
    """Put the token and undeclared variables out of pack code's reach.

    Returns ``(dropped, raw)``: the dropped names, and the index's bytes, or the problem
    that fails the boot (a str) when they could not be read or handed over.
    """
    hidden, dropped = hidden_names(config, os.environ, raw)
    forget_variables(hidden)
    if scrub_environ_block(hidden) or isinstance(raw, str):
        return dropped, raw   # an index that can't be read fails the boot before any pack code loads
    handoff = dict(config.token.handoff(), dropped=dropped)
    try:
        index_fd = hand_over_index(raw)
    except OSError as exc:
        return dropped, "Cannot hand the pack index over to the re-executed service: %s" % exc
    handoff.update(index=index_fd, indexDigest=sha256(raw).hexdigest())
    reexec_with(handoff, argv)
    os.close(index_fd)
    records.write("warn", "Could not hide the token: /proc/self/environ can't be cleaned here and "
                  "re-executing the interpreter failed", event="token-exposed", always=True)
    return dropped, raw


def receive_handoff(environ):
    """In the re-executed image: the token's digest, what the filter dropped and the index's
    copy, else None.

    The hand-off is a pipe whose writer closed before the exec: it reads to its end at once.
    A variable set from outside that names anything else (a terminal, a pipe a writer still
    holds, a file) is ignored, without waiting on it or closing it.
    """
    fd = environ.pop(HANDOFF_VAR, None)
    if fd is None:
        return None
    chunks, size = [], 0
    try:
        fd = int(fd)
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        poller = select.poll()   # not select.select: it refuses a descriptor over 1023
        poller.register(fd, select.POLLIN)
        while True:
            if not poller.poll(0):
                return None   # a writer still holds it: not the hand-off
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > HANDOFF_MAX_BYTES:
                return None
        handoff = json.loads(b"".join(chunks).decode("utf-8"))
        bytes.fromhex(handoff["digest"])
        bytes.fromhex(handoff["indexDigest"])
        if not (isinstance(handoff["length"], int) and isinstance(handoff["dropped"], list)
                and isinstance(handoff["index"], int)):
            return None
        os.close(fd)
        return handoff
    except (ValueError, OSError, OverflowError, KeyError, TypeError):   # OverflowError: past a C int
        return None


# ---------------------------------------------------------------------------
# Which ``kindgi`` pack code gets
# ---------------------------------------------------------------------------

def installed_sdk():
    """``(kindgi, None)``: the real SDK, when it imports with what pack code uses; else ``(None,
    failure)``, ``failure`` what a broken install raised (None when none is installed).

    The service and the indexer (kindgi_pack_index.py) both choose here, so what is indexed
    is what is served: the stand-in wherever the SDK is missing, partial or broken.
    """
    try:
        import kindgi
        import kindgi.pack.context  # noqa: F401
        if all(hasattr(kindgi, name) for name in ("tool", "guardrail", "Tool", "Guardrail",
                                                   "ToolContext", "Cancellation")):
            return kindgi, None
    except Exception as exc:  # a broken install must not stop the service
        for name in [n for n in sys.modules if n == "kindgi" or n.startswith("kindgi.")]:
            del sys.modules[name]
        if not isinstance(exc, ImportError):
            return None, "%s: %s" % (type(exc).__name__, exc)
    return None, None


def load_kindgi(records):
    """The real SDK when it imports (``installed_sdk``); otherwise the stand-in, installed in sys.modules."""
    kindgi, failure = installed_sdk()

    def make_logger(subsystem="pack", **bindings):
        return PackLogger(records, subsystem, bindings)

    if kindgi is not None:
        # The SDK's own get_logger writes JSON at info whatever KINDGI_LOG_* say, straight to
        # stderr, without the pack's id or the token's masking: its loggers are the service's
        # here, as ctx.log is, so that every record of pack code follows the same settings.
        log = getattr(kindgi, "log", None)
        if log is not None and hasattr(log, "get_logger"):
            log.get_logger = logger_getter(make_logger)
        return kindgi
    if failure is not None:
        records.write("warn", "The installed kindgi SDK failed to import (%s); using the built-in stand-in"
                      % failure, event="sdk-fallback")
    return install_standin(make_logger)


# ---------------------------------------------------------------------------
# The pack: its index, its modules, its tools and checks
# ---------------------------------------------------------------------------

PACKAGE = "_kindgi_pack"
# A value the service writes into a header: visible ASCII with inner spaces (clients trim the ends).
HEADER_VALUE = re.compile(r"(?:[!-~](?:[ -~]*[!-~])?)?\Z")


class IndexProblem(ValueError):
    """The index can't be used; the message names the field."""


def _field(obj, key, where, kind, required=True):
    value = obj.get(key)
    if value is None:
        if required:
            raise IndexProblem("Index field %s%s is missing" % (where, key))
        return None
    if not isinstance(value, kind) or (kind is str and not value and required):
        names = {str: "a non-empty string", list: "an array", dict: "an object"}
        raise IndexProblem("Index field %s%s must be %s" % (where, key, names[kind]))
    return value


class ToolEntry:
    __slots__ = ("id", "version", "module_path", "input", "output", "primitive", "problem",
                 "input_validator", "output_validator", "input_schema_error", "output_schema_error")

    def __init__(self, raw, i):
        where = "tools[%d]." % i
        if not isinstance(raw, dict):
            raise IndexProblem("Index field tools[%d] must be an object" % i)
        self.id = _field(raw, "id", where, str)
        version = raw.get("version")
        if version is not None and not isinstance(version, str):
            raise IndexProblem("Index field %sversion must be a string" % where)
        self.version = version   # "" is a version too: a caller naming "" gets that entry
        self.module_path = _field(raw, "modulePath", where, str)
        self.input = raw.get("input", True)
        self.output = raw.get("output", True)
        self.primitive = self.problem = None
        self.input_validator = self.output_validator = None
        self.input_schema_error = self.output_schema_error = None


class CheckEntry:
    __slots__ = ("id", "check_id", "module_path", "config_schema", "primitive", "problem",
                 "config_validator", "config_schema_error")

    def __init__(self, raw, i):
        where = "guardrails[%d]." % i
        if not isinstance(raw, dict):
            raise IndexProblem("Index field guardrails[%d] must be an object" % i)
        self.id = _field(raw, "id", where, str)
        self.check_id = _field(raw, "checkId", where, str, required=False) or self.id
        self.module_path = _field(raw, "checkModulePath", where, str)
        schema = raw.get("configSchema")
        self.config_schema = schema if isinstance(schema, dict) else None
        self.primitive = self.problem = None
        self.config_validator = self.config_schema_error = None


class Index:
    """The parts of ``index.json`` the service uses, checked field by field."""

    def __init__(self, raw_bytes):
        self.hash = "sha256:" + sha256(raw_bytes).hexdigest()
        try:
            data = json.loads(raw_bytes.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise IndexProblem("The pack index is not valid JSON: %s" % exc)
        if not isinstance(data, dict):
            raise IndexProblem("The pack index must be a JSON object")
        v = data.get("v")
        if v != 1 or isinstance(v, bool):
            raise IndexProblem("Index envelope v%s is not v1" % json.dumps(v))
        self.pack_id = _field(data, "packId", "", str)
        self.pack_version = _field(data, "packVersion", "", str)
        self.artifact_version = data.get("artifactVersion")
        if self.artifact_version is None:
            self.artifact_version = ""
        elif not isinstance(self.artifact_version, str):   # 0 or false too: not taken for absent
            raise IndexProblem("Index field artifactVersion must be a string")
        if len(self.artifact_version) > MAX_HEADER_VALUE or not HEADER_VALUE.match(self.artifact_version):
            raise IndexProblem("Index field artifactVersion must be printable ASCII without leading or "
                               "trailing spaces, at most %d characters: every answer carries it in the "
                               "kindgi-artifact-version header" % MAX_HEADER_VALUE)
        tools = _field(data, "tools", "", list, required=False) or []
        guardrails = _field(data, "guardrails", "", list, required=False) or []
        self.tools = [ToolEntry(raw, i) for i, raw in enumerate(tools)]
        self.checks = [CheckEntry(raw, i) for i, raw in enumerate(guardrails)]
        env = _field(data, "env", "", dict, required=False) or {}
        self.env_required = self._names(env, "required")
        self.env_optional = self._names(env, "optional")

    @staticmethod
    def _names(env, key):
        names = env.get(key)
        if names is None:
            return []
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise IndexProblem("Index field env.%s must be an array of names" % key)
        return names


def module_name_for(module_path):
    """``tools/ledger.py`` -> ``_kindgi_pack.tools.ledger``; refuses escapes and non-.py paths.
    ``./tools/ledger.py`` and ``tools//ledger.py`` are the same module, as on the official service."""
    parts = [part for part in module_path.replace("\\", "/").split("/") if part not in ("", ".")]
    if module_path.startswith("/") or ".." in parts or not module_path.endswith(".py") or not parts:
        raise ImportError("Module path %s must be a relative .py path inside the module root"
                          % json.dumps(module_path))
    parts[-1] = parts[-1][:-3]
    if parts[-1] == "__init__":
        parts.pop()
    if not all(p.isidentifier() for p in parts):
        raise ImportError("Module path %s is not importable: every part must be a Python name"
                          % json.dumps(module_path))
    return ".".join([PACKAGE] + parts)


def relative_module_path(module_path, root):
    """An absolute module path is taken relative to the module root.  When it leads out of it, it
    is taken again with the links of both resolved, as the official service takes it: a root
    reached through a link (``/app`` -> ``/srv/pack-3``) holds ``/srv/pack-3/tools/t.py`` too."""
    if os.path.isabs(module_path):
        rel = os.path.relpath(module_path, root)
        if rel.split(os.sep)[0] == os.pardir:
            rel = os.path.relpath(os.path.realpath(module_path), os.path.realpath(root))
        return rel.replace(os.sep, "/")
    return module_path


def is_module_file(module_path, root):
    """Whether the module path names a file under ``root``.  False too for a name no file can
    have, whose checks raise: a NUL (ValueError), a lone surrogate, or any name beyond ASCII
    where the file system's encoding is ASCII (Python 3.6 in the C locale; UnicodeError)."""
    if "\0" in module_path:
        return False
    try:
        return os.path.isfile(os.path.join(root, relative_module_path(module_path, root)))
    except (ValueError, UnicodeError):
        return False


def outside_root(path, real_root):
    """Where ``path`` really leads when a link takes it out of ``real_root`` (a real path); None
    when it stays inside."""
    real = os.path.realpath(path)
    return None if os.path.commonpath([real, real_root]) == real_root else real


def mount_package(root):
    """Register the synthetic package the pack's modules import under."""
    for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
        del sys.modules[name]
    package = types.ModuleType(PACKAGE)
    package.__path__ = [root]
    package.__package__ = PACKAGE
    package.__spec__ = importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
    package.__spec__.submodule_search_locations = [root]
    sys.modules[PACKAGE] = package
    if root in sys.path:
        sys.path.remove(root)
    sys.path.insert(0, root)


def primitives_of(module, kind):
    """The module's own tools or guardrails, in definition order, once each."""
    seen, found = set(), []
    for value in list(vars(module).values()):
        if _is_instance(value, kind) and getattr(value, "module", None) == module.__name__ \
                and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


def _is_instance(value, kind):
    """``isinstance``, False where it raises: a lazy proxy a module imports (Django's ``settings``
    before it is configured, Flask's ``request`` outside a request) answers it with its target's
    ``__class__``, and raises when it has none.  It is no tool either way."""
    try:
        return isinstance(value, kind)
    except Exception:
        return False


def tool_for(tools, entry):
    """The module's tool for the entry: the one with its id and version, else the first with
    its id (the official service takes the first, whatever its version: a module that defines
    two versions of a tool would run the first's code for both)."""
    same_id = [tool for tool in tools if tool.id == entry.id]
    for tool in same_id:
        if getattr(tool, "version", None) == entry.version:
            return tool
    return same_id[0] if same_id else None


def check_for(guardrails, entry):
    """The module's guardrail for the entry: the first whose check id, or id, it names."""
    for guardrail in guardrails:
        if entry.check_id in (guardrail.check_id, guardrail.id):
            return guardrail
    return None


class Pack:
    """The index, the imported modules and each entry's primitive and validators."""

    def __init__(self, index, root, kindgi):
        self.index = index
        self.root = root
        self.real_root = os.path.realpath(root)
        self.kindgi = kindgi
        self.primitives = {}   # (module name, kind) -> its primitives: a module's many entries read it once
        self.tools_by_id = {}
        for entry in index.tools:
            self.tools_by_id.setdefault(entry.id, []).append(entry)
        self.checks_by_id = {}
        for entry in index.checks:   # two entries of one check id: the last is the check, as upstream
            self.checks_by_id[entry.check_id] = entry

    def has_async_code(self):
        """Whether a tool's handler or a check is ``async``: only then does pack code need the event loop."""
        entries = self.index.tools + self.index.checks
        return any(getattr(entry.primitive, "is_async", False) for entry in entries)

    def missing_modules(self):
        paths = [e.module_path for e in self.index.tools] + [e.module_path for e in self.index.checks]
        missing, seen = [], set()   # a set: the index may name tens of thousands
        for path in paths:
            if path not in seen:
                seen.add(path)
                if not is_module_file(path, self.root):
                    missing.append(path)
        return ["Missing module: %s" % p for p in missing]

    def load(self):
        """Import every module (tools first, then checks); return the problems."""
        mount_package(self.root)
        problems = []
        shared = {}   # equal schemas (a pack repeats shapes) are compiled once
        for entry in self.index.tools:
            self._resolve(entry, self.kindgi.Tool, tool_for,
                          "handler-shape-invalid", "Module '%s' does not define handler \"%s\"", problems)
            entry.input_validator, entry.input_schema_error = compile_schema(entry.input, shared)
            entry.output_validator, entry.output_schema_error = compile_schema(entry.output, shared)
        for entry in self.index.checks:
            self._resolve(entry, self.kindgi.Guardrail, check_for,
                          "check-shape-invalid", "Module '%s' does not define check \"%s\"", problems)
            if entry.config_schema is not None:
                entry.config_validator, entry.config_schema_error = compile_schema(entry.config_schema, shared)
        return problems

    def refused_entries(self):
        """What each call of a tool or check will be refused for: a module that doesn't define
        it, a schema that can't be compiled.

        These don't stop the boot (each call is answered with its error, as the
        protocol says); the boot's ``unusable-entries`` warning names them early,
        under ``--check`` too.
        """
        refused = []
        for entry in self.index.tools:
            what = 'Tool "%s"' % entry.id
            if entry.problem is not None:
                refused.append(entry.problem[1])
            for side, error in (("input", entry.input_schema_error), ("output", entry.output_schema_error)):
                if error is not None:
                    refused.append(schema_refused(what, side, error))
        for entry in self.index.checks:
            if entry.problem is not None:
                refused.append(entry.problem[1])
            if entry.config_schema_error is not None:
                refused.append(schema_refused('Check "%s"' % entry.check_id, "config", entry.config_schema_error))
        return refused

    def _standin_lacks(self, exc):
        """What to add to an import problem when it is the stand-in that lacks the name: pack code
        imported a part of the SDK (``kindgi.client``, ``kindgi.log.create_logger``) that the
        stand-in doesn't offer.  (Python 3.6 doesn't say which module a failed ``from ... import``
        read, so there the problem is Python's alone.)"""
        missing = getattr(exc, "name", None) if isinstance(exc, ImportError) else None
        if self.kindgi is not _standin_installed.get("kindgi") or not isinstance(missing, str) \
                or missing.split(".")[0] != "kindgi":
            return ""
        return (" (the kindgi SDK is not installed, so pack code gets the service's built-in stand-in, "
                "which has only the names pack code uses most: install kindgi where the service runs)")

    def _resolve(self, entry, kind, pick, code, text, problems):
        path = relative_module_path(entry.module_path, self.root)
        name = getattr(entry, "check_id", entry.id)
        try:
            module_name = module_name_for(path)
            leads_to = outside_root(os.path.join(self.root, path), self.real_root)
            if leads_to is not None:
                raise ImportError("Module path %s leads outside the module root %s (to %s): a pack's "
                                  "modules must be files inside it" % (json.dumps(entry.module_path),
                                                                       self.root, leads_to))
            module = importlib.import_module(module_name)
            key = (module_name, kind)
            if key not in self.primitives:   # what the import left may be pack code's object, not a module (42)
                self.primitives[key] = primitives_of(module, kind)
        except BaseException as exc:  # pack code: anything at all can come out of an import, KeyboardInterrupt too
            problems.append("%s: %s%s" % (name, _safe_str(exc) or type(exc).__name__, self._standin_lacks(exc)))
            return
        entry.primitive = pick(self.primitives[key], entry)
        if entry.primitive is None:
            entry.problem = (code, text % (entry.module_path, name))


def compile_schema(schema, shared):
    """Return ``(validator, None)`` or ``(None, detail)``: a bad schema is answered per call.

    Every schema is checked now, with the same verdict compiling gives; most
    are compiled into closures when first used (``lazy``), so a pack's boot
    and memory don't grow with schemas its calls never reach.
    """
    try:
        return schema_lite.SchemaValidator(schema, lazy=True, shared=shared), None
    except schema_lite.SchemaError as exc:
        return None, str(exc)


def schema_refused(what, side, detail):
    """The answer's message for a schema ``compile_schema`` refused: ``Tool "x" input schema ...``."""
    return "%s %s schema failed to compile: %s" % (what, side, detail)


# ---------------------------------------------------------------------------
# HTTP: request heads and bodies, read strictly
#
# One parser for everything a caller sends.  Lines end with CRLF (a bare LF
# is refused), sizes are bounded, and any framing a proxy in front could read
# differently (Content-Length with Transfer-Encoding, two Content-Lengths,
# loose chunk syntax) is refused, so no request can hide inside another.
# ---------------------------------------------------------------------------

class HttpError(Exception):
    """A request refused before it is served; the answer closes the connection."""

    def __init__(self, status, message, headers=()):
        Exception.__init__(self, message)
        self.status = status
        self.message = message
        self.headers = headers


TOKEN_BYTES = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
TOKEN_CHARS = rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]"
METHOD_START = re.compile(TOKEN_CHARS + rb"+( |$)")
CONTROL_IN_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]").search   # HTAB is allowed
HTTP_VERSION = re.compile(r"HTTP/[0-9]\.[0-9]\Z")
HOST_VALUE = re.compile(r"[A-Za-z0-9\-._~%!$&'()*+,;=:\[\]]*\Z")   # the characters of uri-host [":" port]
CHUNK_LINE = re.compile(                                            # RFC 9112 section 7.1
    rb"([0-9A-Fa-f]{1,16})"
    rb"(?:[ \t]*;[ \t]*" + TOKEN_CHARS + rb"+"
    rb"(?:[ \t]*=[ \t]*(?:" + TOKEN_CHARS + rb"+|\"(?:[\t !#-\[\]-~\x80-\xff]|\\[\t -~\x80-\xff])*\"))?)*"
    rb"\r\n\Z")


class Request:
    """A parsed request head."""

    __slots__ = ("method", "target", "path", "version", "headers", "keep_alive", "length", "chunked")

    def header(self, name, default=None):
        return self.headers.get(name, default)


def read_request_head(rfile, on_first_byte):
    """Read and parse a request head; None when the connection ends between requests.

    ``on_first_byte`` is called once a head has begun: from then on its whole
    arrival is timed.
    """
    arrived = rfile.peek(1)
    if not arrived:
        return None
    on_first_byte()
    if not (arrived.startswith(b"\r") or METHOD_START.match(arrived)):
        raise HttpError(400, "Malformed request line")   # now: a line that never ends must not wait
    return parse_head(read_head_lines(rfile))


def read_head_lines(rfile):
    """The request line and the header lines, without their CRLF; None at a clean end."""
    lines = []
    total = 0
    while True:
        line = rfile.readline(MAX_HEAD_LINE + 1)
        total += len(line)
        if total > MAX_HEAD_BYTES:
            raise HttpError(431, "Request header fields too large")
        if len(line) > MAX_HEAD_LINE:
            raise HttpError(431 if lines else 414, "Request header fields too large" if lines
                            else "Request line too long")
        if not line.endswith(b"\r\n"):
            if not line and not lines:
                return None
            raise HttpError(400, "Malformed request line" if not lines else
                            "Incomplete request head" if not line.endswith(b"\n") else "Malformed header line")
        if line == b"\r\n":
            if lines:
                return lines
            continue   # blank lines before a request line are tolerated (RFC 9112 section 2.2)
        if len(lines) > MAX_HEADERS:
            raise HttpError(431, "Request header fields too large")
        lines.append(line[:-2])


def field_line(line):
    """``(lower-case name, value)`` of one header or trailer line."""
    name, colon, value = line.partition(b":")
    if not colon or not name or name.translate(None, TOKEN_BYTES) or CONTROL_IN_VALUE(value):
        raise HttpError(400, "Obsolete header line folding" if line[:1] in (b" ", b"\t")
                        else "Malformed header line")
    return name.decode("ascii").lower(), value.strip(b" \t").decode("latin-1")


def parse_head(lines):
    """A Request from the request line and header lines (without their CRLF)."""
    if not lines:
        raise HttpError(400, "Malformed request line")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[1]:
        raise HttpError(400, "Malformed request line")
    method, target, version = parts
    if not method or method.translate(None, TOKEN_BYTES):
        raise HttpError(400, "Malformed request method")
    if CONTROL_IN_VALUE(target) or b"\t" in target:
        raise HttpError(400, "Malformed request line")
    try:
        method, target, version = method.decode("ascii"), target.decode("ascii"), version.decode("ascii")
    except UnicodeDecodeError:
        raise HttpError(400, "Malformed request line")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        if not HTTP_VERSION.match(version):
            raise HttpError(400, "Malformed HTTP version")
        if not version.startswith("HTTP/1."):
            raise HttpError(505, "HTTP version not supported")
        version = "HTTP/1.1"   # a later 1.x is read as the highest this server speaks (RFC 9110 section 2.5)
    request = Request()
    request.method, request.target, request.version = method, target, version
    request.path = target_path(target)
    request.headers = headers = {}
    lengths = set()
    hosts = 0
    for line in lines[1:]:
        name, value = field_line(line)
        if name == "content-length" and "," not in value:
            lengths.add(value)
        elif name == "content-length":   # "5, 5", as a proxy may join two of them, is the same 5 (RFC 9110 8.6)
            lengths.update(part.strip(" \t") for part in value.split(","))   # only SP and HTAB pad a list item
        elif name == "host":
            hosts += 1
        headers[name] = headers[name] + ", " + value if name in headers else value
    _framing(request, lengths)
    if hosts > 1 or (hosts == 0 and version == "HTTP/1.1"):   # RFC 9112 section 3.2: a MUST
        raise HttpError(400, "More than one Host header" if hosts else "Missing Host header")
    if hosts and not HOST_VALUE.match(headers["host"]):   # RFC 9112 section 3.2: a MUST too
        raise HttpError(400, "Malformed Host header")
    return request


def target_path(target):
    """The path of a request target: origin form (``/v1/info?x``), or absolute form
    (``http://host/v1/info``), which a server must take too (RFC 9112 section 3.2.2)."""
    path = target.split("?", 1)[0]
    if not path.startswith("/"):
        scheme, found, rest = path.partition("://")
        if found and scheme.lower() in ("http", "https"):
            path = "/" + rest.partition("/")[2]
    return path


def _framing(request, lengths):
    """Decide how the body is delimited and whether the connection stays open, refusing anything
    a proxy could read differently."""
    headers = request.headers
    coding = headers.get("transfer-encoding")
    if coding is not None and lengths:
        raise HttpError(400, "Content-Length together with Transfer-Encoding")
    request.chunked = False
    request.length = 0
    if coding is not None:
        if coding.lower() != "chunked" or request.version == "HTTP/1.0":   # "chunked\xa0" is no "chunked"
            raise HttpError(501 if request.version != "HTTP/1.0" else 400, "Unsupported Transfer-Encoding")
        request.chunked = True
    elif lengths:
        value = lengths.pop()
        length = read_decimal(value)
        if lengths or length is None:
            raise HttpError(400, "Malformed Content-Length")
        request.length = length
    connection = headers.get("connection", "").lower()
    options = {option.strip(" \t") for option in connection.split(",")} if connection else ()   # RFC 9110 7.6.1
    if request.version == "HTTP/1.1":
        request.keep_alive = "close" not in options
    else:   # "close" wins over "keep-alive" (RFC 9112 section 9.3)
        request.keep_alive = "keep-alive" in options and "close" not in options
    if request.method == "CONNECT" or ("upgrade" in headers and "upgrade" in options):
        request.keep_alive = False   # a proxy that honours it takes the bytes after it for a tunnel, not requests


def read_chunked(rfile, take):
    """A chunked body as one bytearray, in exactly RFC 9112's syntax.

    ``take(n)`` is asked before ``n`` more bytes are held; it raises to
    refuse them.  Chunk lines and trailers count against MAX_CHUNK_FRAMING,
    data against MAX_BODY.
    """
    body = bytearray()
    framing = 0
    while True:
        line = rfile.readline(MAX_HEAD_LINE + 1)
        framing += len(line) + 2
        match = CHUNK_LINE.match(line)
        if match is None:
            raise HttpError(400, "Malformed chunk line")
        size = int(match.group(1), 16)
        if len(body) + size > MAX_BODY or framing > MAX_CHUNK_FRAMING:
            raise HttpError(413, "Request body too large")
        if size == 0:
            break
        take(size)
        data = rfile.read(size)
        if len(data) != size:
            raise ConnectionError("the body ended early")
        if rfile.read(2) != b"\r\n":
            raise HttpError(400, "Malformed chunk")
        body += data
    for _ in range(MAX_HEADERS):   # the trailer section: checked like headers, then ignored
        line = rfile.readline(MAX_HEAD_LINE + 1)
        framing += len(line)
        if line == b"\r\n":
            return body
        if not line.endswith(b"\r\n") or len(line) > MAX_HEAD_LINE or framing > MAX_CHUNK_FRAMING:
            raise HttpError(400, "Malformed trailer")
        field_line(line[:-2])
    raise HttpError(431, "Too many trailer fields")


class SocketReader(io.RawIOBase):
    """A connection's raw input; a read the kernel timed out raises ``socket.timeout``."""

    def __init__(self, sock):
        io.RawIOBase.__init__(self)
        self.sock = sock

    def readable(self):
        return True

    def readinto(self, buffer):
        try:
            return self.sock.recv_into(buffer)
        except BlockingIOError:   # SO_RCVTIMEO passed
            raise socket.timeout("timed out")


class SocketWriter:
    """A connection's output: every write is a whole ``sendall``; one the kernel timed out
    raises ``socket.timeout``, as a read does."""

    closed = False

    def __init__(self, sock):
        self.sock = sock

    def write(self, data):
        try:
            self.sock.sendall(data)
        except BlockingIOError:   # SO_SNDTIMEO passed: a caller that stopped reading
            raise socket.timeout("timed out")

    def flush(self):
        pass

    def close(self):
        pass


RESET_ON_CLOSE = array("i", (1, 0)).tobytes()   # struct linger: on, 0 s


def socket_timeval(seconds):
    """``seconds`` as the C ``struct timeval`` SO_RCVTIMEO and SO_SNDTIMEO take."""
    return array("l", (int(seconds), int(seconds % 1 * 1000000))).tobytes()


_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def http_date(second):
    """The IMF-fixdate of a Unix time (RFC 9110 section 5.6.7), whatever the locale."""
    t = time.gmtime(second)
    return "%s, %02d %s %04d %02d:%02d:%02d GMT" % (_WEEKDAYS[t.tm_wday], t.tm_mday, _MONTHS[t.tm_mon - 1],
                                                    t.tm_year, t.tm_hour, t.tm_min, t.tm_sec)


# ---------------------------------------------------------------------------
# Messages: the JSON an invoke carries, and the answers made of JSON
# ---------------------------------------------------------------------------

def _reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def _parse_int(text):
    if len(text) > MAX_INT_DIGITS:
        raise ValueError("an integer has more than %d digits" % MAX_INT_DIGITS)
    return int(text)


DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))   # each digit "0", the rest " "

# Made once: json.dumps and json.loads with options build an encoder or decoder per call.
_load_strict = json.JSONDecoder(parse_constant=_reject_constant).decode
_load_strict_digits = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int).decode
_dump_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_dump_compact_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def load_json_text(text):
    """Strict JSON from text: no NaN or Infinity, integers of sane length.

    The digit-length hook costs a Python call per integer, so it runs only
    when the text has a run of digits that long at all (in a string, maybe).
    """
    if has_long_digit_run(text):
        return _load_strict_digits(text)
    return _load_strict(text)


def has_long_digit_run(text, piece=1024 * 1024):
    """Whether ``text`` holds a run of more than MAX_INT_DIGITS digits.

    Linear, and mostly at C speed, on every Python version: a piece of the
    text at a time (pieces overlap by a run's length) is encoded, with its
    digits made "0" and the rest " ".  A run that long holds a character
    at every multiple of its length, so only the characters there are
    looked at, and for a "0" the run around it is measured (find and rfind
    of " ").  Text too short to hold a run costs nothing.  (A regex that
    starts only at a run's first digit tries every character: 200 ms for
    10 MiB.  Searching for the run as a substring is quadratic on runs just
    short of it before Python 3.10.)
    """
    step = MAX_INT_DIGITS + 1
    for start in range(0, len(text) - MAX_INT_DIGITS, piece):
        chunk = text[start:start + piece + MAX_INT_DIGITS].encode("utf-8", "surrogatepass").translate(DIGITS_AS_ZEROS)
        for at in range(0, len(chunk), step):
            if chunk[at] == 0x30:   # a digit: measure its run
                end = chunk.find(b" ", at)
                if end < 0:
                    end = len(chunk)
                if end - (chunk.rfind(b" ", 0, at) + 1) > MAX_INT_DIGITS:
                    return True
    return False


def dump_json(value):
    """Compact JSON bytes; lone surrogates are escaped so the bytes stay UTF-8."""
    text = _dump_compact(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _dump_compact_ascii(value).encode("ascii")


def decode_utf8(body):
    """A body as text, or None when it is not UTF-8."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'{:[,"\\')
# Python 3.6 to 3.8: their parser makes a string with escapes from a list of pieces, each escaped
# character and each run between escapes a string of its own (3.9 writes the string in one buffer).
ESCAPE_WEIGHT = 170 if sys.version_info < (3, 9) else 0
ASTRAL_ESCAPE = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}")   # a high surrogate: with its pair, past U+FFFF
WIDE_ESCAPE = re.compile(rb"\\u(?!00)[0-9a-fA-F]{4}")            # a character past U+00FF


def json_parse_cost(body, text):
    """About how much memory, in bytes, parsing ``text`` (``body`` decoded) takes, the text included.

    JSON can be small and its Python objects large: ``{"a":1}`` is 7 bytes of
    text and a 184-byte dict, so 10 MiB of small objects would take hundreds of
    megabytes.  Counting the characters that start objects, arrays, members,
    items and strings bounds that before parsing.  They are counted in the
    body's bytes, once the rest is dropped (``bytes.translate``): a pass at C
    speed, and counts over what is left, little in a body of text.  UTF-8
    puts no such byte inside a character.  Each weight is what CPython 3.11
    spends on one of them, a little rounded up (and an escape's, before 3.9);
    strings' contents can't take more than the text does, unless an escape
    makes them wider (``widened_strings``).
    """
    marks = body.translate(None, NOT_STRUCTURE)   # bytes, or a bytearray (a chunked body)
    return (2 * sys.getsizeof(text) + widened_strings(body, len(text)) + 184 * marks.count(b"{")
            + 24 * marks.count(b":") + 72 * marks.count(b"[") + 48 * marks.count(b",") + 26 * marks.count(b'"')
            + ESCAPE_WEIGHT * marks.count(b"\\"))


def widened_strings(body, length):
    """At most how many bytes the strings take that a ``\\u`` escape in ``body`` makes wider (0: none).

    A string takes as many bytes a character as its widest character needs:
    one ``\\ud83d\\ude00`` makes every character of an ASCII string take 4
    bytes, so 10 MiB of ASCII text can parse into a 40 MiB string, made anew
    from the pieces the parser copied out of the text.  Each escape is six
    characters of the text (``length`` of them) and one of a string.
    """
    if body.find(b"\\") < 0:   # most bodies: a byte's search is the quickest pass
        return 0
    escapes = body.count(b"\\u")
    if escapes == body.count(b"\\u00"):   # counts at C speed: the searches cost more
        return 0
    if ASTRAL_ESCAPE.search(body):
        width = 4
    elif WIDE_ESCAPE.search(body):
        width = 2
    else:
        return 0
    escapes -= body.count(b"\\\\u")   # an escaped backslash, then a "u": no escape
    return width * max(0, length - 5 * escapes)   # below 0 only for text that is not JSON


def error_message(code, message, target_key=None, target_id=None, cause=None, issues=None):
    """An ``error`` response message, keys in the reference order."""
    answer = {"v": PROTOCOL, "kind": "error", "code": code, "message": message}
    if target_key:
        answer[target_key] = target_id
    if cause is not None:
        answer["cause"] = cause
    if issues is not None:
        answer["issues"] = issues
    return answer


def read_envelope(text):
    """Parse an invoke body's text (None: not UTF-8): the message, or an error message to answer."""
    try:
        if text is None:
            raise ValueError("not UTF-8")
        message = load_json_text(text)
    except (ValueError, RecursionError):
        return None, error_message("malformed-message", "Request body is not valid JSON")
    if not isinstance(message, dict):
        return None, error_message("malformed-message", "Message must be a JSON object")
    v = message.get("v")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != PROTOCOL:
        return None, error_message("unknown-protocol-version",
                                   "Expected protocol v2, got %s" % json.dumps(v))   # escaped as the SDK escapes it
    kind = message.get("kind")
    if kind == "invoke":
        tool = message.get("tool")
        if not isinstance(tool, dict) or not isinstance(tool.get("id"), str) or not tool["id"]:
            return None, error_message("malformed-message", "`tool.id` is required")
        if tool.get("version") is not None and not isinstance(tool["version"], str):
            return None, error_message("malformed-message", "`tool.version` must be a string")
        ctx = message.get("ctx")
        if not isinstance(ctx, dict) or not isinstance(ctx.get("tenantId"), str) \
                or not isinstance(ctx.get("runId"), str):
            return None, error_message("malformed-message", "`ctx` needs string `tenantId` and `runId`")
        return message, None
    if kind == "check-invoke":
        check = message.get("check")
        if not isinstance(check, dict) or not isinstance(check.get("id"), str) or not check["id"]:
            return None, error_message("malformed-message", "`check.id` is required")
        if not isinstance(message.get("config"), dict):
            return None, error_message("malformed-message", "`config` must be an object")
        return message, None
    return None, error_message("unexpected-message-kind",
                               "Unknown request kind %s" % json.dumps(kind))


def parse_timeout_ms(raw):
    """``kindgi-timeout-ms``: positive decimal digits (leading zeros too), at most MAX_TIMEOUT_MS;
    else the default.  Only HTTP's own blanks are trimmed: ``str.strip()`` would take the
    latin-1 U+00A0 and U+0085 around the digits away too."""
    number = read_decimal((raw or "").strip(" \t"))
    return min(number, MAX_TIMEOUT_MS) if number else DEFAULT_TIMEOUT_MS


TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$")


def trace_fields(header):
    """``traceId`` and a fresh ``spanId`` from a valid W3C traceparent, else nothing."""
    match = TRACEPARENT.match(header) if header else None
    if not match:
        return {}
    version, trace_id, parent_id, _flags, rest = match.groups()
    if version == "ff" or (version == "00" and (len(header) != 55 or rest)) \
            or trace_id == "0" * 32 or parent_id == "0" * 16:
        return {}
    return {"traceId": trace_id, "spanId": os.urandom(8).hex()}


# ---------------------------------------------------------------------------
# Connections: a request's path from its head to its answer
# ---------------------------------------------------------------------------

ROUTES = {"/v1/invoke": ("POST", True), "/v1/info": ("GET", True),
          "/healthz": ("GET", False), "/readyz": ("GET", False)}


def error_body(message):
    """The body of a non-200 answer: ``{"error": message}``."""
    return _dump_compact_ascii({"error": message}).encode()


BAD_TOKEN = error_body("Bad pack token")
BAD_TYPE = error_body("Content-Type must be application/json")
TENANT_MISMATCH = _dump_compact_ascii({"error": "This pack service serves another tenant",
                                       "code": "pack-tenant-mismatch"}).encode()
HEALTHY = b'{"status":"ok"}'
READY = b'{"status":"ready"}'
DRAINING = error_body("draining")
OVERLOADED = error_body("overloaded")
RETRY = (("retry-after", "1"),)
UNSAFE_HEADER_VALUE = re.compile("[\x00-\x1f\x7f]").search
CONNECTIONS_FULL_HEAD = ("HTTP/1.1 503 Service Unavailable\r\ndate: %%s\r\ncontent-type: %s\r\n"   # %s: the date
                         "content-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
                         % (JSON_CONTENT_TYPE, len(OVERLOADED)))


class PackRequestHandler(BaseHTTPRequestHandler):
    """One connection: reads requests, routes them, writes the answers.

    The connection's thread runs sync pack code for its own calls, so such a
    call costs no thread hand-off; async pack code runs on the pack's one
    event loop while the thread waits.  The watchman answers instead when a
    call outlives its deadline or its caller.
    """

    protocol_version = "HTTP/1.1"
    probes_only = False      # a connection over the cap: /healthz and /readyz, then close
    trusted = False          # the connection has shown the token
    phase = "idle"           # idle, head, busy, body, write or linger
    phase_deadline = float("inf")
    request_head = None
    body_unread = False
    held = 0                 # bytes of the service's memory budget this request holds
    evicted = False          # shut to make room for another connection

    # -- the connection -----------------------------------------------------

    def setup(self):
        self.connection = sock = self.request
        self.accepted_at = time.monotonic()
        self.service = self.server.service
        self.limits = self.service.limits
        sock.settimeout(None)   # only the service's limits: pack code may have set socket.setdefaulttimeout
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass  # not TCP (a test's socketpair): nothing to delay anyway
        self.server.set_silence(sock, self.limits.overflow if self.probes_only else self.limits.first_request)
        self.rfile = io.BufferedReader(SocketReader(sock))
        self.wfile = SocketWriter(sock)
        self.server.handlers.add(self)

    def finish(self):
        """Let go of everything the connection holds; the server closes its socket next."""
        self.server.handlers.discard(self)
        self.rfile.close()

    def handle(self):
        self.close_connection = False
        while not self.close_connection:
            self.handle_one_request()
        if self.body_unread:
            self.linger()

    def handle_one_request(self):
        """Read one request and answer it; any failure closes the connection."""
        self.close_connection = True
        self.phase = "idle"      # until a head begins, only the kernel's silence limit applies
        self.request_head = None
        try:
            request = read_request_head(self.rfile, self.head_begins)
            if request is None:
                return
            self.request_head = request
            self.body_unread = request.chunked or request.length > 0
            self.close_connection = self.probes_only or not request.keep_alive
            self.set_phase("busy")
            self.service.answering.add(self)
            self.route(request)
        except HttpError as exc:
            self.body_unread = True   # a refused head may have a body (or its own rest) behind it
            self.answer(exc.status, error_body(exc.message), exc.headers, close=True)
        except socket.timeout:
            self.close_connection = True   # the peer stalled: nothing to answer, unless it is over the cap
            if self.probes_only:
                self.answer(503, OVERLOADED, RETRY)
        except ConnectionError:
            self.close_connection = True   # the peer left
        except Exception as exc:  # the service's own bug: answer 500, keep the process
            self.answer(500, self.service.failed(exc, "Request"), close=True)
        finally:
            self.service.answering.discard(self)
            self.give_back_memory()

    def head_begins(self):
        self.set_phase("head", self.limits.overflow if self.probes_only else self.limits.head)

    def set_phase(self, phase, seconds=None):
        """What the connection waits for; the watchman shuts it when ``seconds`` pass."""
        self.phase_deadline = time.monotonic() + seconds if seconds else float("inf")
        self.phase = phase

    def linger(self):
        """Close gently when a body was left unread: a reset would destroy the answer just sent.

        Stop writing, then read and drop what the client still sends, for a
        few seconds at most (nginx's lingering close).
        """
        sock = self.connection
        self.set_phase("linger", self.limits.linger)   # the answer is out: a probe may take its place
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(min(1.0, self.limits.linger))
            end = time.monotonic() + self.limits.linger
            while time.monotonic() < end and sock.recv(65536):
                pass
        except OSError:
            pass

    def log_message(self, format, *args):
        pass  # the service writes its own records

    # -- routing --------------------------------------------------------------

    def route(self, request):
        """The checks in the protocol's order: 404, 405, 401, 421; then the route itself."""
        route = ROUTES.get(request.path)
        if route is None:
            return self.answer(404, error_body("No route %s" % request.path))
        method, needs_token = route
        if request.method != method:
            return self.answer(405, error_body("Use %s" % method), (("allow", method),))
        service = self.service
        if needs_token:
            if self.probes_only:   # over the connection cap
                return self.answer(503, OVERLOADED, RETRY)
            # Taken out of the head: pack code this request runs must not find the token in it.
            if not service.token.matches(request.headers.pop("kindgi-pack-token", "")):
                return self.answer(401, BAD_TOKEN)
            if not self.trusted:
                self.trusted = True
                self.server.set_silence(self.connection, self.limits.silence)
            if not service.tenant_ok(request.header("kindgi-tenant-id", "")):
                service.tenant_refused(request, "header")
                return self.answer(421, TENANT_MISMATCH)
        if request.path == "/v1/invoke":
            return self.invoke(request)
        if request.path == "/v1/info":
            return self.answer(200, service.info_body)
        if request.path == "/healthz":
            return self.answer(200, HEALTHY)
        refusal = service.not_ready()
        if refusal:
            return self.answer(503, refusal, RETRY)
        return self.answer(200, READY)

    # -- an invoke ------------------------------------------------------------

    def invoke(self, request):
        """Admission, body, envelope; then the call runs in this thread."""
        service = self.service
        refusal = service.not_ready() or service.at_cap()
        if refusal:
            return self.answer(503, refusal, RETRY)
        if "application/json" not in request.header("content-type", ""):
            return self.answer(415, BAD_TYPE)
        started = time.monotonic()
        message, refused = read_envelope(self.read_text(request))   # the text is freed once parsed
        if refused is not None:
            return self.answer_invoke(refused, started)
        if message["kind"] == "invoke" and not service.tenant_ok(message["ctx"]["tenantId"]):
            service.tenant_refused(request, "context")
            return self.answer(421, TENANT_MISMATCH)
        # The slot is taken only now: a slow upload or a malformed message holds no call's place.
        refusal = service.admit()
        if refusal:
            return self.answer(503, refusal, RETRY)
        self.run_call(Call(self, message, started))

    def read_text(self, request):
        """The body as text (None when it is not UTF-8), the memory its parsing takes held."""
        body = self.read_body(request)
        text = decode_utf8(body)
        if text is not None:
            self.hold_memory(json_parse_cost(body, text))
        return text

    def read_body(self, request):
        """The whole body, held against the memory budget; never more than MAX_BODY.

        A client that waits for ``100 Continue`` is told to send only once the
        body is known to be taken (RFC 9110 section 10.1.1; never to HTTP/1.0).
        """
        self.set_phase("body", self.limits.body)
        if not request.chunked:
            if request.length > MAX_BODY:
                raise HttpError(413, "Request body too large")
            self.hold_more_memory(2 * request.length)   # the body, and its text to come
        if request.version == "HTTP/1.1" and request.header("expect", "").lower() == "100-continue":
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        if request.chunked:
            body = read_chunked(self.rfile, self.hold_chunk)
        else:
            body = self.rfile.read(request.length)
            if len(body) != request.length:
                raise ConnectionError("the body ended early")
        self.body_unread = False
        self.set_phase("busy")
        return body

    def hold_more_memory(self, size):
        self.hold_memory(self.held + size)

    def hold_chunk(self, size):
        self.hold_more_memory(2 * size)   # the chunk, and its text to come

    def hold_memory(self, size):
        """Hold ``size`` bytes of the service's memory budget for this request, or refuse it."""
        if size > MAX_PARSE_BYTES or size > self.service.memory_budget:   # more than it could ever hold
            raise HttpError(413, "Request body too large")
        if size > self.held:
            if not self.service.take_memory(size - self.held):
                raise HttpError(503, "overloaded", RETRY)
            self.held = size

    def give_back_memory(self):
        if self.held:
            self.service.give_memory(self.held)
            self.held = 0

    def run_call(self, call):
        """Run pack code here, then settle the call unless someone else settled it first."""
        service = self.service
        service.answering.discard(self)      # from now on the call itself counts for the drain
        service.watchman.watch(call)
        answer, status, outcome, failure = None, 200, None, None
        try:
            answer = call.run()
        except OutOfThreads:
            answer, status, outcome = OVERLOADED, 503, "overloaded"
        except BaseException as exc:  # pack code's throws are answered inside: this is the service's bug
            failure = exc
        finally:
            service.watchman.forget(call)
            service.pack_code_returned()
        if failure is not None:   # reported once the slot is free: formatting a stack takes milliseconds
            answer, status, outcome = service.failed(failure, "Call"), 500, "service-error"
        elif outcome is None:
            outcome = "ok" if isinstance(answer, bytes) else (answer or {}).get("code", "cancelled")
        if call.settle(outcome, answer, status):
            return
        # The deadline passed or the caller left first: their answer (if any) ends this connection.
        self.close_connection = True
        with service.settled:
            service.settled.wait_for(lambda: call.done, self.limits.write)
        if answer is not None:  # None: its async task was cancelled
            after_ms = call.elapsed_ms()   # once: the message and the field say the same
            service.records.write("warn", "%s %s finished %d ms after its call ended"
                                  % (call.target.name, call.record_id, after_ms),
                                  event="handler-finished-late",
                                  fields=dict(call.fields, target=call.target.name, afterMs=after_ms))

    # -- answers --------------------------------------------------------------

    def answer(self, status, body, headers=(), close=False):
        """Write one whole answer, within the write limit: the head and the body in one send, or
        a body longer than BIG_ANSWER in a second send of its own (not copied after the head).

        The connection closes after it when asked, while draining, and when
        the request's body was not read (it can't be told from a next request).
        """
        if close or self.body_unread or self.service.draining:
            self.close_connection = True
        for name, value in headers:   # every value is checked at boot; this is the last line of defence
            if UNSAFE_HEADER_VALUE(value):
                raise ValueError("refusing to write a control character in the %s header" % name)
        request = self.request_head
        if self.close_connection:
            connection = "connection: close\r\n"
        elif request.version == "HTTP/1.0":
            connection = "connection: keep-alive\r\n"   # else a 1.0 client takes the answer to end at a close
        else:
            connection = ""
        head = ("HTTP/1.1 %d %s\r\ndate: %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s%s\r\n" % (
            status, REASONS.get(status, ""), self.server.date(), JSON_CONTENT_TYPE, len(body),
            "".join(["%s: %s\r\n" % h for h in headers]), connection)).encode("ascii")
        if request is not None and request.method == "HEAD":
            pieces = (head,)
        elif len(body) > BIG_ANSWER:
            pieces = (head, body)   # a copy of a big body saved, for a second write
        else:
            pieces = (head + body,)
        self.set_phase("write", self.limits.write)
        try:
            for piece in pieces:
                self.wfile.write(piece)
        except OSError:
            self.close_connection = True
        # The answer is out: the connection waits on its caller again.  Not "busy": one that never
        # showed the token must be shut to make room from the moment its caller has the answer.
        self.phase = "idle"

    def answer_invoke(self, answer, started, status=200, close=False):
        """An invoke's answer: a 200 message with the duration and artifact headers, a 503 (with
        ``retry-after``) or a 500 (which closes the connection)."""
        body = answer if isinstance(answer, bytes) else dump_json(answer)
        if status == 503:
            return self.answer(status, body, RETRY, close=close)
        if status != 200:
            return self.answer(status, body, close=True)
        self.answer(200, body, (("kindgi-duration-ms", str(int((time.monotonic() - started) * 1000))),
                                ("kindgi-artifact-version", self.service.pack.index.artifact_version)),
                    close=close)


class ProbeRequestHandler(PackRequestHandler):
    """A connection accepted over the cap: it may ask /healthz or /readyz, quickly, once.

    So the platform's probes are answered even while every connection slot
    is held (by a flood, say); anything else is told ``overloaded``.
    """

    probes_only = True


# ---------------------------------------------------------------------------
# Running pack code: a tool call or a check, from message to answer
# ---------------------------------------------------------------------------

def _safe_str(value):
    """``str(value)``, a plain str whatever pack code's ``__str__`` does: one that raises, or that
    returns a str subclass whose own ``__str__`` raises when the text is formatted in turn."""
    try:
        text = str(value)
        return text if type(text) is str else str.__str__(text)
    except BaseException:
        return "<%s with an unprintable message>" % type(value).__name__


def format_stack(exc):
    """The traceback of ``exc`` as text ("" if even that fails).

    ``traceback`` is imported at the first throw, not at boot: it costs
    milliseconds of every boot, and many services never see one.
    """
    try:
        import traceback
        return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    except BaseException:
        return ""


def serialize_cause(exc):
    """``{name, message, stack}`` for a throw from pack code."""
    return {"name": type(exc).__name__, "message": _safe_str(exc), "stack": format_stack(exc)}


def _pointer(parts):
    """A JSON pointer (RFC 6901) from its parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def model_issues(exc):
    """Issues from a model's own validation error (pydantic's, or the stand-in's); one issue with
    its text when it has another shape (pack code may raise a ``ValidationError`` of its own)."""
    try:
        issues = getattr(exc, "issues", None)
        if not isinstance(issues, list):
            issues = [{"instancePath": _pointer(e.get("loc", ())), "schemaPath": "#",
                       "keyword": str(e.get("type", "model")), "params": {}, "message": str(e.get("msg", ""))}
                      for e in exc.errors()]
        dump_json(issues)   # the answer must be able to carry them
        return issues
    except BaseException:  # pack code's object
        return [{"instancePath": "", "schemaPath": "#", "params": {}, "message": _safe_str(exc)}]


def is_model_error(exc):
    """A validation error raised while parsing input into the tool's own type."""
    return type(exc).__name__ == "ValidationError" and (
        hasattr(exc, "errors") or hasattr(exc, "issues"))


def model_refused(call, message, issues):
    """The ``input-validation-failed`` answer for a model's own validation error: its first
    MAX_ISSUES issues, and the message says how many more there were, as for a schema's.  A
    trace of 100,000 empty tool calls has 300,000 issues: 38 MB of answer."""
    return call.error("input-validation-failed", with_left_out(message, len(issues) - MAX_ISSUES),
                      issues=issues[:MAX_ISSUES])


def validation_failed(call, code, message, validator, value):
    """The ``*-validation-failed`` answer for a value its schema refuses."""
    issues, left_out = validator.first_issues(value, MAX_ISSUES)   # the rest counted, never made
    return call.error(code, with_left_out(message, left_out), issues=issues)


def with_left_out(message, left_out):
    """``message``, and how many issues past the first MAX_ISSUES the answer leaves out, if any."""
    return message + "; %d more issues left out" % left_out if left_out > 0 else message


def to_jsonable(value):
    """The JSON form the SDK gives a value the json module can't write, or TypeError.

    As pydantic's ``to_jsonable_python``, which the SDK's service applies to
    what a handler returns (a dict from a database row, say): datetimes,
    dates and times in ISO 8601 (UTC as ``Z``), durations as ISO 8601
    durations, Decimal, UUID, Fraction, complex, paths and IP addresses as
    their text, an Enum as its value, bytes as UTF-8 text, sets, deques and
    iterators as lists, a dataclass as a dict of its fields, a pydantic model
    as its JSON-mode dump.  Anything else (a pure path, a range, an object)
    is not JSON, there too.  Dict keys are converted by ``key_text``.
    """
    if isinstance(value, (set, frozenset, Iterator)) or _is_a(value, "collections", "deque"):
        return list(value)
    if isinstance(value, (bytes, bytearray)):
        return value.decode("utf-8")
    datetime = sys.modules.get("datetime")
    if datetime is not None:
        if isinstance(value, (datetime.datetime, datetime.time)):
            offset = value.utcoffset()
            text = value.replace(tzinfo=None).isoformat()
            if offset is None:
                return text
            seconds = int(offset.total_seconds())   # pydantic drops an offset's seconds
            return text + ("Z" if not offset else "%s%02d:%02d" % (
                "-" if seconds < 0 else "+", abs(seconds) // 3600, abs(seconds) // 60 % 60))
        if isinstance(value, datetime.date):
            return value.isoformat()
        if isinstance(value, datetime.timedelta):
            return _iso_duration(value)
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, complex):
        return complex_text(value)
    if any(_is_a(value, module, name) for module, name in _JSONABLE_AS_TEXT):
        return str(value)
    if isinstance(value, REGEX):
        return value.pattern
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    if callable(getattr(value, "model_dump", None)):
        return value.model_dump(mode="json", by_alias=True)
    close_if_never_awaited(value)   # a forgotten await inside the output: closed, as at its top
    raise NotJSON("%s is not JSON" % type(value).__name__)


class NotJSON(TypeError):
    """A value of a type the SDK doesn't convert either (not one whose conversion raised)."""


_JSONABLE_AS_TEXT = (("decimal", "Decimal"), ("uuid", "UUID"), ("fractions", "Fraction"), ("pathlib", "Path"),
                     ("ipaddress", "IPv4Address"), ("ipaddress", "IPv6Address"),   # interfaces too
                     ("ipaddress", "IPv4Network"), ("ipaddress", "IPv6Network"))
REGEX = type(re.compile(""))   # re.Pattern, which Python 3.6 doesn't name


def complex_text(number):
    """A complex number as pydantic writes it: ``1+2j``, ``-1.5-0j``, ``1j`` (no real part),
    ``1+NaNj``, each part in full, never with an exponent (``100000000000000000000+1j``)."""
    if number.real == 0:
        return _positional(number.imag) + "j"
    sign = "-" if math.copysign(1.0, number.imag) < 0 else "+"
    return "%s%s%sj" % (_positional(number.real), sign, _positional(abs(number.imag)))


def _positional(number):
    """A float's shortest digits, written out without an exponent: ``1e+20`` -> ``100000000000000000000``."""
    if number != number:
        return "NaN"
    if number in (float("inf"), float("-inf")):
        return "inf" if number > 0 else "-inf"
    import decimal
    text = format(decimal.Decimal(repr(number)), "f")
    return text[:-2] if text.endswith(".0") else text


def _is_a(value, module, name):
    """``value`` is an instance of ``module.name``; False when nothing imported that module."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(value, getattr(loaded, name))


def _iso_duration(delta):
    """A timedelta as pydantic writes it: ``P1Y35DT1H2M3.5S``, a year being 365 days."""
    sign = "-" if delta.days < 0 else ""
    delta = abs(delta)
    years, days = divmod(delta.days, 365)
    hours, rest = divmod(delta.seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    date = ("%dY" % years if years else "") + ("%dD" % days if days else "")
    second = ("%d.%06d" % (seconds, delta.microseconds)).rstrip("0") if delta.microseconds else \
        ("%d" % seconds if seconds else "")
    time = ("%dH" % hours if hours else "") + ("%dM" % minutes if minutes else "") + \
        ("%sS" % second if second else "")
    if not date and not time:
        return "PT0S"
    return "%sP%s%s" % (sign, date, "T" + time if time else "")


def key_text(key):
    """A dict key as the SDK writes it: a tuple's parts joined by commas, a date or an Enum as
    its JSON form's text, a float by ``repr`` (``inf`` too); TypeError for a key with no text.

    ``None`` stays "null", as the json module writes it (the SDK writes
    "None"): the json module's own keys are only converted here when a
    write failed for another key, and must come out the same either way.
    """
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return int.__repr__(key)
    if isinstance(key, float):
        return float.__repr__(key)
    if isinstance(key, tuple):
        return ",".join(key_text(part) for part in key)
    dataclasses = sys.modules.get("dataclasses")
    if dataclasses is not None and dataclasses.is_dataclass(key) and not isinstance(key, type):
        return str(key)   # a frozen dataclass: its text, where as a value it is an object
    converted = to_jsonable(key)
    if isinstance(converted, (list, dict)):
        raise TypeError("%s is not a dict key" % type(key).__name__)
    return key_text(converted)


def with_converted_keys(value):
    """``value`` rebuilt with every dict key written by ``key_text`` and every value converted.

    The second try of a value whose first write failed.  An iterator is
    refused: the first write may have read it to its end already.
    """
    if isinstance(value, dict):
        return {key_text(key): with_converted_keys(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [with_converted_keys(item) for item in value]
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, Iterator):
        raise TypeError("an iterator beside a dict key that needs converting; return a list")
    return with_converted_keys(to_jsonable(value))


_dump_pack_value = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                                    default=to_jsonable).encode


def json_issues(value):
    """Where a value stops being JSON: an Ajv-shaped issue per offending place.

    Walks with an explicit stack, so a deeply nested value can't exhaust
    Python's.  A place is a ``(parent, key)`` link, turned into a pointer only
    for an issue, so a deep value costs linear time.  ``on_path`` holds the
    ids of the containers above the current one: that tells a circular
    reference from a shared one.  Each one's ``_LEAVE`` mark holds it too:
    a container made by ``to_jsonable`` lives only as long as that, and
    another one made later must not reuse the id while it is on the path.
    """
    issues = []
    stack = [(value, None)]
    on_path = set()
    steps = 0
    while stack and len(issues) < 20 and steps < 1000000:
        item, place = stack.pop()
        steps += 1
        if item is _LEAVE:
            on_path.discard(id(place))
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            pass
        elif isinstance(item, int):
            if is_too_long(item):
                issues.append(_json_issue(place, "must have at most %d digits" % MAX_INT_DIGITS))
        elif isinstance(item, float):
            if not is_finite(item):
                issues.append(_json_issue(place, "must be a finite number, not %r" % item))
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in on_path:
                issues.append(_json_issue(place, "must not contain itself (a circular reference)"))
                continue
            try:
                children = list(item.items() if isinstance(item, dict) else enumerate(item))
            except BaseException as exc:  # pack code
                issues.append(_json_issue(place, "must be JSON: reading its %s raised %s"
                                          % (type(item).__name__, type(exc).__name__)))
                continue
            on_path.add(id(item))
            stack.append((_LEAVE, item))
            for key, child in children:
                try:
                    key_text(key)
                except BaseException:  # pack code: a key's conversion
                    issues.append(_json_issue((place, _safe_str(key)),
                                              "must have a string key, not %s" % type(key).__name__))
                stack.append((child, (place, key)))
        elif id(item) in on_path:   # a dataclass that holds itself, say: its conversions never end
            issues.append(_json_issue(place, "must not contain itself (a circular reference)"))
        else:
            try:
                converted = to_jsonable(item)
            except NotJSON:
                issues.append(_json_issue(place, "must be JSON, not %s" % type(item).__name__))
                continue
            except BaseException as exc:  # pack code: a model's dump, an iterator, can raise anything
                issues.append(_not_written(exc, place))   # its own words say why (a model's field)
                continue
            on_path.add(id(item))
            stack.append((_LEAVE, item))
            stack.append((converted, place))
    return issues


_LEAVE = object()


def _json_issue(place, message):
    path = []
    while place is not None:
        place, key = place
        path.append(key)
    return {"instancePath": _pointer(reversed(path)), "schemaPath": "#", "keyword": "type",
            "params": {"type": "json"}, "message": message}


def to_json_text(value):
    """``(text, None)`` for a value pack code returned, converted by ``to_jsonable`` where the SDK
    converts, else ``(None, issues)``."""
    try:
        return _dump_pack_value(value), None
    except BaseException:  # pack objects can raise anything while they are read, SystemExit too
        pass
    try:   # a key the json module can't write (a tuple, a date): converted as the SDK converts it
        return _dump_pack_value(with_converted_keys(value)), None
    except BaseException as exc:
        try:
            issues = json_issues(value)
        except BaseException:  # pack objects that raise even as they are looked at (a float's __eq__)
            issues = []
        if not issues:   # nested too deeply for the encoder, or an iterator that raised and is spent now
            issues = [_not_written(exc)]
        return None, issues


def _not_written(exc, place=None):
    """The issue for a value (at ``place``) that raised ``exc`` as it was written as JSON."""
    return _json_issue(place, "could not be written as JSON: %s: %s" % (type(exc).__name__, _safe_str(exc)))


def _issues_of_text(text):
    """Where JSON ``text`` that ``load_json_text`` refused stops being JSON (an over-long integer)."""
    try:
        return json_issues(_load_strict(text))
    except (ValueError, RecursionError):   # e.g. integers over Python's own digit limit
        return []


def not_json(call, what, issues):
    """The answer for a handler's output or a check's result that can't be written as JSON."""
    first = issues[0]
    return call.error("output-validation-failed", "%s that is not JSON: %s %s"
                      % (what, first["instancePath"] or "(root)", first["message"]), issues=issues)


def result_body(kind, key, text):
    """A ``result``/``check-result`` answer around JSON text already written."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:   # a lone surrogate: written again with it escaped
        data = _dump_compact_ascii(json.loads(text)).encode("ascii")
    return b"".join((('{"v":2,"kind":"%s","%s":' % (kind, key)).encode(), data, b"}"))


def run_pack_code(call, fn, args, is_async):
    """Run a handler or check: a sync one in this thread, an async one on the pack's event loop,
    this thread waiting until it is done (so a call past its deadline keeps its slot)."""
    if not is_async:
        return close_if_never_awaited(fn(*args))
    loop = call.service.event_loop()
    coroutine = fn(*args)
    cancellation = call.cancellation
    done = threading.Event()
    ended = []
    # (value, raised), kept out of the task: the call keeps its task (to stop it) until the call
    # is over, and the value may be big.  Nor does the task refer back to the call once done.
    outcome = []

    def start():   # on the loop
        task = loop.create_task(_guarded(call, coroutine, outcome))
        call.stop_task = lambda reason: loop.call_soon_threadsafe(_cancel_task, cancellation, task, reason)
        if call.outcome in CANCELLING:   # settled before the task was there to stop
            _cancel_task(cancellation, task, call.outcome)
        task.add_done_callback(lambda task: (ended.append(task), done.set()))

    loop.call_soon_threadsafe(start)
    done.wait()
    call.stop_task = None   # nothing left to stop; and a cancelled task holds its traceback, this call in it
    if ended[0].cancelled():
        # The call's own cancellation stopped it, perhaps before it began: a coroutine never
        # awaited would say so on stderr when collected, in a line that is not a record.
        close = getattr(coroutine, "close", None)
        if close is not None:
            close()
        raise sys.modules["asyncio"].CancelledError()
    value, raised = outcome.pop()
    if raised is None:
        return close_if_never_awaited(value)
    try:
        raise raised
    finally:
        raised = None   # its traceback holds this frame: not the other way round as well


def close_if_never_awaited(value):
    """What pack code returned; a coroutine it returned instead of awaiting it is closed first.

    It is answered as output that is not JSON, as on the official service;
    but collected unawaited, it would say so on stderr, in lines that are not
    records (a sync decorator around an ``async def`` handler returns one;
    ``{"data": fetch()}`` holds one, closed as it is written, ``to_jsonable``).
    """
    if isinstance(value, types.CoroutineType):
        import inspect   # here, rarely needed: not loaded at every boot
        if inspect.getcoroutinestate(value) == inspect.CORO_CREATED:
            value.close()
    return value


def _cancel_task(cancellation, task, reason):
    """On the loop, in one step: fire the call's cancellation, then cancel its task.

    So the reason is set before the task resumes, and the task is cancelled
    before a ``wait_async`` in it can return, as on the official service: an
    async handler stops at the await it is in, whatever it awaits.
    """
    fire_cancellation(cancellation, reason)
    task.cancel()


def fire_cancellation(cancellation, reason):
    """Fire a call's cancellation.  Its callbacks are pack code: what they raise, even a
    ``SystemExit``, is theirs, and the call ends all the same."""
    try:
        cancellation.cancel(reason)
    except BaseException:  # pack code
        pass


async def _guarded(call, awaitable, outcome):
    """Await pack code; put ``(value, None)``, or ``(None, what it raised)``, in ``outcome``.

    Before Python 3.11 a task whose coroutine raises CancelledError ends
    "cancelled" and the message is lost; only the call's own cancellation
    may end the task that way.
    """
    try:
        outcome.append((await awaitable, None))
    except BaseException as exc:  # pack code
        if _cancelled_by_us(call, exc):
            raise
        outcome.append((None, exc))


def give_asyncio_a_child_watcher():
    """Python 3.6 and 3.7: asyncio's child watcher needs a loop on the main thread, and pack code
    runs asyncio's child processes from other threads; give it ``threaded_child_watcher``.
    An event loop policy of pack code's that has no child watchers (uvloop's) keeps none: its
    loops wait for their children themselves."""
    if sys.version_info < (3, 8):
        try:
            sys.modules["asyncio"].set_child_watcher(threaded_child_watcher())
        except (AttributeError, NotImplementedError):
            pass


def threaded_child_watcher():
    """Python 3.6 and 3.7: an asyncio child watcher that works for a loop off the main thread.

    Theirs waits for SIGCHLD on a main-thread loop, so an async handler's
    ``asyncio.create_subprocess_exec`` failed ("the child watcher does not
    have a loop attached").  This one is 3.8's ThreadedChildWatcher: a
    thread waits for each child and hands its exit code to the loop.
    """
    import asyncio

    class ThreadedChildWatcher(asyncio.AbstractChildWatcher):
        def add_child_handler(self, pid, callback, *args):
            threading.Thread(target=self._wait, args=(pid, callback, args), name="child %d" % pid,
                             daemon=True).start()

        @staticmethod
        def _wait(pid, callback, args):
            try:
                _, status = os.waitpid(pid, 0)
            except ChildProcessError:   # reaped by someone else: asyncio's own watchers say 255 too
                returncode = 255
            else:
                returncode = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            callback(pid, returncode, *args)

        def remove_child_handler(self, pid):
            return False

        def attach_loop(self, loop):
            pass

        def close(self):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc_info):
            pass

    return ThreadedChildWatcher()


def _cancelled_by_us(call, exc):
    """The service ended the call (its deadline, its caller gone, the drain) and stopped its async
    task: nobody is waiting for an answer.  Asked of the call's outcome, not of its cancellation,
    which pack code may fire itself: its ``CancelledError`` then is a throw, to be answered."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError) and call.outcome in CANCELLING


def call_tool(call):
    """A tool call: lookup, version, input defaults and validation, the handler, its output.

    Returns an answer dict, bytes for a result, or None when the call's own
    cancellation stopped its async handler.
    """
    pack = call.service.pack
    tool_id = call.target_id
    entries = pack.tools_by_id.get(tool_id)
    if not entries:
        return call.error("tool-not-in-pack", 'This pack has no tool "%s"' % tool_id)
    asked = call.message["tool"].get("version")
    chosen = [e for e in entries if e.version == asked] if asked is not None else entries
    if len(chosen) != 1:
        listed = ", ".join(e.version or "unversioned" for e in entries)
        return call.error("tool-version-mismatch", 'Tool "%s" is %s in this pack; the caller %s' % (
            tool_id, listed, "asked for %s" % asked if asked is not None else "named none"))
    entry = chosen[0]
    tool = entry.primitive
    if tool is None:
        return call.error(*entry.problem)
    if entry.input_validator is None:
        return call.error("input-validation-failed",
                          schema_refused('Tool "%s"' % tool_id, "input", entry.input_schema_error))
    value = entry.input_validator.apply_defaults(call.message.get("input"), in_place=True)   # parsed for this call
    if not entry.input_validator.is_valid(value):
        return validation_failed(call, "input-validation-failed", 'Tool "%s" input failed validation' % tool_id,
                                 entry.input_validator, value)
    what = 'Handler for tool "%s"' % tool_id
    try:
        value = tool.parse_input(value)
    except BaseException as exc:  # pack code: its validators can raise anything
        if is_model_error(exc):
            return model_refused(call, 'Tool "%s" input failed validation' % tool_id, model_issues(exc))
        return call.thrown(exc, what)
    try:
        ctx = call.service.kindgi.ToolContext.from_wire(call.message["ctx"], call.cancellation,
                                                        call.service.tool_logger(call.fields))
        text, issues = _output_text(call, tool, value, ctx)
    except OutOfThreads:
        raise   # not pack code's: answered 503 (PackRequestHandler.run_call)
    except BaseException as exc:  # pack code: SystemExit and friends are answers too
        if _cancelled_by_us(call, exc):
            return None
        return call.thrown(exc, what)
    what = 'Tool "%s" handler produced output' % tool_id
    if issues:
        return not_json(call, what, issues)
    if entry.output_validator is None:
        return call.error("output-validation-failed",
                          schema_refused('Tool "%s"' % tool_id, "output", entry.output_schema_error))
    refused = _invalid_output(call, entry, text, what)   # the value it parsed is freed by now
    return refused or result_body("result", "output", text)


def _output_text(call, tool, value, ctx):
    """Run the handler; its output as JSON text (``to_json_text``).  The output itself is not
    kept once written: it may be big, and its answer is still to be built.

    Output the tool's dump can't write (pydantic, given a coroutine or a
    model whose serializer raises) is output that is not JSON, as on the
    official service: the handler itself returned.
    """
    output = run_pack_code(call, tool.handler, tool.invoke_args(value, ctx), tool.is_async)
    try:
        output = tool.dump_output(output)
    except BaseException as exc:  # pack code's models can raise anything as they are written
        return None, [_not_written(exc)]
    return to_json_text(output)


def _invalid_output(call, entry, text, what):
    """The error answer when the output, as the JSON ``text`` says it, fails the tool's output schema."""
    try:
        value = load_json_text(text)
    except (ValueError, RecursionError) as exc:  # e.g. an int over the digit limit
        return not_json(call, what, _issues_of_text(text) or [_json_issue(None, "must be JSON: %s" % exc)])
    if not entry.output_validator.is_valid(value):
        return validation_failed(call, "output-validation-failed", "%s that failed validation" % what,
                                 entry.output_validator, value)
    return None


def normalise_check_result(result, check_result_type):
    """A check's return value as the wire ``result``, or None when it has the wrong shape.

    ``check_result_type`` is the ``CheckResult`` pack code gets (the SDK's or the stand-in's):
    another object is refused even when it has a ``to_wire``, as on the official service.
    """
    if isinstance(result, bool):
        return {"passed": result}
    if isinstance(result, check_result_type):   # its wire form must have a check result's shape too
        result = result.to_wire()
    if isinstance(result, Mapping):
        wire = dict(result)   # copied first, as the SDK does: pack code's own get() could say another `passed`
        if isinstance(wire.get("passed"), bool):
            return wire
    return None


def first_issue_text(issues):
    """Where the first issue is and what it says (`` at /maxChars: must be > 0``), for a message
    about a check's config: a runtime reports a check's error by its message alone."""
    first = issues[0] if issues and isinstance(issues[0], dict) else None
    if first is None:
        return ""
    where = " at %s" % first["instancePath"] if first.get("instancePath") else ""
    return "%s: %s" % (where, first.get("message") or "invalid")


def call_check(call):
    """A guardrail check: lookup, config validation, the trace, the check, its result."""
    check_id = call.target_id
    entry = call.service.pack.checks_by_id.get(check_id)
    if entry is None:
        return call.error("check-not-in-pack", 'This pack has no check "%s"' % check_id)
    check = entry.primitive
    if check is None:
        return call.error(*entry.problem)
    config = call.message["config"]
    if entry.config_schema is not None:
        if entry.config_validator is None:
            return call.error("input-validation-failed",
                              schema_refused('Check "%s"' % check_id, "config", entry.config_schema_error))
        if not entry.config_validator.is_valid(config):
            issues, left_out = entry.config_validator.first_issues(config, MAX_ISSUES)
            return call.error("input-validation-failed", with_left_out(
                'Check "%s" config failed validation%s' % (check_id, first_issue_text(issues)), left_out),
                issues=issues)
    what = 'Check "%s" evaluate()' % check_id
    parsed = []
    for part, parse, value in (("config", check.parse_config, config),
                               ("trace", check.parse_trace, call.message.get("trace"))):
        try:
            parsed.append(parse(value))
        except BaseException as exc:  # pack code: its validators can raise anything
            if is_model_error(exc):   # the config's own type refused it: its first issue is told, as the schema's is
                issues = model_issues(exc)
                return model_refused(call, 'Check "%s" %s failed validation%s' % (
                    check_id, part, first_issue_text(issues) if part == "config" else ""), issues)
            return call.thrown(exc, what)
    config, trace = parsed
    try:
        result = run_pack_code(call, check.check, (config, trace), check.is_async)
    except OutOfThreads:
        raise   # not pack code's: answered 503 (PackRequestHandler.run_call)
    except BaseException as exc:  # pack code
        if _cancelled_by_us(call, exc):
            return None
        return call.thrown(exc, what)
    try:
        wire = normalise_check_result(result, call.service.kindgi.CheckResult)
    except BaseException as exc:  # its result's own methods (the SDK's pydantic dump): the check returned
        return not_json(call, 'Check "%s" returned a result' % check_id, [_not_written(exc)])
    if wire is None:
        return call.error("output-validation-failed",
                          'Check "%s" returned %s; a check returns a CheckResult, a dict with a boolean '
                          '`passed`, or a bool' % (check_id, type(result).__name__))
    text, issues = to_json_text(wire)
    if issues:
        return not_json(call, 'Check "%s" returned a result' % check_id, issues)
    return result_body("check-result", "result", text)


class Target:
    """What a request names: a tool or a check, where its id is, and how to run it."""

    def __init__(self, name, message_key, target_key, run):
        self.name = name
        self.message_key = message_key
        self.target_key = target_key
        self.run = run


TARGETS = {"invoke": Target("tool", "tool", "toolId", call_tool),
           "check-invoke": Target("check", "check", "checkId", call_check)}


# ---------------------------------------------------------------------------
# Settling a call: one outcome, whichever comes first; the watchman
# ---------------------------------------------------------------------------

CANCELLING = frozenset(("deadline-exceeded", "cancelled"))


class Call:
    """One invoke in flight: what it names, its deadline, its cancellation, its outcome.

    Four parties may end it: the connection's thread when pack code returns,
    the watchman when the deadline passes or the caller leaves, and the drain
    when it runs out of time.  ``settle`` lets the first of them decide the
    outcome and write the record and the answer; the others find it settled
    and stay silent.  A deadline, a caller gone or the drain then fires the
    call's cancellation (``cancel``).
    """

    def __init__(self, handler, message, started):
        service = handler.service
        self.handler = handler
        self.service = service
        self.message = message
        self.target = TARGETS[message["kind"]]
        self.target_id = message[self.target.message_key]["id"]
        self.record_id = service.caller_text(self.target_id)
        self.started = started
        request = handler.request_head
        self.deadline = time.monotonic() + parse_timeout_ms(request.header("kindgi-timeout-ms")) / 1000.0
        self.fields = fields = trace_fields(request.header("traceparent"))
        if self.target.name == "tool":
            ctx = message["ctx"]
            for key in ("requestId", "tenantId", "projectId", "orgId", "runId"):
                if isinstance(ctx.get(key), str):
                    fields[key] = service.caller_text(ctx[key])
        fields[self.target.target_key] = self.record_id
        self.cancellation = service.kindgi.Cancellation()
        self.stop_task = None        # how to stop its async task, once it has one (a function of the reason)
        self.outcome = None
        self.done = False            # settled: its record and answer are out (PackService.settled)
        self.lock = threading.Lock()
        self.watched = False         # its socket is in the watchman's selector
        self.pipelined = False       # the caller sent more: its socket can't tell a hang-up

    def run(self):
        return self.service.in_a_fresh_context(self.target.run, self)

    def error(self, code, message, cause=None, issues=None):
        """An error answer about this call's tool or check."""
        return error_message(code, message, self.target.target_key, self.target_id, cause, issues)

    def thrown(self, exc, what):
        """The ``handler-throw`` answer for anything pack code raised."""
        return self.error("handler-throw", "%s threw: %s: %s" % (what, type(exc).__name__, _safe_str(exc)),
                          cause=serialize_cause(exc))

    def settle(self, outcome, answer=None, status=200):
        """Decide the call's outcome, unless another party has: True for the one that does.

        The one that settles writes the ``call`` record (none for a 503: the
        call did not run), then ``answer`` if there is one; ``done`` is set
        once both are out.  The record goes first: a caller that has its
        answer and calls again finds the records in the order of its calls.
        """
        with self.lock:
            if self.outcome is not None:
                return False
            self.outcome = outcome
        try:
            if status != 503:
                self.service.call_record(self)
            if answer is not None:
                self.handler.answer_invoke(answer, self.started, status, close=outcome in CANCELLING)
        finally:
            self.service.call_settled(self)
        return True

    def expire(self):
        """The deadline passed before pack code returned (the watchman calls this, in a thread)."""
        if self.settle("deadline-exceeded", self.error("deadline-exceeded", "%s passed its deadline" % self.target_id)):
            self.cancel("deadline-exceeded")

    def hang_up(self):
        """The caller left before pack code returned (the watchman calls this, in a thread)."""
        if self.settle("cancelled"):
            self.cancel("cancelled")

    def cancel(self, reason):
        """Fire the call's cancellation, and stop its async task (``_cancel_task``) if it has one.

        Only once the answer is out: the cancellation's callbacks are pack
        code, which may take its time or raise (``fire_cancellation``).  For
        an async call both happen on the loop, so a coroutine that holds the
        loop (a ``time.sleep``) delays them, as on the official service.
        ``settle`` set the outcome first: a task that starts meanwhile sees it
        and is stopped by ``run_pack_code``.
        """
        stop_task = self.stop_task   # once: run_pack_code lets go of it when the task is over
        if stop_task is not None:
            try:
                return stop_task(reason)
            except RuntimeError:
                pass  # the task's loop already closed
        fire_cancellation(self.cancellation, reason)

    def elapsed_ms(self):
        return int((time.monotonic() - self.started) * 1000)


class Watchman:
    """One thread that acts on time for calls and connections.

    It keeps each call's deadline, watches the socket of each call that has
    run for a while for the caller hanging up, and shuts connections that
    overstay a phase (a head, a body or an answer that takes too long, however
    slowly its bytes trickle).  A quick call costs it no system call: it is
    only noted in a dict.
    """

    TICK = 0.1          # how soon a slow call's socket is watched, and the longest sleep
    SWEEP = 0.5         # how often phases are checked

    def __init__(self, server):
        self.server = server
        self.selector = selectors.DefaultSelector()
        self.calls = {}
        self.held = {}        # call -> (settle, thread name): waiting for a thread the process couldn't start
        self.lock = threading.Lock()
        self.wake_at = 0.0
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.selector.register(self.wake_r, selectors.EVENT_READ)

    def start(self):
        """Start the watchman's thread: False when the process can't start one."""
        return start_thread(self._run, "watchman") is not None

    def watch(self, call):
        with self.lock:
            self.calls[call] = True
            early = call.deadline < self.wake_at
        if early:
            self._wake()

    def forget(self, call):
        with self.lock:
            self.calls.pop(call, None)
            self._unwatch_socket(call)

    def unsettled(self):
        """The calls whose pack code is still running, and those waiting for a thread to settle them."""
        with self.lock:
            return list(self.calls) + list(self.held)

    def _unwatch_socket(self, call):
        """Stop watching the call's socket; its deadline still stands."""
        if call.watched:
            call.watched = False
            try:
                self.selector.unregister(call.handler.connection)
            except (ValueError, KeyError, OSError):
                pass

    def _wake(self):
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass  # the pipe is full: the watchman is awake anyway

    def _run(self):
        """Watch, for ever: an error in a round is recorded, and the next round comes a tick later."""
        next_sweep = 0.0
        while True:
            try:
                next_sweep = self._watch(next_sweep)
            except Exception as exc:  # the service's own bug: deadlines must still be kept
                self.server.service.failed(exc, "The watchman")
                time.sleep(self.TICK)

    def _watch(self, next_sweep):
        """One round: wait for the soonest deadline, a caller's socket or a tick; act on what came."""
        with self.lock:
            held, self.held = self.held, {}
        for call, (settle, name) in held.items():
            self._settle_apart(call, settle, name)
        now = time.monotonic()
        with self.lock:
            soonest = min((c.deadline for c in self.calls), default=now + self.TICK)
            self.wake_at = min(soonest, now + self.TICK)
            for call in self.calls:
                if not call.watched and not call.pipelined and now - call.started >= self.TICK:
                    self._watch_socket(call)
            pipelined = [call for call in self.calls if call.pipelined]
        if pipelined:
            self._check_pipelined(pipelined)
        try:
            events = self.selector.select(max(0.0, self.wake_at - now))
        except (OSError, ValueError):
            events = []
        for key, _ in events:
            if key.data is None:
                self._drain_wake_pipe()
            else:
                self._check_caller(key.data)
        now = time.monotonic()
        with self.lock:
            expired = [c for c in self.calls if c.deadline <= now]
        for call in expired:
            self.forget(call)
            self._settle_apart(call, call.expire, "deadline")
        if now >= next_sweep:
            self.server.sweep_connections(now)
            next_sweep = now + self.SWEEP
        return next_sweep

    def _settle_apart(self, call, settle, name):
        """Run ``settle`` in a thread of its own: a caller that doesn't read, or a cancellation
        callback that blocks, can't hold up other calls' deadlines.  When the process can't start
        a thread, it is tried again next round, and ``unsettled`` still names the call."""
        if start_thread(settle, name) is None:
            with self.lock:
                self.held[call] = (settle, name)
            self.server.service.out_of_threads("settling a call past its deadline or whose caller left "
                                               "(tried again every %g s)" % self.TICK)

    def _watch_socket(self, call):
        try:
            self.selector.register(call.handler.connection, selectors.EVENT_READ, call)
            call.watched = True
        except (ValueError, KeyError, OSError):
            pass  # the socket is gone already; the deadline still stands

    def _drain_wake_pipe(self):
        try:
            while os.read(self.wake_r, 4096):
                pass
        except OSError:
            pass

    def _check_pipelined(self, calls):
        """Calls whose caller sent its next request: the bytes waiting hide a close from a read,
        so their sockets are asked about the peer's close itself (POLLRDHUP: Linux's), each round."""
        poller, by_fd = select.poll(), {}
        for call in calls:
            try:
                fd = call.handler.connection.fileno()
                poller.register(fd, select.POLLRDHUP)
            except (ValueError, OSError):
                continue   # the socket is gone already; the deadline still stands
            by_fd[fd] = call
        for fd, events in poller.poll(0):
            if events & (select.POLLRDHUP | select.POLLHUP | select.POLLERR):
                self._caller_left(by_fd[fd])

    def _check_caller(self, call):
        """The socket turned readable mid-call: the caller left, or pipelined its next request."""
        sock = call.handler.connection
        try:
            gone = sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return
        except OSError:
            gone = True
        if gone:
            self._caller_left(call)
        else:
            call.pipelined = True
            self._unwatch_socket(call)

    def _caller_left(self, call):
        self.forget(call)
        self._settle_apart(call, call.hang_up, "hang-up")


# ---------------------------------------------------------------------------
# The service and the server: state shared by all connections
# ---------------------------------------------------------------------------

IN_MESSAGE = ("target", "id", "outcome", "durationMs")


class PackService:
    """Who may call, readiness, the concurrency cap, the memory budget, where pack code runs, the
    records about calls, and the drain.

    ``running`` counts calls whose pack code runs, even past their deadline:
    it is what the cap bounds.  ``unanswered`` counts calls not yet settled:
    it is what the drain waits for, with ``answering`` (connections writing
    an answer to anything else).
    """

    def __init__(self, config, records, pack, kindgi, missing_env):
        self.records = records
        self.pack = pack
        self.kindgi = kindgi
        self.limits = config.limits
        self.token = config.token
        self.tenant_id = config.tenant_id
        self.cap = config.max_concurrency
        self.missing_env = missing_env
        self.strict = config.env_check == "strict"
        self.draining = False
        self.saying_draining = None    # the thread writing the `draining` record, once the drain begins
        self.running = 0
        self.unanswered = 0
        self.memory = 0
        self.memory_budget = memory_budget(memory_limit(cgroup_membership()), resident_memory())
        self.loop = None               # the event loop of async pack code, once one runs
        self.loop_thread = None        # the thread that runs it
        self.loop_stopped = False      # set once, at the exit: the loop's thread lets it be
        self.loop_lock = threading.Lock()
        self.answering = set()
        self.lock = threading.Lock()
        # One Condition for all calls, not an Event each: only a call that loses the race to settle waits.
        self.settled = threading.Condition(self.lock)
        self.server = self.watchman = None   # set by serve()
        self.next_thread_record = 0.0        # out_of_threads: when it may write again
        index = pack.index
        tools = [dict([("id", e.id)] + ([("version", e.version)] if e.version else [])) for e in index.tools]
        checks = list(dict.fromkeys(e.check_id for e in index.checks))
        self.info_body = dump_json({
            "protocol": PROTOCOL, "packId": index.pack_id, "packVersion": index.pack_version,
            "artifactVersion": index.artifact_version, "indexHash": index.hash,
            "tools": tools, "checks": checks, "missingEnv": missing_env})
        self.missing_env_body = _dump_compact_ascii({"error": "missing env", "missingEnv": missing_env}).encode()
        self.call_logger = PackLogger(records, "pack.tool")
        self.call_log_bindings = {"packId": index.pack_id, "artifactVersion": index.artifact_version,
                                  "target": "tool"}
        # Made on the main thread after the imports: the context variables the pack's modules set.
        self.boot_context = contextvars.copy_context() if contextvars else None

    # -- who may call ---------------------------------------------------------

    def tenant_ok(self, tenant_id):
        """Not pinned, or ``tenant_id`` names the pinned tenant (UUIDs compare in any case)."""
        return self.tenant_id is None or tenant_id.lower() == self.tenant_id

    def tenant_refused(self, request, via):
        self.records.write("warn", "A call for another tenant was refused", event="tenant-mismatch",
                           fields={"via": via, "path": self.caller_text(request.path)})

    # -- admission --------------------------------------------------------------

    def not_ready(self):
        """The 503 body while not ready: draining, then missing env (strict)."""
        if self.draining:
            return DRAINING
        if self.strict and self.missing_env:
            return self.missing_env_body
        return None

    def at_cap(self):
        return OVERLOADED if self.running >= self.cap else None

    def admit(self):
        """Take a slot for a call, or say why not."""
        with self.lock:
            if self.draining:
                return DRAINING
            if self.running >= self.cap:
                return OVERLOADED
            self.running += 1
            self.unanswered += 1
        return None

    def pack_code_returned(self):
        with self.lock:
            self.running -= 1

    def take_memory(self, size):
        """Hold ``size`` more bytes of the memory budget; False when they are not there."""
        with self.lock:
            if self.memory + size > self.memory_budget:
                return False
            self.memory += size
            return True

    def give_memory(self, size):
        with self.lock:
            self.memory -= size

    # -- what a call's records carry ---------------------------------------------

    def caller_text(self, value):
        """A caller's string as a record carries it: at most MAX_CALLER_TEXT long, never the token,
        and the known shapes of secrets masked, as in pack code's records (the official service
        masks them in every record).  Masked before the cut, which could split a secret from what
        marks it, and in twice the length kept only: a record's cost is bounded whatever the
        caller sends."""
        if self.token.is_token(value):
            return "[redacted]"
        shown = scrub_text(value[:2 * MAX_CALLER_TEXT])
        # What the cut leaves out of the masked head, and what was past it: a head that masking
        # made short (a long credential) still says that the rest was left out.
        more = max(0, len(shown) - MAX_CALLER_TEXT) + max(0, len(value) - 2 * MAX_CALLER_TEXT)
        if more > 0:
            return "%s...[%d more characters]" % (shown[:MAX_CALLER_TEXT], more)
        return shown

    def tool_logger(self, fields):
        """``ctx.log``: the call's ids, then the pack's and ``target``, in every record, as the SDK's."""
        return self.call_logger.child(fields, **self.call_log_bindings)

    # -- where pack code runs: a fresh context each call, the event loop of async code --

    def in_a_fresh_context(self, run, *args):
        """``run(*args)`` in a copy of the context the boot left, as each request is on the official
        service: what one call sets in a ContextVar (the current user, say) is never seen by the
        next call on the connection's thread, and what a module set at import is seen by all."""
        if self.boot_context is None:
            return run(*args)
        return self.boot_context.copy().run(run, *args)

    def event_loop(self):
        """The one event loop all async pack code runs on, in a thread of its own.

        One loop, as on the official service: a client, a pool or a lock that
        a module keeps works from every call, and a task a handler leaves
        running runs on after the answer.  A coroutine that blocks stalls the
        other async calls until it returns (not the sync ones); the watchman
        still answers every deadline on time.  The first async call starts
        it, and imports asyncio: that costs a fifth of the boot, and only
        packs with async code need it.
        """
        with self.loop_lock:
            if self.loop is None:
                import asyncio
                if not self._start_event_loop(asyncio.new_event_loop()):
                    self.out_of_threads("the event loop of async pack code (its call answered 503)")
                    raise OutOfThreads()
            return self.loop

    def keep_the_boot_event_loop(self):
        """On the main thread, after the boot: the loop pack code set up there, if any, runs its
        async code.

        What a module made at import on that loop then works in calls: a
        pool opened with ``run_until_complete``, or, before Python 3.10, any
        ``asyncio.Lock()`` or ``Queue()``, which take the main thread's loop
        when they are made.  A pack that never imported asyncio gets its
        loop at its first async call.  A pack with no async handler or check
        leaves that loop alone, as the official service does: its sync
        handlers may run the loop themselves (``LOOP.run_until_complete``
        around a client the module made), which fails on a loop already
        running.  False when the loop's thread can't start.
        """
        asyncio = sys.modules.get("asyncio")
        if asyncio is None:
            return True
        if not self.pack.has_async_code():
            give_asyncio_a_child_watcher()   # Python 3.6 and 3.7: sync code's asyncio child processes too
            return True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)   # 3.12 and 3.13, when it makes one
            try:
                loop = asyncio.get_event_loop()
            except RuntimeError:   # Python 3.14: none was set
                return True
        with self.loop_lock:
            if self.loop is None and not loop.is_closed() and not loop.is_running():
                return self._start_event_loop(loop)
        return True

    def _start_event_loop(self, loop):
        """Run ``loop`` in a thread of its own: False when the process can't start one."""
        loop.set_exception_handler(self.pack_task_failed)
        give_asyncio_a_child_watcher()   # Python 3.6 and 3.7
        thread = start_thread(self._run_event_loop, "event loop", loop)
        if thread is None:
            return False
        self.loop, self.loop_thread = loop, thread
        return True

    def _run_event_loop(self, loop):
        sys.modules["asyncio"].set_event_loop(loop)
        # Pack code that stops the loop, or a task's SystemExit, doesn't end it; the exit does (stop_event_loop).
        while not loop.is_closed() and not self.loop_stopped:
            try:
                loop.run_forever()
            except BaseException as exc:  # a task pack code left running raised SystemExit or KeyboardInterrupt
                self.pack_task_failed(loop, {"message": "a task stopped the event loop", "exception": exc})

    def stop_event_loop(self, seconds):
        """At the exit, before pack code's exit handlers: stop the event loop, and wait ``seconds`` at
        most for its thread to end.

        An exit handler may then run that loop itself, as it can at the
        official service's exit (``LOOP.run_until_complete(client.close())``
        for a client the module opened on its loop at import): on a loop still
        running it would fail.  A coroutine that blocks keeps the loop running.
        """
        with self.loop_lock:
            self.loop_stopped = True
            loop, thread = self.loop, self.loop_thread
        if loop is None:
            return
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:   # pack code closed it: its thread has ended
            return
        thread.join(seconds)

    def pack_task_failed(self, loop, context):
        """asyncio's report about a task of pack code's (an exception nobody retrieved, a task
        destroyed while pending), as a record."""
        exc = context.get("exception")
        text = _safe_str(context.get("message") or "asyncio reported a problem")   # pack code may pass any value
        if exc is not None:
            text = "%s: %s: %s" % (text, type(exc).__name__, _safe_str(exc))
        # From a task's __del__ this runs in any thread, maybe one holding the records' lock: a timeout, never a wait.
        token = self.records.token   # the text is pack code's: masked as its own records are
        self.records.write("warn", "Async pack code: %s" % scrub_text(text, token), event="pack-task-error",
                           fields={"stack": scrub_text(format_stack(exc), token)} if exc is not None else None,
                           lock_timeout=0.5)

    # -- the service's own failures, and a call's end ----------------------------

    def failed(self, exc, what):
        """The service itself failed: a ``service-error`` record, and the 500 answer's body."""
        return error_body(service_failed(self.records, exc, what))

    def out_of_threads(self, what):
        """The process couldn't start a thread for ``what``: a record at most every 10 s."""
        now = time.monotonic()
        if now >= self.next_thread_record:
            self.next_thread_record = now + 10.0
            self.records.write("error", "Cannot start a thread for %s: %s; %d connections open"
                               % (what, AT_THREAD_LIMIT, self.server.open_connections),
                               event="out-of-threads")

    def call_settled(self, call):
        """A call's answer is out, or nobody waits for one: the drain has one fewer to wait for,
        and a connection thread that lost the race to settle the call may go on."""
        with self.settled:
            self.unanswered -= 1
            call.done = True
            self.settled.notify_all()

    def call_record(self, call):
        """The ``call`` record: one for every call, whatever its outcome."""
        outcome = call.outcome
        level = "info" if outcome == "ok" else "warn"
        if not self.records.enabled(level):
            return
        ms = call.elapsed_ms()
        index = self.pack.index
        fields = dict(call.fields)
        fields.update((("packId", index.pack_id), ("artifactVersion", index.artifact_version),
                       ("target", call.target.name), ("id", call.record_id), ("outcome", outcome),
                       ("durationMs", ms), ("inMessage", IN_MESSAGE)))
        self.records.write(level, "%s %s %s %dms" % (call.target.name, call.record_id, outcome, ms),
                           event="call", fields=fields)

    # -- the drain --------------------------------------------------------------

    def begin_drain(self):
        with self.lock:
            self.draining = True
        # From a thread of its own: a stderr nobody reads must not hold up the drain.
        saying = start_thread(self.say_draining, "saying draining")
        if saying is None:
            self.say_draining()
        self.saying_draining = saying   # started first: Lifecycle.stop may join it from another thread

    def say_draining(self):
        # Among the records, not at once: written beside a long record a slow stderr was still
        # taking, it landed inside it.  The drain waits for it as for them.
        self.records.write("info", "Draining: finishing the calls in flight", event="draining", always=True,
                           at_once=False, lock_timeout=0.5)

    def wait_drained(self, seconds):
        """Until every call is settled, no answer is being written, the records are written (a
        slow stderr's too) and, for ``limits.quiet``, no connection has come (nor the signal), or
        ``seconds`` pass.

        The quiet keeps the exit from cutting off a request that has just
        come: one sent on a kept-alive connection as the signal came, or by a
        caller whose answer closed its connection (every answer does, once
        draining) and who called again at once, gets 503 ``draining``, not a
        reset.
        """
        start = time.monotonic()
        end = start + seconds
        while time.monotonic() < end:
            quiet = time.monotonic() - max(start, self.server.last_accepted) >= self.limits.quiet
            if self.unanswered <= 0 and not self.answering and quiet and self.records.written_out():
                return True
            time.sleep(0.025)
        return False

    def give_up_on_calls(self):
        """The drain ran out of time: the calls still running end ``cancelled``, with their records.

        Their cancellations fire in a thread nobody waits for: the callbacks
        are pack code, and the exit must not wait for one that blocks.
        Without a thread, they don't fire: the process is about to end.
        """
        if self.watchman is not None:
            given_up = [call for call in self.watchman.unsettled() if call.settle("cancelled")]
            if given_up:
                start_thread(self._cancel_all, "cancelling", given_up)

    @staticmethod
    def _cancel_all(calls):
        for call in calls:
            call.cancel("cancelled")


def off_the_standard_streams(sock):
    """``sock``, moved above descriptor 2 when it took the number of stdin, stdout or stderr.

    Pack code may close one of those (``os.close(1)``, to quiet a library):
    the next connection took the number, and what pack code then printed, or
    wrote to descriptor 2, went into that caller's answer (and what it read
    from stdin came from the caller).  The socket moves up, and /dev/null
    takes the standard number for good: what is written there is dropped, as
    pack code asked by closing it, and no later connection can take it.
    """
    fd = sock.fileno()
    if fd > 2:
        return sock
    try:
        moved = socket.socket(sock.family, sock.type, sock.proto, fileno=fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
    finally:
        sock.close()
    try:
        for _ in range(3):   # the numbers pack code left free, lowest first
            null = os.open(os.devnull, os.O_RDWR)
            if null > 2:
                os.close(null)
                break
            os.set_inheritable(null, True)   # a standard stream, for child processes too
    except OSError:
        pass  # out of descriptors: the number stays free, and the next connection on it moves too
    return moved


class PackHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a connection cap, probes served over it, and a sweep of stalled phases."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024

    def __init__(self, address, service, max_connections=MAX_CONNECTIONS, probe_connections=PROBE_CONNECTIONS):
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.service = service
        self.max_connections = max_connections
        self.probe_connections = probe_connections
        self.handlers = set()
        self.open_connections = 0
        self.open_probes = 0
        self.count_lock = threading.Lock()
        self.counted_out = set()    # sockets of connections shut to make room, counted out already
        self.evictions = 0          # connections shut to make room, since the start
        self.next_eviction_record = 0.0
        self.accept_pause = 0.0
        self.next_accept_record = 0.0
        self.last_accepted = 0.0    # monotonic time of the last connection accepted (the drain's quiet)
        self.silence_fallback = False
        self._date = (0, "")
        ThreadingHTTPServer.__init__(self, address, PackRequestHandler)

    def let_go(self):
        """In a process pack code forked: close its copies of the listening socket and the callers'.

        Else, while the child lives on after the service stops, connections to
        the port would wait on a socket nobody accepts from and a new service
        could not bind it; and a caller would not see its connection close.
        """
        for sock in [self.socket] + [handler.connection for handler in list(self.handlers)]:
            try:
                sock.close()
            except OSError:
                pass

    def server_bind(self):
        # HTTPServer.server_bind also looks up the host's FQDN: a DNS query at boot for nothing.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def get_request(self):
        """Accept a connection; when the process is out of file descriptors, wait and say so."""
        try:
            request = self.socket.accept()
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                self.out_of_descriptors(exc)
            raise
        self.accept_pause = 0.0
        return off_the_standard_streams(request[0]), request[1]

    def out_of_descriptors(self, exc):
        """Accepting failed for want of resources: back off (the connection waits in the
        kernel's queue), and write a record at most every 10 s."""
        self.accept_pause = min(1.0, max(0.025, self.accept_pause * 2))
        now = time.monotonic()
        if now >= self.next_accept_record:
            self.next_accept_record = now + 10.0
            self.service.records.write("error", "Cannot accept connections: %s (%d open); retrying"
                                       % (exc.strerror or exc, self.open_connections), event="accept-failed")
        time.sleep(self.accept_pause)

    def process_request(self, request, client_address):
        """Serve the connection on a thread of its own, or refuse it at once.

        Under the cap it is served fully.  At the cap, a connection that
        never showed the token and waits on its caller makes room for it:
        else a caller without the token, asking every few seconds (or reading
        its answers slowly), could hold every slot and keep the runtime out.
        When none can, it may only ask the probes: a few connections are kept
        for that, and when those are taken too, the one that has waited
        longest for its request makes room (a probe asks as soon as it
        connects, a flood's connection doesn't), or one that only lingers
        after its answer.  Only when none can make room is the answer a 503
        at once.
        """
        self.last_accepted = time.monotonic()
        with self.count_lock:
            made_room = self.open_connections >= self.max_connections and self.make_room_for_a_connection()
            if self.open_connections < self.max_connections:
                handler_class = PackRequestHandler
                self.open_connections += 1
            elif self.open_probes < self.probe_connections or self.make_room_for_a_probe():
                handler_class = ProbeRequestHandler
                self.open_probes += 1
            else:
                handler_class = None
        if made_room:
            self.count_eviction()
        if handler_class is None:
            self.refuse_connection(request)
            return self.shutdown_request(request)
        if start_thread(self.serve_connection, "connection", request, client_address, handler_class) is None:
            self.service.out_of_threads("a new connection (answered 503)")
            self.refuse_connection(request)
            self.connection_ended(request, handler_class)

    def refuse_connection(self, request):
        """Answer 503 ``overloaded`` on a connection no thread serves, without reading its request."""
        try:
            request.sendall((CONNECTIONS_FULL_HEAD % self.date()).encode("ascii") + OVERLOADED)
        except OSError:
            pass

    def make_room_for_a_connection(self):
        """Shut a connection under the cap that never showed the token and waits on its caller,
        and count it out now: its thread, ending, counts nothing.  The caller holds ``count_lock``.
        True when there was one."""
        shut = self.shut_the_longest_waiting(probes_only=False)
        if shut is None:
            return False
        self.counted_out.add(shut.connection)
        self.open_connections -= 1
        return True

    def make_room_for_a_probe(self):
        """Shut a probes-only connection waiting for its request, for its answer to be taken, or
        lingering after it (it counts itself out as its thread ends); the caller holds
        ``count_lock``.  True when there was one."""
        return self.shut_the_longest_waiting(probes_only=True) is not None

    def shut_the_longest_waiting(self, probes_only):
        """Of the connections that never showed the token and wait on their caller (for a head, in
        one, for an answer to be taken, or lingering after it), shut the one accepted first; return
        it, or None.

        An answer waits too: a caller that pipelines requests and reads their
        answers a little at a time keeps its connection writing, one answer
        after another, for as long as it likes.  A connection that showed the
        token once is never shut so, nor one reading a body or running a call.
        """
        waiting = [h for h in list(self.handlers) if h.probes_only == probes_only and not h.trusted
                   and not h.evicted and h.phase in ("idle", "head", "write", "linger")]
        if not waiting:
            return None
        oldest = min(waiting, key=lambda handler: handler.accepted_at)
        oldest.evicted = True
        self.shut(oldest)
        return oldest

    def count_eviction(self):
        """Count a connection shut to make room, and say so in a record at most every 10 s (a flood
        would make one per connection).  The record has the count since the start: the time
        between two records varies, and their counts' difference is what came in between."""
        self.evictions += 1
        now = time.monotonic()
        if now >= self.next_eviction_record:
            self.next_eviction_record = now + 10.0
            self.service.records.write(
                "warn", "The connection cap (%d) was full: a connection that never showed the token was "
                "shut to make room (%d so far)" % (self.max_connections, self.evictions),
                event="connections-evicted", fields={"count": self.evictions})

    def serve_connection(self, request, client_address, handler_class):
        try:
            handler_class(request, client_address, self)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.connection_ended(request, handler_class)

    def connection_ended(self, request, handler_class):
        """Close the connection's socket, and count it out."""
        self.shutdown_request(request)
        with self.count_lock:
            if request in self.counted_out:   # shut to make room, and counted out then
                self.counted_out.remove(request)
            elif handler_class.probes_only:
                self.open_probes -= 1
            else:
                self.open_connections -= 1

    def set_silence(self, sock, seconds):
        """Let the kernel end a read or write that makes no progress for ``seconds``.

        SO_RCVTIMEO and SO_SNDTIMEO cost nothing per call, where a Python
        socket timeout adds a poll() before every recv and send.  Where the
        kernel refuses them, a Python timeout does the same, and a record
        says so once.
        """
        timeval = socket_timeval(seconds)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)
        except OSError as exc:
            sock.settimeout(seconds)
            if not self.silence_fallback:
                self.silence_fallback = True
                self.service.records.write("warn", "The kernel refused socket timeouts (%s); "
                                           "using Python's" % exc, event="socket-timeouts")

    def sweep_connections(self, now):
        """Shut connections that overstayed a head, a body or an answer (``shut``)."""
        for handler in list(self.handlers):
            if handler.phase not in ("idle", "busy") and now > handler.phase_deadline:
                self.shut(handler)

    @staticmethod
    def shut(handler):
        """Shut a connection's socket; its thread sees the end at its next read or write.  One
        writing an answer is reset as it closes, and what the kernel still buffers of the answer
        dropped: a reader too slow for it must not keep it."""
        try:
            if handler.phase == "write":
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, RESET_ON_CLOSE)
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def date(self):
        """The ``date`` header's value (RFC 9110 section 6.6.1), made once a second."""
        second = int(time.time())
        cached = self._date
        if cached[0] != second:
            cached = self._date = (second, http_date(second))
        return cached[1]

    def handle_error(self, request, client_address):
        records = self.service.records
        records.write("error", "Connection failed inside the service", event="service-error",
                      fields={"stack": scrub_text(format_stack(sys.exc_info()[1]), records.token)})


# ---------------------------------------------------------------------------
# The process: boot, serve, drain, exit
# ---------------------------------------------------------------------------

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class Lifecycle:
    """SIGTERM and SIGINT: the first drains, the second ends the drain at once (the calls still
    running get their ``cancelled`` records, as at the drain's end).

    Installed before anything slow, because as PID 1 a signal without a
    handler is ignored.  The signal's number reaches a pipe from the C-level
    handler (``signal.set_wakeup_fd``), at once, and a thread of its own reads
    the pipe and does the work.  Nothing waits for the main thread: a Python
    handler runs only between its bytecodes, which may be many seconds away
    when a pack's import is blocked in C (a DNS lookup, a database lock), and
    the main thread may hold any lock when the signal comes.  Both mark
    ``signalled``: the Python handler for a signal held until take_signals(),
    which it sees before serve() can say ``listening``; the thread for a
    signal that comes while the main thread is held in C.
    """

    def __init__(self):
        self.records = None
        self.service = None            # set once `listening` is said: from then on a signal drains
        self.signalled = False
        self.checking = False          # --check: a stop before its end is a check that did not pass
        self.lock = threading.Lock()   # orders ``listening`` and ``stopped``
        self.exit_handlers_once = threading.Lock()   # taken by the first stop, which runs them
        self.last_words_once = threading.Lock()      # taken by the stop that says `stopped` and exits
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.thread = start_thread(self._run, "lifecycle")   # None: main() fails the boot
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        signal.set_wakeup_fd(self.wake_w)
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._in_a_forked_child)
        else:   # Python 3.6: no register_at_fork, so os.fork itself, which multiprocessing calls by name
            os.fork = self._forking(os.fork)

    def take_signals(self, records):
        """From now on a signal is acted on, and ``stopped`` written with ``records``.

        Signals are held from the program's first line (main()'s, for pip's
        script) until now: one that came earlier is acted on at once.
        """
        self.records = records
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def take_back_signals(self):
        """After the boot: SIGTERM, SIGINT and SIGPIPE are handled as the service needs again,
        whatever pack code did.

        A module may set a handler of its own at import (one that calls
        ``sys.exit``, say), ignore or block the signal, restore its default,
        or move the wake-up descriptor; each would end the process without a
        drain, or never end it.  SIGPIPE's default (the "quiet broken pipe"
        idiom of command-line scripts) would end the process when a caller
        hangs up amid its answer: ignored, as Python sets it, a write to a
        closed socket or pipe is an error the service handles.  Only the main
        thread can set handlers, and after the boot it runs no pack code, so
        once is enough.  A record says what was taken back.
        """
        taken = [signal.Signals(signum).name for signum in sorted(STOP_SIGNALS)
                 if signal.getsignal(signum) != self._on_signal]
        for name in taken:
            signal.signal(getattr(signal, name), self._on_signal)
        if signal.set_wakeup_fd(self.wake_w) != self.wake_w:
            taken.append("set_wakeup_fd")
        if STOP_SIGNALS & set(signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)):
            taken.append("pthread_sigmask")   # blocked: a signal would wait for ever
        if signal.getsignal(signal.SIGPIPE) != signal.SIG_IGN:
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
            taken.append("SIGPIPE")
        if taken:
            self.records.write("warn", "Pack code changed the handling of signals the service relies on (%s); the "
                               "service's own is back, so a stop still drains the calls in flight and a caller "
                               "that hangs up ends its connection only" % ", ".join(taken),
                               event="signals-taken-back", fields={"signals": taken})

    def _in_a_forked_child(self):
        """A process pack code forks (``multiprocessing``'s workers) is not the service.

        It would share the wake-up pipe: a SIGTERM to the child
        (``Pool.terminate``) would drain the service, and the child would
        not die of it.  So the child gets the handling of a new interpreter,
        and writes its own records.  It would also hold the service's
        sockets open: so it closes its copies (``PackHTTPServer.let_go``).
        """
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        if self.records is not None:
            self.records.after_fork()
        if self.service is not None:
            self.service.server.let_go()

    def _forking(self, fork):
        """Python 3.6: ``fork``, then ``_in_a_forked_child`` in the child."""
        def fork_a_child():
            pid = fork()
            if pid == 0:
                self._in_a_forked_child()
            return pid
        return fork_a_child

    def _on_signal(self, signum, frame):
        """On the main thread, so a signal held until take_signals() is seen before serve() says
        `listening`; the signal's number is in the wake pipe already."""
        self.signalled = True

    def _next_stop_signal(self):
        """Wait for SIGTERM or SIGINT; other signals' numbers (pack code may handle some) are passed over."""
        while os.read(self.wake_r, 1)[0] not in STOP_SIGNALS:
            pass

    def _run(self):
        self._next_stop_signal()
        if self.lock.acquire(timeout=1.0):   # serve() may be stuck writing `listening`
            self.signalled = True            # serve() checks it under the lock before it says `listening`
            self.lock.release()
        if self.service is None:
            self.stop(1 if self.checking else 0)
        if start_thread(self._drain, "drain") is None:
            self._drain()   # here, then: a second signal waits for the drain's end
        self._next_stop_signal()
        self.service.give_up_on_calls()   # the drain's end, now: the calls in flight get their records
        self.stop(0)

    def _drain(self):
        self.service.begin_drain()
        if not self.service.wait_drained(self.service.limits.drain):
            self.service.give_up_on_calls()
        self.stop(0)

    def stop(self, code):
        """Run pack code's exit handlers, write ``stopped`` and leave: threads stuck in pack code
        can't hold the exit.

        The exit handlers run only after a drain, and once: a second signal
        while they run ends the process at once.  The drain's end and a
        second signal may both come here: only the first says ``stopped``,
        and the other returns.  The last words go from a thread of their
        own, given a second: a stderr nobody reads must not keep the process
        alive.
        """
        if self.lock.acquire(timeout=1.0):   # serve() may be stuck writing `listening`
            self.lock.release()
        saying_draining = self.service.saying_draining if self.service is not None else None
        if saying_draining is not None:      # `draining` comes before `stopped`, even on a busy machine
            saying_draining.join(1.0)
        if self.records is not None:   # the exit handlers' output and the last words are written at once
            self.records.stop_writer()
        if self.service is not None and self.exit_handlers_once.acquire(False):   # a second signal skips them
            # The loop theirs to run, as at a normal exit; for a tenth of their time at most, so that
            # a coroutine holding the loop leaves the rest (a tracer's flush) its time.
            ends = time.monotonic() + self.service.limits.exit_handlers
            self.service.stop_event_loop(self.service.limits.exit_handlers / 10)
            self._run_exit_handlers(ends - time.monotonic())
        if not self.last_words_once.acquire(False):
            return   # the other stop says it, and exits
        last_words = start_thread(self._last_words, "last words")
        if last_words is None:
            self._last_words()
        else:
            last_words.join(1.0)
        os._exit(code)

    @staticmethod
    def _run_exit_handlers(seconds):
        """Pack code's ``atexit`` handlers (a tracer's last flush, say), for ``seconds`` at most.

        ``os._exit`` runs none of them, and a normal exit would first wait
        for every thread pack code left behind, for ever if one never ends.
        So they run here, once the calls are answered, in a thread of their
        own.  ``atexit._run_exitfuncs`` is how CPython's own exit runs them;
        it is not public, so where it is missing they don't run.
        """
        run = getattr(atexit, "_run_exitfuncs", None)
        runner = start_thread(run, "exit handlers") if run is not None else None
        if runner is not None:   # without a thread of their own they can't be bounded: they don't run
            runner.join(seconds)

    def _last_words(self):
        records = self.records
        if records is not None:
            # The records' lock is taken for good (0.5 s at most: stderr may be stuck mid-record), so
            # that `stopped` is the last line, but for what pack code left in sys.stderr's buffer:
            # pack code's threads write at once now, and their lines came after it.
            records.lock.acquire(timeout=0.5)
            records.write("info", "Stopped before the check finished" if self.checking else "Stopped",
                          event="stopped", always=True, lock_timeout=0)
        flush_output()


def flush_output():
    """Flush what pack code printed before ``os._exit``, which flushes nothing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass  # a closed or broken stream: nothing left to say


def make_records(config):
    pretty = config.log_format == "pretty" or (config.log_format == "auto" and os.isatty(2))
    return Records(stderr_of_our_own(), config.log_level, config.log_levels, pretty)


def stderr_of_our_own():
    """A descriptor of stderr that pack code doesn't hold: pack code that closes descriptor 2, or
    points it at /dev/null to quiet a library, must not send the records into whatever file or
    caller's socket takes the number next, or lose them."""
    try:
        return os.dup(2)   # not inherited by child processes, as os.dup makes them
    except OSError:
        return 2   # no stderr at all: the records go nowhere, as they would anyway


def line_buffered_output(utf8):
    """Pack code's prints reach stdout line by line, not when a buffer fills; ``utf8``: the C
    locale's ASCII streams become UTF-8 (Python 3.6; see utf8_in_the_c_locale)."""
    for name, utf8_errors in (("stdout", "surrogateescape"), ("stderr", "backslashreplace")):
        stream = getattr(sys, name)
        try:
            stream.reconfigure(line_buffering=True)
        except AttributeError:   # Python 3.6: no reconfigure(), so a new wrapper on the same buffer
            try:
                encoding, errors = stream.encoding, stream.errors
                if utf8 and codecs.lookup(encoding).name == "ascii":   # the C locale's, not PYTHONIOENCODING's
                    encoding, errors = "utf-8", utf8_errors
                setattr(sys, name, io.TextIOWrapper(stream.buffer, encoding, errors, line_buffering=True))
            except (AttributeError, ValueError):
                pass  # not a standard stream (replaced by an embedding program)
        except ValueError:
            pass


def utf8_in_the_c_locale():
    """Python 3.6, in the C or POSIX locale: text is UTF-8, as 3.7 and later make it there (PEP 538
    and 540).  True when it was the C locale and now is UTF-8.

    A minimal image often sets no locale.  There, on 3.6 alone, pack code's
    ``print("é")`` raised UnicodeEncodeError, and ``open()`` read files as
    ASCII.  File names stay as the interpreter decoded them at start.
    """
    if sys.version_info >= (3, 7):
        return False
    import locale
    if locale.setlocale(locale.LC_CTYPE) not in ("C", "POSIX"):
        return False
    for name in ("C.UTF-8", "C.utf8", "UTF-8"):
        try:
            locale.setlocale(locale.LC_CTYPE, name)
            return True
        except locale.Error:
            pass
    return False


def missing_env_names(index, environ):
    return sorted({name for name in index.env_required if not environ.get(name)})


def memory_budget(limit, resident):
    """How much memory bodies and their parsed JSON may take, all requests at once.

    MEMORY_BUDGET, or less under a container's memory ``limit`` (None: no
    limit) that leaves less: a third of what the limit leaves the process,
    ``resident`` at boot.  A call holds about twice its body against the
    budget and, at its peak, takes two or three times that (the output, its
    JSON text, the answer), so a third keeps calls that come together under
    the limit: those over the budget get 503, where the kernel would have
    killed the process and every call in it.
    """
    if limit is None:
        return MEMORY_BUDGET
    return min(MEMORY_BUDGET, max(0, limit - resident) // 3)


CGROUP_ROOT = "/sys/fs/cgroup"


def cgroup_membership():
    """The text of /proc/self/cgroup: which cgroup the process is in, for each controller."""
    try:
        with open("/proc/self/cgroup") as f:
            return f.read()
    except OSError:
        return ""


def cgroup_folders(controller, membership, root=CGROUP_ROOT):
    """``(folders, v2)``: the folder of the process's cgroup for ``controller`` (``memory``,
    ``pids``) and those of its parents up to the hierarchy's root, innermost first, as far as
    they are mounted here; ``v2`` tells cgroup v2 from v1.  ``membership`` is the text of
    /proc/self/cgroup.

    A parent's limit binds the process as its own does (a systemd slice, a
    pod around its containers).  A container usually sees its own cgroup at
    the mount's root and no parents: its path names folders that aren't there.
    """
    v2_path = None
    for line in membership.splitlines():
        _, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if controller in controllers.split(","):
            top, v2 = os.path.join(root, controller), False
            break
        if controllers == "" and path:
            v2_path = path
    else:   # no v1 hierarchy has the controller: cgroup v2's, where it is mounted at the root
        if v2_path is None or not os.path.isfile(os.path.join(root, "cgroup.controllers")):
            return [], False
        top, v2, path = root, True, v2_path
    names = [name for name in path.split("/") if name]
    if ".." in names:   # outside the part of the hierarchy this container sees
        return [], v2
    folders = [os.path.join(top, *names[:depth]) for depth in range(len(names), -1, -1)]
    return [folder for folder in folders if os.path.isdir(folder)], v2


def cgroup_number(folder, name, key=None):
    """The number in a cgroup's file ``name`` (in a file of ``key value`` lines, the one of
    ``key``), or None when it says there is no limit ("max") or can't be read."""
    try:
        with open(os.path.join(folder, name)) as f:
            text = f.read()
    except OSError:
        return None
    if key is not None:   # a file of "key value" lines: the value on the line of key
        values = {}
        for line in text.splitlines():
            found, _, value = line.partition(" ")
            values[found] = value
        text = values.get(key, "")
    text = text.strip()
    if not DIGITS.match(text) or int(text) >= 1 << 60:   # "max", and v1's way of saying none
        return None
    return int(text)


def memory_limit(membership, root=CGROUP_ROOT):
    """The memory limit the process is under, in bytes: the lowest of its cgroup's and its
    parents'; None when there is none.

    In cgroup v1, the ``hierarchical_memory_limit`` of the process's own
    cgroup counts the parents a container can't see as well.
    """
    folders, v2 = cgroup_folders("memory", membership, root)
    limits = [cgroup_number(folder, "memory.max" if v2 else "memory.limit_in_bytes") for folder in folders]
    if folders and not v2:
        limits.append(cgroup_number(folders[0], "memory.stat", "hierarchical_memory_limit"))
    limits = [limit for limit in limits if limit is not None]
    return min(limits) if limits else None


def resident_memory():
    """The process's resident memory in bytes (not the page cache a cgroup's use counts too)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def connection_caps(wanted):
    """``(connections, probes)``: how many connections to serve, and how many more just for
    probes, so that both fit under the open-files limit and under a container's pids limit (each
    connection is a file and a thread)."""
    rooms = [room for room in (file_room(), thread_room(cgroup_membership())) if room is not None]
    if not rooms:
        return wanted, PROBE_CONNECTIONS
    room = max(16, min(rooms))
    probes = min(PROBE_CONNECTIONS, room // 16)
    return min(wanted, room - probes), probes


def file_room():
    """The files the process may open, less FD_HEADROOM; None when there is no limit.

    The limit is raised toward its hard limit first: many containers start
    with a soft limit of 1024, which the connection cap alone would exhaust;
    the hard limit is usually far higher.
    """
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard if hard != resource.RLIM_INFINITY else 1 << 20
        if soft != resource.RLIM_INFINITY and soft < target:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
                soft = target
            except (ValueError, OSError):
                pass
    except (ValueError, OSError):
        return None
    return None if soft == resource.RLIM_INFINITY else soft - FD_HEADROOM


def thread_room(membership, root=CGROUP_ROOT):
    """The threads a container's pids limit leaves, less THREAD_HEADROOM; None when there is none.

    Each limited cgroup from the process's own up to the root counts: the
    room is what the fullest of them leaves.
    """
    folders, _ = cgroup_folders("pids", membership, root)
    rooms = []
    for folder in folders:
        limit = cgroup_number(folder, "pids.max")
        if limit is not None:
            used = cgroup_number(folder, "pids.current")
            rooms.append(limit - (threading.active_count() if used is None else used))
    return min(rooms) - THREAD_HEADROOM if rooms else None


class BootFailed(Exception):
    def __init__(self, problems):
        Exception.__init__(self, "; ".join(problems))
        self.problems = problems


def boot(config, records, dropped, raw):
    """Check the index (its bytes, or the problem reading it), the modules, report the env,
    import everything.

    Returns ``(pack, kindgi, missing_env)``; raises ``BootFailed`` with every
    problem found.
    """
    if isinstance(raw, str):
        raise BootFailed([raw])
    try:
        index = Index(raw)
    except IndexProblem as exc:
        raise BootFailed([str(exc)])
    records.bound = {"packId": index.pack_id, "artifactVersion": index.artifact_version}
    root = os.path.abspath(config.module_root)
    kindgi = load_kindgi(records)
    pack = Pack(index, root, kindgi)
    problems = pack.missing_modules()
    if problems:
        raise BootFailed(problems)
    if dropped:
        records.write("warn", ("Dropped a variable the pack doesn't declare: %s" if len(dropped) == 1 else
                               "Dropped %d variables the pack doesn't declare: %%s" % len(dropped))
                      % ", ".join(dropped) + " (declare them in the pack's env, or set KINDGI_PACK_ENV_FILTER=off)",
                      event="env-dropped", fields={"names": dropped})
    missing = missing_env_names(index, os.environ)
    if missing:
        records.write("warn", ("The pack's env.required name has no value: %s" if len(missing) == 1 else
                               "The pack's env.required names have no value: %s") % ", ".join(missing),
                      event="missing-env", fields={"check": config.env_check, "names": missing})
    problems = pack.load()
    if problems:
        raise BootFailed(problems)
    refused = pack.refused_entries()
    if refused:
        records.write("warn", "Part of the pack can't be used; each call to it is refused: %s" % "; ".join(refused),
                      event="unusable-entries", fields={"problems": refused})
    return pack, kindgi, missing


def serve(config, records, service, lifecycle):
    host = config.host or "0.0.0.0"
    max_connections, probe_connections = connection_caps(config.max_connections)
    try:
        server = PackHTTPServer((host, config.port), service, max_connections, probe_connections)
    except (OSError, OverflowError, TypeError) as exc:   # TypeError: a host name IDNA can't encode ("a..é")
        records.write("error", "The pack service failed to boot", event="boot-failed", always=True,
                      fields={"problems": ["Cannot listen on %s port %d: %s" % (host, config.port, exc)]})
        return 1
    service.server, service.watchman = server, Watchman(server)
    if not (service.watchman.start() and records.start_writer()):
        return out_of_threads_at_boot(records)
    index = service.pack.index
    port = server.server_address[1]
    with lifecycle.lock:
        if not lifecycle.signalled:
            lifecycle.service = service
            records.write("info", "Listening on port %d" % port, event="listening", always=True,
                          fields={"port": port, "host": host, "maxConnections": max_connections,
                                  "memoryBudget": service.memory_budget,
                                  "packId": index.pack_id, "artifactVersion": index.artifact_version})
    if lifecycle.service is None:
        # A signal came during the boot: the lifecycle thread writes `stopped` and exits; never `listening`.
        lifecycle.thread.join(service.limits.drain)
        return 0
    server.serve_forever(poll_interval=0.2)
    return 0


def out_of_threads_at_boot(records):
    records.write("error", "The pack service failed to boot", event="boot-failed", always=True,
                  fields={"problems": ["Cannot start the service's threads: " + AT_THREAD_LIMIT]})
    return 1


def without_the_token(problems, token):
    """The configuration's problems with the service token written ``[redacted]`` where they
    quote it as the value they refuse: a setting given the token by mistake
    (``KINDGI_LOG_LEVEL=$TOKEN``, ``--index $TOKEN``).  Quoted whole only, as JSON or Python
    quote it: text that merely contains a short token (``e``) is left as it is."""
    if not token:
        return problems
    masks = ((json.dumps(token), '"[redacted]"'), (repr(token), "'[redacted]'"))
    masked = []
    for problem in problems:
        for quoted, mask in masks:
            problem = problem.replace(quoted, mask)
        masked.append(problem)
    return masked


def write_out(text):
    """``--help`` and ``--version``: ``text`` on stdout, exit code 0; a stdout that is closed or
    takes no writes (``>/dev/full``) is one line on stderr and 1, not a traceback."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    except (AttributeError, OSError, ValueError) as exc:   # None when closed at start; ValueError when closed since
        sys.stderr.write("kindgi_pack_min: cannot write to stdout: %s\n"
                         % ("it is closed" if sys.stdout is None else exc))
        if sys.stdout is not None:   # what it still holds goes nowhere: the exit's flush would fail again, aloud
            os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
        return 1


def leave(code, limits):
    """End the process with ``code`` once pack modules may have loaded (``boot-failed``,
    ``check-passed``, a port in use): their ``atexit`` handlers run, for ``limits.exit_handlers`` at
    most, then ``os._exit``.  A normal exit would wait for every thread a module left running (a
    worker, a scheduler), for ever: the failed boot or the passed check would never end."""
    Lifecycle._run_exit_handlers(limits.exit_handlers)
    flush_output()
    os._exit(code)


def main(argv=None):
    """Run the service; returns the exit code of what ends before pack code loads (``--help``,
    ``config-invalid``), and leaves by ``leave`` after that (boot failures are 1)."""
    argv = list(sys.argv if argv is None else argv)
    if argv[1:2] == ["index"]:   # build an index instead (kindgi_pack_index.py): Ctrl-C as usual
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        try:
            import kindgi_pack_index
        except ImportError as exc:
            sys.stderr.write("kindgi_pack_min index: %s: put kindgi_pack_index.py beside this file\n" % exc)
            return 1
        leave(kindgi_pack_index.main(argv[2:], sys.modules[__name__]), Limits())   # it imports the pack's modules
    # Held here too, not only by the program's first line: pip's `kindgi-pack-min` script imports
    # this module and calls main(), and a signal must still wait for the secrets to be hidden
    # and, pending across a re-exec, for the new image's handlers.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    lifecycle = Lifecycle()
    config, problems = read_config(argv[1:], os.environ, receive_handoff(os.environ))
    if config.action == "help":
        return write_out(USAGE)
    if config.action == "version":
        return write_out("kindgi-pack-min %s (Pack protocol v%d, schema %s)\n"
                         % (__version__, PROTOCOL, PROTOCOL_SCHEMA_VERSION))
    records = make_records(config)
    records.token = config.token
    if lifecycle.thread is None:
        return out_of_threads_at_boot(records)
    if problems:
        problems = without_the_token(problems, os.environ.get(TOKEN_VAR, "").strip())
        message = problems[0] if len(problems) == 1 and problems[0].startswith("KINDGI_LOG") \
            else "The pack service configuration is invalid"
        records.write("error", message, event="config-invalid", always=True, fields={"problems": problems})
        return 1
    if not config.collect_garbage:
        gc.disable()
    # Signals are still held here: one that comes while the secrets are hidden waits, and across
    # a re-exec it waits for the new image, which acts on it (a held signal survives execve).
    lifecycle.checking = config.check_only
    if config.handed_index is None:
        raw = read_index(config.index_path, config.limits.silence)
        if isinstance(raw, str):   # a problem, which quotes the path: `--index $TOKEN` by mistake too
            raw = without_the_token([raw], os.environ.get(TOKEN_VAR, "").strip())[0]
    else:   # the re-executed image: the bytes the first one read
        raw = read_handed_index(*config.handed_index)
    if raw is None:   # a stop signal came while the index was awaited: the lifecycle thread acts on it and exits
        lifecycle.take_signals(records)
        lifecycle.thread.join()
    if config.dropped is None:
        dropped, raw = hide_secrets(config, argv, records, raw)
    else:
        dropped = config.dropped
    lifecycle.take_signals(records)
    line_buffered_output(utf8_in_the_c_locale())
    pack_stderr(records)
    try:
        pack, kindgi, missing = boot(config, records, dropped, raw)
    except BootFailed as exc:
        records.write("error", "The pack service failed to boot", event="boot-failed", always=True,   # pack code's
                      fields={"problems": [scrub_text(problem, records.token) for problem in exc.problems]})
        leave(1, config.limits)
    except Exception as exc:  # the service's own failure (or pack code that broke it): records, never a traceback
        text = service_failed(records, exc, "The boot")
        records.write("error", "The pack service failed to boot", event="boot-failed", always=True,
                      fields={"problems": ["The service itself failed: %s" % scrub_text(text, records.token)]})
        leave(1, config.limits)
    raw = None   # hashed and parsed: the index's bytes are not kept while serving
    lifecycle.take_back_signals()
    if config.check_only:
        lifecycle.checking = False   # done: a signal from now on stops a check that passed
        tools, checks = len(pack.index.tools), len(pack.index.checks)
        records.write("info", "The pack boots: %d tool%s, %d check%s" % (tools, "" if tools == 1 else "s",
                                                                      checks, "" if checks == 1 else "s"),
                      event="check-passed", always=True)
        leave(0, config.limits)
    service = PackService(config, records, pack, kindgi, missing)
    if not service.keep_the_boot_event_loop():
        leave(out_of_threads_at_boot(records), config.limits)
    try:
        code = serve(config, records, service, lifecycle)
    except Exception as exc:   # the service's own failure (or pack code that broke it): a record, never a traceback
        service_failed(records, exc, "Serving")
        code = 1
    leave(code, config.limits)


# ---------------------------------------------------------------------------
# Appendix: the stand-in ``kindgi`` module
#
# Pack modules are written against the Kindgi SDK (`from kindgi import tool,
# guardrail, ToolContext, CheckResult`).  When the real SDK is not importable,
# install_standin() registers these objects as `kindgi`, `kindgi.pack`,
# `kindgi.pack.context`, `kindgi.pack.define`, `kindgi.pack.trace` and
# `kindgi.log` so that such modules import and run unchanged.  Definitions
# carry what the SDK's carry and are refused where the SDK refuses them, in its
# words, so the indexer (kindgi_pack_index.py) lists from them exactly what the
# SDK's indexer would.  pydantic is optional: it is imported only when a pack
# passes a type (a model, a TypedDict...) instead of a JSON Schema dict.
# Written to run on Python 3.6 too.

STANDIN_VERSION = "0.1.10+pack-min"

RESERVED_CHECK_IDS = frozenset((
    "must-cite", "never-call-tool", "max-tool-calls", "output-matches",
    "tool-order", "required-substring", "forbidden-substring"))


class DefinitionError(ValueError):
    """A tool, guardrail, agent or flow is declared wrong: raised where it is declared."""


class ValidationError(ValueError):
    """A record (a trace, a ``CheckResult``) failed validation, named as pydantic's error is;
    ``.issues`` holds Ajv-shaped issue dicts."""

    def __init__(self, model, issues):
        self.issues = issues
        lines = ["%s: %s" % (issue["instancePath"] or "(root)", issue["message"])
                 for issue in issues]
        super().__init__("%d validation error%s for %s: %s" % (
            len(issues), "" if len(issues) == 1 else "s", model, "; ".join(lines)))


class CallCancelled(Exception):
    """Raised by Cancellation.raise_if_cancelled(); str() is the reason."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


class NoopLogger(PackLogger):
    """A logger with the SDK's surface that writes nothing: a ``kindgi.log.Logger``, as the SDK's
    ``noop_logger`` is one (``isinstance(ToolContext.for_test().log, Logger)``)."""

    def __init__(self):
        pass  # no records to write to

    def _log(*args, in_message=None, **kw):
        """Drop the record."""
        _log_arguments("log", args)

    error = warn = warning = info = debug = trace = _log

    def child(self, bindings=None, **kw):
        """A child of a no-op logger is the same no-op logger."""
        return self

    def is_level_enabled(self, level):
        """No level is enabled."""
        return False


_STANDIN_NOOP_LOGGER = NoopLogger()


# --- Cancellation and ToolContext ------------------------------------------

class Cancellation:
    """A one-shot, thread-safe cancellation signal for one call.

    The first cancel() wins; waiters in threads (wait) and in any event loop
    (wait_async) wake up, and registered callbacks run once with the reason.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._event = None   # made by the first wait(): most calls never wait
        self._reason = None
        self._callbacks = []

    @property
    def cancelled(self):
        return self._reason is not None

    @property
    def reason(self):
        return self._reason

    def cancel(self, reason):
        """Fire with `reason` unless already fired; run the callbacks."""
        with self._lock:
            if self._reason is not None:
                return
            self._reason = reason
            callbacks, self._callbacks = self._callbacks, []
            event = self._event
        if event is not None:
            event.set()
        for callback in callbacks:
            _standin_run_callback(callback, reason)

    def add_callback(self, callback):
        """Call callback(reason) once on cancel; at once if already cancelled."""
        with self._lock:
            if self._reason is None:
                self._callbacks.append(callback)
                return
        _standin_run_callback(callback, self._reason)

    def remove_callback(self, callback):
        """Forget a callback registered with add_callback (no error if absent)."""
        with self._lock:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def raise_if_cancelled(self):
        """Raise CallCancelled if the call has been cancelled."""
        if self._reason is not None:
            raise CallCancelled(self._reason)

    def wait(self, timeout=None):
        """Block until cancelled or timeout seconds pass; True if cancelled."""
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._reason is not None:
                    self._event.set()
            event = self._event
        return event.wait(timeout)

    async def wait_async(self):
        """Wait in the running event loop until cancelled; return the reason."""
        import asyncio   # loaded only by packs that use it: it costs a fifth of the boot
        loop = getattr(asyncio, "get_running_loop", asyncio.get_event_loop)()   # Python 3.6: the latter only
        future = loop.create_future()

        def wake(reason):
            loop.call_soon_threadsafe(_standin_settle, future, reason)

        self.add_callback(wake)
        try:
            return await future
        finally:
            self.remove_callback(wake)

    def __repr__(self):
        return "<Cancellation reason=%r>" % (self._reason,)


def _standin_run_callback(callback, reason):
    """Run one cancel callback; a failing callback must not stop the others."""
    try:
        callback(reason)
    except BaseException:  # pack code: a SystemExit too
        pass


def _standin_settle(future, reason):
    """Resolve a wait_async future unless its waiter already gave up."""
    if not future.done():
        future.set_result(reason)


def _standin_frozen_mapping(value):
    """A read-only copy of a mapping; anything that is not one becomes empty."""
    if not value or not isinstance(value, Mapping):
        return _STANDIN_EMPTY_MAPPING
    return types.MappingProxyType(dict(value))


_STANDIN_EMPTY_MAPPING = types.MappingProxyType({})


class _StandinFrozen(object):
    """Base of ToolContext, Tool and Guardrail: frozen once made, as the SDK's (frozen
    dataclasses), so that pack code assigning to one fails here as there, at import for a
    tool, not later and differently."""

    __slots__ = ()

    def __setattr__(self, name, value):
        raise _standin_frozen("cannot assign to field %r" % name)

    def __delattr__(self, name):
        raise _standin_frozen("cannot delete field %r" % name)


class ToolContext(_StandinFrozen):
    """What a handler knows about its call: ids, env, secrets, cancellation, log.

    Immutable; the mappings are read-only copies; repr() leaves out the
    secrets and the logger.
    """

    __slots__ = ("tenant_id", "run_id", "request_id", "project_id", "org_id", "env", "secrets",
                 "config", "settings", "cancellation", "log", "idempotency_key")

    def __init__(self, tenant_id, run_id, request_id=None, project_id=None,
                 org_id=None, env=None, secrets=None, config=None, settings=None,
                 cancellation=None, log=None, idempotency_key=None):
        frozen = _standin_frozen_mapping
        values = (tenant_id, run_id, request_id, project_id, org_id, frozen(env), frozen(secrets),
                  frozen(config), frozen(settings), Cancellation() if cancellation is None else cancellation,
                  _STANDIN_NOOP_LOGGER if log is None else log, idempotency_key)
        for set_field, value in zip(_STANDIN_CTX_SETTERS, values):   # in __slots__ order
            set_field(self, value)

    def __repr__(self):
        shown = ", ".join("%s=%r" % (name, getattr(self, name)) for name in self.__slots__
                          if name not in ("secrets", "log"))
        return "ToolContext(%s)" % shown

    def __eq__(self, other):
        """Equal to a context whose fields but the logger are equal, as the SDK's (a dataclass whose
        ``log`` is left out of comparing): ``ctx == copy.copy(ctx)``.  Unhashable there too."""
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__ if name != "log")

    __hash__ = None

    def __reduce__(self):
        """``copy.copy(ctx)``: a context with the same fields, as of the SDK's (its own setters
        are refused, so the default way of copying a slotted object can't be used)."""
        return type(self), tuple(getattr(self, name) for name in self.__slots__)

    @classmethod
    def for_test(cls, tenant_id="tenant-test", run_id="run-test", **kw):
        """A context for tests with placeholder ids."""
        return cls(tenant_id, run_id, **kw)

    @classmethod
    def from_wire(cls, ctx, cancellation, log=_STANDIN_NOOP_LOGGER):
        """Build from a wire callContext (camelCase keys; unknown keys dropped, and an optional id
        that is not a string, as the SDK drops it)."""
        get = ctx.get
        return cls(ctx["tenantId"], ctx["runId"], _standin_text(get("requestId")), _standin_text(get("projectId")),
                   _standin_text(get("orgId")), get("env"), get("secrets"), get("config"), get("settings"),
                   cancellation, log, _standin_text(get("idempotencyKey")))


def _standin_text(value):
    return value if isinstance(value, str) else None


def _standin_frozen(message):
    """The error a frozen dataclass raises, as the SDK's ToolContext does (dataclasses imported then).

    Python 3.6 has no dataclasses: there it is the AttributeError that error derives from.
    """
    try:
        from dataclasses import FrozenInstanceError
    except ImportError:   # Python 3.6 has no dataclasses
        FrozenInstanceError = AttributeError
    return FrozenInstanceError(message)


# The fields' own setters: __setattr__ refuses every assignment.
_STANDIN_CTX_SETTERS = tuple(ToolContext.__dict__[name].__set__ for name in ToolContext.__slots__)


# --- Trace records and CheckResult -----------------------------------------
#
# Plain classes with pydantic-like lax conversion: wire names are camelCase,
# Python names are accepted too, unknown fields are kept (as attributes and in
# .model_extra), and failures are reported as Ajv-shaped issues.

class _StandinBad(Exception):
    """A field value failed conversion: args are (keyword, message)."""


def _standin_issue(path, keyword, message):
    """One issue in the shape the service reports (loc → JSON pointer)."""
    return {"instancePath": path, "schemaPath": "#", "keyword": keyword,
            "params": {}, "message": message}


@functools.lru_cache(maxsize=None)
def _standin_camel(name):
    """snake_case -> camelCase, the wire spelling of a field (cached: it runs per call)."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _standin_scalar(convert):
    """Turn convert(value) (raising _StandinBad) into a field converter."""
    def field_converter(value, path, issues):
        try:
            return convert(value)
        except _StandinBad as bad:
            issues.append(_standin_issue(path, *bad.args))
            return None
    return field_converter


@_standin_scalar
def _standin_str(value):
    """A str, the lax way pydantic takes one: bytes as UTF-8, an Enum as its value."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise _StandinBad("string_unicode", "Input should be a valid string, "
                              "unable to parse raw data as a unicode string") from None
    enum = sys.modules.get("enum")
    if enum is not None and isinstance(value, enum.Enum) and isinstance(value.value, (str, int)) \
            and not isinstance(value.value, bool):
        return str(value.value)
    raise _StandinBad("string_type", "Input should be a valid string")


def _standin_number(kind, value, what, noun):
    """int(value) or float(value) the lax way pydantic does it (bool, text, Decimal accepted): ASCII
    digits only; an int's text may end in ".0", a float that becomes one must fit in 64 bits."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    elif _is_a(value, "decimal", "Decimal"):
        value = float(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            if kind is int:
                if not _STANDIN_INT_TEXT.match(text):
                    raise ValueError(text)
                digits = text.split(".")[0]
                if len(digits.lstrip("+-").replace("_", "")) > MAX_INT_DIGITS:
                    raise _StandinBad("int_parsing_size", _STANDIN_INT_TOO_BIG)
                return int(digits)
            text.encode("ascii")   # float() would read other scripts' digits too
            return float(text)
        except (ValueError, UnicodeEncodeError):
            raise _StandinBad("%s_parsing" % kind.__name__, "Input should be a valid %s, "
                              "unable to parse string as %s" % (what, noun)) from None
    if not isinstance(value, (int, float)):
        raise _StandinBad("%s_type" % kind.__name__, "Input should be a valid %s" % what)
    if kind is int and isinstance(value, float):
        if not is_finite(value):
            raise _StandinBad("finite_number", "Input should be a finite number")
        if not value.is_integer():
            raise _StandinBad("int_from_float",
                              "Input should be a valid integer, got a number with a fractional part")
        if not -2.0 ** 63 < value < 2.0 ** 63:
            raise _StandinBad("int_parsing_size", _STANDIN_INT_TOO_BIG)
    try:
        return kind(value)
    except OverflowError:   # an int too big for a float
        raise _StandinBad("float_type", "Input should be a valid number") from None


_STANDIN_INT_TEXT = re.compile(r"[+-]?[0-9]+(?:_[0-9]+)*(?:\.0+)?\Z")
_STANDIN_INT_TOO_BIG = "Unable to parse input string as an integer, exceeded maximum size"


@_standin_scalar
def _standin_int(value):
    return _standin_number(int, value, "integer", "an integer")


@_standin_scalar
def _standin_float(value):
    return _standin_number(float, value, "number", "a number")


_STANDIN_BOOL_WORDS = {"true": True, "t": True, "yes": True, "y": True, "on": True, "1": True,
                       "false": False, "f": False, "no": False, "n": False, "off": False, "0": False}


@_standin_scalar
def _standin_bool(value):
    """A bool, the lax way pydantic takes one: one of its words (any case, no spaces), or a
    number that is 0 or 1; another whole number is "unable to interpret", anything else not one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        if value.lower() in _STANDIN_BOOL_WORDS:
            return _STANDIN_BOOL_WORDS[value.lower()]
        raise _StandinBad("bool_parsing", _STANDIN_NOT_A_BOOL)
    number = value if isinstance(value, (int, float)) or _is_a(value, "decimal", "Decimal") else None
    if number is not None and number in (0, 1):
        return bool(number)
    if number is not None and number == number and number % 1 == 0 and -2 ** 63 <= number < 2 ** 63:
        raise _StandinBad("bool_parsing", _STANDIN_NOT_A_BOOL)
    raise _StandinBad("bool_type", "Input should be a valid boolean")


_STANDIN_NOT_A_BOOL = "Input should be a valid boolean, unable to interpret input"


def _standin_dict(value, path, issues):
    """A dict with str keys (``dict[str, Any]``), the keys taken as ``_standin_str`` takes them."""
    if not isinstance(value, Mapping):
        issues.append(_standin_issue(path, "dict_type", "Input should be a valid dictionary"))
        return None
    keys = {key: _standin_str(key, path + _pointer((key, "[key]")), issues) for key in value}
    return {keys[key]: item for key, item in value.items()}


@_standin_scalar
def _standin_mode(value):
    if value not in ("ci", "runtime"):
        raise _StandinBad("literal_error", "Input should be 'ci' or 'runtime'")
    return value


def _standin_any(value, path, issues):
    return value


def _standin_list_of(convert):
    """A converter for a list whose items go through `convert`."""
    def list_converter(value, path, issues):
        if not isinstance(value, (list, tuple, set, frozenset)):
            issues.append(_standin_issue(path, "list_type", "Input should be a valid list"))
            return None
        return [convert(item, path + _pointer((i,)), issues) for i, item in enumerate(value)]
    return list_converter


_STANDIN_REQUIRED = object()
_STANDIN_CONVERTERS = {str: _standin_str, int: _standin_int, float: _standin_float, bool: _standin_bool}
_STANDIN_CONVERTER_NAMES = {kind.__name__: kind for kind in _STANDIN_CONVERTERS}


class _StandinRecord:
    """Base of the record classes; _fields = ((name, converter, default), ...).

    A field whose default is None also accepts None (pydantic's Optional).
    """

    _fields = ()

    def __init_subclass__(cls, **kwargs):
        """A pack's own subclass (``class Scored(CheckResult): score: float = 0.0``) declares its
        annotated names as fields, as a pydantic model does: with the default it gives, else
        required, so that ``to_wire`` carries them.  A str, int, float or bool field is converted
        as the record's own are; any other is kept as given (pydantic is not needed)."""
        super().__init_subclass__(**kwargs)
        fields = list(cls._fields)
        declared = {name for name, _, _ in fields}
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if name in declared or name.startswith("_") or "ClassVar" in str(annotation):
                continue
            if isinstance(annotation, str):   # ``from __future__ import annotations``: as written, "float"
                annotation = _STANDIN_CONVERTER_NAMES.get(annotation, annotation)
            convert = _STANDIN_CONVERTERS.get(annotation, _standin_any) if isinstance(annotation, type) else _standin_any
            fields.append((name, convert, cls.__dict__.get(name, _STANDIN_REQUIRED)))
        cls._fields = tuple(fields)

    def __init__(self, **fields):
        issues = []
        self._standin_fill(fields, "", issues)
        if issues:
            raise ValidationError(type(self).__name__, issues)

    @classmethod
    def from_wire(cls, value):
        """Validate a wire value into an instance; raise ValidationError with issues."""
        issues = []
        record = cls._standin_convert(value, "", issues)
        if issues:
            raise ValidationError(cls.__name__, issues)
        return record

    @classmethod
    def _standin_convert(cls, value, path, issues):
        """Field converter for a nested record of this class."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            issues.append(_standin_issue(path, "model_type", "Input should be a valid "
                                         "dictionary or instance of %s" % cls.__name__))
            return None
        record = cls.__new__(cls)
        record._standin_fill(value, path, issues)
        return record

    def _standin_fill(self, data, path, issues):
        """Set every field from data (wire name first, then Python name)."""
        used = set()
        for name, convert, default in self._fields:
            wire = _standin_camel(name)
            key = wire if wire in data else name if name in data else None
            if key is not None:
                used.add(key)
                value = data[key]
                if value is not None or default is not None:   # an issue names the key as sent, as pydantic's does
                    value = convert(value, path + _pointer((key,)), issues)
            elif default is _STANDIN_REQUIRED:
                issues.append(_standin_issue(path + _pointer((wire,)), "missing", "Field required"))
                value = None
            else:
                value = default.copy() if isinstance(default, (list, dict)) else default
            self.__dict__[name] = value
        self.__dict__["model_extra"] = {k: v for k, v in data.items() if k not in used}

    def __getattr__(self, name):
        extra = self.__dict__.get("model_extra", {})
        if name in extra:
            return extra[name]
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))

    def __setattr__(self, name, value):
        """A declared field or a private name is set as is; any other name is an extra field, as
        pydantic keeps it for a model that allows extras, so ``to_wire`` carries it."""
        if name.startswith("_") or any(name == field for field, _, _ in self._fields):
            self.__dict__[name] = value
        else:
            self.model_extra[name] = value

    def __delattr__(self, name):
        if name in self.__dict__.get("model_extra", {}):
            del self.model_extra[name]
        else:
            object.__delattr__(self, name)

    def _standin_items(self):
        """(name, value) for declared fields then extra fields."""
        items = [(name, self.__dict__[name]) for name, _, _ in self._fields]
        return items + list(self.model_extra.items())

    def to_wire(self):
        """camelCase dict, None values dropped, extra fields kept, nested records too."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def model_dump(self, *, mode="python", by_alias=False, exclude_none=False):
        """The fields as a dict, extra fields after them, nested records as dicts too, as
        pydantic's ``model_dump`` gives them; so a record in a handler's output or a check's
        attributes is written as on the SDK.  ``by_alias``: camelCase names.  Other values are
        kept as they are in either ``mode`` (writing JSON converts them as pydantic's JSON mode
        does), but for what ``_standin_dumped`` does; a declared float field is kept as it is."""
        return self._standin_dump(mode, by_alias, exclude_none, frozenset((id(self),)))

    def _standin_dump(self, mode, by_alias, exclude_none, inside):
        """``model_dump``, inside the containers and records whose ids are in ``inside``."""
        items = [(_standin_camel(name) if by_alias else name, self.__dict__[name], convert is _standin_float)
                 for name, convert, _ in self._fields]
        items.extend((key, value, False) for key, value in self.model_extra.items())
        return {key: value if declared_float else _standin_dumped(value, mode, by_alias, exclude_none, inside)
                for key, value, declared_float in items if not (exclude_none and value is None)}

    model_validate = from_wire   # pydantic's name for it

    def __copy__(self):
        """``copy.copy``: the same field values, with extra fields of its own, as pydantic copies
        a model: an extra field set on the copy does not appear on the original."""
        copied = type(self).__new__(type(self))
        copied.__dict__.update(self.__dict__)
        copied.__dict__["model_extra"] = dict(self.model_extra)
        return copied

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._standin_items() == other._standin_items()

    __hash__ = None

    def __repr__(self):
        shown = ", ".join("%s=%r" % item for item in self._standin_items())
        return "%s(%s)" % (type(self).__name__, shown)

    def __str__(self):
        """The fields as pydantic's ``str()`` of a model writes them, ``passed=True reason='r'``: a
        check's ``reason=f"{call}"`` reads the same here as on the SDK."""
        return " ".join("%s=%r" % item for item in self._standin_items())


def _standin_dumped(value, mode, by_alias, exclude_none, inside):
    """A value in a record's ``model_dump`` (an ``attributes`` dict, an extra field), as pydantic
    dumps a value it has no declared type for: records become dicts, dumped with the same
    options, in lists, tuples and dicts too.  In the JSON ``mode`` tuples and sets become lists,
    and NaN and the infinities None: a check's ``CheckResult(attributes={"ratio": nan})`` is
    ``null`` on the wire, as on the SDK, not a result that is not JSON.  ``inside``: the ids of
    the containers and records around the value; one that holds itself is left as it is, for
    writing it to say so, rather than a RecursionError."""
    if isinstance(value, (_StandinRecord, dict, list, tuple, set, frozenset)):
        if id(value) in inside:
            return value
        inside = inside | {id(value)}
    if isinstance(value, _StandinRecord):
        return value._standin_dump(mode, by_alias, exclude_none, inside)
    if isinstance(value, dict):
        return {key: _standin_dumped(item, mode, by_alias, exclude_none, inside) for key, item in value.items()}
    if isinstance(value, list) or (mode == "json" and isinstance(value, (tuple, set, frozenset))):
        return [_standin_dumped(item, mode, by_alias, exclude_none, inside) for item in value]
    if isinstance(value, tuple):
        return tuple(_standin_dumped(item, mode, by_alias, exclude_none, inside) for item in value)
    if mode == "json" and isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class ToolCallRecord(_StandinRecord):
    """A tool call the agent made (trace.tool_calls)."""
    _fields = (("tool_id", _standin_str, _STANDIN_REQUIRED), ("tool_name", _standin_str, _STANDIN_REQUIRED),
               ("arguments", _standin_dict, {}), ("at", _standin_str, _STANDIN_REQUIRED))


class ToolResultRecord(_StandinRecord):
    """A tool result the agent saw (trace.tool_results)."""
    _fields = (("tool_call_id", _standin_str, _STANDIN_REQUIRED), ("output", _standin_any, None),
               ("at", _standin_str, _STANDIN_REQUIRED))


class ModelCallRecord(_StandinRecord):
    """A model call made during the run (trace.model_calls)."""
    _fields = (("provider_id", _standin_str, _STANDIN_REQUIRED), ("model", _standin_str, _STANDIN_REQUIRED),
               ("prompt_tokens", _standin_int, _STANDIN_REQUIRED),
               ("completion_tokens", _standin_int, _STANDIN_REQUIRED), ("at", _standin_str, _STANDIN_REQUIRED))


class RunTrace(_StandinRecord):
    """The run a guardrail check judges (the `trace` of a check-invoke)."""
    _fields = (
        ("run_id", _standin_str, _STANDIN_REQUIRED), ("tenant_id", _standin_str, _STANDIN_REQUIRED),
        ("project_id", _standin_str, None), ("org_id", _standin_str, None),
        ("agent_id", _standin_str, None), ("flow_id", _standin_str, None),
        ("output", _standin_str, None),
        ("tool_calls", _standin_list_of(ToolCallRecord._standin_convert), []),
        ("tool_results", _standin_list_of(ToolResultRecord._standin_convert), []),
        ("model_calls", _standin_list_of(ModelCallRecord._standin_convert), []),
        ("user_input", _standin_str, None), ("retrieved_fact_ids", _standin_list_of(_standin_str), None),
        ("conversation_id", _standin_str, None), ("turn_number", _standin_int, None),
        ("total_cost_usd", _standin_float, None), ("duration_ms", _standin_float, None),
        ("mode", _standin_mode, "runtime"), ("attributes", _standin_dict, None))


class CheckResult(_StandinRecord):
    """A check's verdict: passed, plus optional reason, judge response, attributes."""
    _fields = (("passed", _standin_bool, _STANDIN_REQUIRED), ("reason", _standin_str, None),
               ("judge_response", _standin_str, None),
               ("attributes", _standin_dict, None))

    def __init__(self, passed=_STANDIN_REQUIRED, **fields):
        if passed is not _STANDIN_REQUIRED:
            fields["passed"] = passed
        super().__init__(**fields)


# --- Schemas: JSON Schema dicts, or pydantic when the pack brings it -------

def _standin_fixed_schema(source):
    """The JSON Schema of a type whose schema pydantic always gives the same, else None.

    dict and the mapping types are an open object, Any and object accept anything,
    None is null: those need no pydantic.  ``typing`` is looked up, not imported: an
    annotation from it means the pack imported it already.
    """
    typing = sys.modules.get("typing")
    if source in (dict, Mapping, MutableMapping) or (
            typing is not None and source in (typing.Dict, typing.Mapping, typing.MutableMapping)):
        return {"additionalProperties": True, "type": "object"}
    if source is object or (typing is not None and source is typing.Any):
        return {}
    if source is None or source is type(None):
        return {"type": "null"}
    return None


def wire_schema(source, mode="validation"):
    """The JSON Schema an index carries for ``source``, as the SDK derives it.

    A mapping is the schema already (copied).  A type is described as pydantic 2
    describes it in ``mode`` ("validation" or "serialization"): by alias, without the
    titles pydantic makes up, local ``$ref``s inlined except for recursive types.
    Without pydantic only the types of ``_standin_fixed_schema`` are known; any other
    raises TypeError.  The indexer uses this too (an agent's typed output).
    """
    if isinstance(source, Mapping):
        return dict(source)
    fixed = _standin_fixed_schema(source)
    if fixed is not None:
        return fixed
    try:
        from pydantic import BaseModel, TypeAdapter
    except ImportError:
        raise TypeError("the type %s needs pydantic 2, which is not installed: pass a JSON Schema "
                        "dict instead, or install pydantic" % getattr(source, "__name__", repr(source))) from None
    generator = _standin_schema_generator()
    if isinstance(source, type) and issubclass(source, BaseModel):
        schema = source.model_json_schema(by_alias=True, mode=mode, schema_generator=generator)
    else:
        schema = TypeAdapter(source).json_schema(by_alias=True, mode=mode, schema_generator=generator)
    return _standin_inline_refs(schema)


@functools.lru_cache(maxsize=None)
def _standin_schema_generator():
    """pydantic's schema generator, leaving out the titles it makes up.

    Fields get no title; a model keeps a title only when its own config sets one.
    """
    from pydantic.json_schema import GenerateJsonSchema

    class WireSchema(GenerateJsonSchema):
        def field_title_should_be_set(self, schema):
            return False

        def model_schema(self, schema):
            described = super().model_schema(schema)
            if schema["cls"].model_config.get("title") is None and isinstance(described.get("title"), str):
                del described["title"]
            return described

    return WireSchema


_STANDIN_DEFS = "#/$defs/"


def _standin_inline_refs(schema):
    """``schema`` with each ``#/$defs/X`` replaced by X's definition (its siblings kept).

    A definition reached again inside itself is recursive: there the reference stays,
    and the definition stays under ``$defs``.
    """
    defs = dict(schema.pop("$defs", {}))
    kept = set()

    def walk(node, inside):
        if isinstance(node, list):
            return [walk(item, inside) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        name = ref[len(_STANDIN_DEFS):] if isinstance(ref, str) and ref.startswith(_STANDIN_DEFS) else None
        if name is None or name in inside or name not in defs:
            if name is not None:
                kept.add(name)
            return {key: walk(value, inside) for key, value in node.items()}
        inlined = walk(defs[name], inside + (name,))
        inlined.update((key, walk(value, inside)) for key, value in node.items() if key != "$ref")
        return inlined

    out = walk(schema, ())
    recursive = {}
    pending = list(kept)
    while pending:   # a recursive definition's body may reference others that are recursive too
        name = pending.pop()
        if name in recursive or name not in defs:
            continue
        known = set(kept)
        recursive[name] = walk(defs[name], (name,))
        pending.extend(kept - known)
    if recursive:
        out["$defs"] = recursive
    return out


def _standin_schema(source, mode, where, what):
    """wire_schema(source) for a definition; DefinitionError as the SDK words it."""
    try:
        schema = wire_schema(source, mode)
    except Exception as cause:
        raise DefinitionError("%s: cannot derive the %s JSON Schema: %s" % (where, what, cause)) from cause
    if what == "input" and schema.get("type") != "object":   # a model calls a tool with an object
        raise DefinitionError("%s: the input must be an object type (a model, TypedDict, or object schema)"
                              % where)
    return schema


def _standin_has_pydantic():
    """Whether pydantic can be imported: without it, only a dict or a fixed type has a schema."""
    try:
        import pydantic  # noqa: F401
    except ImportError:
        return False
    return True


def _standin_adapter(annotation):
    """A pydantic TypeAdapter for a type whose values pydantic must parse, else None."""
    if annotation is None or isinstance(annotation, Mapping) or _standin_fixed_schema(annotation) is not None:
        return None
    from pydantic import TypeAdapter
    return TypeAdapter(annotation)


def _standin_awaited(annotation):
    """Awaitable[T] and Coroutine[..., T] stand for T (an async handler's return)."""
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and getattr(origin, "__name__", "") in ("Awaitable", "Coroutine"):
        args = getattr(annotation, "__args__", ())
        return args[-1] if args else sys.modules["typing"].Any
    return annotation


# --- Reading a handler: parameters, annotations, docstring -----------------

_CO_COROUTINE = 0x80              # inspect.CO_COROUTINE


def _standin_plain_function(fn):
    """A function read from its own code: not wrapped, no signature or marks put on it.

    Those are the common case; anything else is read with ``inspect``,
    imported then: it costs a tenth of the boot.
    """
    return type(fn) is types.FunctionType and not any(
        hasattr(fn, name) for name in ("__wrapped__", "__signature__", "_is_coroutine_marker"))


def _standin_params(fn, where):
    """The names of fn's positional parameters."""
    if _standin_plain_function(fn):
        code = fn.__code__
        return list(code.co_varnames[:code.co_argcount])   # positional-only ones included
    import inspect
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as cause:
        raise DefinitionError("%s: cannot read the function's signature" % where) from cause
    return [p.name for p in signature.parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


MAX_ANNOTATION_QUOTES = 8   # a string annotation whose value is a string, evaluated again up to this many times


def _standin_hints(fn, scope):
    """fn's annotations evaluated as typing.get_type_hints does, without importing typing.

    String annotations are evaluated in fn's globals and ``scope`` (the locals where the
    decorator was applied), again while that gives a string (``"In"`` under ``from
    __future__ import annotations`` is the text of a text), and so are names quoted inside
    a generic (``List["Out"]``); None stands for NoneType.  When one can't be evaluated,
    all are left as written, as the SDK leaves them.
    """
    annotations = getattr(fn, "__annotations__", None)
    if not isinstance(annotations, dict):
        return {}
    inner = fn
    while hasattr(inner, "__wrapped__"):
        inner = inner.__wrapped__
    namespace = getattr(inner, "__globals__", {})
    hints = {}
    for name, value in annotations.items():
        for _ in range(MAX_ANNOTATION_QUOTES):
            if not isinstance(value, str):
                break
            try:
                value = eval(value, namespace, scope)
            except Exception:
                return dict(annotations)
        if isinstance(value, str):   # quoted past reason ("X" where X = "X"): left as written
            return dict(annotations)
        try:
            if _standin_quotes_inside(value):
                value = _standin_eval_inside(value, namespace, scope)
        except Exception:
            return dict(annotations)
        hints[name] = type(None) if value is None else value
    return hints


def _standin_quotes_inside(annotation):
    """Whether a generic annotation holds a quoted name (``List["Out"]``, ``list["Out"]``).
    A ``Literal``'s strings are values, not names."""
    typing = sys.modules.get("typing")
    if typing is None:   # no generic from typing, nor a ForwardRef, can exist yet
        return False
    forward_ref = getattr(typing, "ForwardRef", None) or typing._ForwardRef   # Python 3.6: its name there
    builtin_generic = getattr(types, "GenericAlias", None)   # list[...] on 3.9+
    stack = [annotation]
    seen = set()
    while stack:
        item = stack.pop()
        args = getattr(item, "__args__", None)
        if not isinstance(args, tuple) or id(item) in seen:
            continue
        seen.add(id(item))
        for arg in args:
            if isinstance(arg, forward_ref) or (isinstance(arg, str) and type(item) is builtin_generic):
                return True
            stack.append(arg)
    return False


def _standin_eval_inside(annotation, namespace, scope):
    """``annotation`` with the names quoted inside it evaluated, by typing.get_type_hints as the
    SDK does, on a module that holds only it: a module's annotations are never made Optional
    for a None default, as a function's are before Python 3.11."""
    typing = sys.modules["typing"]
    holder = types.ModuleType("annotation")
    holder.__annotations__ = {"value": annotation}
    extras = {"include_extras": True} if sys.version_info >= (3, 9) else {}   # keep Annotated
    return typing.get_type_hints(holder, namespace, scope, **extras)["value"]


def _standin_caller_locals():
    """The locals where the decorator factory was called: a model defined in a function resolves."""
    return dict(sys._getframe(2).f_locals)


def _standin_is_async(fn):
    """True for coroutine functions and objects whose __call__ is one."""
    if _standin_plain_function(fn):
        return bool(fn.__code__.co_flags & _CO_COROUTINE)
    import inspect
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None))


def _standin_doc(fn):
    """fn's docstring as ``inspect.getdoc`` gives it (None without one)."""
    doc = fn.__doc__ if _standin_plain_function(fn) else None
    if not isinstance(doc, str) or "\n" in doc or "." in fn.__qualname__:
        import inspect   # a method may inherit its docstring; a multi-line one is cleaned
        return inspect.getdoc(fn)
    return doc.expandtabs().lstrip()


def _standin_require_id(value, where):
    if not isinstance(value, str) or value.strip() == "":
        raise DefinitionError("%s: id must be a non-empty string" % where)


SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$")   # semver.org's rule


def _standin_check_version(version, where):
    if version is not None and not SEMVER.match(version):
        raise DefinitionError("%s: version must be an exact semver (e.g. 1.2.3), got %r" % (where, version))


def _standin_caller_module(depth):
    """__name__ of the module of the frame `depth` levels above the calling function."""
    return sys._getframe(depth + 1).f_globals.get("__name__", "__main__")


def _standin_copy(value):
    """A dict copy of a mapping; None stays None."""
    return None if value is None else dict(value)


# --- Tools ------------------------------------------------------------------

class _StandinData:
    """Base of Tool, Guardrail, Agent and Flow: a data class made from ``_fields``.

    Built as a dataclass builds (positional or keyword arguments, defaults,
    ``__post_init__``, a repr without the ``_hidden`` fields), without the
    dataclasses module: it imports inspect, a tenth of the boot.  Equal only to
    itself, as the SDK's (``eq=False``).
    """

    _fields = ()   # ((name, default or _STANDIN_REQUIRED), ...), in order
    _hidden = ()

    def __init__(self, *args, **kwargs):
        # A wrong call is refused in the words (and the order of checks) Python 3.10+ uses
        # for a dataclass's __init__, the SDK's, so a file error reads the same either way.
        where = "%s.__init__()" % type(self).__name__
        names = [name for name, _ in self._fields]
        for name in kwargs:
            if name not in names:
                raise TypeError("%s got an unexpected keyword argument %r" % (where, name))
            if names.index(name) < len(args):
                raise TypeError("%s got multiple values for argument %r" % (where, name))
        required = [name for name, default in self._fields if default is _STANDIN_REQUIRED]
        if len(args) > len(names):   # counted with self, as Python counts them
            raise TypeError("%s takes from %d to %d positional arguments but %d were given"
                            % (where, len(required) + 1, len(names) + 1, len(args) + 1))
        kwargs.update(zip(names, args))
        missing = ["%r" % name for name in required if name not in kwargs]
        if missing:
            listed = missing[0] if len(missing) == 1 else "%s%s and %s" % (
                ", ".join(missing[:-1]), "," if len(missing) > 2 else "", missing[-1])
            raise TypeError("%s missing %d required positional argument%s: %s"
                            % (where, len(missing), "" if len(missing) == 1 else "s", listed))
        for name, default in self._fields:
            self.__dict__[name] = kwargs.get(name, default)
        self.__post_init__()

    def __post_init__(self):
        pass

    def __repr__(self):
        shown = ", ".join("%s=%r" % (name, self.__dict__[name]) for name, _ in self._fields
                          if name not in self._hidden)
        return "%s(%s)" % (type(self).__name__, shown)


def _standin_fields(required, **defaults):
    """``_fields`` of a data class: the required names in order, then those with defaults."""
    return tuple((name, _STANDIN_REQUIRED) for name in required.split()) + tuple(defaults.items())


class Tool(_StandinFrozen, _StandinData):
    """A tool: its handler plus what the service needs to call it and the indexer to list it."""

    _fields = _standin_fields(
        "id handler description version input_schema output_schema input_type output_type takes_context is_async",
        effects=(), mutating=None, needs_approval_when_unattended=None, needs=None, needs_spec=None,
        sandbox=None, limits=None, network=None, spec=None, module="", _input_adapter=None,
        _output_adapter=None)
    _hidden = ("_input_adapter", "_output_adapter")

    def __call__(self, *args, **kwargs):
        return self.handler(*args, **kwargs)

    def parse_input(self, value):
        """The handler's input: validated into the input type, or the value as is."""
        if self._input_adapter is None:
            return value
        return self._input_adapter.validate_python(value)

    def dump_output(self, value):
        """JSON-mode, by-alias dump of typed output; other values unchanged."""
        if self._output_adapter is not None:
            return self._output_adapter.dump_python(value, mode="json", by_alias=True,
                                                    warnings=False)
        if callable(getattr(value, "model_dump", None)):
            return value.model_dump(mode="json", by_alias=True)
        return value

    def invoke_args(self, value, ctx):
        """Positional arguments for the handler: (input,) or (input, ctx)."""
        return (value, ctx) if self.takes_context else (value,)

    def __class_getitem__(cls, params):
        """``Tool[..., dict]``: the SDK's Tool is generic, so pack code may write that in an
        annotation that runs at import (a module-level variable's); here it is Tool itself.
        (Python 3.6 never calls this: there the SDK's annotations can't run either.)"""
        return cls


def _standin_tool(*, id, version=None, description=None, input=None, output=None, effects=(),
                  mutating=None, needs_approval_when_unattended=None, needs=None,
                  needs_spec=None, sandbox=None, limits=None, network=None):
    """Decorator: turn `def handler(input[, ctx])` into a Tool (`kindgi.tool`).

    Refuses at definition what the SDK refuses, in its words: no description (nor
    docstring), a version that is not an exact semver, another parameter count, an
    input or output without a type, an input that is not an object.
    """
    scope = _standin_caller_locals()

    def decorate(handler):
        where = 'Tool "%s"' % (id,)
        _standin_require_id(id, where)
        _standin_check_version(version, where)
        text = description if description is not None else _standin_doc(handler)
        if not text:
            raise DefinitionError("%s needs a description (description= or a docstring)" % where)
        params = _standin_params(handler, where)
        if len(params) not in (1, 2):
            raise DefinitionError("%s: the handler takes (input) or (input, ctx), got %d parameters"
                                  % (where, len(params)))
        hints = _standin_hints(handler, scope)
        input_type = input if input is not None else hints.get(params[0])
        output_type = output if output is not None else hints.get("return")
        if input_type is None:
            raise DefinitionError("%s: annotate the handler's input parameter or pass input=" % where)
        if output_type is None:
            raise DefinitionError("%s: annotate the handler's return type or pass output=" % where)
        input_type = _standin_awaited(input_type)
        output_type = _standin_awaited(output_type)
        return Tool(
            id=id, handler=handler, description=text, version=version,
            input_schema=_standin_schema(input_type, "validation", where, "input"),
            output_schema=_standin_schema(output_type, "serialization", where, "output"),
            input_type=input_type, output_type=output_type, takes_context=len(params) == 2,
            is_async=_standin_is_async(handler), effects=tuple(effects), mutating=mutating,
            needs_approval_when_unattended=needs_approval_when_unattended, needs=needs,
            needs_spec=needs_spec, sandbox=sandbox, limits=limits, network=network,
            module=handler.__module__, _input_adapter=_standin_adapter(input_type),
            _output_adapter=_standin_adapter(output_type))
    return decorate


_STANDIN_PLACEHOLDER = re.compile(r"\{(\w+)\}")   # a {name} the runtime fills from the input


def _standin_http_tool(*, id, description, input, output, method, url_template, headers=None,
                       authorization=None, request_body=None, timeout_ms=None, parse_json=None,
                       success_status=None, version=None, effects=(), mutating=None,
                       needs_approval_when_unattended=None):
    """An HTTP tool: data for the Kindgi runtime (the index carries its spec); its handler
    refuses to run here.  The spec is checked against the kindgi tool schema."""
    where = 'Tool "%s"' % (id,)
    _standin_require_id(id, where)
    _standin_check_version(version, where)
    if description.strip() == "":
        raise DefinitionError("%s needs a description" % where)
    input_schema = _standin_schema(input, "validation", where, "input")
    spec = {key: value for key, value in (
        ("kind", "http"), ("method", method), ("urlTemplate", url_template),
        ("headers", None if headers is None else [{"name": n, "value": v} for n, v in headers.items()]),
        ("authorization", _standin_copy(authorization)), ("requestBody", _standin_copy(request_body)),
        ("timeoutMs", timeout_ms), ("parseJson", parse_json),
        ("successStatus", None if success_status is None else {"min": success_status[0],
                                                               "max": success_status[1]}),
    ) if value is not None}
    try:
        import kindgi_pack_index   # the kindgi tool schema and the SDK's way of checking it
    except ImportError:
        raise DefinitionError("%s: an http_tool's spec is checked with kindgi_pack_index.py, which is "
                              "not beside kindgi_pack_min.py: copy it there, or use the one-file "
                              "kindgi_pack_min.pyz" % where) from None
    problem = kindgi_pack_index.http_spec_problem(spec)
    if problem is not None:
        raise DefinitionError("%s: not a valid HTTP tool spec: %s" % (where, problem))
    templates = [url_template]
    if request_body is not None and request_body.get("kind") == "text":
        templates.append(str(request_body.get("template", "")))
    unknown = sorted({name for text in templates for name in _STANDIN_PLACEHOLDER.findall(text)}
                     - set(input_schema.get("properties", {})))
    if unknown:
        raise DefinitionError("%s: %s not a field of the input, which fills placeholders"
                              % (where, ", ".join("{%s}" % name for name in unknown)))

    def runs_in_kindgi(*args, **kwargs):
        raise RuntimeError("%s is an HTTP tool: the Kindgi runtime makes its request, not Python. "
                           "Call it through Kindgi (an agent, a flow, `kindgi dev`)." % where)

    return Tool(
        id=id, handler=runs_in_kindgi, description=description, version=version,
        input_schema=input_schema, output_schema=_standin_schema(output, "serialization", where, "output"),
        input_type=input, output_type=output, takes_context=False, is_async=False,
        effects=tuple(effects), mutating=mutating,
        needs_approval_when_unattended=needs_approval_when_unattended, spec=spec,
        module=_standin_caller_module(1), _input_adapter=_standin_adapter(input),
        _output_adapter=_standin_adapter(output))


# --- Guardrails ---------------------------------------------------------------

class Guardrail(_StandinFrozen, _StandinData):
    """A guardrail: its check function plus how to parse its config and trace."""

    _fields = _standin_fields(
        "id check check_id kind action", name=None, severity=None, scope=None, config=None,
        config_schema=None, config_type=None, trace_is_model=True, is_async=False, sandbox=None,
        limits=None, network=None, module="", _config_adapter=None)
    _hidden = ("_config_adapter",)

    def __call__(self, config, trace):
        return self.check(config, trace)

    def parse_config(self, value):
        """The check's config: validated into its type, or a plain dict."""
        if self._config_adapter is None:
            return dict(value)
        return self._config_adapter.validate_python(value)

    def parse_trace(self, value):
        """A RunTrace (ValidationError on failure), or the raw value for other annotations."""
        return RunTrace.from_wire(value) if self.trace_is_model else value


def _standin_untyped_config(annotation):
    """A config annotation that means "a plain dict": dict, Mapping or Any (no configSchema)."""
    typing = sys.modules.get("typing")
    return annotation in (dict, Mapping) or (typing is not None and annotation is typing.Any)


def _standin_guardrail(*, id, kind="zero-llm", on_violation=None, action=None, name=None,
                       severity=None, scope=None, check_id=None, config=None, config_type=None,
                       sandbox=None, limits=None, network=None):
    """Decorator: turn `def check(config, trace)` into a Guardrail (`kindgi.guardrail`).

    Refuses at definition what the SDK refuses, in its words: a built-in check's id,
    both or neither of on_violation= and action=, another parameter count, a config=
    that does not fit the config type.
    """
    scope_locals = _standin_caller_locals()

    def decorate(check):
        where = 'Guardrail "%s"' % (id,)
        _standin_require_id(id, where)
        resolved_check_id = check_id or id
        if resolved_check_id in RESERVED_CHECK_IDS:
            raise DefinitionError(
                '%s: its check id "%s" is a built-in check\'s, and a pack can\'t replace a built-in. '
                'Rename your check (check_id="<pack>.checks.%s")%s.'
                % (where, resolved_check_id, resolved_check_id, "" if check_id else ", or rename the guardrail"))
        if (on_violation is None) == (action is None):
            raise DefinitionError("%s: pass exactly one of on_violation= or action=" % where)
        resolved_action = action if action is not None else {"on-violation": on_violation}
        if not isinstance(resolved_action.get("on-violation"), str):
            raise DefinitionError('%s: action needs a string "on-violation"' % where)
        params = _standin_params(check, where)
        if len(params) != 2:
            raise DefinitionError("%s: the check takes (config, trace), got %d parameters"
                                  % (where, len(params)))
        hints = _standin_hints(check, scope_locals)
        config_of = config_type if config_type is not None else hints.get(params[0])
        if _standin_untyped_config(config_of):
            config_of = None
        adapter = _standin_adapter(config_of)
        if config is not None and adapter is not None:
            try:
                adapter.validate_python(dict(config))
            except Exception as cause:
                raise DefinitionError("%s: config does not fit its type: %s" % (where, cause)) from cause
        trace_hint = hints.get(params[1])
        return Guardrail(
            id=id, check=check, check_id=resolved_check_id, kind=kind, action=dict(resolved_action),
            name=name, severity=severity, scope=scope, config=_standin_copy(config),
            config_schema=None if config_of is None else _standin_schema(config_of, "validation", where,
                                                                          "config"),
            config_type=config_of, trace_is_model=trace_hint is None or trace_hint is RunTrace,
            is_async=_standin_is_async(check), sandbox=sandbox, limits=limits, network=network,
            module=check.__module__, _config_adapter=adapter)
    return decorate


def _standin_public(fn, name):
    """``fn`` under the SDK's name for it, so that calling it wrongly (``@tool()`` without an id)
    raises the TypeError the SDK's raises, ``tool() missing ...``: a boot problem, and the
    indexer's file error, read as the SDK's.  Python 3.6 and 3.7: a code object has no
    ``replace()``, and the message keeps this module's name."""
    fn.__name__ = fn.__qualname__ = name
    if hasattr(fn.__code__, "replace"):
        fn.__code__ = fn.__code__.replace(co_name=name)


for _name, _fn in (("tool", _standin_tool), ("http_tool", _standin_http_tool), ("guardrail", _standin_guardrail)):
    _standin_public(_fn, _name)
del _name, _fn


# --- Agents and flows (data only) -------------------------------------------

class _StandinDefinition(_StandinData):
    """Base of Agent and Flow: records the defining module, checks the fields."""

    _hidden = ("module",)

    def __post_init__(self):
        if not self.module:
            self.module = _standin_caller_module(2)
        where = '%s "%s"' % (self._kind, self.id)
        _standin_require_id(self.id, where)
        self._standin_check(where)

    def _standin_check(self, where):
        pass


class Agent(_StandinDefinition):
    """An agent definition: data for the index; the service only needs it to import."""

    _kind = "Agent"
    _fields = _standin_fields(
        "id version name instructions", capabilities=(), tools=(), retrieval=(), guardrails=(),
        parameters=(), budget=None, preferred_provider=None, preferred_model=None, description=None,
        tags=None, conversation_policy=None, output=None, tool_errors=None, settings=(),
        model_settings=None, memory=None, module="")

    def _standin_check(self, where):
        if not SEMVER.match(self.version):
            raise DefinitionError("%s: version must be an exact semver, got %r" % (where, self.version))
        if not isinstance(self.instructions, str):
            ref = self.instructions
            if not isinstance(ref.get("prompt"), str) or not isinstance(ref.get("version"), str):
                raise DefinitionError('%s: instructions must be a string, or a prompt block {"prompt", '
                                      '"version"}' % where)
        output = self.output
        if isinstance(output, Mapping) and "schema" in output:
            output = output["schema"]
        if isinstance(output, Mapping) or _standin_fixed_schema(output) is not None or output is None:
            return
        if not _standin_has_pydantic():   # else the indexer derives the schema, as the SDK's does
            _standin_schema(output, "validation", where, "output")


class Flow(_StandinDefinition):
    """A flow definition: data for the index; the service only needs it to import."""

    _kind = "Flow"
    _fields = _standin_fields("id version nodes edges", name=None, description=None, max_parallelism=None,
                              metadata=None, output=None, module="")


# --- Installing the modules -------------------------------------------------

_standin_installed = {}


def _standin_module(name, attrs, doc, exported=None):
    """A module object that the import system treats as already imported.

    ``exported``: its ``__all__``, the names the SDK's module lists, so that ``from kindgi
    import *`` brings what it brings there (``__version__``, and not ``log``, which would hide a
    pack's own); by default every public name.
    """
    is_package = "." not in name or name == "kindgi.pack"
    module = types.ModuleType(name, doc)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=is_package)
    module.__loader__ = None
    module.__package__ = name if is_package else name.rpartition(".")[0]
    if is_package:
        module.__path__ = []
    module.__dict__.update(attrs)
    if exported is not None:
        module.__all__ = list(exported)
    return module


def install_standin(get_logger=None):
    """Register the stand-in `kindgi` modules in sys.modules; return `kindgi`.

    get_logger(subsystem, **bindings) supplies `kindgi.log.get_logger`
    loggers (default: no-op).  Installing again replaces an earlier stand-in.
    """
    standin_get_logger = logger_getter(get_logger or (lambda subsystem, **bindings: _STANDIN_NOOP_LOGGER))
    remove_standin()
    context = {"ToolContext": ToolContext, "Cancellation": Cancellation,
               "CallCancelled": CallCancelled, "CancelReason": str}   # typing's Literal in the SDK
    trace = {"RunTrace": RunTrace, "ToolCallRecord": ToolCallRecord,
             "ToolResultRecord": ToolResultRecord, "ModelCallRecord": ModelCallRecord,
             "CheckResult": CheckResult}
    define = {"tool": _standin_tool, "guardrail": _standin_guardrail,
              "http_tool": _standin_http_tool, "Tool": Tool, "Guardrail": Guardrail,
              "Agent": Agent, "Flow": Flow, "DefinitionError": DefinitionError,
              "RESERVED_CHECK_IDS": RESERVED_CHECK_IDS, "CheckResult": CheckResult,
              "RunTrace": RunTrace, "ToolContext": ToolContext,
              "Primitive": (Tool, Guardrail, Agent, Flow)}   # a Union in the SDK: isinstance works alike
    modules = {
        "kindgi.pack.context": _standin_module("kindgi.pack.context", context, "Call context.", sorted(context)),
        "kindgi.pack.trace": _standin_module("kindgi.pack.trace", trace, "Trace records.", sorted(trace)),
        "kindgi.pack.define": _standin_module("kindgi.pack.define", define, "Definitions.", (
            "Agent", "Flow", "Guardrail", "Primitive", "Tool", "guardrail", "http_tool", "tool")),
        "kindgi.log": _standin_module("kindgi.log", {   # what pack code imports for type hints and masking too
            "get_logger": standin_get_logger, "Logger": PackLogger, "noop_logger": _STANDIN_NOOP_LOGGER,
            "REDACTED": "[redacted]", "scrub_text": lambda text: scrub_text(text)}, "Logging for pack code."),
    }
    modules["kindgi.pack"] = _standin_module("kindgi.pack", {
        "context": modules["kindgi.pack.context"], "trace": modules["kindgi.pack.trace"],
        "define": modules["kindgi.pack.define"]}, "Pack primitives.")
    top = dict(define, **context, **trace)
    for name in ("RESERVED_CHECK_IDS", "Primitive", "CancelReason"):   # not at the SDK's top level
        del top[name]
    top.update(__version__=STANDIN_VERSION, pack=modules["kindgi.pack"], log=modules["kindgi.log"])
    modules["kindgi"] = _standin_module("kindgi", top, "Stand-in for the Kindgi SDK "
                                        "(kindgi_pack_min, no SDK installed).", sorted(set(top) - {"pack", "log"}))
    _standin_installed.update(modules)
    sys.modules.update(modules)
    return modules["kindgi"]


def logger_getter(factory):
    """``kindgi.log.get_logger`` for pack code, its loggers made by ``factory(subsystem, **bindings)``."""
    def get_logger(*subsystem, **bindings):
        """get_logger(subsystem="root", /, **bindings): a logger for pack code, from the service's factory.

        Python 3.6 and 3.7 have no positional-only parameters: ``*subsystem`` stands for one.
        """
        if len(subsystem) > 1:
            raise TypeError("get_logger() takes at most 1 positional argument (%d given)" % len(subsystem))
        return factory(subsystem[0] if subsystem else "root", **bindings)   # the SDK's default
    return get_logger


def remove_standin():
    """Remove stand-in modules from sys.modules (modules of a real SDK are left alone)."""
    for name, module in list(_standin_installed.items()):
        if sys.modules.get(name) is module:
            del sys.modules[name]
    _standin_installed.clear()


if __name__ == "__main__":
    sys.exit(main())
