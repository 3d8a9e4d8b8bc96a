"""The test harness: the real service as a subprocess, real HTTP on 127.0.0.1.

The ``launcher`` fixture's ``start(index, env=..., args=...)`` starts the
service with ``PORT=0``, waits for its ``listening`` record and returns a
``Service`` with the port, the records it wrote, and helpers to call it.  The
interpreter that runs the service is ``$KINDGI_TEST_PYTHON`` (default: the one
running the tests), which is how CI proves every CPython on the machine.
Every process started here is stopped at the end of its test.

Unless a test names the program, the service starts as ``python -m
kindgi_pack_min`` from the repository root: the same code as the script, run
from bytecode compiled once per session (``pytest_sessionstart``), where the
script form compiles its 4,000 lines at every start: a third of a start's CPU.  The launch exactly as users run it (the script by its path, the
.pyz, the standalone script) is proven by the tests that name it: test_boot,
test_drain, test_standin and test_one_file.
"""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SERVICE = ROOT / "kindgi_pack_min.py"
SHARED = ROOT.parent / "shared"
TOKEN = "test-token-0123456789"
PYTHON = os.environ.get("KINDGI_TEST_PYTHON") or sys.executable
BOOT_SECONDS = 20.0
FROM_BYTECODE = ("-m", "kindgi_pack_min")   # see the module docstring

# tests/packs holds packs for the indexer: their test_*.py and conftest.py are
# data (files the indexer must skip), never pytest's.
collect_ignore = ["packs"]


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name.lower())

    @property
    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %d %r>" % (self.status, self.body[:300])


class Service:
    """A running service process and what it wrote."""

    def __init__(self, proc):
        self.proc = proc
        self.records = []
        self.raw_stderr = []
        self.stdout = []
        self.port = None
        self._listening = threading.Event()
        self._ended = threading.Event()
        self._stdout_ended = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        threading.Thread(target=self._read_stdout, daemon=True).start()

    def _read_stderr(self):
        for line in self.proc.stderr:
            text = line.decode("utf-8", "replace").rstrip("\n")
            self.raw_stderr.append(text)
            try:
                record = json.loads(text)
            except ValueError:
                continue
            if isinstance(record, dict):
                self.records.append(record)
                if record.get("kind") == "listening":
                    self.port = record["port"]
                    self._listening.set()
        self._ended.set()

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.stdout.append(line.decode("utf-8", "replace").rstrip("\n"))
        self._stdout_ended.set()

    def wait_listening(self, timeout=BOOT_SECONDS):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._listening.wait(0.05):
                return True
            if self.proc.poll() is not None and self._ended.wait(2):
                return False
        return False

    def wait_exit(self, timeout=15):
        code = self.proc.wait(timeout)
        self._ended.wait(5)
        self._stdout_ended.wait(5)
        return code

    # -- records ---------------------------------------------------------------

    def records_of(self, kind):
        return [r for r in list(self.records) if r.get("kind") == kind]

    def wait_record(self, kind, timeout=10.0, where=lambda r: True):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [r for r in self.records_of(kind) if where(r)]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError("no %r record within %.1fs; stderr:\n%s"
                             % (kind, timeout, "\n".join(self.raw_stderr[-30:])))

    # -- HTTP ------------------------------------------------------------------

    def connection(self, timeout=30):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, token=True, conn=None, timeout=30):
        """One request; a fresh connection unless ``conn`` is given."""
        hdrs = {}
        if token:
            hdrs["kindgi-pack-token"] = TOKEN if token is True else token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            hdrs["content-type"] = "application/json"
        hdrs.update(headers or {})
        own = conn is None
        conn = conn or self.connection(timeout)
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            if own:
                conn.close()

    def invoke(self, message, headers=None, **kw):
        return self.request("POST", "/v1/invoke", body=message, headers=headers, **kw)

    def call_tool(self, tool_id, input, version=None, ctx=None, headers=None, **kw):
        tool = {"id": tool_id}
        if version is not None:
            tool["version"] = version
        message = {"v": 2, "kind": "invoke", "tool": tool, "input": input,
                   "ctx": ctx or {"tenantId": "tenant-1", "runId": "run-1"}}
        return self.invoke(message, headers=headers, **kw)

    def call_check(self, check_id, config=None, trace=None, headers=None, **kw):
        message = {"v": 2, "kind": "check-invoke", "check": {"id": check_id},
                   "config": config if config is not None else {},
                   "trace": trace if trace is not None else {"runId": "run-1", "tenantId": "tenant-1"}}
        return self.invoke(message, headers=headers, **kw)

    def raw(self, data, timeout=10.0, read_until_close=True):
        """Send raw bytes on a new connection; return what came back."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=timeout) as sock:
            sock.sendall(data)
            chunks = []
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                try:
                    chunk = sock.recv(65536)
                except socket.timeout:
                    break
                except ConnectionResetError:
                    break
                if not chunk:
                    break
                chunks.append(chunk)
                if not read_until_close:
                    break
            return b"".join(chunks)

    def signal(self, signum=signal.SIGTERM):
        self.proc.send_signal(signum)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass


def load_tool(filename, name):
    """The module of one of the project's tools (tools/*.py), loaded as *name*."""
    spec = importlib.util.spec_from_file_location(name, str(ROOT / "tools" / filename))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def service_env(extra=None, token=TOKEN):
    """A small, predictable environment for the service."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PORT": "0", "LANG": "C.UTF-8",
           "KINDGI_LOG_FORMAT": "json", "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("HOME", "PYTHONPATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    if token is not None:
        env["KINDGI_PACK_SERVICE_TOKEN"] = token
    env.update(extra or {})
    return {k: v for k, v in env.items() if v is not None}


def pytest_sessionstart(session):
    """Compile the service's modules once, for the starts FROM_BYTECODE.

    Where the checkout can't be written, each start compiles them itself: slower, the same.
    """
    subprocess.run([PYTHON, "-m", "compileall", "-q", "kindgi_pack_min.py", "schema_lite.py", "kindgi_pack_index.py"],
                   cwd=str(ROOT), stdout=subprocess.DEVNULL, timeout=120)


def pytest_collection_modifyitems(config, items):
    """Keep this shard's tests: with KINDGI_TEST_SHARD="i/N", every Nth from the i-th (tools/run_tests.py)."""
    shard = os.environ.get("KINDGI_TEST_SHARD")
    if not shard:
        return
    index, count = (int(part) for part in shard.split("/"))
    kept = items[index::count]
    others = [item for position, item in enumerate(items) if position % count != index]
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = kept


def program_args(program):
    """The arguments that start *program*: by default the checkout's service FROM_BYTECODE."""
    return list(FROM_BYTECODE) if program is None else [program]


class Launcher:
    """Starts services and remembers them, so the test's end stops them all."""

    def __init__(self):
        self.started = []

    def spawn(self, args, env=None, cwd=None, python=None, prefix=(), preexec_fn=None, flags=()):
        """Start ``prefix... python flags... args...``."""
        cmd = list(prefix) + [python or PYTHON] + list(flags) + [str(a) for a in args]
        proc = subprocess.Popen(cmd, env=env, cwd=cwd or str(ROOT), stdin=subprocess.DEVNULL, preexec_fn=preexec_fn,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        service = Service(proc)
        self.started.append(service)
        return service

    def start(self, index, env=None, args=(), token=TOKEN, expect_listening=True, program=None, **kw):
        service = self.spawn(program_args(program) + ["--index", index] + list(args),
                             env=service_env(env, token), **kw)
        if expect_listening and not service.wait_listening():
            raise AssertionError("service did not start; stderr:\n%s" % "\n".join(service.raw_stderr))
        return service

    def run(self, args, env=None, token=TOKEN, timeout=30, program=None):
        """Run the service to completion (boot failures, --check, --help)."""
        service = self.spawn(program_args(program) + list(args), env=service_env(env, token))
        code = service.wait_exit(timeout)
        return code, service

    def stop_all(self):
        for service in self.started:
            service.stop()


@pytest.fixture
def launcher():
    launch = Launcher()
    try:
        yield launch
    finally:
        launch.stop_all()


@pytest.fixture(scope="module")
def module_launcher():
    """For a test module that shares one service between its tests."""
    launch = Launcher()
    try:
        yield launch
    finally:
        launch.stop_all()


class PackWriter:
    """Writes a pack (index.json and modules) into a folder."""

    def __init__(self, root):
        self.root = Path(root)
        self.tools = []
        self.guardrails = []
        self.env = {"required": [], "optional": []}
        self.extra = {}

    def module(self, path, source):
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source)
        return target

    def tool(self, id, module_path, input=None, output=None, version=None, **extra):
        entry = {"id": id, "modulePath": module_path,
                 "input": input if input is not None else {"type": "object"},
                 "output": output if output is not None else {}}
        if version is not None:
            entry["version"] = version
        entry.update(extra)
        self.tools.append(entry)
        return self

    def guardrail(self, id, module_path, check_id=None, config_schema=None, **extra):
        entry = {"id": id, "checkModulePath": module_path}
        if check_id is not None:
            entry["checkId"] = check_id
        if config_schema is not None:
            entry["configSchema"] = config_schema
        entry.update(extra)
        self.guardrails.append(entry)
        return self

    def write(self, name="index.json", **overrides):
        index = {"v": 1, "packId": "test-pack", "packVersion": "1.0.0", "artifactVersion": "art-1",
                 "tools": self.tools, "guardrails": self.guardrails, "env": self.env}
        index.update(self.extra)
        index.update(overrides)
        path = self.root / name
        path.write_text(json.dumps(index, indent=1))
        return path


@pytest.fixture
def pack(tmp_path):
    return PackWriter(tmp_path / "pack")


def shared_path(*parts):
    """A path under ../shared, or a skip saying why it isn't there."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip("%s is not here: ../shared sits beside the project only in CI and dev sessions" % path)
    return path


class Cgroup:
    """A cgroup of one controller (``pids``, ``memory``) that a test makes, puts the service in,
    limits and removes: cgroup v1's hierarchy for the controller, or v2's with it switched on.

    Only root can make one: ``cgroup(controller)`` skips the test where it can't.
    """

    LIMIT_FILES = {"pids": ("pids.max", "pids.max"), "memory": ("memory.limit_in_bytes", "memory.max")}

    def __init__(self, path, limit_file):
        self.path = path
        self.limit_file = limit_file
        self.children = []

    @classmethod
    def make(cls, controller):
        v1, v2 = cls.LIMIT_FILES[controller]
        for root, limit_file, switch in (("/sys/fs/cgroup/" + controller, v1, None),
                                         ("/sys/fs/cgroup", v2, "/sys/fs/cgroup/cgroup.subtree_control")):
            if not os.path.isfile(os.path.join(root, "cgroup.procs")):
                continue
            if switch is not None:
                with open(switch) as f:
                    if controller not in f.read().split():
                        continue
            path = os.path.join(root, "kindgi-pack-min-test-%d" % os.getpid())
            try:
                os.mkdir(path)
            except OSError:
                continue
            if os.path.isfile(os.path.join(path, limit_file)):
                return cls(path, limit_file)
            os.rmdir(path)
        return None

    def child(self, name):
        """A cgroup inside this one: the service in it is bound by this one's limit too.
        ``cgroup`` removes it before this one."""
        controller = self.limit_file.split(".")[0]
        if not self.path.startswith("/sys/fs/cgroup/%s/" % controller):   # v2: hand the controller down
            with open(os.path.join(self.path, "cgroup.subtree_control"), "w") as f:
                f.write("+" + controller)
        path = os.path.join(self.path, name)
        os.mkdir(path)
        self.children.append(Cgroup(path, self.limit_file))
        return self.children[-1]

    def limit(self, value):
        with open(os.path.join(self.path, self.limit_file), "w") as f:
            f.write(str(value))

    def join(self):
        """Put the calling process in the cgroup (a ``preexec_fn``: the service's own process)."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def remove(self):
        for child in self.children:
            child.remove()
        os.rmdir(self.path)


@pytest.fixture
def cgroup(launcher):
    """``cgroup(controller)``: a fresh Cgroup, removed after the test, once the services it
    started are stopped (a cgroup with a process in it can't be removed)."""
    made = []

    def make(controller):
        group = Cgroup.make(controller)
        if group is None:
            pytest.skip("needs a %s cgroup it can make: root, with cgroup v1's %s hierarchy or v2's %s "
                        "controller" % (controller, controller, controller))
        made.append(group)
        return group

    yield make
    launcher.stop_all()
    for group in made:
        group.remove()
