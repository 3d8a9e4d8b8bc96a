"""End-to-end: ``--check`` boots without listening (README: Deploying).

``python kindgi_pack_min.py --check --index ...`` does what boot does -
configuration, index, module files, env, imports - and exits 0, or 1 with
the very problem lines a real boot writes, and never listens: image builds
and CI run it.
"""

import json
import os
import signal
import socket
import time

import pytest

from conftest import PackWriter

CHECK_SECONDS = 15   # far more than a boot needs: a --check that listens would hang past it

GOOD_CODE = '''
import os
from kindgi import tool, guardrail

with open(os.path.join(os.path.dirname(__file__), "imported.log"), "a") as f:
    f.write("imported\\n")

@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo", version="1.0.0")
def echo(input, ctx):
    return input

@guardrail(id="g", on_violation="block")
def g(config, trace):
    return True
'''


def good_pack(folder):
    pack = PackWriter(folder)
    pack.module("tools/good.py", GOOD_CODE)
    pack.tool("echo", "tools/good.py", version="1.0.0")
    pack.guardrail("g", "tools/good.py")
    return pack


def run_check(launcher, index, env=None, args=(), **kw):
    return launcher.run(["--check", "--index", index] + list(args), env=env, timeout=CHECK_SECONDS, **kw)


# -- a pack that boots ----------------------------------------------------------

def test_check_imports_everything_and_exits_0_without_listening(launcher, tmp_path):
    pack = good_pack(tmp_path)
    code, checked = run_check(launcher, pack.write())
    assert code == 0, checked.raw_stderr
    assert checked.records_of("listening") == []
    assert checked.records_of("boot-failed") == [] and checked.records_of("config-invalid") == []
    assert (tmp_path / "tools" / "imported.log").read_text() == "imported\n"
    assert checked.wait_record("check-passed")["message"] == "The pack boots: 1 tool, 1 check"


def test_check_never_binds_its_port(launcher, tmp_path):
    """The port is taken already: a --check that tried to listen would fail to boot."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        code, checked = run_check(launcher, good_pack(tmp_path).write(), {"PORT": str(port)},
                                  args=["--host", "127.0.0.1"])
    assert code == 0, checked.raw_stderr
    assert checked.records_of("boot-failed") == []


ODD_CODE = '''
from kindgi import tool, guardrail

@tool(description="A test tool.", input={"type": "object"}, output={}, id="bad-input")
def bad_input(input):
    return input

@guardrail(id="bad-config", on_violation="block")
def bad_config(config, trace):
    return True
'''


def test_check_names_what_every_call_will_be_refused_for(launcher, tmp_path):
    """A tool its module doesn't define and schemas that can't be compiled don't stop the boot
    (each call is answered with its error), but the boot says so at once, and --check with it."""
    pack = good_pack(tmp_path)
    pack.module("tools/odd.py", ODD_CODE)
    pack.tool("ghost", "tools/good.py")
    pack.tool("bad-input", "tools/odd.py", input={"type": "nope"})
    pack.guardrail("bad-config", "tools/odd.py", config_schema={"type": "object", "minProperties": -1})
    pack.guardrail("absent", "tools/odd.py")
    index = pack.write()
    refused = [
        "Module 'tools/good.py' does not define handler \"ghost\"",
        'Tool "bad-input" input schema failed to compile: "type" at #/type: unknown type "nope"',
        'Check "bad-config" config schema failed to compile: "minProperties" at #/minProperties: '
        "must be a non-negative integer",
        "Module 'tools/odd.py' does not define check \"absent\"",
    ]
    code, checked = run_check(launcher, index)
    assert code == 0, checked.raw_stderr
    warning = checked.wait_record("unusable-entries")
    assert warning["level"] == "warn" and warning["problems"] == refused
    assert warning["message"] == "Part of the pack can't be used; each call to it is refused: " + "; ".join(refused)
    service = launcher.start(index)
    assert service.wait_record("unusable-entries")["problems"] == refused
    answer = service.call_tool("bad-input", {})
    assert json.loads(answer.body)["message"] == refused[1]


def test_a_pack_that_can_answer_every_call_has_no_unusable_warning(launcher, tmp_path):
    code, checked = run_check(launcher, good_pack(tmp_path).write())
    assert code == 0 and checked.records_of("unusable-entries") == []


def test_check_reports_missing_env_too(launcher, tmp_path):
    pack = good_pack(tmp_path)
    pack.env = {"required": ["NOT_SET_B", "NOT_SET_A"], "optional": []}
    _, checked = run_check(launcher, pack.write())
    assert checked.wait_record("missing-env")["names"] == ["NOT_SET_A", "NOT_SET_B"]
    assert checked.records_of("listening") == []


# -- packs and configurations that don't ----------------------------------------

def broken_imports(pack):
    pack.module("tools/boom.py", 'raise RuntimeError("import boom")\n')
    pack.module("checks/gone.py", "import not_a_module_4f1e\n")
    pack.tool("t.boom", "tools/boom.py", version="1.0.0")
    pack.guardrail("g", "checks/gone.py", check_id="g.check")
    return pack.write(), {}, ["t.boom: import boom", "g.check: No module named 'not_a_module_4f1e'"]


def missing_module(pack):
    pack.tool("t.gone", "tools/nope.py", version="1.0.0")
    pack.guardrail("g", "checks/nope.py")
    return pack.write(), {}, ["Missing module: tools/nope.py", "Missing module: checks/nope.py"]


def wrong_envelope(pack):
    return pack.write(v=2), {}, ["Index envelope v2 is not v1"]


def bad_config(pack):
    env = {"PORT": "http", "KINDGI_PACK_ENV_FILTER": "maybe", "KINDGI_PACK_SERVICE_TOKEN": "  "}
    return pack.write(), env, [
        "KINDGI_PACK_SERVICE_TOKEN is required",
        'PORT must be a port number, got "http"',
        'KINDGI_PACK_ENV_FILTER must be `on` or `off`, not "maybe"',
    ]


FAILURES = {"broken-imports": (broken_imports, "boot-failed", "The pack service failed to boot"),
            "missing-module": (missing_module, "boot-failed", "The pack service failed to boot"),
            "wrong-envelope": (wrong_envelope, "boot-failed", "The pack service failed to boot"),
            "bad-config": (bad_config, "config-invalid", "The pack service configuration is invalid")}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_check_fails_with_the_problem_lines_a_real_boot_writes(launcher, tmp_path, case):
    make, kind, message = FAILURES[case]
    index, env, problems = make(PackWriter(tmp_path))
    code, checked = run_check(launcher, index, env)
    assert code == 1, checked.raw_stderr
    record = checked.wait_record(kind)
    assert (record["level"], record["message"]) == ("error", message)
    assert sorted(record["problems"]) == sorted(problems)
    assert checked.records_of("listening") == []

    code, booted = launcher.run(["--index", index], env=env, timeout=CHECK_SECONDS)
    assert code == 1
    assert booted.wait_record(kind)["problems"] == record["problems"]


def test_check_with_an_unreadable_index_fails_like_boot(launcher, tmp_path):
    index = tmp_path / "absent.json"
    code, checked = run_check(launcher, index)
    assert code == 1
    problems = checked.wait_record("boot-failed")["problems"]
    assert len(problems) == 1 and problems[0].startswith("Cannot read the pack index: ")
    code, booted = launcher.run(["--index", index], timeout=CHECK_SECONDS)
    assert (code, booted.wait_record("boot-failed")["problems"]) == (1, problems)
    assert json.dumps(problems).count(str(index)) == 1


SLOW_IMPORT = '''
import os, time
open(os.path.join(os.path.dirname(__file__), "importing"), "w").close()
time.sleep(30)
'''


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_check_stopped_before_its_end_does_not_pass(launcher, tmp_path, signum):
    """A CI job cancelled, or Ctrl-C, during a slow import: the pack was not checked, so not exit 0."""
    pack = PackWriter(tmp_path)
    pack.module("tools/slow.py", SLOW_IMPORT)
    pack.tool("slow", "tools/slow.py")
    service = launcher.start(pack.write(), args=["--check"], expect_listening=False)
    deadline = time.monotonic() + 10
    while not (tmp_path / "tools" / "importing").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (tmp_path / "tools" / "importing").exists(), service.raw_stderr
    os.kill(service.proc.pid, signum)
    assert service.wait_exit(CHECK_SECONDS) == 1
    assert [(r["kind"], r["message"]) for r in service.records] == [("stopped", "Stopped before the check finished")]


def test_a_check_ends_though_a_module_left_a_thread_running(launcher, tmp_path):
    """A worker a module starts at import (not a daemon) held the exit after ``check-passed`` for ever."""
    pack = good_pack(tmp_path)
    pack.module("tools/worker.py", "import threading, time\n"
                                   "from kindgi import tool\n"
                                   "threading.Thread(target=time.sleep, args=(3600,)).start()\n"
                                   "@tool(description='A test tool.', input={'type': 'object'}, output={}, id='worker')\n"
                                   "def worker(input):\n"
                                   "    return input\n")
    pack.tool("worker", "tools/worker.py")
    code, checked = run_check(launcher, pack.write())
    assert code == 0, checked.raw_stderr
    assert [r["kind"] for r in checked.records] == ["check-passed"]
