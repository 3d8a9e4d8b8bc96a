"""End-to-end: the command line, the configuration and the boot (README: Configuration).

``--help`` and ``--version``; ``config-invalid`` with every problem at once
(and a bad log variable alone); ``boot-failed`` for every way an index or a
module can be wrong, never a traceback; the ``listening`` record; where the
index and the modules are looked for (``--index``, ``KINDGI_PACK_INDEX``,
``--module-root``).  Most runs end before listening, so they are quick.
"""

import json
import os
import re
import signal
import subprocess
import time

import pytest

from conftest import PYTHON, SERVICE, PackWriter, service_env

ECHO = '''\
from kindgi import tool

@tool(description="A test tool.", id="echo", input={"type": "object"}, output={})
def echo(input):
    return input
'''

CHECK = '''\
from kindgi import guardrail

@guardrail(id="ok", on_violation="block")
def ok(config, trace):
    return True
'''

NOT_A_CONFIG_PROBLEM = "The pack service configuration is invalid"


def echo_pack(root):
    pack = PackWriter(root)
    pack.module("tools/echo.py", ECHO)
    pack.tool("echo", "tools/echo.py")
    return pack


def only_record(service, kind):
    records = service.records_of(kind)
    assert len(records) == 1, service.raw_stderr
    return records[0]


def assert_no_traceback(service):
    assert not any("Traceback" in line for line in service.raw_stderr), "\n".join(service.raw_stderr)


def boot_problems(launcher, index, env=None, args=()):
    """Run the service on ``index``; it must fail to boot.  Returns its problems."""
    code, service = launcher.run(["--index", index] + list(args), env=env)
    assert code == 1, service.raw_stderr
    record = only_record(service, "boot-failed")
    assert record["message"] == "The pack service failed to boot"
    assert record["level"] == "error"
    assert not service.records_of("listening")
    assert_no_traceback(service)
    return record["problems"]


def config_problems(launcher, env, args=("--index", "/nonexistent/index.json"), token="tok-en"):
    code, service = launcher.run(list(args), env=env, token=token)
    assert code == 1, service.raw_stderr
    record = only_record(service, "config-invalid")
    assert not service.records_of("boot-failed")
    assert_no_traceback(service)
    return record


# -- the command line --------------------------------------------------------------

def run_flag(flag):
    """Run the service with one flag to completion: (exit code, stdout lines, stderr text)."""
    done = subprocess.run([PYTHON, str(SERVICE), flag], env=service_env(token=None), stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    return done.returncode, done.stdout.decode("utf-8").splitlines(), done.stderr.decode("utf-8")


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help(flag):
    code, lines, errors = run_flag(flag)
    assert code == 0
    text = "\n".join(lines)
    assert text.startswith("usage:")
    for word in ("--index", "--module-root", "--host", "KINDGI_PACK_SERVICE_TOKEN", "PORT"):
        assert word in text
    assert errors == ""


def test_version():
    code, lines, errors = run_flag("--version")
    assert code == 0
    assert len(lines) == 1
    assert re.search(r"\b\d+\.\d+\.\d+\b", lines[0])
    assert errors == ""


@pytest.mark.parametrize("flag", ["--help", "--version"])
@pytest.mark.parametrize("stdout", ["closed", "full"])
def test_help_and_version_to_a_stdout_that_takes_nothing_say_so_in_one_line(flag, stdout):
    with open(os.devnull if stdout == "closed" else "/dev/full", "wb") as target:
        done = subprocess.run([PYTHON, str(SERVICE), flag], env=service_env(token=None), stdin=subprocess.DEVNULL,
                              stdout=target, stderr=subprocess.PIPE, timeout=30,
                              preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None)
    errors = done.stderr.decode("utf-8")
    assert done.returncode == 1
    assert errors == "kindgi_pack_min: cannot write to stdout: %s\n" % (
        "it is closed" if stdout == "closed" else "[Errno 28] No space left on device"), errors


# -- config-invalid ------------------------------------------------------------------------

def test_every_config_problem_at_once(launcher):
    record = config_problems(launcher, {"PORT": "http", "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "0",
                                        "KINDGI_PACK_ENV_CHECK": "loose", "KINDGI_PACK_ENV_FILTER": "maybe"},
                             token=None)
    assert record["message"] == NOT_A_CONFIG_PROBLEM
    assert record["level"] == "error"
    assert sorted(record["problems"]) == sorted([
        "KINDGI_PACK_SERVICE_TOKEN is required",
        'PORT must be a port number, got "http"',
        "KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer",
        'KINDGI_PACK_ENV_CHECK must be `strict` or `warn`, not "loose"',
        'KINDGI_PACK_ENV_FILTER must be `on` or `off`, not "maybe"',
    ])


@pytest.mark.parametrize("token", ["", "  \t "])
def test_empty_token(launcher, token):
    assert config_problems(launcher, {}, token=token)["problems"] == ["KINDGI_PACK_SERVICE_TOKEN is required"]


@pytest.mark.parametrize("token", ["has space", "caf\u00e9"])
def test_token_outside_printable_ascii(launcher, token):
    assert config_problems(launcher, {}, token=token)["problems"] == [
        "KINDGI_PACK_SERVICE_TOKEN may hold only printable ASCII without spaces (it travels in an HTTP header). "
        "Use a random value such as `openssl rand -hex 32`."]


@pytest.mark.parametrize("port", ["", "65536", "80a", "\u0661", "9" * 5000], ids=["empty", "65536", "80a", "arabic-digit", "5000-digits"])
def test_bad_port(launcher, port):
    assert config_problems(launcher, {"PORT": port})["problems"] == [
        "PORT must be a port number, got %s" % json.dumps(port)]


@pytest.mark.parametrize("cap", ["", "0", "two", " 5", "0" * 5000],   # digits only, as PORT and the official service
                         ids=["empty", "0", "two", "space-5", "5000-zeros"])
def test_bad_concurrency_cap(launcher, cap):
    assert config_problems(launcher, {"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": cap})["problems"] == [
        "KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer"]


TOKEN_BY_MISTAKE = "tok-en-by-mistake-0123"


@pytest.mark.parametrize("name", ["KINDGI_PACK_ENV_CHECK", "KINDGI_LOG_LEVEL", "KINDGI_LOG_LEVELS", "PORT"])
def test_a_setting_given_the_token_by_mistake_never_writes_it(launcher, name):
    """The problem quotes the value it refuses: the token, when a setting was given it."""
    env = {name: TOKEN_BY_MISTAKE, "KINDGI_LOG_FORMAT": "json"}
    record = config_problems(launcher, env, token=TOKEN_BY_MISTAKE)
    assert record["problems"] and "[redacted]" in record["problems"][0], record
    assert TOKEN_BY_MISTAKE not in json.dumps(record)


def test_an_index_path_that_is_the_token_by_mistake_is_not_written(launcher):
    code, service = launcher.run(["--index", TOKEN_BY_MISTAKE], token=TOKEN_BY_MISTAKE)
    assert code == 1 and only_record(service, "boot-failed")["problems"] == [
        "Cannot read the pack index: [Errno 2] No such file or directory: '[redacted]'"]
    assert not any(TOKEN_BY_MISTAKE in line for line in service.raw_stderr)


def test_host_flag_without_value(launcher):
    record = config_problems(launcher, {}, args=("--index", "/nonexistent/index.json", "--host"))
    assert record["problems"] == ["--host needs an address"]


@pytest.mark.parametrize("name,value,problem", [
    ("KINDGI_LOG_LEVEL", "loud", 'KINDGI_LOG_LEVEL must be one of error, warn, info, debug, trace, got "loud".'),
    ("KINDGI_LOG_FORMAT", "x", 'KINDGI_LOG_FORMAT must be auto, json or pretty, got "x".'),
    ("KINDGI_LOG_LEVEL", "WARNING", 'KINDGI_LOG_LEVEL must be one of error, warn, info, debug, trace, got "WARNING".'),
    ("KINDGI_LOG_FORMAT", " Text", 'KINDGI_LOG_FORMAT must be auto, json or pretty, got " Text".'),   # as sent
    ("KINDGI_LOG_LEVELS", "pack:debug",
     'KINDGI_LOG_LEVELS: "pack:debug" isn\'t subsystem=level (levels: error, warn, info, debug, trace).'),
])
def test_bad_log_variable_is_reported_alone(launcher, name, value, problem):
    env = {name: value, "PORT": "bad", "KINDGI_PACK_ENV_CHECK": "loose"}
    if name != "KINDGI_LOG_FORMAT":
        env["KINDGI_LOG_FORMAT"] = "json"
    code, service = launcher.run(["--index", "/nonexistent/index.json"], env=env, token=None)
    assert code == 1
    lines = [json.loads(line) for line in service.raw_stderr if line.startswith("{")]
    assert len(lines) == 1, service.raw_stderr
    assert lines[0]["kind"] == "config-invalid"
    assert lines[0]["message"] == problem
    assert lines[0]["problems"] == [problem]


# -- boot-failed: the index ----------------------------------------------------------------

def test_missing_index_file(launcher, tmp_path):
    problems = boot_problems(launcher, tmp_path / "nowhere.json")
    assert len(problems) == 1
    assert problems[0].startswith("Cannot read the pack index: ")
    assert "nowhere.json" in problems[0]


def test_an_index_larger_than_64_mib_is_a_problem_not_all_the_memory(launcher):
    """/dev/zero never ends: read whole, it took the machine's memory, the stop signals held."""
    problems = boot_problems(launcher, "/dev/zero")
    assert problems == ["Cannot read the pack index: /dev/zero is larger than 64 MiB"]


def test_an_index_on_a_pipe_is_read_once(launcher, tmp_path):
    """As ``--index <(...)`` or ``--index /dev/stdin`` give it: the env filter's read took it all, and
    the boot then found the pipe empty ("not valid JSON")."""
    pack = echo_pack(tmp_path)
    pack.env = {"required": [], "optional": ["KEPT"]}
    index = pack.write()
    pipe_in = ["bash", "-c", 'exec "$@" < <(cat "$0")', str(index)]   # the service itself, its stdin a pipe
    service = launcher.start("/dev/stdin", env={"KEPT": "yes", "DROPPED": "no"}, prefix=pipe_in,
                             args=["--module-root", str(tmp_path)], expect_listening=False)
    assert service.wait_listening(), service.raw_stderr
    assert service.call_tool("echo", {"n": 1}).json["output"] == {"n": 1}
    assert service.records_of("env-dropped")[0]["names"] == ["DROPPED"]


def test_a_named_pipe_no_one_writes_fails_the_boot_instead_of_waiting_for_ever(launcher, tmp_path):
    """Opening a named pipe waits for a writer: the boot waited for ever, the stop signals held."""
    fifo = tmp_path / "index.json"
    os.mkfifo(str(fifo))
    problems = boot_problems(launcher, fifo, env={"KINDGI_PACK_MIN_TEST": "silence=1"})
    assert problems == ["Cannot read the pack index: nothing came from %s for 1 s" % fifo]


@pytest.mark.parametrize("check", [False, True])
def test_a_stop_signal_while_the_index_is_awaited_ends_the_service(launcher, tmp_path, check):
    """Only SIGKILL ended a service waiting for a named pipe's writer; SIGTERM stops it, as at any
    other moment of the boot (a --check stopped so did not pass: 1)."""
    fifo = tmp_path / "index.json"
    os.mkfifo(str(fifo))
    service = launcher.spawn(["-m", "kindgi_pack_min", "--index", fifo] + ["--check"] * check, env=service_env())
    time.sleep(0.5)
    service.signal(signal.SIGTERM)
    assert service.wait_exit(5) == (1 if check else 0), service.raw_stderr
    assert [record["kind"] for record in service.records] == ["stopped"]


@pytest.mark.parametrize("text", ["{", "\xff"])
def test_index_not_json(launcher, tmp_path, text):
    index = tmp_path / "index.json"
    index.write_bytes(text.encode("latin-1"))
    problems = boot_problems(launcher, index)
    assert len(problems) == 1
    assert "JSON" in problems[0]


@pytest.mark.parametrize("text", ["[]", "null"])
def test_index_not_an_object(launcher, tmp_path, text):
    index = tmp_path / "index.json"
    index.write_text(text)
    problems = boot_problems(launcher, index)
    assert len(problems) == 1
    assert "object" in problems[0]


@pytest.mark.parametrize("v,shown", [(2, "v2"), ("1", None), (True, None), (None, None)])
def test_index_envelope_other_than_1(launcher, tmp_path, v, shown):
    pack = echo_pack(tmp_path)
    index = pack.write(v=v) if v is not None else pack.write()
    if v is None:
        data = json.loads(index.read_text())
        del data["v"]
        index.write_text(json.dumps(data))
    problems = boot_problems(launcher, index)
    assert len(problems) == 1
    assert problems[0].startswith("Index envelope v") and problems[0].endswith(" is not v1")
    if shown:
        assert problems[0] == "Index envelope %s is not v1" % shown


@pytest.mark.parametrize("field,value", [
    ("packId", None), ("packVersion", []), ("tools", {"echo": 1}), ("guardrails", "x"), ("env", ["A"]),
    ("artifactVersion", 7),
])
def test_index_top_level_field_missing_or_mistyped(launcher, tmp_path, field, value):
    index = echo_pack(tmp_path).write()
    data = json.loads(index.read_text())
    if value is None:
        del data[field]
    else:
        data[field] = value
    index.write_text(json.dumps(data))
    problems = boot_problems(launcher, index)
    assert len(problems) == 1
    assert field in problems[0]


def entry_field_problems(launcher, pack, entries, field, value):
    """Boot with one field of the first tool or guardrail entry removed (None) or replaced."""
    if value is None:
        del entries[0][field]
    else:
        entries[0][field] = value
    return boot_problems(launcher, pack.write())


@pytest.mark.parametrize("field,value", [("modulePath", None), ("id", ""), ("id", ["echo"]), ("version", 1)])
def test_index_tool_field_missing_or_mistyped(launcher, tmp_path, field, value):
    pack = echo_pack(tmp_path)
    problems = entry_field_problems(launcher, pack, pack.tools, field, value)
    assert len(problems) == 1
    assert field in problems[0]
    assert "tools" in problems[0]


@pytest.mark.parametrize("field,value", [("checkModulePath", None), ("id", None), ("checkId", 4)])
def test_index_guardrail_field_missing_or_mistyped(launcher, tmp_path, field, value):
    pack = echo_pack(tmp_path)
    pack.module("checks/ok.py", CHECK)
    pack.guardrail("ok", "checks/ok.py")
    problems = entry_field_problems(launcher, pack, pack.guardrails, field, value)
    assert len(problems) == 1
    assert field in problems[0]
    assert "guardrails" in problems[0]


def test_index_tool_entry_not_an_object(launcher, tmp_path):
    pack = echo_pack(tmp_path)
    pack.tools.append("echo")
    problems = boot_problems(launcher, pack.write())
    assert len(problems) == 1
    assert "tools[1]" in problems[0]


# -- boot-failed: the modules ------------------------------------------------------------------

def test_every_missing_module_is_a_problem(launcher, tmp_path):
    pack = echo_pack(tmp_path)
    pack.tool("a", "tools/a.py")
    pack.tool("b", "tools/deep/b.py")
    pack.guardrail("c", "checks/c.py")
    assert boot_problems(launcher, pack.write()) == [
        "Missing module: tools/a.py", "Missing module: tools/deep/b.py", "Missing module: checks/c.py"]


def test_missing_modules_stop_the_boot_before_the_env_is_reported_and_the_env_before_imports(launcher, tmp_path):
    """A missing variable often explains an import failure: it is reported before the imports,
    but only once every module is there."""
    pack = echo_pack(tmp_path)
    pack.env = {"required": ["NEVER_SET_VAR"], "optional": []}
    pack.tool("a", "tools/a.py")
    code, service = launcher.run(["--index", pack.write()])
    assert code == 1 and [r["problems"] for r in service.records_of("boot-failed")] == [["Missing module: tools/a.py"]]
    assert not service.records_of("missing-env"), service.raw_stderr
    pack.module("tools/a.py", "raise ImportError('needs NEVER_SET_VAR')\n")
    code, service = launcher.run(["--index", pack.write()])
    events = [r.get("event") for r in service.records]
    assert code == 1 and "missing-env" in events and "boot-failed" in events, service.raw_stderr
    assert events.index("missing-env") < events.index("boot-failed")


@pytest.mark.parametrize("tool_path, check_path", [("tools/echo.py\u0000.py", "\u0000"),
                                                   ("/etc/gr\u0000eet.py", "/x/\ud800.py")],
                         ids=["relative", "absolute"])
def test_a_module_path_no_file_can_have_is_missing(launcher, tmp_path, tool_path, check_path):
    """A NUL (Python 3.6 and 3.7 raise ValueError for one in a path: a traceback at boot before),
    or a lone surrogate outside the module root: resolving the path raised, and the boot failed
    as the service's own failure, with a service-error record."""
    pack = echo_pack(tmp_path)
    pack.tool("a", tool_path)
    pack.guardrail("c", check_path)
    assert boot_problems(launcher, pack.write()) == ["Missing module: " + tool_path, "Missing module: " + check_path]


def test_modules_at_the_root_named_as_the_services_own_do_not_stand_in_for_them(launcher, tmp_path):
    """The module root is first on sys.path once the pack loads: the service's later import of
    ``resource`` (and ``fcntl``) found a pack's resource.py, and serving began with a traceback."""
    pack = echo_pack(tmp_path)
    pack.module("resource.py", "NAME = 'a pack module'\n")
    pack.module("fcntl.py", "NAME = 'a pack module'\n")
    service = launcher.start(pack.write())
    assert service.call_tool("echo", {"a": 1}).json["output"] == {"a": 1}
    assert_no_traceback(service)


def test_every_import_error_is_a_problem(launcher, tmp_path):
    pack = echo_pack(tmp_path)
    pack.module("tools/boom.py", "raise ImportError('import boom')\n")
    pack.module("tools/value.py", "raise ValueError('bad value at import')\n")
    pack.module("tools/silent.py", "raise RuntimeError()\n")
    pack.module("tools/exits.py", "raise SystemExit('exit at import')\n")
    pack.module("tools/interrupts.py", "raise KeyboardInterrupt\n")
    pack.module("tools/needs.py", "import surely_not_installed_anywhere_xyz\n")
    pack.module("checks/syntax.py", "def broken(:\n")
    pack.tool("probe.boom", "tools/boom.py")
    pack.tool("value", "tools/value.py")
    pack.tool("silent", "tools/silent.py")
    pack.tool("exits", "tools/exits.py")
    pack.tool("interrupts", "tools/interrupts.py")
    pack.tool("needs", "tools/needs.py")
    pack.guardrail("syntax-g", "checks/syntax.py", check_id="syntax")
    problems = boot_problems(launcher, pack.write())
    assert problems[:6] == [
        "probe.boom: import boom", "value: bad value at import", "silent: RuntimeError",
        "exits: exit at import", "interrupts: KeyboardInterrupt",
        "needs: No module named 'surely_not_installed_anywhere_xyz'"]
    assert len(problems) == 7
    assert problems[6].startswith("syntax: ")


def test_a_module_that_leaves_no_module_in_its_place_is_a_problem(launcher, tmp_path):
    """``sys.modules[__name__] = 42``: what the import gives has no names to look through; a
    problem of its entry, not a traceback."""
    pack = echo_pack(tmp_path)
    pack.module("tools/odd.py", "import sys\nsys.modules[__name__] = 42\n")
    pack.tool("odd", "tools/odd.py")
    assert boot_problems(launcher, pack.write()) == ["odd: vars() argument must have __dict__ attribute"]


BREAKS_THE_SERVICE = '''
import sys
def broken(*args, **kwargs):
    raise TypeError("broken on purpose")
sys.modules["__main__"].compile_schema = broken   # the service's own function, which the boot calls next
''' + ECHO


def test_the_services_own_failure_at_boot_is_a_record_not_a_traceback(launcher, tmp_path):
    """Whatever fails inside the service while it boots (here pack code broke one of its
    functions) ends in a ``boot-failed`` record and a ``service-error`` with the stack, exit 1."""
    pack = PackWriter(tmp_path)
    pack.module("tools/breaks.py", BREAKS_THE_SERVICE)
    pack.tool("echo", "tools/breaks.py")
    code, service = launcher.run(["--index", pack.write()])
    assert code == 1 and len(service.records) == len(service.raw_stderr), service.raw_stderr   # JSON lines only
    problems = only_record(service, "boot-failed")["problems"]
    assert problems == ["The service itself failed: TypeError: broken on purpose"]
    error = only_record(service, "service-error")
    assert error["message"] == "The boot failed inside the service: TypeError: broken on purpose"
    assert "broken on purpose" in error["stack"] and "compile_schema" in error["stack"]


LEAVES_A_THREAD = '''
import threading, time
threading.Thread(target=time.sleep, args=(3600,), name="pack worker").start()   # not a daemon
''' + ECHO


def test_a_failed_boot_ends_though_a_module_left_a_thread_running(launcher, tmp_path):
    """A module that loaded started a worker that never ends, another failed: exit 1 at once. A
    normal exit waited for the worker for ever."""
    pack = PackWriter(tmp_path)
    pack.module("tools/worker.py", LEAVES_A_THREAD)
    pack.module("tools/broken.py", "raise ImportError('broken on purpose')\n")
    pack.tool("echo", "tools/worker.py").tool("broken", "tools/broken.py")
    code, service = launcher.run(["--index", pack.write()], timeout=15)
    assert code == 1
    assert only_record(service, "boot-failed")["problems"] == ["broken: broken on purpose"]


def test_secrets_in_an_import_error_are_masked(launcher, tmp_path):
    """The problem is pack code's text: masked as its records are, as the official service masks it."""
    pack = echo_pack(tmp_path)
    pack.module("tools/db.py", "raise RuntimeError('cannot reach postgres://app:hunter2@db/x with Bearer abc')\n")
    pack.tool("db", "tools/db.py")
    assert boot_problems(launcher, pack.write()) == ["db: cannot reach postgres://app:***@db/x with Bearer [redacted]"]


def test_missing_modules_stop_the_boot_before_imports(launcher, tmp_path):
    pack = echo_pack(tmp_path)
    pack.module("tools/boom.py", "raise ImportError('import boom')\n")
    pack.tool("boom", "tools/boom.py")
    pack.tool("gone", "tools/gone.py")
    assert boot_problems(launcher, pack.write()) == ["Missing module: tools/gone.py"]


# -- listening -------------------------------------------------------------------------------------

def test_listening_record(launcher, tmp_path):
    service = launcher.start(echo_pack(tmp_path).write(artifactVersion="art-boot", packId="boot-pack"))
    record = only_record(service, "listening")
    assert list(record)[:5] == ["time", "level", "severity", "subsystem", "message"]
    assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", record["time"])
    assert (record["level"], record["severity"], record["subsystem"]) == ("info", "INFO", "pack")
    assert record["event"] == record["kind"] == "listening"
    assert isinstance(record["port"], int) and 0 < record["port"] < 65536
    assert record["message"] == "Listening on port %d" % record["port"]
    assert record["packId"] == "boot-pack"
    assert record["artifactVersion"] == "art-boot"
    assert record["host"] == "0.0.0.0"
    # The limits this process serves within (README, Limits): at most 1,024 connections, 256 MiB of bodies.
    assert isinstance(record["maxConnections"], int) and 16 <= record["maxConnections"] <= 1024
    assert isinstance(record["memoryBudget"], int) and 0 < record["memoryBudget"] <= 256 * 1024 * 1024
    assert service.request("GET", "/healthz", token=False).status == 200


HTTPS_TOOL = '''\
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="https")
def https(input):
    import http.client, ssl, urllib.request
    connection = http.client.HTTPSConnection("example.invalid", 443, timeout=1)   # never connects
    return {"context": type(connection._context) is ssl.SSLContext,
            "handler": hasattr(urllib.request, "HTTPSHandler"), "verify": ssl.create_default_context().verify_mode.name}
'''


def test_pack_code_has_https(launcher, tmp_path):
    """ssl, http.client and urllib work in pack code as in any program."""
    pack = PackWriter(tmp_path)
    pack.module("tools/https.py", HTTPS_TOOL)
    pack.tool("https", "tools/https.py")
    service = launcher.start(pack.write())
    assert service.call_tool("https", {}).json["output"] == {"context": True, "handler": True,
                                                             "verify": "CERT_REQUIRED"}


FILE_SERVER_TOOL = '''\
import os, threading, urllib.error, urllib.request
from http import client
from email import utils
import http.server
from kindgi import tool

@tool(description="A test tool.", input={"type": "object"}, output={}, id="serve-file")
def serve_file(input):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def translate_path(self, path):   # the directory= argument came with Python 3.7
            return os.path.join(input["dir"], path.split("?", 1)[0].lstrip("/"))

    server_class = getattr(http.server, "ThreadingHTTPServer", http.server.HTTPServer)   # 3.7+
    server = server_class(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = "http://127.0.0.1:%d/" % server.server_address[1]
    try:
        with urllib.request.urlopen(base + "page.html", timeout=5) as answer:
            found = [answer.status, answer.headers.get_content_type(), answer.read().decode(),
                     utils.parsedate_to_datetime(answer.headers["Date"]).year > 2000]
        with urllib.request.urlopen(base, timeout=5) as answer:
            listed = "a&lt;b&gt;.txt" in answer.read().decode()
        try:
            urllib.request.urlopen(base + "missing", timeout=5)
        except urllib.error.HTTPError as error:
            missing = error.code
        connection = client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=5)
        connection.request("GET", "/page.html", headers={"If-Modified-Since": "Sun, 01 Jan 2090 00:00:00 GMT"})
        cached = connection.getresponse().status
        connection.close()
    finally:
        server.shutdown()
        server.server_close()
    import sys
    return {"found": found, "listed": listed, "missing": missing, "cached": cached,
            "https": hasattr(client, "HTTPSConnection"), "python": list(sys.version_info[:2])}
'''


def test_pack_code_can_run_http_servers_own_file_server(launcher, tmp_path):
    """The service's http.server is the standard one: pack code can serve files with it too, and
    the http.client it imports (``from http import client``, the awkward way) speaks HTTPS."""
    pack = PackWriter(tmp_path)
    pack.module("tools/files.py", FILE_SERVER_TOOL)
    pack.tool("serve-file", "tools/files.py")
    site = tmp_path / "site"
    site.mkdir()
    (site / "page.html").write_text("<p>hi</p>")
    (site / "a<b>.txt").write_text("")
    service = launcher.start(pack.write())
    output = service.call_tool("serve-file", {"dir": str(site)}).json["output"]
    cached = 304 if output["python"] >= [3, 7] else 200   # If-Modified-Since came with Python 3.7
    assert output == {"found": [200, "text/html", "<p>hi</p>", True], "listed": True, "missing": 404,
                      "cached": cached, "https": True, "python": output["python"]}


def test_absent_artifact_version_is_an_empty_header(launcher, tmp_path):
    index = echo_pack(tmp_path).write()
    data = json.loads(index.read_text())
    del data["artifactVersion"]
    index.write_text(json.dumps(data))
    service = launcher.start(index)
    resp = service.call_tool("echo", {"x": 1})
    assert resp.json["output"] == {"x": 1}
    assert resp.header("kindgi-artifact-version") == ""
    assert service.request("GET", "/v1/info").json["artifactVersion"] == ""


ARTIFACT_VERSION_PROBLEM = ("Index field artifactVersion must be printable ASCII without leading or trailing "
                            "spaces, at most 1024 characters: every answer carries it in the "
                            "kindgi-artifact-version header")


@pytest.mark.parametrize("version", [
    "1.0\r\nset-cookie: session=stolen",
    "1.0\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
    "1.0\nx-injected: yes",
    "1.0\x00",
    "1.0\tdev",
    "\u0432\u0435\u0440\u0441\u0438\u044f-\u2713",
    " 1.0",
    "1.0 ",
    "x" * 1025,
], ids=["set-cookie", "second-response", "bare-lf", "nul", "tab", "non-ascii", "leading-space", "trailing-space",
        "too-long"])
def test_an_artifact_version_unsafe_in_a_header_fails_the_boot(launcher, tmp_path, version):
    """It is sent in the kindgi-artifact-version header of every invoke answer: nothing may ride on it."""
    index = echo_pack(tmp_path).write(artifactVersion=version)
    assert boot_problems(launcher, index) == [ARTIFACT_VERSION_PROBLEM]
    code, service = launcher.run(["--index", index, "--check"])
    assert code == 1
    assert only_record(service, "boot-failed")["problems"] == [ARTIFACT_VERSION_PROBLEM]


def test_an_artifact_version_with_inner_spaces_and_1024_characters_is_served(launcher, tmp_path):
    version = "build 7 (" + "x" * 1014 + ")"
    service = launcher.start(echo_pack(tmp_path).write(artifactVersion=version))
    resp = service.call_tool("echo", {"x": 1})
    assert resp.json == {"v": 2, "kind": "result", "output": {"x": 1}}
    assert resp.header("kindgi-artifact-version") == version


# -- modules that lead outside the module root ----------------------------------------------------

def test_a_module_that_links_outside_the_module_root_fails_the_boot(launcher, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text(ECHO)
    pack = PackWriter(tmp_path / "pack")
    (tmp_path / "pack" / "tools").mkdir(parents=True)
    (tmp_path / "pack" / "tools" / "echo.py").symlink_to(outside)
    pack.tool("echo", "tools/echo.py")
    problems = boot_problems(launcher, pack.write())
    assert problems == ['echo: Module path "tools/echo.py" leads outside the module root %s (to %s): a pack\'s '
                        'modules must be files inside it' % (tmp_path / "pack", outside)]


def test_a_folder_that_links_outside_the_module_root_fails_the_boot(launcher, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "echo.py").write_text(ECHO)
    pack = PackWriter(tmp_path / "pack")
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "tools").symlink_to(tmp_path / "elsewhere")
    pack.tool("echo", "tools/echo.py")
    problems = boot_problems(launcher, pack.write())
    assert len(problems) == 1 and "leads outside the module root" in problems[0], problems


def test_links_that_stay_inside_the_module_root_are_followed(launcher, tmp_path):
    """A module root that is itself a link, and a module linked to another file of the pack."""
    (tmp_path / "real").mkdir()
    echo_pack(tmp_path / "real")
    (tmp_path / "real" / "tools" / "alias.py").symlink_to(tmp_path / "real" / "tools" / "echo.py")
    (tmp_path / "root").symlink_to(tmp_path / "real")
    pack = PackWriter(tmp_path / "root")
    pack.tool("echo", "tools/alias.py")
    service = launcher.start(pack.write(), expect_listening=False)
    assert service.wait_listening(), service.raw_stderr


def test_an_absolute_module_path_is_found_through_a_module_root_that_is_a_link(launcher, tmp_path):
    """As on the official service, links resolved on both sides: ``/root -> /real`` holds
    ``/real/tools/echo.py`` as it holds ``/root/tools/echo.py``; a path outside it is still refused."""
    (tmp_path / "real").mkdir()
    echo_pack(tmp_path / "real").module("tools/other.py", ECHO.replace('id="echo"', 'id="other"'))
    (tmp_path / "root").symlink_to(tmp_path / "real")
    pack = PackWriter(tmp_path / "root")
    pack.tool("echo", str(tmp_path / "real" / "tools" / "echo.py"))
    pack.tool("other", str(tmp_path / "root" / "tools" / "other.py"))
    service = launcher.start(pack.write())
    for tool_id in ("echo", "other"):
        assert service.call_tool(tool_id, {"x": tool_id}).json["output"] == {"x": tool_id}
    (tmp_path / "outside.py").write_text(ECHO)
    (tmp_path / "real" / "tools" / "link.py").symlink_to(tmp_path / "outside.py")
    pack.tool("outside", str(tmp_path / "outside.py")).tool("linked", str(tmp_path / "root" / "tools" / "link.py"))
    problems = boot_problems(launcher, pack.write())
    assert problems == ['outside: Module path "../outside.py" must be a relative .py path inside the module root',
                        'linked: Module path "%s" leads outside the module root %s (to %s): a pack\'s modules '
                        'must be files inside it' % (tmp_path / "root" / "tools" / "link.py", tmp_path / "root",
                                                     tmp_path / "outside.py")]


def test_a_module_path_spelled_with_dots_or_double_slashes_is_the_same_module(launcher, tmp_path):
    """As on the official service: ``./tools/echo.py`` and ``tools//echo.py`` name tools/echo.py."""
    pack = PackWriter(tmp_path)
    pack.module("tools/echo.py", ECHO + ECHO.replace('id="echo"', 'id="dotted"').replace("def echo", "def dotted")
                + ECHO.replace('id="echo"', 'id="doubled"').replace("def echo", "def doubled"))
    pack.tool("echo", "tools/echo.py").tool("dotted", "./tools/echo.py").tool("doubled", "tools//./echo.py")
    service = launcher.start(pack.write())
    for tool_id in ("echo", "dotted", "doubled"):
        assert service.call_tool(tool_id, {"via": tool_id}).json["output"] == {"via": tool_id}


def test_host_is_used_and_unknown_arguments_are_ignored(launcher, tmp_path):
    service = launcher.start(echo_pack(tmp_path).write(), args=["--host", "127.0.0.1", "--frobnicate", "extra"])
    assert service.request("GET", "/healthz", token=False).status == 200


@pytest.mark.parametrize("host", ["\u00e9..b", "\u00e9" * 70], ids=["empty-label", "long-label"])
def test_a_host_that_cant_be_listened_on_is_one_problem(launcher, tmp_path, host):
    # A name IDNA can't encode (an empty or too long label) was a traceback from the socket module.
    problems = boot_problems(launcher, echo_pack(tmp_path).write(), args=["--host", host])
    assert len(problems) == 1 and problems[0].startswith("Cannot listen on %s port 0: " % host), problems


# -- where the index and the modules are ----------------------------------------------------------

def test_module_root_flag(launcher, tmp_path):
    modules = tmp_path / "code"
    echo_pack(modules)
    (tmp_path / "elsewhere").mkdir()
    index = PackWriter(tmp_path / "elsewhere")
    index.tool("echo", "tools/echo.py")
    index_path = index.write()
    problems = boot_problems(launcher, index_path)
    assert problems == ["Missing module: tools/echo.py"]
    service = launcher.start(index_path, args=["--module-root", str(modules)])
    assert service.call_tool("echo", {"root": "flag"}).json["output"] == {"root": "flag"}


def test_index_from_the_environment(launcher, tmp_path):
    index = echo_pack(tmp_path).write(packId="from-env")
    service = launcher.spawn([SERVICE], env=service_env({"KINDGI_PACK_INDEX": str(index)}))
    assert service.wait_listening(), service.raw_stderr
    assert service.request("GET", "/v1/info").json["packId"] == "from-env"


def test_index_flag_wins_over_the_environment(launcher, tmp_path):
    flag = echo_pack(tmp_path / "a").write(packId="from-flag")
    env = echo_pack(tmp_path / "b").write(packId="from-env")
    service = launcher.start(flag, env={"KINDGI_PACK_INDEX": str(env)})
    assert service.request("GET", "/v1/info").json["packId"] == "from-flag"


@pytest.mark.parametrize("relative", ["--index", "--module-root"])
def test_a_relative_path_from_a_folder_removed_since_the_start_is_a_problem_not_a_traceback(launcher, tmp_path,
                                                                                             relative):
    """Relative paths start from the current folder; one removed under the service (a release folder
    deleted, a temporary one cleaned) made working them out a traceback."""
    index = str(echo_pack(tmp_path / "pack").write())
    args = ["--index", "index.json"] if relative == "--index" else ["--index", index, "--module-root", "pack"]
    gone = tmp_path / "gone"
    gone.mkdir()
    service = launcher.spawn([SERVICE] + args, env=service_env(), cwd=str(gone),
                             preexec_fn=lambda: os.rmdir(str(gone)))   # after the child's chdir into it
    assert service.wait_exit(30) == 1, service.raw_stderr
    assert_no_traceback(service)
    assert only_record(service, "config-invalid")["problems"] == [
        "%s is a relative path, and the current folder is gone (No such file or directory)" % json.dumps(args[-1])]


def test_default_index_path(launcher):
    if os.path.exists("/app/index.json"):
        pytest.skip("/app/index.json exists on this machine")
    code, service = launcher.run([])
    assert code == 1
    problems = only_record(service, "boot-failed")["problems"]
    assert len(problems) == 1
    assert problems[0].startswith("Cannot read the pack index: ")
    assert "/app/index.json" in problems[0]
