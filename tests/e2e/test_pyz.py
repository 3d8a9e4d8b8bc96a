"""End-to-end: the one-file kindgi_pack_min.pyz serves the example pack.

The archive is built by tools/build_pyz.py into a temporary folder and run
as `python -I -S kindgi_pack_min.pyz --index examples/hello-pack/index.json`:
no site-packages, no PYTHON* variables, no current folder on sys.path, which
is what a distroless image gives.  The service re-executes itself to hide its
token (sys.argv[0] is then the archive), so these tests also prove that the
re-exec works from a zipapp.

The services are started with the harness of tests/conftest.py; the
interpreter is KINDGI_TEST_PYTHON when set (CI runs this file under every
CPython 3.8+ it finds), else the one running pytest.
"""

import os
import signal
import subprocess
import zipfile

import pytest

from conftest import PYTHON, TOKEN, service_env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_PYZ = os.path.join(ROOT, "tools", "build_pyz.py")
EXAMPLE_INDEX = os.path.join(ROOT, "examples", "hello-pack", "index.json")
STOP_SECONDS = 12   # the drain takes at most 8 s


# -- building -----------------------------------------------------------------

def build(output):
    """Build the archive at *output* with tools/build_pyz.py; return its bytes."""
    subprocess.run([PYTHON, BUILD_PYZ, "--output", str(output)], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                   timeout=60)
    with open(str(output), "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    """Path of a freshly built kindgi_pack_min.pyz."""
    path = tmp_path_factory.mktemp("pyz") / "kindgi_pack_min.pyz"
    build(path)
    return path


def test_archive_holds_the_two_modules_their_bytecode_and_a_main(pyz):
    with open(str(pyz), "rb") as f:
        assert f.readline().startswith(b"#!")
    with zipfile.ZipFile(str(pyz)) as archive:
        names = sorted(archive.namelist())
        main = archive.read("__main__.py").decode("utf-8")
    assert names == ["__main__.py", "kindgi_pack_min.py", "kindgi_pack_min.pyc", "schema_lite.py",
                     "schema_lite.pyc"]
    assert "kindgi_pack_min.main()" in main


def test_the_python_that_built_the_archive_runs_its_bytecode(pyz):
    """No compile at start: the modules come from the archive's .pyc files."""
    done = subprocess.run([PYTHON, "-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                           "import kindgi_pack_min, schema_lite; print(kindgi_pack_min.__file__); "
                           "print(schema_lite.__file__)", str(pyz)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(pyz / "kindgi_pack_min.pyc"), str(pyz / "schema_lite.pyc")]


def test_edited_source_in_the_archive_wins_over_its_bytecode(pyz, tmp_path):
    """The bytecode is checked against its source's hash: an edited source is never run stale."""
    edited = tmp_path / "edited.pyz"
    with zipfile.ZipFile(str(pyz)) as original, zipfile.ZipFile(str(edited), "w") as copy:
        for name in original.namelist():
            data = original.read(name)
            if name == "kindgi_pack_min.py":
                data += b"\nEDITED = True\n"
            copy.writestr(name, data)
    done = subprocess.run([PYTHON, "-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                           "import kindgi_pack_min; print(kindgi_pack_min.EDITED)", str(edited)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "True"


def test_build_is_reproducible(pyz, tmp_path):
    with open(str(pyz), "rb") as f:
        first = f.read()
    assert build(tmp_path / "again.pyz") == first


# -- running ------------------------------------------------------------------

def distroless_args(pyz, *args):
    """Interpreter flags and arguments that run the archive as a distroless image would."""
    return ["-I", "-S", str(pyz)] + list(args)


@pytest.fixture
def service(launcher, pyz):
    """The archive serving the example pack (stopped by the launcher)."""
    running = launcher.spawn(distroless_args(pyz, "--index", EXAMPLE_INDEX),
                             env=service_env(), cwd=str(pyz.parent))
    assert running.wait_listening(), "\n".join(running.raw_stderr)
    return running


def test_pyz_serves_the_example_pack_and_stops_on_sigterm(service):
    health = service.request("GET", "/healthz", token=False)
    assert (health.status, health.json) == (200, {"status": "ok"})
    ready = service.request("GET", "/readyz", token=False)
    assert (ready.status, ready.json) == (200, {"status": "ready"})

    info = service.request("GET", "/v1/info")
    assert info.status == 200
    assert info.json["packId"] == "hello-pack"
    assert info.json["tools"] == [{"id": "greet", "version": "0.1.0"},
                                  {"id": "word-count", "version": "0.1.0"}]
    assert info.json["checks"] == ["no-shouting"]

    answer = service.call_tool("greet", {"name": "Ada", "excited": True})
    assert answer.status == 200
    assert answer.json == {"v": 2, "kind": "result", "output": {"message": "Hello, Ada!"}}
    assert answer.header("kindgi-artifact-version") == "hello-pack-0.1.0"
    assert answer.header("kindgi-duration-ms").isdigit()

    answer = service.call_check("no-shouting", {"maxUpper": 1}, {
        "runId": "run-1", "tenantId": "tenant-1", "output": "STOP SHOUTING now"})
    assert answer.status == 200
    assert answer.json["kind"] == "check-result"
    assert answer.json["result"]["passed"] is False

    service.signal(signal.SIGTERM)
    assert service.wait_exit(STOP_SECONDS) == 0
    service.wait_record("stopped")


def test_defaults_and_validation_work_from_the_archive(service):
    """schema_lite is loaded from inside the archive: defaults and issues."""
    answer = service.call_tool("greet", {"name": "Ada"})
    assert answer.json["output"] == {"message": "Hello, Ada."}
    answer = service.call_tool("greet", {"name": ""})
    assert answer.json["code"] == "input-validation-failed"
    assert [issue["instancePath"] for issue in answer.json["issues"]] == ["/name"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_token_is_not_in_the_archive_process_environment(service):
    """The re-exec from the archive leaves no token in /proc/<pid>/environ."""
    proc = "/proc/%d/" % service.proc.pid
    with open(proc + "environ", "rb") as f:
        environ = f.read()
    with open(proc + "cmdline", "rb") as f:
        cmdline = f.read()
    assert TOKEN.encode() not in environ
    assert TOKEN.encode() not in cmdline
    assert service.request("GET", "/healthz", token=False).status == 200


def test_check_mode_boots_the_example_pack_without_listening(launcher, pyz):
    ran = launcher.spawn(distroless_args(pyz, "--check", "--index", EXAMPLE_INDEX),
                         env=service_env(), cwd=str(pyz.parent))
    assert ran.wait_exit(30) == 0, "\n".join(ran.raw_stderr)
    assert ran.records_of("listening") == []


@pytest.mark.parametrize("flag", ["--help", "--version"])
def test_cli_flags_answer_from_the_archive(launcher, pyz, flag):
    ran = launcher.spawn(distroless_args(pyz, flag), env=service_env())
    assert ran.wait_exit(30) == 0, "\n".join(ran.raw_stderr)
    assert ran.stdout
