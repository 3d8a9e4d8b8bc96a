#!/usr/bin/env python3
"""kindgi-pack-min: a Kindgi pack service in one file, standard library only.

A Kindgi runtime sends this service tool calls and guardrail checks over HTTP
(Pack protocol v2); the service runs the pack's Python code and answers.

    KINDGI_PACK_SERVICE_TOKEN=... python kindgi_pack_min.py --index /app/index.json

The contract, in the order a call meets it:

* Routes: ``POST /v1/invoke`` and ``GET /v1/info`` (both need the
  ``kindgi-pack-token`` header), ``GET /healthz`` and ``GET /readyz`` (open).
  A request is checked in this order: unknown path 404, wrong method 405, bad
  token 401, tenant pin 421, then for invokes: not ready / draining / at the
  concurrency cap 503 with ``retry-after``, content type 415, body over 10 MiB
  413.  None of those ever reaches pack code.
* Every outcome of running pack code is a 200 response message: ``result``,
  ``check-result`` or ``error`` with one of the 14 protocol error codes.
  Answers to invokes carry ``kindgi-duration-ms`` and
  ``kindgi-artifact-version``.  A 500 means the service itself failed; it is
  logged and the process keeps serving.
* ``kindgi-timeout-ms`` (default 120000) is answered on time with
  ``deadline-exceeded`` while a sync handler keeps its thread; a caller that
  leaves gets its call cancelled.  Either way the call's ``Cancellation``
  fires and the call stops counting toward the cap.
* Process: the token is read, then put out of pack code's reach (its bytes in
  the process's initial environment block are overwritten; where that can't
  be done, the process re-executes itself with a clean environment and
  receives the token over an inherited pipe); undeclared environment
  variables are dropped; every pack module is imported before listening; a
  ``listening`` JSON line goes to stderr; SIGTERM or SIGINT drains in-flight
  calls for up to 8 s, then the process writes ``stopped`` and exits 0.  A
  second signal ends the drain.

The protocol is Pack protocol v2 (schema 2.7.0, with tenant pinning and
``indexHash``).  Nothing here needs more than the interpreter: Python 3.8+.
The sections below follow a call: records, configuration, the token hand-over,
the stand-in ``kindgi`` module, the pack, the calls, the watchman that keeps
deadlines, the HTTP layer, and the process.
"""

import signal
import sys

if __name__ == "__main__":
    # Hold SIGTERM and SIGINT until main() has handlers for them: a held signal
    # waits, where an unhandled one kills the service (or, as PID 1, is ignored).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})

import functools  # noqa: E402  (the imports below take time the signals must not be lost in)
import importlib
import importlib.machinery
import io
import json
import os
import re
import selectors
import socket
import socketserver
import threading
import time
import types
from _operator import _compare_digest as compare_digest   # hmac's, without loading OpenSSL
from array import array                 # socket's; the struct module is not loaded for one timeval
from collections.abc import Mapping, MutableMapping


# http.server imports modules that only its file server and its own header
# parser use: http.client (with the email package and OpenSSL), email.utils,
# html, mimetypes, shutil, datetime, urllib.parse, copy.  This service uses
# neither part (it reads heads itself), and those modules cost its boot ~15 ms
# and 3 MB.  So while http.server loads they are stand-ins that import the real
# module the first time anything uses them; afterwards none is left in
# sys.modules, and pack code imports the real modules as usual.
LOADED_ON_FIRST_USE = ("http.client", "email.utils", "html", "mimetypes", "shutil", "datetime", "urllib.parse",
                       "copy")


class _ModuleOnFirstUse(types.ModuleType):
    """A module as http.server holds it: the real one, imported when first used."""

    def __getattr__(self, name):
        return getattr(self._real(), name)

    def __setattr__(self, name, value):
        setattr(self._real(), name, value)

    def _real(self):
        if sys.modules.get(self.__name__) is self:   # used while http.server loads (3.8's mimetypes)
            del sys.modules[self.__name__]
        return importlib.import_module(self.__name__)


class _ClassOnFirstUse:
    """``BaseHTTPRequestHandler.MessageClass``: http.client's HTTPMessage, looked up when used."""

    def __get__(self, handler, cls=None):
        return importlib.import_module("http.client").HTTPMessage


def _import_http_server():
    """http.server's two classes, imported with ``LOADED_ON_FIRST_USE`` as stand-ins."""
    placed = []
    for name in LOADED_ON_FIRST_USE:
        if name not in sys.modules:
            standin = sys.modules[name] = _ModuleOnFirstUse(name)
            placed.append(standin)
            package, _, child = name.rpartition(".")
            if package:   # `import http.client` reads it from the package; a real import replaces it
                setattr(importlib.import_module(package), child, standin)
            if name == "http.client":   # read by BaseHTTPRequestHandler's class body
                standin.__dict__["HTTPMessage"] = _ClassOnFirstUse()
    try:
        module = importlib.import_module("http.server")
    finally:
        for standin in placed:
            standin.__dict__.pop("HTTPMessage", None)
            if sys.modules.get(standin.__name__) is standin:
                del sys.modules[standin.__name__]
    return module.BaseHTTPRequestHandler, module.ThreadingHTTPServer


BaseHTTPRequestHandler, ThreadingHTTPServer = _import_http_server()

try:   # hashlib would load OpenSSL (3.7 MB) for the one digest taken at boot
    from _sha2 import sha256           # Python 3.12+
except ImportError:
    try:
        from _sha256 import sha256
    except ImportError:                # a build without the built-in hashes
        from hashlib import sha256

import schema_lite  # noqa: E402

__all__ = [
    "main",
    "Config",
    "read_config",
    "Records",
    "Pack",
    "PackService",
    "PackHTTPServer",
    "PackRequestHandler",
    "install_standin",
]

__version__ = "0.1.0"

PROTOCOL = 2
PROTOCOL_SCHEMA_VERSION = "2.7.0"
MAX_BODY = 10 * 1024 * 1024          # 10 MiB; exactly this much is accepted
DEFAULT_TIMEOUT_MS = 120000
MAX_TIMEOUT_MS = 10 ** 12            # "no upper cap": this is 31 years
DEFAULT_MAX_CONCURRENCY = 32
DRAIN_SECONDS = 8.0
MAX_CONNECTIONS = 1024               # open sockets; threads stay bounded
IDLE_SECONDS = 15.0                  # keep-alive wait for the next request line
HEAD_SECONDS = 10.0                  # to read the rest of a request head
BODY_SECONDS = 30.0                  # to read a whole body
LINGER_SECONDS = 2.0                 # to drop an unread body before closing
SOCKET_SECONDS = 10.0                # any single read or write
SOCKET_TIMEVAL = array("l", (int(SOCKET_SECONDS), 0)).tobytes()   # as a C struct timeval
MAX_HEAD_LINE = 8192
MAX_HEAD_BYTES = 65536
MAX_HEADERS = 100
MAX_INT_DIGITS = 4300                # Python 3.11+'s int/str limit, kept on every version
RECORD_BATCH_SECONDS = 0.005        # how long a record may wait to be written with others
MAX_WAITING_RECORDS = 4096           # beyond these, records are written by the thread making them
MAX_BATCHED_RECORD = 4096            # longer records are written at once
JSON_CONTENT_TYPE = "application/json; charset=utf-8"


# ---------------------------------------------------------------------------
# Records: JSON lines on stderr
# ---------------------------------------------------------------------------

LEVELS = ("error", "warn", "info", "debug", "trace")
SEVERITY = {"error": "ERROR", "warn": "WARNING", "info": "INFO", "debug": "DEBUG", "trace": "DEBUG"}
CORRELATION_KEYS = ("traceId", "spanId", "requestId", "tenantId", "projectId", "orgId", "runId", "toolId")
OWN_KEYS = frozenset(("time", "level", "severity", "subsystem", "message", "event", "kind") + CORRELATION_KEYS)
SECRET_KEY = re.compile(
    r"token|secret|passw|authorization|api[-_]?key|cookie|credential|private[-_]?key|session", re.I)


def _redact(value, depth=0):
    """A copy of a record field with secret-looking keys' values replaced."""
    if depth > 20:
        return "[deep]"
    if isinstance(value, Mapping):
        return {str(k): "[redacted]" if SECRET_KEY.search(str(k)) else _redact(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v, depth + 1) for v in value]
    return value


def _without(value, secret, depth=0):
    """A copy of a record with ``secret`` cut out of every string in it (keys stay as they are)."""
    if isinstance(value, str):
        return value.replace(secret, "[redacted]")
    if depth > 20:
        return "[deep]"
    if isinstance(value, Mapping):
        return {k: _without(v, secret, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_without(v, secret, depth + 1) for v in value]
    return value


def _utc_now():
    now = time.time()
    return _utc_second(int(now)) + ".%03dZ" % (int(now * 1000) % 1000)


@functools.lru_cache(maxsize=2)
def _utc_second(second):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))


def _record_encoder():
    """The JSON encoder for records, made once.

    Records are acyclic by construction (pack code's fields come through
    ``_redact``, which copies them), so one C encoder without a cycle check
    serves every thread: a third faster than ``JSONEncoder.encode``, which
    makes a new one per call.
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:   # an interpreter without the _json accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=repr,
                                check_circular=False).encode
    encode = make(None, repr, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    return lambda record: "".join(encode(record, 0))


_dump_record = _record_encoder()
_json_string = json.encoder.encode_basestring   # a str as a JSON string, non-ASCII kept

# The `call` record's fields in the order write() would put them: ids, event, the rest.
CALL_RECORD = ('{"time":"%s","level":"%s","severity":"%s","subsystem":"pack","message":%s,%s'
               '"event":"call","kind":"call",%s%s"target":"%s","id":%s,"outcome":%s,"durationMs":%d,'
               '"inMessage":["target","id","outcome","durationMs"]}')


class Records:
    """Writes the service's records to a file descriptor, one per line.

    JSON by default (``pretty`` for a human at a terminal).  Lifecycle records
    pass whatever the level; others are filtered by the level of their
    subsystem (``KINDGI_LOG_LEVELS``), else ``KINDGI_LOG_LEVEL``.  The token
    is cut out of any string that would carry it (a caller can send it in a
    body); fields from pack code with secret-looking names are redacted by
    ``PackLogger``.
    """

    def __init__(self, fd=2, level="info", levels=None, pretty=False):
        self.fd = fd
        self.rank = LEVELS.index(level)
        self.ranks = {name: LEVELS.index(lv) for name, lv in (levels or {}).items()}
        self.known = {}   # (level, subsystem) -> enabled, as worked out
        self.pretty = pretty
        self.secret = None   # the token: caller-sent text can carry it into a record
        self.lock = threading.Lock()   # held through every write to the file descriptor
        self.waiting = []              # encoded records for the writer thread, in order
        self.wake_writer = threading.Event()
        self.writer = None             # the writer thread, once start_writer() has run

    def enabled(self, level, subsystem="pack"):
        try:
            return self.known[level, subsystem]
        except KeyError:
            rank = self.ranks.get(subsystem)
            if rank is None:
                rank = self.ranks.get(subsystem.split(".", 1)[0], self.rank)
            answer = LEVELS.index(level) <= rank
            if len(self.known) < 256:   # pack code names subsystems: keep the table small
                self.known[level, subsystem] = answer
            return answer

    def write(self, level, message, event=None, subsystem="pack", always=False, fields=None,
              lock_timeout=-1):
        """Write one record; ``always`` is for lifecycle records, written at once.

        With ``lock_timeout``, a record that can't have the lock in time is
        written anyway, on a line of its own: the last words of a process
        whose stderr is stuck mid-record.
        """
        if not always and not self.enabled(level, subsystem):
            return
        record = {"time": _utc_now(), "level": level, "severity": SEVERITY[level],
                  "subsystem": subsystem, "message": str(message)}
        fields = fields or {}
        record.update([(key, fields[key]) for key in CORRELATION_KEYS if key in fields])
        if event:
            record["event"] = record["kind"] = event
        record.update([item for item in fields.items() if item[0] not in OWN_KEYS])
        line = self._line(record)
        if self.secret and self.secret in line:
            line = self._line(_without(record, self.secret))
        self._emit(line, lock_timeout, at_once=always)

    def write_json(self, line, level, message, event):
        """Write a record the caller has formatted as JSON (``PackService.call_record``).

        Pretty output, and a line that would show the token, are made by
        ``write`` from the same fields.
        """
        if self.pretty or (self.secret and self.secret in line):
            return self.write(level, message, event=event, fields=json.loads(line))
        self._emit(line)

    def _emit(self, line, lock_timeout=-1, at_once=False):
        """Write one record, or leave it for the writer thread.

        Once serving, records wait up to RECORD_BATCH_SECONDS and go out
        together: a write(2) per call hands the interpreter to another thread
        and back, a fifth of an echo call.  Lifecycle records, long ones and
        any record made when too many wait are written at once, after those
        waiting, so the order holds.
        """
        data = (line + "\n").encode("utf-8", "backslashreplace")
        waiting = self.waiting
        if self.writer is not None and not at_once and len(data) <= MAX_BATCHED_RECORD \
                and len(waiting) < MAX_WAITING_RECORDS:
            waiting.append(data)
            if not self.wake_writer.is_set():
                self.wake_writer.set()
            return
        if not self.lock.acquire(timeout=lock_timeout):
            return self._write_all(b"\n" + data)   # stderr is stuck mid-record: last words on their own line
        try:
            self._write_waiting()
            self._write_all(data)
        finally:
            self.lock.release()

    def start_writer(self):
        """From now on, records are written in batches by a thread of their own."""
        self.writer = threading.Thread(target=self._write_batches, name="records", daemon=True)
        self.writer.start()

    def _write_batches(self):
        while True:
            self.wake_writer.wait()
            time.sleep(RECORD_BATCH_SECONDS)   # let a batch gather
            self.wake_writer.clear()           # before taking it: a record added later wakes the next round
            with self.lock:
                self._write_waiting()

    def _write_waiting(self):
        """Write the records waiting for the writer thread; the caller holds the lock.

        Other threads only ever append, so the first ``count`` stay put.
        """
        waiting = self.waiting
        count = len(waiting)
        if count:
            batch = b"".join(waiting[:count])
            del waiting[:count]
            self._write_all(batch)

    def _write_all(self, data):
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view):]
        except OSError:
            pass  # stderr gone: nothing better to do than keep serving

    def _line(self, record):
        if self.pretty:
            return self._pretty(record)
        return _dump_record(record)

    @staticmethod
    def _pretty(record):
        rest = " ".join("%s=%s" % (k, json.dumps(v, ensure_ascii=False, default=repr))
                        for k, v in record.items()
                        if k not in ("time", "level", "severity", "subsystem", "message", "kind"))
        return "%s %-5s %s %s%s" % (record["time"][11:23], record["level"].upper(),
                                    record["subsystem"], record["message"],
                                    "  " + rest if rest else "")


def _log_at(level):
    """PackLogger's method for one level: ``log(message, fields=None, *, in_message=None, **kw)``."""
    def log(self, message, fields=None, *, in_message=None, **kw):
        self._log(level, message, fields, in_message, **kw)
    log.__name__, log.__qualname__ = level, "PackLogger." + level
    return log


class PackLogger:
    """The logger pack code gets as ``ctx.log`` and from ``kindgi.log``."""

    def __init__(self, records, subsystem="pack", bindings=None):
        self._records = records
        self._subsystem = subsystem
        self._bindings = dict(bindings or {})

    def _log(self, level, message, fields=None, in_message=None, **kw):
        if not self._records.enabled(level, self._subsystem):
            return
        merged = dict(self._bindings)
        merged.update(fields or {})
        merged.update(kw)
        if in_message:
            merged["inMessage"] = list(in_message)
        self._records.write(level, message, subsystem=self._subsystem, fields=_redact(merged))

    error, warn, info, debug, trace = (_log_at(level) for level in LEVELS)
    warning = warn

    def child(self, bindings=None, **kw):
        merged = dict(self._bindings)
        merged.update(bindings or {})
        subsystem = kw.pop("subsystem", self._subsystem)
        merged.update(kw)
        return PackLogger(self._records, subsystem, merged)

    def is_level_enabled(self, level):
        return level in LEVELS and self._records.enabled(level, self._subsystem)


# ---------------------------------------------------------------------------
# Configuration: arguments and environment, every problem at once
# ---------------------------------------------------------------------------

USAGE = """\
usage: kindgi_pack_min.py [--index PATH] [--module-root DIR] [--host ADDR] [--check]
                          [--help] [--version]

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
  KINDGI_PACK_SERVICE_MAX_CONCURRENCY  calls in flight before 503 overloaded (default 32)
  KINDGI_PACK_TENANT_ID                pin the service to one tenant (protocol 2.7.0)
  KINDGI_PACK_ENV_CHECK                strict (default) or warn: missing env.required names
  KINDGI_PACK_ENV_FILTER               on (default) or off: drop undeclared variables
  KINDGI_LOG_LEVEL                     error, warn, info (default), debug or trace
  KINDGI_LOG_LEVELS                    per subsystem, e.g. pack=debug,pack.tool=warn
  KINDGI_LOG_FORMAT                    auto (default), json or pretty
"""


class Config:
    """What the arguments and the environment say, checked."""

    def __init__(self):
        self.index_path = "/app/index.json"
        self.module_root = None
        self.host = ""
        self.port = 8080
        self.token = ""
        self.max_concurrency = DEFAULT_MAX_CONCURRENCY
        self.env_check = "strict"
        self.env_filter = True
        self.tenant_id = None
        self.check_only = False
        self.action = None           # "help" or "version"
        self.log_level = "info"
        self.log_levels = {}
        self.log_format = "auto"


def read_log_config(environ, config):
    """The three logging variables; a problem here is reported alone."""
    level = environ.get("KINDGI_LOG_LEVEL", "").strip().lower()
    if level:
        if level not in LEVELS:
            return 'KINDGI_LOG_LEVEL must be one of error, warn, info, debug, trace, got "%s".' % level
        config.log_level = level
    for entry in filter(None, (e.strip() for e in environ.get("KINDGI_LOG_LEVELS", "").split(","))):
        name, _, lv = entry.partition("=")
        if not name.strip() or lv.strip().lower() not in LEVELS:
            return ('KINDGI_LOG_LEVELS: "%s" isn\'t subsystem=level '
                    '(levels: error, warn, info, debug, trace).' % entry)
        config.log_levels[name.strip()] = lv.strip().lower()
    fmt = environ.get("KINDGI_LOG_FORMAT", "").strip().lower()
    if fmt:
        if fmt not in ("auto", "json", "pretty"):
            return 'KINDGI_LOG_FORMAT must be auto, json or pretty, got "%s".' % fmt
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


def read_config(argv, environ):
    """Return ``(config, problems)``: every problem found, not just the first."""
    config = Config()
    problems = []
    log_problem = read_log_config(environ, config)
    if log_problem:
        return config, [log_problem]
    if not _take_arguments(argv, config, problems) and environ.get("KINDGI_PACK_INDEX"):
        config.index_path = environ["KINDGI_PACK_INDEX"]
    if config.action:
        return config, []
    config.token = environ.get("KINDGI_PACK_SERVICE_TOKEN", "").strip()
    if not config.token:
        problems.append("KINDGI_PACK_SERVICE_TOKEN is required")
    elif any(not 0x21 <= ord(c) <= 0x7E for c in config.token):
        problems.append("KINDGI_PACK_SERVICE_TOKEN may hold only printable ASCII without spaces "
                        "(it travels in an HTTP header). Use a random value such as "
                        "`openssl rand -hex 32`.")
    port = environ.get("PORT")
    if port is not None:
        if port.isdigit() and port.isascii() and int(port) <= 65535:
            config.port = int(port)
        else:
            problems.append("PORT must be a port number, got %s" % json.dumps(port))
    cap = environ.get("KINDGI_PACK_SERVICE_MAX_CONCURRENCY")
    if cap is not None:
        if cap.strip().isdigit() and cap.strip().isascii() and int(cap) >= 1:
            config.max_concurrency = int(cap)
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
    tenant = environ.get("KINDGI_PACK_TENANT_ID", "").strip()
    if tenant:
        if any(not 0x21 <= ord(c) <= 0x7E for c in tenant):
            problems.append("KINDGI_PACK_TENANT_ID may hold only printable ASCII without spaces "
                            "(it must match the kindgi-tenant-id header), got %s" % json.dumps(tenant))
        config.tenant_id = tenant
    if config.module_root is None:
        config.module_root = os.path.dirname(os.path.abspath(config.index_path))
    return config, problems


# ---------------------------------------------------------------------------
# The token hand-over and the environment filter
#
# Deleting a variable from os.environ leaves it in /proc/self/environ, which
# pack code can read: that file shows the environment block the process was
# started with, in the process's own memory.  So once the token and the
# undeclared variables are unset, their bytes in that block are overwritten
# (through /proc/self/mem; the block's bounds are in /proc/self/stat and
# nothing points at those bytes any more), and the file is read back to prove
# it.  Where that can't be done (a sandbox that refuses /proc/self/mem, no
# such /proc fields), the interpreter re-executes itself with the clean
# environment and the token travels over an inherited pipe, read and closed
# before any pack module loads.
# ---------------------------------------------------------------------------

HANDOFF_VAR = "KINDGI_PACK_HANDOFF_FD"
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


def filtered_environment(environ, declared):
    """Return ``(kept, dropped)``: the variables pack code may see, and the rest sorted."""
    kept, dropped = {}, []
    for name, value in environ.items():
        if name in declared or name in KEPT_NAMES or name.startswith(KEPT_PREFIXES):
            kept[name] = value
        else:
            dropped.append(name)
    return kept, sorted(dropped)


def declared_env_names(index_path):
    """The env names the index declares, or None when the index can't be read for them.

    A broken index fails the boot later, with a problem that names it.
    """
    try:
        with open(index_path, "rb") as f:
            env = json.loads(f.read()).get("env") or {}
        return set(env.get("required") or ()) | set(env.get("optional") or ())
    except (OSError, ValueError, RecursionError, AttributeError, TypeError):
        return None


def pack_environment(config, environ):
    """Return ``(env, dropped)``: the environment pack code gets, and the names filtered out."""
    env = dict(environ)
    env.pop("KINDGI_PACK_SERVICE_TOKEN", None)
    declared = declared_env_names(config.index_path) if config.env_filter else None
    if declared is None:
        return env, []
    return filtered_environment(env, declared)


def scrub_environ_block(names):
    """Overwrite the named variables in the process's initial environment block.

    True when /proc/self/environ, read back, no longer holds any of them.
    """
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])   # env_start, env_end (fields 50, 51)
        wanted = {name.encode("utf-8", "surrogateescape") for name in names}
        with open("/proc/self/environ", "rb") as f:
            block = f.read()
        offset = 0
        with open("/proc/self/mem", "r+b", buffering=0) as memory:   # this process's own memory
            for entry in block.split(b"\0"):
                if entry.split(b"=", 1)[0] in wanted and start + offset + len(entry) <= end:
                    memory.seek(start + offset)
                    memory.write(bytes(len(entry)))
                offset += len(entry) + 1
        with open("/proc/self/environ", "rb") as f:
            left = {entry.split(b"=", 1)[0] for entry in f.read().split(b"\0")}
        return not (left & wanted)
    except (OSError, ValueError, IndexError, OverflowError):
        return False


def interpreter_flags():
    """The command-line flags that made this interpreter, to start it again the same way."""
    flags = sys.flags
    args = ["-I"] if flags.isolated else (["-E"] * bool(flags.ignore_environment)
                                          + ["-s"] * bool(flags.no_user_site))
    args += ["-S"] * bool(flags.no_site) + ["-B"] * bool(flags.dont_write_bytecode)
    args += ["-O"] * flags.optimize + ["-W" + w for w in sys.warnoptions]
    for key, value in getattr(sys, "_xoptions", {}).items():
        args += ["-X", key if value is True else "%s=%s" % (key, value)]
    return args


def reexec_with(env, token, dropped, argv):
    """Start this program again in ``env``, the token on a pipe; returns only if exec fails."""
    read_end, write_end = os.pipe()
    os.write(write_end, json.dumps({"token": token, "dropped": dropped}).encode())  # < a pipe's buffer
    os.close(write_end)
    os.set_inheritable(read_end, True)
    env = dict(env, **{HANDOFF_VAR: str(read_end)})
    program = os.path.abspath(argv[0]) if argv and argv[0] not in ("", "-c") else __file__
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)  # held across exec, handled by the new image
        os.execve(sys.executable, [sys.executable] + interpreter_flags() + [program] + list(argv[1:]), env)
    except OSError:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        os.close(read_end)


def hide_token(config, environ, argv, records):
    """Put the token and undeclared variables out of pack code's reach; return the dropped names."""
    env, dropped = pack_environment(config, environ)
    removed = [name for name in environ if name not in env]
    for name in removed:
        del environ[name]          # unsetenv: child processes won't inherit them
    if scrub_environ_block(removed):
        return dropped
    reexec_with(env, config.token, dropped, argv)
    records.write("warn", "Could not hide the token: /proc/self/environ can't be cleaned here and "
                  "re-executing the interpreter failed", event="token-exposed", always=True)
    return dropped


def receive_handoff(environ):
    """In the re-executed image: read the token and what the filter dropped."""
    fd = environ.pop(HANDOFF_VAR, None)
    if fd is None:
        return None
    chunks = []
    try:
        fd = int(fd)
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        return json.loads(b"".join(chunks))
    except (ValueError, OSError):
        return None


# ---------------------------------------------------------------------------
# Which ``kindgi`` pack code gets
# ---------------------------------------------------------------------------

def load_kindgi(records):
    """The real SDK when it imports; otherwise the stand-in, installed in sys.modules."""
    try:
        import kindgi
        import kindgi.pack.context  # noqa: F401
        if all(hasattr(kindgi, name) for name in ("tool", "guardrail", "Tool", "Guardrail",
                                                   "ToolContext", "Cancellation")):
            return kindgi
    except Exception as exc:  # a broken install must not stop the service
        if not isinstance(exc, ImportError):
            records.write("warn", "The installed kindgi SDK failed to import (%s: %s); "
                          "using the built-in stand-in" % (type(exc).__name__, exc), event="sdk-fallback")
        for name in [n for n in sys.modules if n == "kindgi" or n.startswith("kindgi.")]:
            del sys.modules[name]
    return install_standin(lambda subsystem="pack", **bindings: PackLogger(records, subsystem, bindings))


# ---------------------------------------------------------------------------
# The pack: its index, its modules, its tools and checks
# ---------------------------------------------------------------------------

PACKAGE = "_kindgi_pack"


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
        self.version = version or None
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
        self.artifact_version = data.get("artifactVersion") or ""
        if not isinstance(self.artifact_version, str):
            raise IndexProblem("Index field artifactVersion must be a string")
        tools = _field(data, "tools", "", list, required=False) or []
        guardrails = _field(data, "guardrails", "", list, required=False) or []
        self.tools = [ToolEntry(raw, i) for i, raw in enumerate(tools)]
        self.checks = [CheckEntry(raw, i) for i, raw in enumerate(guardrails)]
        env = _field(data, "env", "", dict, required=False) or {}
        self.env_required = self._names(env, "required")
        self.env_optional = self._names(env, "optional")

    @staticmethod
    def _names(env, key):
        names = env.get(key) or []
        if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
            raise IndexProblem("Index field env.%s must be an array of names" % key)
        return names


def module_name_for(module_path):
    """``tools/ledger.py`` -> ``_kindgi_pack.tools.ledger``; refuses escapes and non-.py paths."""
    parts = module_path.replace("\\", "/").split("/")
    if module_path.startswith("/") or ".." in parts or not module_path.endswith(".py") or "" in parts:
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
    """An absolute module path is taken relative to the module root."""
    if os.path.isabs(module_path):
        rel = os.path.relpath(module_path, root)
        return rel.replace(os.sep, "/")
    return module_path


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
        if isinstance(value, kind) and getattr(value, "module", None) == module.__name__ \
                and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


class Pack:
    """The index, the imported modules and each entry's primitive and validators."""

    def __init__(self, index, root, kindgi):
        self.index = index
        self.root = root
        self.kindgi = kindgi
        self.tools_by_id = {}
        for entry in index.tools:
            self.tools_by_id.setdefault(entry.id, []).append(entry)
        self.checks_by_id = {}
        for entry in index.checks:
            self.checks_by_id.setdefault(entry.check_id, entry)

    def missing_modules(self):
        paths = [e.module_path for e in self.index.tools] + [e.module_path for e in self.index.checks]
        missing = []
        for path in paths:
            full = os.path.join(self.root, relative_module_path(path, self.root))
            if not os.path.isfile(full) and path not in missing:
                missing.append(path)
        return ["Missing module: %s" % p for p in missing]

    def load(self):
        """Import every module (tools first, then checks); return the problems."""
        mount_package(self.root)
        problems = []
        for entry in self.index.tools:
            self._resolve(entry, self.kindgi.Tool, lambda p, e: p.id == e.id,
                          "handler-shape-invalid", "Module '%s' does not define handler \"%s\"", problems)
            entry.input_validator, entry.input_schema_error = compile_schema(entry.input)
            entry.output_validator, entry.output_schema_error = compile_schema(entry.output)
        for entry in self.index.checks:
            self._resolve(entry, self.kindgi.Guardrail,
                          lambda p, e: e.check_id in (p.check_id, p.id),
                          "check-shape-invalid", "Module '%s' does not define check \"%s\"", problems)
            if entry.config_schema is not None:
                entry.config_validator, entry.config_schema_error = compile_schema(entry.config_schema)
        return problems

    def _resolve(self, entry, kind, matches, code, text, problems):
        path = relative_module_path(entry.module_path, self.root)
        try:
            module = importlib.import_module(module_name_for(path))
        except BaseException as exc:  # pack code: anything at all can come out of an import
            if isinstance(exc, KeyboardInterrupt):
                raise
            problems.append("%s: %s" % (getattr(entry, "check_id", entry.id),
                                        _safe_str(exc) or type(exc).__name__))
            return
        for primitive in primitives_of(module, kind):
            if matches(primitive, entry):
                entry.primitive = primitive
                return
        entry.problem = (code, text % (entry.module_path, getattr(entry, "check_id", entry.id)))


def compile_schema(schema):
    """Return ``(validator, None)`` or ``(None, detail)``: a bad schema is answered per call."""
    try:
        return schema_lite.SchemaValidator(schema), None
    except schema_lite.SchemaError as exc:
        return None, str(exc)
    except RecursionError:
        return None, "the schema is nested too deeply"


# ---------------------------------------------------------------------------
# Messages: parsing a request, shaping an answer
# ---------------------------------------------------------------------------

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


def _reject_constant(name):
    raise ValueError("%s is not JSON" % name)


def _parse_int(text):
    if len(text) > MAX_INT_DIGITS:
        raise ValueError("an integer has more than %d digits" % MAX_INT_DIGITS)
    return int(text)


LONG_DIGITS = re.compile(r"(?<![0-9])[0-9]{%d}" % (MAX_INT_DIGITS + 1))   # from a run's start: linear time

# Made once: json.dumps and json.loads with options build an encoder or decoder per call.
_load_strict = json.JSONDecoder(parse_constant=_reject_constant).decode
_load_strict_digits = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int).decode
_dump_compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_dump_compact_ascii = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode


def parse_json(body):
    """Strict JSON: UTF-8 only, no NaN/Infinity, integers of sane length."""
    return load_json_text(body.decode("utf-8"))


def load_json_text(text):
    """Strict JSON from text.

    The digit-length hook costs a Python call per integer, so it runs only
    when the text has a run of digits that long at all (in a string, maybe).
    """
    if LONG_DIGITS.search(text):
        return _load_strict_digits(text)
    return _load_strict(text)


def dump_json(value):
    """Compact JSON text; lone surrogates are escaped so the bytes stay UTF-8."""
    text = _dump_compact(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _dump_compact_ascii(value).encode("ascii")


def read_envelope(body):
    """Parse an invoke body: the message dict, or an error message to answer with."""
    try:
        message = parse_json(body)
    except (ValueError, RecursionError):
        return None, error_message("malformed-message", "Request body is not valid JSON")
    if not isinstance(message, dict):
        return None, error_message("malformed-message", "Message must be a JSON object")
    v = message.get("v")
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != PROTOCOL:
        return None, error_message("unknown-protocol-version",
                                   "Expected protocol v2, got %s" % json.dumps(v, ensure_ascii=False))
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
                               "Unknown request kind %s" % json.dumps(kind, ensure_ascii=False))


def parse_timeout_ms(raw):
    """``kindgi-timeout-ms``: positive decimal digits, else the default."""
    raw = (raw or "").strip()
    if raw.isdigit() and raw.isascii() and raw.strip("0"):
        return int(raw) if len(raw) <= 12 else MAX_TIMEOUT_MS
    return DEFAULT_TIMEOUT_MS


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
# Pack code's answers made JSON: serialisation, exceptions, model issues
# ---------------------------------------------------------------------------

def _safe_str(value):
    try:
        return str(value)
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
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def model_issues(exc):
    """Issues from a model's own validation error (pydantic's, or the stand-in's)."""
    issues = getattr(exc, "issues", None)
    if isinstance(issues, list):
        return issues
    try:
        errors = exc.errors()
    except BaseException:
        return [{"instancePath": "", "schemaPath": "#", "params": {}, "message": _safe_str(exc)}]
    return [{"instancePath": _pointer(e.get("loc", ())), "schemaPath": "#",
             "keyword": str(e.get("type", "model")), "params": {}, "message": str(e.get("msg", ""))}
            for e in errors]


def is_model_error(exc):
    """A validation error raised while parsing input into the tool's own type."""
    return type(exc).__name__ in ("ValidationError", "TraceInvalid") and (
        hasattr(exc, "errors") or hasattr(exc, "issues"))


def json_issues(value):
    """Where a value stops being JSON: an Ajv-shaped issue per offending place.

    Walks with an explicit stack, so a deeply nested value can't exhaust
    Python's.  A place is a ``(parent, key)`` link, turned into a pointer only
    for an issue, so a deep value costs linear time.  ``on_path`` holds the
    containers above the current one: that tells a circular reference from a
    shared one.
    """
    issues = []
    stack = [(value, None)]
    on_path = set()
    steps = 0
    while stack and len(issues) < 20 and steps < 1000000:
        item, place = stack.pop()
        steps += 1
        if item is _LEAVE:
            on_path.discard(place)
        elif isinstance(item, bool) or item is None or isinstance(item, str):
            pass
        elif isinstance(item, int):
            if item.bit_length() > MAX_INT_DIGITS * 3:
                issues.append(_json_issue(place, "must have at most %d digits" % MAX_INT_DIGITS))
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
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
            stack.append((_LEAVE, id(item)))
            for key, child in children:
                if not isinstance(key, (str, int, float, bool)) and key is not None:
                    issues.append(_json_issue((place, _safe_str(key)),
                                              "must have a string key, not %s" % type(key).__name__))
                stack.append((child, (place, key)))
        else:
            issues.append(_json_issue(place, "must be JSON, not %s" % type(item).__name__))
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
    """``(text, None)`` for a JSON-able value, else ``(None, issues)``."""
    try:
        return _dump_compact(value), None
    except BaseException:  # pack objects can raise anything while they are read, SystemExit too
        issues = json_issues(value)
        if not issues:
            issues = [_json_issue(None, "must be nested less deeply to be written as JSON")]
        return None, issues


def result_body(kind_key, text):
    """A ``result``/``check-result`` answer around JSON text already written."""
    body = '{"v":2,"kind":"%s","%s":%s}' % (kind_key[0], kind_key[1], text)
    try:
        return body.encode("utf-8")
    except UnicodeEncodeError:
        return dump_json(json.loads(body))


# ---------------------------------------------------------------------------
# Calls: one tool call or check, from message to answer
# ---------------------------------------------------------------------------

class Call:
    """One invoke in flight: its deadline, its cancellation, and who answers it.

    Exactly one party answers: the connection thread when pack code returns,
    or the watchman when the deadline passes or the caller leaves.  ``claim``
    decides which; the loser stays silent.  The concurrency slot is given
    back as the answer goes out, so a late handler no longer counts.
    """

    def __init__(self, service, handler, target, target_id, timeout_ms, started, fields):
        self.service = service
        self.handler = handler
        self.target = target.name
        self.target_key = target.target_key
        self.run = target.run
        self.target_id = target_id
        self.started = started
        self.deadline = time.monotonic() + timeout_ms / 1000.0
        self.fields = fields
        self.cancellation = service.kindgi.Cancellation()
        self.on_cancel = []
        self.outcome = None
        self.watched = False         # its socket is in the watchman's selector
        self.pipelined = False       # the caller sent more: its socket can't tell a hang-up
        self._lock = threading.Lock()
        self._unanswered = threading.Lock()
        self._unanswered.acquire()

    def claim(self, outcome):
        """True for the first party to settle the call's outcome."""
        with self._lock:
            if self.outcome is not None:
                return False
            self.outcome = outcome
            return True

    def cancel(self, reason):
        """Fire the call's cancellation and stop its async task at its next await."""
        self.cancellation.cancel(reason)
        for callback in self.on_cancel:
            try:
                callback()
            except RuntimeError:
                pass  # the task's loop already closed

    def finish(self):
        """The outcome is settled: give the slot back and write the record.

        Done just before the answer goes out, so a caller that has its answer
        never finds its own call still holding a slot.
        """
        self.service.release()
        self.service.call_record(self)

    def answered(self):
        self._unanswered.release()

    def wait_answered(self, timeout):
        """For the party that lost ``claim``: until the winner's answer is out."""
        if self._unanswered.acquire(timeout=timeout):
            self._unanswered.release()

    def elapsed_ms(self):
        return int((time.monotonic() - self.started) * 1000)


_thread_loops = threading.local()


def _thread_loop():
    """This thread's event loop for async pack code: a blocking coroutine stalls only its own call.

    asyncio is imported here, not at the top: it costs a fifth of the boot,
    and only packs with async handlers need it.
    """
    import asyncio
    loop = getattr(_thread_loops, "loop", None)
    if loop is None or loop.is_closed():
        loop = _thread_loops.loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    return loop


def run_pack_code(call, fn, args, is_async):
    """Run a handler or check in this thread; async ones on this thread's loop."""
    if not is_async:
        return fn(*args)
    loop = _thread_loop()
    task = loop.create_task(_guarded(call, fn(*args)))
    call.on_cancel.append(lambda: loop.call_soon_threadsafe(task.cancel))
    if call.cancellation.cancelled:
        task.cancel()
    value, raised = loop.run_until_complete(task)
    if raised is not None:
        raise raised
    return value


async def _guarded(call, awaitable):
    """Await pack code, handing back what it raised.

    Before Python 3.11 a task whose coroutine raises CancelledError ends
    "cancelled" and the message is lost; only the call's own cancellation
    may end the task that way.
    """
    try:
        return await awaitable, None
    except BaseException as exc:  # pack code
        if _cancelled_by_us(call, exc):
            raise
        return None, exc


def _cancelled_by_us(call, exc):
    """The call's own cancellation stopped its async task: nobody is waiting for an answer."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError) and call.cancellation.cancelled


def _thrown(call, exc, what):
    """The ``handler-throw`` answer for anything pack code raised."""
    return error_message("handler-throw", "%s threw: %s: %s" % (what, type(exc).__name__, _safe_str(exc)),
                         call.target_key, call.target_id, cause=serialize_cause(exc))


def call_tool(service, call, message):
    """Steps 1-7 of a tool call (SPEC-NOTES §7): an answer dict, or bytes for a result."""
    pack = service.pack
    tool_id = call.target_id
    entries = pack.tools_by_id.get(tool_id)
    if not entries:
        return error_message("tool-not-in-pack", 'This pack has no tool "%s"' % tool_id, "toolId", tool_id)
    asked = message["tool"].get("version")
    chosen = [e for e in entries if e.version == asked] if asked is not None else entries
    if len(chosen) != 1:
        listed = ", ".join(e.version or "unversioned" for e in entries)
        return error_message("tool-version-mismatch", 'Tool "%s" is %s in this pack; the caller %s' % (
            tool_id, listed, "asked for %s" % asked if asked is not None else "named none"),
            "toolId", tool_id)
    entry = chosen[0]
    tool = entry.primitive
    if tool is None:
        code, text = entry.problem
        return error_message(code, text, "toolId", tool_id)
    if entry.input_validator is None:
        return error_message("input-validation-failed", 'Tool "%s" input schema failed to compile: %s'
                             % (tool_id, entry.input_schema_error), "toolId", tool_id)
    value = entry.input_validator.apply_defaults(message.get("input"), in_place=True)   # parsed for this call
    if not entry.input_validator.is_valid(value):
        return error_message("input-validation-failed", 'Tool "%s" input failed validation' % tool_id,
                             "toolId", tool_id, issues=entry.input_validator.issues(value))
    what = 'Handler for tool "%s"' % tool_id
    try:
        value = tool.parse_input(value)
    except BaseException as exc:  # pack code: its validators can raise anything
        if is_model_error(exc):
            return error_message("input-validation-failed", 'Tool "%s" input failed validation' % tool_id,
                                 "toolId", tool_id, issues=model_issues(exc))
        return _thrown(call, exc, what)
    try:
        ctx = service.kindgi.ToolContext.from_wire(message["ctx"], call.cancellation,
                                                   service.tool_logger(call.fields))
        output = run_pack_code(call, tool.handler, tool.invoke_args(value, ctx), tool.is_async)
        output = tool.dump_output(output)
    except BaseException as exc:  # pack code: SystemExit and friends are answers too
        if _cancelled_by_us(call, exc):
            return None
        return _thrown(call, exc, what)
    return _checked_output(entry, tool_id, output)


def _checked_output(entry, tool_id, output):
    text, issues = to_json_text(output)
    if issues:
        return error_message("output-validation-failed",
                             'Tool "%s" handler produced output that is not JSON: %s %s'
                             % (tool_id, issues[0]["instancePath"] or "(root)", issues[0]["message"]),
                             "toolId", tool_id, issues=issues)
    if entry.output_validator is None:
        return error_message("output-validation-failed", 'Tool "%s" output schema failed to compile: %s'
                             % (tool_id, entry.output_schema_error), "toolId", tool_id)
    try:
        value = load_json_text(text)
    except (ValueError, RecursionError) as exc:  # e.g. an int over the digit limit
        return error_message("output-validation-failed", 'Tool "%s" handler produced output that is not JSON: %s'
                             % (tool_id, exc), "toolId", tool_id, issues=json_issues(output) or [
                                 _json_issue(None, "must be JSON: %s" % exc)])
    if not entry.output_validator.is_valid(value):
        return error_message("output-validation-failed",
                             'Tool "%s" handler produced output that failed validation' % tool_id,
                             "toolId", tool_id, issues=entry.output_validator.issues(value))
    return result_body(("result", "output"), text)


def normalise_check_result(result):
    """A check's return value as the wire ``result``, or None when it has the wrong shape."""
    if isinstance(result, bool):
        return {"passed": result}
    to_wire = getattr(result, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    if isinstance(result, Mapping) and isinstance(result.get("passed"), bool):
        return dict(result)
    return None


def call_check(service, call, message):
    """A guardrail check (SPEC-NOTES §8): an answer dict, or bytes for a result."""
    check_id = call.target_id
    entry = service.pack.checks_by_id.get(check_id)
    if entry is None:
        return error_message("check-not-in-pack", 'This pack has no check "%s"' % check_id, "checkId", check_id)
    check = entry.primitive
    if check is None:
        code, text = entry.problem
        return error_message(code, text, "checkId", check_id)
    config = message["config"]
    if entry.config_schema is not None:
        if entry.config_validator is None:
            return error_message("input-validation-failed", 'Check "%s" config schema failed to compile: %s'
                                 % (check_id, entry.config_schema_error), "checkId", check_id)
        if not entry.config_validator.is_valid(config):
            issues = entry.config_validator.issues(config)
            first = issues[0] if issues else {}
            where = " at %s" % first["instancePath"] if first.get("instancePath") else ""
            return error_message("input-validation-failed", 'Check "%s" config failed validation%s: %s' % (
                check_id, where, first.get("message") or "invalid"), "checkId", check_id, issues=issues)
    what = 'Check "%s" evaluate()' % check_id
    parsed = []
    for part, parse, value in (("config", check.parse_config, config),
                               ("trace", check.parse_trace, message.get("trace"))):
        try:
            parsed.append(parse(value))
        except BaseException as exc:  # pack code: its validators can raise anything
            if is_model_error(exc):
                return error_message("input-validation-failed", 'Check "%s" %s failed validation'
                                     % (check_id, part), "checkId", check_id, issues=model_issues(exc))
            return _thrown(call, exc, what)
    config, trace = parsed
    try:
        result = run_pack_code(call, check.check, (config, trace), check.is_async)
        wire = normalise_check_result(result)
    except BaseException as exc:  # pack code, and its result's own methods
        if _cancelled_by_us(call, exc):
            return None
        return _thrown(call, exc, what)
    if wire is None:
        return error_message("output-validation-failed",
                             'Check "%s" returned %s; a check returns a CheckResult, a dict with a boolean '
                             '`passed`, or a bool' % (check_id, type(result).__name__), "checkId", check_id)
    text, issues = to_json_text(wire)
    if issues:
        return error_message("output-validation-failed", 'Check "%s" returned a result that is not JSON: %s %s'
                             % (check_id, issues[0]["instancePath"] or "(root)", issues[0]["message"]),
                             "checkId", check_id, issues=issues)
    return result_body(("check-result", "result"), text)


class Target:
    """What a request names: a tool or a check, and how to run it."""

    def __init__(self, name, target_key, run):
        self.name = name
        self.target_key = target_key
        self.run = run


TARGETS = {"invoke": Target("tool", "toolId", call_tool),
           "check-invoke": Target("check", "checkId", call_check)}


# ---------------------------------------------------------------------------
# The watchman: deadlines, callers who leave, connections that stall
# ---------------------------------------------------------------------------

class Watchman:
    """One thread that answers on time for the calls pack code holds up.

    It keeps each call's deadline, watches the socket of each call that has
    run for a while for the caller hanging up, and shuts connections that sit
    too long in one phase (slowloris, stalled bodies, idle keep-alive).  A
    quick call costs it no system call: it is only noted in a dict.
    """

    TICK = 0.1          # how soon a slow call's socket is watched, and the longest sleep

    def __init__(self, server):
        self.server = server
        self.selector = selectors.DefaultSelector()
        self.calls = {}
        self.lock = threading.Lock()
        self.wake_at = 0.0
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.selector.register(self.wake_r, selectors.EVENT_READ)
        self.thread = threading.Thread(target=self._run, name="watchman", daemon=True)

    def start(self):
        self.thread.start()

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
        next_sweep = 0.0
        while True:
            now = time.monotonic()
            with self.lock:
                soonest = min((c.deadline for c in self.calls), default=now + self.TICK)
                self.wake_at = min(soonest, now + self.TICK)
                for call in self.calls:
                    if not call.watched and not call.pipelined and now - call.started >= self.TICK:
                        self._watch_socket(call)
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
                # A thread of its own: a caller that doesn't read can't hold up other deadlines.
                threading.Thread(target=call.handler.expire, args=(call,), daemon=True).start()
            if now >= next_sweep:
                self.server.sweep_connections(now)
                next_sweep = now + 0.5

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
            self.forget(call)
            call.handler.abandon(call)
        else:
            call.pipelined = True
            self._unwatch_socket(call)


# ---------------------------------------------------------------------------
# HTTP: reading a request, routing it, writing the answer
# ---------------------------------------------------------------------------

class HttpError(Exception):
    """A request the HTTP layer refuses before routing; the connection then closes."""

    def __init__(self, status, message):
        Exception.__init__(self, message)
        self.status = status
        self.message = message


TOKEN_BYTES = b"!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
METHOD_START = re.compile(rb"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+( |$)")
BAD_FIELD_VALUE = re.compile(rb"[\r\n\0]").search
FIELD_NAMES = {}   # a field name as sent -> its lower-case str, for the names callers use
ROUTES = {"/v1/invoke": ("POST", True), "/v1/info": ("GET", True),
          "/healthz": ("GET", False), "/readyz": ("GET", False)}


def _body(obj):
    return _dump_compact_ascii(obj).encode()


BAD_TOKEN = _body({"error": "Bad pack token"})
BAD_TYPE = _body({"error": "Content-Type must be application/json"})
TOO_LARGE = _body({"error": "Request body too large"})
TENANT_MISMATCH = _body({"code": "pack-tenant-mismatch"})
HEALTHY = _body({"status": "ok"})
READY = _body({"status": "ready"})
DRAINING = _body({"error": "draining"})
NOT_READY = _body({"error": "not ready"})
OVERLOADED = _body({"error": "overloaded"})
RETRY = (("retry-after", "1"),)
CONNECTIONS_FULL = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: " + JSON_CONTENT_TYPE.encode()
                    + b"\r\ncontent-length: %d\r\nretry-after: 1\r\nconnection: close\r\n\r\n"
                    % len(OVERLOADED) + OVERLOADED)


class Request:
    """A parsed request head."""

    __slots__ = ("method", "target", "path", "version", "headers", "keep_alive", "length", "chunked")

    def header(self, name, default=None):
        return self.headers.get(name, default)


def read_request_head(rfile, on_partial_head):
    """Read a request line and headers; None at a clean end of the connection.

    Limits sizes, refuses ambiguous framing (Content-Length with
    Transfer-Encoding, differing Content-Lengths) and anything malformed.
    ``on_partial_head`` is called when the head has begun but not all come.
    """
    arrived = rfile.peek(MAX_HEAD_LINE)
    if not arrived:
        return None
    end = arrived.find(b"\r\n\r\n") + 4
    if end > 4 and METHOD_START.match(arrived) and arrived.count(b"\n", 0, end) == arrived.count(b"\r\n", 0, end):
        lines = rfile.read(end).split(b"\r\n")[:-2]   # the whole head has come: one read
    else:
        on_partial_head()
        lines = _read_head_lines(rfile, arrived)
        if lines is None:
            return None
    return _parse_head(lines)


def _read_head_lines(rfile, arrived):
    """The head line by line, when it has not all come at once; lines without their ends."""
    arrived = arrived.lstrip(b"\r\n")
    if arrived and not METHOD_START.match(arrived):
        raise HttpError(400, "Malformed request line")  # now: a line that never ends must not wait
    line = rfile.readline(MAX_HEAD_LINE + 1)
    while line in (b"\r\n", b"\n"):  # tolerated before a request line (RFC 9112 §2.2)
        line = rfile.readline(MAX_HEAD_LINE + 1)
    if not line:
        return None
    if len(line) > MAX_HEAD_LINE:
        raise HttpError(414, "Request line too long")
    if not line.endswith(b"\n"):
        raise HttpError(400, "Malformed request line")
    lines = [line]
    total = len(line)
    while True:
        line = rfile.readline(MAX_HEAD_LINE + 1)
        total += len(line)
        if not line:
            raise HttpError(400, "Incomplete request head")
        if total > MAX_HEAD_BYTES or len(line) > MAX_HEAD_LINE:
            raise HttpError(431, "Request header fields too large")
        if line in (b"\r\n", b"\n"):
            return [x.rstrip(b"\r\n") for x in lines]
        if len(lines) > MAX_HEADERS:
            raise HttpError(431, "Request header fields too large")
        lines.append(line)


def _parse_head(lines):
    """A Request from the request line and header lines."""
    if len(lines) > MAX_HEADERS + 1:
        raise HttpError(431, "Request header fields too large")
    parts = lines[0].split(b" ")
    if len(parts) != 3 or not parts[1]:
        raise HttpError(400, "Malformed request line")
    method, target, version = parts
    if not method or method.translate(None, TOKEN_BYTES):
        raise HttpError(400, "Malformed request method")
    try:
        method, target, version = method.decode("ascii"), target.decode("ascii"), version.decode("ascii")
    except UnicodeDecodeError:
        raise HttpError(400, "Malformed request line")
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        if re.match(r"^HTTP/\d\.\d$", version):
            raise HttpError(505, "HTTP version not supported")
        raise HttpError(400, "Malformed HTTP version")
    request = Request()
    request.method, request.target, request.version = method, target, version
    request.path = target.split("?", 1)[0]
    request.headers = headers = {}
    lengths = set()
    for line in lines[1:]:
        raw_name, colon, value = line.partition(b":")
        name = FIELD_NAMES.get(raw_name)
        if name is None and raw_name and not raw_name.translate(None, TOKEN_BYTES):
            name = raw_name.decode("ascii").lower()
            if len(FIELD_NAMES) < 256:   # callers send the same few names: each is checked once
                FIELD_NAMES[raw_name] = name
        if name is None or not colon or BAD_FIELD_VALUE(value):
            raise HttpError(400, "Obsolete header line folding" if line[:1] in (b" ", b"\t")
                            else "Malformed header line")
        value = value.strip(b" \t").decode("latin-1")
        if name == "content-length":
            lengths.add(value)
        headers[name] = headers[name] + ", " + value if name in headers else value
    return _framing(request, lengths)


def _framing(request, lengths):
    """Decide how the body is delimited, refusing anything a proxy could read differently."""
    headers = request.headers
    coding = headers.get("transfer-encoding")
    if coding is not None and lengths:
        raise HttpError(400, "Content-Length together with Transfer-Encoding")
    request.chunked = False
    request.length = 0
    if coding is not None:
        if coding.strip().lower() != "chunked" or request.version == "HTTP/1.0":
            raise HttpError(501 if request.version != "HTTP/1.0" else 400, "Unsupported Transfer-Encoding")
        request.chunked = True
    elif lengths:
        value = lengths.pop()
        if lengths or not value.isdigit() or not value.isascii() or len(value) > 18:
            raise HttpError(400, "Malformed Content-Length")
        request.length = int(value)
    connection = headers.get("connection", "").lower()
    if request.version == "HTTP/1.1":
        request.keep_alive = "close" not in connection
    else:
        request.keep_alive = "keep-alive" in connection
    return request


def read_chunked(rfile, limit):
    """A chunked body, refusing it once more than ``limit`` bytes have come."""
    parts, size = [], 0
    while True:
        line = rfile.readline(MAX_HEAD_LINE + 1)
        if not line.endswith(b"\n"):
            raise HttpError(400, "Malformed chunk size")
        digits = line.split(b";", 1)[0].strip()
        if not digits or len(digits) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in digits):
            raise HttpError(400, "Malformed chunk size")
        chunk = int(digits, 16)
        if chunk == 0:
            break
        size += chunk
        if size > limit:
            raise HttpError(413, "Request body too large")
        data = rfile.read(chunk)
        if len(data) != chunk or rfile.readline(3) not in (b"\r\n", b"\n"):
            raise HttpError(400, "Malformed chunk")
        parts.append(data)
    for _ in range(MAX_HEADERS):  # trailers, ignored
        line = rfile.readline(MAX_HEAD_LINE + 1)
        if line in (b"\r\n", b"\n", b""):
            return b"".join(parts)
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
    """A connection's output: every write is a whole ``sendall``."""

    closed = False

    def __init__(self, sock):
        self.sock = sock

    def write(self, data):
        self.sock.sendall(data)

    def flush(self):
        pass

    def close(self):
        pass


class PackRequestHandler(BaseHTTPRequestHandler):
    """One connection: reads requests, routes them, writes the answers.

    The connection thread runs pack code for its own calls, so a call costs
    no thread hand-off; the watchman answers instead when a call outlives its
    deadline or its caller.
    """

    protocol_version = "HTTP/1.1"
    phase = "idle"
    phase_deadline = 0.0
    request_head = None
    body_unread = False

    # -- connection ---------------------------------------------------------

    def setup(self):
        """Streams over a blocking socket whose reads and writes the kernel times out.

        A Python socket timeout would cost a poll() before every recv and
        send, and each system call hands the interpreter to another thread.
        """
        self.connection = sock = self.request
        for option in ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),
                       (socket.SOL_SOCKET, socket.SO_RCVTIMEO, SOCKET_TIMEVAL),
                       (socket.SOL_SOCKET, socket.SO_SNDTIMEO, SOCKET_TIMEVAL)):
            try:
                sock.setsockopt(*option)
            except OSError:
                pass
        self.rfile = io.BufferedReader(SocketReader(sock))
        self.wfile = SocketWriter(sock)
        self.write_lock = threading.Lock()
        self.service = self.server.service
        self.server.handlers.add(self)

    def finish(self):
        self.server.handlers.discard(self)
        BaseHTTPRequestHandler.finish(self)

    def handle(self):
        self.close_connection = False
        while not self.close_connection:
            self.handle_one_request()
        if self.body_unread:
            self.linger()

    def linger(self):
        """Close gently when a body was left unread: a reset would destroy the answer just sent.

        Stop writing, then read and drop what the client still sends, for a
        few seconds at most (nginx's lingering close).
        """
        sock = self.connection
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.settimeout(1.0)
            end = time.monotonic() + LINGER_SECONDS
            while time.monotonic() < end and sock.recv(65536):
                pass
        except OSError:
            pass

    def set_phase(self, phase, seconds=None):
        self.phase = phase
        self.phase_deadline = time.monotonic() + seconds if seconds else float("inf")

    def handle_one_request(self):
        self.close_connection = True
        self.set_phase("idle", IDLE_SECONDS)
        try:
            request = read_request_head(self.rfile, lambda: self.set_phase("head", HEAD_SECONDS))
            if request is None:
                return
            self.request_head = request
            self.body_unread = request.chunked or request.length > 0
            self.close_connection = not request.keep_alive
            self.set_phase("busy")
            self.service.active_requests.add(self)
            try:
                self.route(request)
            finally:
                self.service.active_requests.discard(self)
        except HttpError as exc:
            self.answer(exc.status, _body({"error": exc.message}), close=True)
        except (socket.timeout, ConnectionError):
            self.close_connection = True   # the peer stalled or left: nothing to answer
        except Exception as exc:  # the service's own bug: answer 500, keep the process
            self.service_failed(exc)

    def service_failed(self, exc):
        """A bug in the service: a 500 with a JSON body and a record; the process lives on."""
        self.service.records.write("error", "Request failed inside the service: %s: %s"
                                   % (type(exc).__name__, _safe_str(exc)), event="service-error",
                                   fields={"stack": format_stack(exc)})
        self.answer(500, _body({"error": "%s: %s" % (type(exc).__name__, _safe_str(exc))}), close=True)

    def answer(self, status, body, headers=(), close=False):
        """Write one whole answer with a single send.

        The connection closes after it when asked, while draining, and when
        the request's body was not read (it can't be told from a next request).
        """
        if close or self.body_unread or self.service.draining:
            self.close_connection = True
        head = ("HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n%s%s\r\n" % (
            status, self.responses.get(status, ("",))[0], JSON_CONTENT_TYPE, len(body),
            "".join(["%s: %s\r\n" % h for h in headers]),
            "connection: close\r\n" if self.close_connection else "")).encode("utf-8")  # an index may hold non-ASCII
        request = self.request_head
        data = head if request is not None and request.method == "HEAD" else head + body
        try:
            with self.write_lock:
                self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def log_message(self, format, *args):
        pass  # the service writes its own records

    # -- routing --------------------------------------------------------------

    def route(self, request):
        """Checks in the protocol's order: 404, 405, 401, 421, then the route."""
        route = ROUTES.get(request.path)
        if route is None:
            return self.answer(404, _body({"error": "No route %s" % request.path}))
        method, needs_token = route
        if request.method != method:
            return self.answer(405, _body({"error": "Use %s" % method}))
        service = self.service
        if needs_token:
            given = request.header("kindgi-pack-token", "").encode("latin-1")
            if not compare_digest(given, service.token_bytes):
                return self.answer(401, BAD_TOKEN)
            if service.tenant_id is not None and \
                    request.header("kindgi-tenant-id", "").strip(" \t") != service.tenant_id:
                service.tenant_refused(request.path, "header")
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

    def read_body(self, request):
        """The whole body, never buffering more than MAX_BODY."""
        if request.chunked:
            body = read_chunked(self.rfile, MAX_BODY)
        elif request.length > MAX_BODY:
            raise HttpError(413, "Request body too large")
        else:
            body = self.rfile.read(request.length)
            if len(body) != request.length:
                raise ConnectionError("the body ended early")
        self.body_unread = False
        return body

    # -- invoke ---------------------------------------------------------------

    def invoke(self, request):
        """Admission, body, envelope; then the call runs in this thread."""
        service = self.service
        refusal = service.not_ready() or service.overloaded()
        if refusal:
            return self.answer(503, refusal, RETRY)
        if "application/json" not in request.header("content-type", ""):
            return self.answer(415, BAD_TYPE)
        started = time.monotonic()
        if request.header("expect", "").lower() == "100-continue" and request.length <= MAX_BODY:
            self.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self.set_phase("body", BODY_SECONDS)
        try:
            body = self.read_body(request)
        except HttpError as exc:
            if exc.status != 413:
                raise
            return self.answer(413, TOO_LARGE)
        self.set_phase("busy")
        message, refused = read_envelope(body)
        if refused is not None:
            return self.answer_invoke(refused, started)
        if message["kind"] == "invoke" and service.tenant_id is not None \
                and message["ctx"]["tenantId"] != service.tenant_id:
            service.tenant_refused(request.path, "ctx")
            return self.answer(421, TENANT_MISMATCH)
        # The slot is taken only now: a slow upload or a malformed message holds no call's place.
        refusal = service.admit()
        if refusal:
            return self.answer(503, refusal, RETRY)
        try:
            call = self.start_call(request, message, started)
        except BaseException:
            service.release()
            raise
        self.run_call(call, message)

    def start_call(self, request, message, started):
        target = TARGETS[message["kind"]]
        target_id = message["tool"]["id"] if target.name == "tool" else message["check"]["id"]
        fields = trace_fields(request.header("traceparent"))
        if target.name == "tool":
            ctx = message["ctx"]
            for key in ("requestId", "tenantId", "projectId", "orgId", "runId"):
                if isinstance(ctx.get(key), str):
                    fields[key] = ctx[key]
            fields["toolId"] = target_id
        else:
            fields["checkId"] = target_id
        return Call(self.service, self, target, target_id,
                    parse_timeout_ms(request.header("kindgi-timeout-ms")), started, fields)

    def run_call(self, call, message):
        """Run pack code here; answer unless the watchman answered first."""
        service = self.service
        service.watchman.watch(call)
        status = 200
        try:
            answer = call.run(service, call, message)
        except BaseException as exc:  # pack code's throws are answered inside: this is the service's bug
            service.records.write("error", "Call failed inside the service: %s: %s"
                                  % (type(exc).__name__, _safe_str(exc)),
                                  event="service-error", fields={"stack": format_stack(exc)})
            status, answer = 500, _body({"error": "%s: %s" % (type(exc).__name__, _safe_str(exc))})
        finally:
            service.watchman.forget(call)
        if isinstance(answer, bytes):
            outcome = "ok" if status == 200 else "service-error"
        else:
            outcome = (answer or {}).get("code", "cancelled")
        if call.claim(outcome):
            call.finish()
            try:
                self.answer_invoke(answer, call.started, status)
            finally:
                call.answered()
            return
        # The watchman answered (deadline) or the caller left: this connection is finished.
        self.close_connection = True
        call.wait_answered(SOCKET_SECONDS)
        if call.target == "tool" and answer is not None:  # None: its async task was cancelled
            service.records.write("warn", "%s %s finished %d ms after its call ended"
                                  % (call.target, call.target_id, call.elapsed_ms()),
                                  event="handler-finished-late",
                                  fields=dict(call.fields, afterMs=call.elapsed_ms()))

    def answer_invoke(self, answer, started, status=200, close=False):
        body = answer if isinstance(answer, bytes) else dump_json(answer)
        if status != 200:
            return self.answer(status, body, close=True)
        self.answer(200, body, [("kindgi-duration-ms", str(int((time.monotonic() - started) * 1000))),
                                ("kindgi-artifact-version", self.service.pack.index.artifact_version)],
                    close=close)

    def expire(self, call):
        """Watchman: the deadline passed before pack code returned.

        This connection's thread is still in pack code, so the answer closes it.
        """
        if not call.claim("deadline-exceeded"):
            return
        call.cancel("deadline-exceeded")
        call.finish()
        try:
            self.answer_invoke(error_message("deadline-exceeded", "%s passed its deadline" % call.target_id,
                                             call.target_key, call.target_id), call.started, close=True)
        finally:
            self.service.active_requests.discard(self)
            call.answered()

    def abandon(self, call):
        """Watchman: the caller closed its connection mid-call."""
        if not call.claim("cancelled"):
            return
        call.cancel("cancelled")
        call.finish()
        self.service.active_requests.discard(self)
        call.answered()


# ---------------------------------------------------------------------------
# The service: state shared by all connections
# ---------------------------------------------------------------------------

class PackService:
    """Readiness, the concurrency cap, the drain, and the records about calls."""

    def __init__(self, config, records, pack, kindgi, missing_env):
        self.config = config
        self.records = records
        self.pack = pack
        self.kindgi = kindgi
        self.token_bytes = config.token.encode("ascii")
        self.tenant_id = config.tenant_id
        self.cap = config.max_concurrency
        self.missing_env = missing_env
        self.strict = config.env_check == "strict"
        self.loaded = True
        self.draining = False
        self.in_flight = 0
        self.active_requests = set()
        self.lock = threading.Lock()
        self.watchman = None
        index = pack.index
        tools = [dict([("id", e.id)] + ([("version", e.version)] if e.version else [])) for e in index.tools]
        checks = list(dict.fromkeys(e.check_id for e in index.checks))
        self.info_body = dump_json({
            "protocol": PROTOCOL, "packId": index.pack_id, "packVersion": index.pack_version,
            "artifactVersion": index.artifact_version, "indexHash": index.hash,
            "tools": tools, "checks": checks, "missingEnv": missing_env})
        self.missing_env_body = _body({"error": "missing env", "missingEnv": missing_env})
        self.call_logger = PackLogger(records, "pack.tool")
        self.pack_fields = '"packId":%s,"artifactVersion":%s,' % (
            _json_string(index.pack_id), _json_string(index.artifact_version))

    def not_ready(self):
        """The 503 body while not ready: draining, then missing env (strict), then not loaded."""
        if self.draining:
            return DRAINING
        if self.strict and self.missing_env:
            return self.missing_env_body
        if not self.loaded:
            return NOT_READY
        return None

    def overloaded(self):
        return OVERLOADED if self.in_flight >= self.cap else None

    def admit(self):
        """Take a slot for a call, or say why not."""
        with self.lock:
            if self.draining:
                return DRAINING
            if self.in_flight >= self.cap:
                return OVERLOADED
            self.in_flight += 1
        return None

    def release(self):
        with self.lock:
            self.in_flight -= 1

    def tool_logger(self, fields):
        return self.call_logger.child(fields)

    def tenant_refused(self, path, where):
        self.records.write("warn", "Refused a call for another tenant (%s)" % where,
                           event="tenant-mismatch", fields={"path": path})

    def call_record(self, call):
        """The ``call`` record (SPEC-NOTES §15), the one record written for every call.

        Filled into a template with the pack's fields made JSON once: half the
        time ``Records.write`` takes, for the same line.
        """
        outcome = call.outcome
        level = "info" if outcome == "ok" else "warn"
        if not self.records.enabled(level):
            return
        ms = call.elapsed_ms()
        message = "%s %s %s %dms" % (call.target, call.target_id, outcome, ms)
        ids = call.fields
        line = CALL_RECORD % (
            _utc_now(), level, SEVERITY[level], _json_string(message),
            "".join(['"%s":%s,' % (key, _json_string(ids[key])) for key in CORRELATION_KEYS if key in ids]),
            "".join(['"%s":%s,' % (key, _json_string(ids[key])) for key in ids if key not in OWN_KEYS]),
            self.pack_fields, call.target, _json_string(call.target_id), _json_string(outcome), ms)
        self.records.write_json(line, level, message, "call")

    def begin_drain(self):
        with self.lock:
            self.draining = True
        # From a thread of its own: a stderr nobody reads must not hold up the drain.
        threading.Thread(target=self.records.write, args=("info", "Draining: finishing the calls in flight"),
                         kwargs={"event": "draining", "always": True, "lock_timeout": 0.5}, daemon=True).start()

    def wait_drained(self, seconds):
        """Until no call is in flight and no answer is being written, or ``seconds`` pass."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.in_flight <= 0 and not self.active_requests:
                return True
            time.sleep(0.025)
        return False


class PackHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with a cap on connections and a sweep of stalled ones."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024

    def __init__(self, address, service):
        host = address[0]
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.service = service
        self.handlers = set()
        self.open_connections = 0
        self.count_lock = threading.Lock()
        ThreadingHTTPServer.__init__(self, address, PackRequestHandler)

    def server_bind(self):
        # HTTPServer.server_bind also looks up the host's FQDN: a DNS query at boot for nothing.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def process_request(self, request, client_address):
        """Serve the connection on a thread of its own, unless too many are open."""
        with self.count_lock:
            full = self.open_connections >= MAX_CONNECTIONS
            if not full:
                self.open_connections += 1
        if not full:
            return ThreadingHTTPServer.process_request(self, request, client_address)
        try:
            request.sendall(CONNECTIONS_FULL)
        except OSError:
            pass
        self.shutdown_request(request)

    def process_request_thread(self, request, client_address):
        try:
            ThreadingHTTPServer.process_request_thread(self, request, client_address)
        finally:
            with self.count_lock:
                self.open_connections -= 1

    def sweep_connections(self, now):
        """Shut connections that overstayed their phase: idle, reading a head, or a body."""
        for handler in list(self.handlers):
            if handler.phase != "busy" and now > handler.phase_deadline:
                try:
                    handler.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle_error(self, request, client_address):
        self.service.records.write("error", "Connection failed inside the service",
                                   event="service-error", fields={"stack": format_stack(sys.exc_info()[1])})


# ---------------------------------------------------------------------------
# The process: boot, serve, drain, exit
# ---------------------------------------------------------------------------

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


class Lifecycle:
    """SIGTERM and SIGINT: the first drains, the second ends the drain at once.

    Installed before anything slow, because as PID 1 a signal without a
    handler is ignored.  The handler runs on the main thread, which may hold
    any lock when the signal comes (a record half written, a thread half
    started), so it only writes a byte to a pipe; a thread of its own reads
    the pipe and does the work.
    """

    def __init__(self):
        self.records = None
        self.service = None            # set once `listening` is said: from then on a signal drains
        self.signalled = False
        self.lock = threading.Lock()   # orders ``listening`` and ``stopped``
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        self.thread = threading.Thread(target=self._run, name="lifecycle", daemon=True)
        self.thread.start()
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)  # held since the start, if at all

    def _on_signal(self, signum, frame):
        self.signalled = True   # on the main thread, so serve() sees it before it says `listening`
        try:
            os.write(self.wake_w, b"!")
        except OSError:
            pass  # the pipe is full of signals already

    def _run(self):
        os.read(self.wake_r, 1)
        if self.service is None:
            self.stop(0)
        threading.Thread(target=self._drain, name="drain", daemon=True).start()
        os.read(self.wake_r, 1)
        self.stop(0)

    def _drain(self):
        self.service.begin_drain()
        self.service.wait_drained(DRAIN_SECONDS)
        self.stop(0)

    def stop(self, code):
        """Write ``stopped`` and leave now: threads stuck in pack code can't hold the exit.

        The last words go from a thread of their own, given a second: a
        stderr nobody reads must not keep the process alive.
        """
        if self.lock.acquire(timeout=1.0):   # serve() may be stuck writing `listening`
            self.lock.release()
        last_words = threading.Thread(target=self._last_words, daemon=True)
        last_words.start()
        last_words.join(1.0)
        os._exit(code)

    def _last_words(self):
        if self.records is not None:
            self.records.write("info", "Stopped", event="stopped", always=True, lock_timeout=0.5)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass  # a closed or broken stream: nothing left to say


def make_records(config):
    pretty = config.log_format == "pretty" or (config.log_format == "auto" and os.isatty(2))
    return Records(2, config.log_level, config.log_levels, pretty)


def missing_env_names(index, environ):
    return sorted({name for name in index.env_required if not environ.get(name)})


def boot(config, records, environ, dropped):
    """Steps 3-7 of the boot: index, modules, env, imports.  Returns ``(pack, kindgi, missing)``.

    Raises ``BootFailed`` with every problem found.
    """
    try:
        with open(config.index_path, "rb") as f:
            raw = f.read()
    except OSError as exc:
        raise BootFailed(["Cannot read the pack index: %s" % exc])
    try:
        index = Index(raw)
    except IndexProblem as exc:
        raise BootFailed([str(exc)])
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
    missing = missing_env_names(index, environ)
    if missing:
        records.write("warn", ("The pack's env.required name has no value: %s" if len(missing) == 1 else
                               "The pack's env.required names have no value: %s") % ", ".join(missing),
                      event="missing-env", fields={"check": config.env_check, "names": missing})
    problems = pack.load()
    if problems:
        raise BootFailed(problems)
    return pack, kindgi, missing


class BootFailed(Exception):
    def __init__(self, problems):
        Exception.__init__(self, "; ".join(problems))
        self.problems = problems


def serve(config, records, service, lifecycle):
    host = config.host or "0.0.0.0"
    try:
        server = PackHTTPServer((host, config.port), service)
    except (OSError, OverflowError) as exc:
        records.write("error", "The pack service failed to boot", event="boot-failed", always=True,
                      fields={"problems": ["Cannot listen on %s port %d: %s" % (host, config.port, exc)]})
        return 1
    service.watchman = Watchman(server)
    service.watchman.start()
    index = service.pack.index
    port = server.server_address[1]
    with lifecycle.lock:
        if not lifecycle.signalled:
            lifecycle.service = service
            records.write("info", "Listening on port %d" % port, event="listening", always=True,
                          fields={"port": port, "host": host, "packId": index.pack_id,
                                  "artifactVersion": index.artifact_version})
    if lifecycle.service is None:
        # A signal came during the boot: the lifecycle thread writes `stopped` and exits; never `listening`.
        lifecycle.thread.join(DRAIN_SECONDS)
        return 0
    records.start_writer()
    server.serve_forever(poll_interval=0.2)
    return 0


def main(argv=None):
    """Run the service; returns the exit code (boot failures are 1)."""
    argv = list(sys.argv if argv is None else argv)
    if argv[1:2] == ["index"]:   # build an index instead (kindgi_pack_index.py): Ctrl-C as usual
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        try:
            import kindgi_pack_index
        except ImportError as exc:
            sys.stderr.write("kindgi_pack_min index: %s: put kindgi_pack_index.py beside this file\n" % exc)
            return 1
        return kindgi_pack_index.main(argv[2:], sys.modules[__name__])
    lifecycle = Lifecycle()
    environ = os.environ
    handoff = receive_handoff(environ)
    config_env = dict(environ)
    if handoff is not None:
        config_env["KINDGI_PACK_SERVICE_TOKEN"] = handoff.get("token", "")
    config, problems = read_config(argv[1:], config_env)
    if config.action == "help":
        sys.stdout.write(USAGE)
        return 0
    if config.action == "version":
        sys.stdout.write("kindgi-pack-min %s (Pack protocol v%d, schema %s)\n"
                         % (__version__, PROTOCOL, PROTOCOL_SCHEMA_VERSION))
        return 0
    records = make_records(config)
    lifecycle.records = records
    if problems:
        message = problems[0] if len(problems) == 1 and problems[0].startswith("KINDGI_LOG") \
            else "The pack service configuration is invalid"
        records.write("error", message, event="config-invalid", always=True, fields={"problems": problems})
        return 1
    dropped = handoff["dropped"] if handoff is not None else hide_token(config, environ, argv, records)
    records.secret = config.token
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(line_buffering=True)
        except (AttributeError, ValueError):
            pass
    try:
        pack, kindgi, missing = boot(config, records, environ, dropped)
    except BootFailed as exc:
        records.write("error", "The pack service failed to boot", event="boot-failed", always=True,
                      fields={"problems": exc.problems})
        return 1
    if config.check_only:
        records.write("info", "The pack boots: %d tools, %d checks" % (len(pack.index.tools), len(pack.index.checks)),
                      event="check-passed", always=True)
        return 0
    service = PackService(config, records, pack, kindgi, missing)
    return serve(config, records, service, lifecycle)


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


class TraceInvalid(ValueError):
    """A trace record failed validation; .issues holds Ajv-shaped issue dicts."""

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


class NoopLogger:
    """A logger with the SDK's surface that writes nothing."""

    def _log(self, message, fields=None, *, in_message=None, **kw):
        """Drop the record."""

    error = warn = info = debug = trace = _log

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
        loop = getattr(asyncio, "get_running_loop", asyncio.get_event_loop)()   # 3.6 has the latter only
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
    except Exception:
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


class ToolContext:
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

    def __setattr__(self, name, value):
        raise _standin_frozen("cannot assign to field %r" % name)

    def __delattr__(self, name):
        raise _standin_frozen("cannot delete field %r" % name)

    def __repr__(self):
        shown = ", ".join("%s=%r" % (name, getattr(self, name)) for name in self.__slots__
                          if name not in ("secrets", "log"))
        return "ToolContext(%s)" % shown

    @classmethod
    def for_test(cls, tenant_id="tenant-test", run_id="run-test", **kw):
        """A context for tests with placeholder ids."""
        return cls(tenant_id, run_id, **kw)

    @classmethod
    def from_wire(cls, ctx, cancellation, log=_STANDIN_NOOP_LOGGER):
        """Build from a wire callContext (camelCase keys; unknown keys dropped)."""
        get = ctx.get
        return cls(ctx["tenantId"], ctx["runId"], get("requestId"), get("projectId"), get("orgId"),
                   get("env"), get("secrets"), get("config"), get("settings"), cancellation, log,
                   get("idempotencyKey"))


def _standin_frozen(message):
    """The error a frozen dataclass raises, as the SDK's ToolContext does (dataclasses imported then).

    Python 3.6 has no dataclasses: there it is the AttributeError that error derives from.
    """
    try:
        from dataclasses import FrozenInstanceError
    except ImportError:
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
    if not isinstance(value, str):
        raise _StandinBad("string_type", "Input should be a valid string")
    return value


def _standin_number(kind, value, what, noun):
    """int(value) or float(value) the lax way pydantic does it (bool and str accepted)."""
    if isinstance(value, str):
        try:
            return kind(value.strip())
        except ValueError:
            raise _StandinBad("%s_parsing" % kind.__name__, "Input should be a valid %s, "
                              "unable to parse string as %s" % (what, noun)) from None
    if not isinstance(value, (int, float)):
        raise _StandinBad("%s_type" % kind.__name__, "Input should be a valid %s" % what)
    if kind is int and isinstance(value, float) and not value.is_integer():
        raise _StandinBad("int_from_float",
                          "Input should be a valid integer, got a number with a fractional part")
    return kind(value)


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
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _STANDIN_BOOL_WORDS:
        return _STANDIN_BOOL_WORDS[value.strip().lower()]
    if isinstance(value, (str, int, float)):
        raise _StandinBad("bool_parsing",
                          "Input should be a valid boolean, unable to interpret input")
    raise _StandinBad("bool_type", "Input should be a valid boolean")


@_standin_scalar
def _standin_dict(value):
    if not isinstance(value, Mapping):
        raise _StandinBad("dict_type", "Input should be a valid dictionary")
    return dict(value)


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


class _StandinRecord:
    """Base of the record classes; _fields = ((name, converter, default), ...).

    A field whose default is None also accepts None (pydantic's Optional).
    """

    _fields = ()

    def __init__(self, **fields):
        issues = []
        self._standin_fill(fields, "", issues)
        if issues:
            raise TraceInvalid(type(self).__name__, issues)

    @classmethod
    def from_wire(cls, value):
        """Validate a wire value into an instance; raise TraceInvalid with issues."""
        issues = []
        record = cls._standin_convert(value, "", issues)
        if issues:
            raise TraceInvalid(cls.__name__, issues)
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
                if value is not None or default is not None:
                    value = convert(value, path + _pointer((wire,)), issues)
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

    def _standin_items(self):
        """(name, value) for declared fields then extra fields."""
        items = [(name, self.__dict__[name]) for name, _, _ in self._fields]
        return items + list(self.model_extra.items())

    def to_wire(self):
        """camelCase dict, None values dropped, extra fields kept, nested records too."""
        wire = {_standin_camel(name): self.__dict__[name] for name, _, _ in self._fields}
        wire.update(self.model_extra)
        return {key: _standin_to_wire(value) for key, value in wire.items() if value is not None}

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._standin_items() == other._standin_items()

    __hash__ = None

    def __repr__(self):
        shown = ", ".join("%s=%r" % item for item in self._standin_items())
        return "%s(%s)" % (type(self).__name__, shown)


def _standin_to_wire(value):
    """Wire form of a field value: records become dicts, lists map item-wise."""
    if isinstance(value, _StandinRecord):
        return value.to_wire()
    if isinstance(value, list):
        return [_standin_to_wire(item) for item in value]
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
    if source is type(None):
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


def _standin_hints(fn, scope):
    """fn's annotations evaluated as typing.get_type_hints does, without importing typing.

    String annotations are evaluated in fn's globals and ``scope`` (the locals where the
    decorator was applied); None stands for NoneType.  When one can't be evaluated, all
    are left as written, as the SDK leaves them.
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
        if isinstance(value, str):
            try:
                value = eval(value, namespace, scope)
            except Exception:
                return dict(annotations)
        hints[name] = type(None) if value is None else value
    return hints


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
        kind = type(self).__name__
        if len(args) > len(self._fields):
            raise TypeError("%s() takes %d positional arguments but %d were given"
                            % (kind, len(self._fields), len(args)))
        for (name, _), value in zip(self._fields, args):
            if name in kwargs:
                raise TypeError("%s() got multiple values for argument %r" % (kind, name))
            kwargs[name] = value
        for name, default in self._fields:
            value = kwargs.pop(name, default)
            if value is _STANDIN_REQUIRED:
                raise TypeError("%s() missing required argument: %r" % (kind, name))
            self.__dict__[name] = value
        if kwargs:
            raise TypeError("%s() got an unexpected keyword argument %r" % (kind, next(iter(kwargs))))
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


class Tool(_StandinData):
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

class Guardrail(_StandinData):
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
        """A RunTrace (TraceInvalid on failure), or the raw value for other annotations."""
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


class Flow(_StandinDefinition):
    """A flow definition: data for the index; the service only needs it to import."""

    _kind = "Flow"
    _fields = _standin_fields("id version nodes edges", name=None, description=None, max_parallelism=None,
                              metadata=None, output=None, module="")


# --- Installing the modules -------------------------------------------------

_standin_installed = {}


def _standin_module(name, attrs, doc):
    """A module object that the import system treats as already imported."""
    is_package = "." not in name or name == "kindgi.pack"
    module = types.ModuleType(name, doc)
    module.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=is_package)
    module.__loader__ = None
    module.__package__ = name if is_package else name.rpartition(".")[0]
    if is_package:
        module.__path__ = []
    module.__dict__.update(attrs)
    return module


def install_standin(get_logger=None):
    """Register the stand-in `kindgi` modules in sys.modules; return `kindgi`.

    get_logger(subsystem, **bindings) supplies `kindgi.log.get_logger`
    loggers (default: no-op).  Installing again replaces an earlier stand-in.
    """
    factory = get_logger or (lambda subsystem, **bindings: _STANDIN_NOOP_LOGGER)

    def standin_get_logger(*subsystem, **bindings):
        """get_logger(subsystem="pack", **bindings): a logger for pack code, from the service's factory."""
        if len(subsystem) > 1:
            raise TypeError("get_logger() takes at most 1 positional argument (%d given)" % len(subsystem))
        return factory(subsystem[0] if subsystem else "pack", **bindings)

    remove_standin()
    context = {"ToolContext": ToolContext, "Cancellation": Cancellation,
               "CallCancelled": CallCancelled}
    trace = {"RunTrace": RunTrace, "ToolCallRecord": ToolCallRecord,
             "ToolResultRecord": ToolResultRecord, "ModelCallRecord": ModelCallRecord,
             "CheckResult": CheckResult}
    define = {"tool": _standin_tool, "guardrail": _standin_guardrail,
              "http_tool": _standin_http_tool, "Tool": Tool, "Guardrail": Guardrail,
              "Agent": Agent, "Flow": Flow, "DefinitionError": DefinitionError,
              "RESERVED_CHECK_IDS": RESERVED_CHECK_IDS, "CheckResult": CheckResult,
              "RunTrace": RunTrace, "ToolContext": ToolContext}
    modules = {
        "kindgi.pack.context": _standin_module("kindgi.pack.context", context, "Call context."),
        "kindgi.pack.trace": _standin_module("kindgi.pack.trace", trace, "Trace records."),
        "kindgi.pack.define": _standin_module("kindgi.pack.define", define, "Definitions."),
        "kindgi.log": _standin_module("kindgi.log", {"get_logger": standin_get_logger},
                                      "Logging for pack code."),
    }
    modules["kindgi.pack"] = _standin_module("kindgi.pack", {
        "context": modules["kindgi.pack.context"], "trace": modules["kindgi.pack.trace"],
        "define": modules["kindgi.pack.define"]}, "Pack primitives.")
    top = dict(define, **context, **trace)
    del top["RESERVED_CHECK_IDS"]
    top.update(__version__=STANDIN_VERSION, pack=modules["kindgi.pack"], log=modules["kindgi.log"])
    modules["kindgi"] = _standin_module("kindgi", top, "Stand-in for the Kindgi SDK "
                                        "(kindgi_pack_min, no SDK installed).")
    _standin_installed.update(modules)
    sys.modules.update(modules)
    return modules["kindgi"]


def remove_standin():
    """Remove stand-in modules from sys.modules (modules of a real SDK are left alone)."""
    for name, module in list(_standin_installed.items()):
        if sys.modules.get(name) is module:
            del sys.modules[name]
    _standin_installed.clear()


if __name__ == "__main__":
    sys.exit(main())
