"""End-to-end: the one-file forms, kindgi_pack_min.pyz and the standalone kindgi_pack_min.py.

tools/build.py builds both into a temporary folder with the interpreter
under test.  Each is copied alone into an empty folder and run from there as
`python -I -S FILE --index examples/hello-pack/index.json`: no
site-packages, no PYTHON* variables, no script folder on sys.path, which is
what a distroless image gives.  Where the service can't scrub its token from
its own memory it re-executes its program (sys.argv[0], then the copied
file), which is proved for both forms too.  Run from a checkout without
schema_lite.py, kindgi_pack_min.py says so in one line.

The services are started with the harness of tests/conftest.py; the
interpreter is KINDGI_TEST_PYTHON when set (CI runs this file under every
CPython 3.8+ it finds), else the one running pytest.
"""

import ast
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile

import pytest

from conftest import PYTHON, TOKEN, service_env
from test_token import handed_copies, start_on_pipe, without_memory_writes_at_first_start

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(ROOT, "tools", "build.py")
EXAMPLE_INDEX = os.path.join(ROOT, "examples", "hello-pack", "index.json")
ARCHIVE = "kindgi_pack_min.pyz"
SCRIPT = "kindgi_pack_min.py"
FORMS = (ARCHIVE, SCRIPT)
STOP_SECONDS = 12   # the drain takes at most 8 s


def service_modules():
    """The modules both forms must hold: the two the service needs, and the indexer once it exists."""
    names = ["kindgi_pack_min", "schema_lite"]
    if os.path.isfile(os.path.join(ROOT, "kindgi_pack_index.py")):
        names.append("kindgi_pack_index")
    return names


# -- building -----------------------------------------------------------------

def build(dist, python=PYTHON):
    """Build both forms into *dist* with *python*; return {file name: bytes}."""
    subprocess.run([python, BUILD, "--dist", str(dist)], check=True,
                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    built = {}
    for name in FORMS:
        with open(os.path.join(str(dist), name), "rb") as f:
            built[name] = f.read()
    return built


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """A folder holding freshly built kindgi_pack_min.pyz and kindgi_pack_min.py."""
    folder = tmp_path_factory.mktemp("dist")
    build(folder)
    return folder


@pytest.fixture(params=FORMS)
def alone(request, dist, tmp_path):
    """One form, copied alone into an empty folder."""
    folder = tmp_path / "app"
    folder.mkdir()
    return shutil.copy(str(dist / request.param), str(folder))


def run(args, cwd=None, env=None):
    return subprocess.run([PYTHON] + [str(a) for a in args], cwd=cwd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)


def version_of(python):
    done = subprocess.run([python, "-c", "import sys; print(sys.version_info[:2])"],
                          stdout=subprocess.PIPE, check=True, timeout=30)
    return done.stdout.strip()


def builds_bytecode(python=PYTHON):
    """zipimport reads hash-checked bytecode from Python 3.8: built by 3.6 or 3.7, the archive holds sources only."""
    done = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 8))"],
                          stdout=subprocess.PIPE, check=True, timeout=30)
    return done.stdout.strip() == b"True"


def test_build_is_reproducible(dist, tmp_path):
    first = build(tmp_path / "again")
    for name in FORMS:
        with open(str(dist / name), "rb") as f:
            assert f.read() == first[name], name


def test_archive_holds_the_modules_their_bytecode_and_a_main(dist):
    with open(str(dist / ARCHIVE), "rb") as f:
        assert f.readline().startswith(b"#!")
    with zipfile.ZipFile(str(dist / ARCHIVE)) as archive:
        names = sorted(archive.namelist())
        main = archive.read("__main__.py").decode("utf-8")
    extensions = (".py", ".pyc") if builds_bytecode() else (".py",)
    assert names == sorted(["__main__.py"] + [m + ext for m in service_modules() for ext in extensions])
    assert "kindgi_pack_min.main()" in main


def test_script_holds_every_module_source_as_it_is(dist):
    """SOURCES[name] is the module's file as it is, its line N on the script's line N after the name."""
    with open(str(dist / SCRIPT), encoding="utf-8") as f:
        text = f.read()
    assert text.startswith("#!")
    lines = text.split("\n")
    held = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            assert lines[node.lineno - 1].endswith("= '''\\"), "line 1 of the source is not on the next line"
            held[ast.literal_eval(node.targets[0].slice)] = ast.literal_eval(node.value)
    assert sorted(held) == sorted(service_modules())
    for name, source in held.items():
        with open(os.path.join(ROOT, name + ".py"), encoding="utf-8", newline="") as f:
            assert source == f.read(), name


# -- the archive's bytecode ---------------------------------------------------

def test_the_python_that_built_the_archive_runs_its_bytecode(dist):
    """No compile at start: the modules come from the archive's .pyc files."""
    if not builds_bytecode():
        pytest.skip("Python 3.6 and 3.7 build an archive of sources only")
    pyz = dist / ARCHIVE
    done = run(["-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                "import kindgi_pack_min, schema_lite; print(kindgi_pack_min.__file__); "
                "print(schema_lite.__file__)", pyz])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(pyz / "kindgi_pack_min.pyc"), str(pyz / "schema_lite.pyc")]


def test_an_archive_built_by_another_python_version_runs_from_its_sources(tmp_path):
    """CI builds dist/ once; every other version finds the bytecode's magic wrong and compiles the sources."""
    if version_of(sys.executable) == version_of(PYTHON):
        pytest.skip("KINDGI_TEST_PYTHON is the version running pytest: no other version to build with")
    build(tmp_path, python=sys.executable)
    pyz = tmp_path / ARCHIVE
    done = run(["-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                "import kindgi_pack_min; print(kindgi_pack_min.__file__)", pyz])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(pyz / "kindgi_pack_min.py")]
    checked = run(["-I", "-S", pyz, "--check", "--index", EXAMPLE_INDEX], env=service_env())
    assert checked.returncode == 0, checked.stderr


def test_edited_source_in_the_archive_wins_over_its_bytecode(dist, tmp_path):
    """The bytecode is checked against its source's hash: an edited source is never run stale."""
    edited = tmp_path / "edited.pyz"
    with zipfile.ZipFile(str(dist / ARCHIVE)) as original, zipfile.ZipFile(str(edited), "w") as copy:
        for name in original.namelist():
            data = original.read(name)
            if name == "kindgi_pack_min.py":
                data += b"\nEDITED = True\n"
            copy.writestr(name, data)
    done = run(["-I", "-S", "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                "import kindgi_pack_min; print(kindgi_pack_min.EDITED)", edited])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "True"


# -- the script's embedded modules ----------------------------------------------

def test_a_traceback_from_an_embedded_module_names_it_and_shows_its_line(dist):
    script = dist / SCRIPT
    done = run(["-I", "-S", "-c", "import runpy, sys, traceback; runpy.run_path(sys.argv[1], run_name='built')\n"
                "import schema_lite\n"
                "try:\n    schema_lite.SchemaValidator({'type': 5})\n"
                "except schema_lite.SchemaError:\n    traceback.print_exc()\n"
                "print(schema_lite.__file__)", script])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().split() == [str(script / "schema_lite.py")]
    trace = done.stderr.decode()
    assert 'File "%s/schema_lite.py", line ' % script in trace
    assert "raise _schema_error(" in trace, "the traceback should show the module's source line"


def test_a_module_beside_the_script_does_not_stand_in_for_an_embedded_one(dist, tmp_path):
    """Without -I the script's folder is on sys.path; the embedded modules still come first."""
    folder = tmp_path / "app"
    folder.mkdir()
    shutil.copy(str(dist / SCRIPT), str(folder))
    (folder / "schema_lite.py").write_text("raise SystemExit('the stray schema_lite.py was imported')\n")
    done = run([folder / SCRIPT, "--version"], cwd=str(folder), env=service_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("kindgi-pack-min ")


# -- each form, alone, serving the example pack ----------------------------------

def distroless_args(path, *args):
    """Interpreter flags and arguments that run a form as a distroless image would."""
    return ["-I", "-S", path] + list(args)


@pytest.fixture
def service(launcher, alone):
    """One form, alone in its folder, serving the example pack (stopped by the launcher)."""
    running = launcher.spawn(distroless_args(alone, "--index", EXAMPLE_INDEX),
                             env=service_env(), cwd=os.path.dirname(alone))
    assert running.wait_listening(), "\n".join(running.raw_stderr)
    return running


def test_serves_the_example_pack_and_stops_on_sigterm(service):
    health = service.request("GET", "/healthz", token=False)
    assert (health.status, health.json) == (200, {"status": "ok"})
    ready = service.request("GET", "/readyz", token=False)
    assert (ready.status, ready.json) == (200, {"status": "ready"})

    info = service.request("GET", "/v1/info")
    assert info.status == 200
    assert info.json["packId"] == "hello-pack"
    assert info.json["tools"] == [{"id": "greet", "version": "0.1.0"},
                                  {"id": "word-count", "version": "0.1.0"}]
    assert info.json["checks"] == ["hello-pack.checks.no-shouting"]

    answer = service.call_tool("greet", {"name": "Ada", "excited": True})
    assert answer.status == 200
    assert answer.json == {"v": 2, "kind": "result", "output": {"message": "Hello, Ada!"}}
    assert answer.header("kindgi-artifact-version") == "hello-pack-0.1.0"
    assert answer.header("kindgi-duration-ms").isdigit()

    answer = service.call_check("hello-pack.checks.no-shouting", {"maxUpper": 1}, {
        "runId": "run-1", "tenantId": "tenant-1", "output": "STOP SHOUTING now"})
    assert answer.status == 200
    assert answer.json["kind"] == "check-result"
    assert answer.json["result"]["passed"] is False

    service.signal(signal.SIGTERM)
    assert service.wait_exit(STOP_SECONDS) == 0
    service.wait_record("stopped")


def test_defaults_and_validation_work_from_the_one_file(service):
    """schema_lite is loaded from inside the file: defaults and issues."""
    answer = service.call_tool("greet", {"name": "Ada"})
    assert answer.json["output"] == {"message": "Hello, Ada."}
    answer = service.call_tool("greet", {"name": ""})
    assert answer.json["code"] == "input-validation-failed"
    assert [issue["instancePath"] for issue in answer.json["issues"]] == ["/name"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_token_is_not_in_the_process_environment(service):
    proc = "/proc/%d/" % service.proc.pid
    with open(proc + "environ", "rb") as f:
        environ = f.read()
    with open(proc + "cmdline", "rb") as f:
        cmdline = f.read()
    assert TOKEN.encode() not in environ
    assert TOKEN.encode() not in cmdline
    assert service.request("GET", "/healthz", token=False).status == 200


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
def test_re_executes_the_one_file_itself_where_memory_can_not_be_scrubbed(launcher, alone, tmp_path):
    """The fallback re-runs sys.argv[0]: the copied file, which must start the service again.

    A sitecustomize refuses /proc/self/mem at the first start, so this runs
    without -I -S (site and PYTHONPATH are how the test gets in).
    """
    env = service_env(without_memory_writes_at_first_start(tmp_path / "site"))
    running = launcher.spawn([alone, "--index", EXAMPLE_INDEX], env=env, cwd=os.path.dirname(alone))
    assert running.wait_listening(), "\n".join(running.raw_stderr)
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(running.proc.pid)] * 2, "the service did not re-execute itself"
    with open("/proc/%d/cmdline" % running.proc.pid, "rb") as f:
        cmdline = f.read().decode().split("\0")
    assert cmdline[-4:] == [alone, "--index", EXAMPLE_INDEX, ""]
    with open("/proc/%d/environ" % running.proc.pid, "rb") as f:
        assert TOKEN.encode() not in f.read()
    assert running.records_of("token-exposed") == []
    answer = running.call_tool("greet", {"name": "Ada"})
    assert answer.json["output"] == {"message": "Hello, Ada."}
    running.signal(signal.SIGTERM)
    assert running.wait_exit(STOP_SECONDS) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux /proc")
@pytest.mark.parametrize("source", ["pipe", "named pipe"])
def test_the_one_file_hands_an_index_read_from_a_pipe_over_to_its_re_executed_self(launcher, alone, tmp_path, source):
    """The copied file re-executed as above gets the index's bytes from its first image: the pipe
    is empty by then."""
    with open(EXAMPLE_INDEX, "rb") as f:
        data = f.read()
    env = service_env(without_memory_writes_at_first_start(tmp_path / "site"))
    running = start_on_pipe(launcher, [alone, "--module-root", os.path.dirname(EXAMPLE_INDEX)], env, data, source,
                            tmp_path, cwd=os.path.dirname(alone))
    assert running.wait_listening(), "\n".join(running.raw_stderr)
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(running.proc.pid)] * 2, "the service did not re-execute itself"
    assert running.request("GET", "/v1/info").json["indexHash"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert handed_copies(running) == []
    assert running.call_tool("greet", {"name": "Ada"}).json["output"] == {"message": "Hello, Ada."}
    running.signal(signal.SIGTERM)
    assert running.wait_exit(STOP_SECONDS) == 0


SLOW_SOCKETSERVER = '''
import os, sys, time


class SlowSocketserver:
    """Marks, then slows, the import of socketserver, which the service's first lines import."""

    def find_spec(self, name, path=None, target=None):
        if name == "socketserver":
            open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "importing"), "w").close()
            time.sleep(1.0)
        return None


sys.meta_path.insert(0, SlowSocketserver())
'''


@pytest.mark.parametrize("program", ["checkout"] + list(FORMS))
def test_a_signal_while_the_first_lines_import_is_held_not_fatal(launcher, dist, tmp_path, program):
    """SIGTERM and SIGINT are held from the program's first line until main() handles them.

    A sitecustomize (so no -I -S here) slows the import of socketserver; a
    SIGTERM sent then must end the service by its handler (exit 0, `stopped`)
    in every form, not kill it.
    """
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SLOW_SOCKETSERVER)
    path = os.path.join(ROOT, SCRIPT) if program == "checkout" else str(dist / program)
    env = service_env({"PYTHONPATH": str(site)})
    running = launcher.spawn([path, "--index", EXAMPLE_INDEX], env=env, cwd=str(tmp_path))
    for _ in range(1000):
        if (site / "importing").exists() or running.proc.poll() is not None:
            break
        time.sleep(0.01)
    assert (site / "importing").exists(), "\n".join(running.raw_stderr)
    running.signal(signal.SIGTERM)
    assert running.wait_exit(STOP_SECONDS) == 0, "the signal killed the service before main() handled it"
    assert [r["kind"] for r in running.records] == ["stopped"]


def test_check_mode_boots_the_example_pack_without_listening(launcher, alone):
    ran = launcher.spawn(distroless_args(alone, "--check", "--index", EXAMPLE_INDEX),
                         env=service_env(), cwd=os.path.dirname(alone))
    assert ran.wait_exit(30) == 0, "\n".join(ran.raw_stderr)
    assert ran.records_of("listening") == []
    assert ran.records_of("check-passed")


def test_the_one_file_builds_the_example_index_byte_for_byte(alone, tmp_path):
    """The indexer is inside: `index` writes what is committed, from a copy of the example's sources."""
    pack = tmp_path / "hello-pack"
    shutil.copytree(os.path.dirname(EXAMPLE_INDEX), str(pack), ignore=shutil.ignore_patterns("index.json", "__pycache__"))
    done = run(distroless_args(alone, "index", "--pack-dir", pack, "--artifact-version", "hello-pack-0.1.0",
                               "--published-at", "2026-01-01T00:00:00.000Z"), cwd=os.path.dirname(alone))
    assert done.returncode == 0, done.stderr
    with open(EXAMPLE_INDEX, "rb") as committed:
        assert (pack / "index.json").read_bytes() == committed.read()


def test_version_and_help_answer_from_the_one_file(alone):
    version = run(distroless_args(alone, "--version"), cwd=os.path.dirname(alone), env=service_env())
    assert version.returncode == 0, version.stderr
    assert version.stdout.decode().startswith("kindgi-pack-min ")
    usage = run(distroless_args(alone, "--help"), cwd=os.path.dirname(alone), env=service_env())
    assert usage.returncode == 0, usage.stderr
    assert "--index" in usage.stdout.decode()


# -- a checkout without schema_lite.py --------------------------------------------

def test_script_without_schema_lite_says_so_in_one_line(tmp_path):
    shutil.copy(os.path.join(ROOT, "kindgi_pack_min.py"), str(tmp_path))
    done = run([tmp_path / "kindgi_pack_min.py", "--version"], cwd=str(tmp_path), env=service_env())
    assert done.returncode == 1
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "schema_lite not found" in lines[0]
    assert "tools/build.py" in lines[0] and "dist/kindgi_pack_min.pyz" in lines[0]


def test_an_import_error_inside_schema_lite_is_not_taken_for_a_missing_module(tmp_path):
    shutil.copy(os.path.join(ROOT, "kindgi_pack_min.py"), str(tmp_path))
    (tmp_path / "schema_lite.py").write_text("import kindgi_no_such_module\n")
    done = run([tmp_path / "kindgi_pack_min.py", "--version"], cwd=str(tmp_path), env=service_env())
    assert done.returncode == 1
    stderr = done.stderr.decode()
    assert "Traceback" in stderr and "kindgi_no_such_module" in stderr
    assert "schema_lite not found" not in stderr
