"""Helpers for the indexer's tests: run it (or the SDK's) on a copy of a pack, read the outcome.

The packs are in tests/packs/; what the SDK's indexer writes for each, with the pins
below, is in tests/packs/expected/ (``<pack>.index.json``, ``<pack>.outcome.json``).
The run errors are written by the tests (``RUN_ERRORS``).  ``python3
tests/e2e/indexing.py`` rewrites the expected files from the SDK's indexer (kindgi
0.1.10 in .venv-sdk/), for when a pack changes.

The official SDK goes into ``.venv-sdk/`` at the repository root (ignored by git),
made on first use with ``pip install kindgi==0.1.10`` and reused; ``$KINDGI_SDK_PYTHON``
names another interpreter that has it.  Where it can't be installed, the tests that
need it skip and say why.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ROOT / "kindgi_pack_min.py"
PACKS = ROOT / "tests" / "packs"
EXPECTED = PACKS / "expected"
PYTHON = os.environ.get("KINDGI_TEST_PYTHON") or sys.executable
ARTIFACT = "test-1"
PUBLISHED = "2026-01-01T00:00:00.000Z"
PINS = ["--artifact-version", ARTIFACT, "--published-at", PUBLISHED]
SDK_VERSION = "0.1.10"
SDK_VENV = ROOT / ".venv-sdk"
RUN_SECONDS = 120

# The packs with expected output on every interpreter (pydantic's needs pydantic).
PLAIN_PACKS = ("agents-flows", "env", "env-empty", "file-errors", "http", "kitchen", "numbers",
               "unicode", "versions")
TYPED_PACKS = ("pydantic",)


class Ran:
    """A finished indexer run: exit code, stdout, stderr (text)."""

    def __init__(self, code, stdout, stderr):
        self.code = code
        self.stdout = stdout
        self.stderr = stderr

    def __repr__(self):
        return "<Ran %d stdout=%r stderr=%r>" % (self.code, self.stdout[-500:], self.stderr[-1500:])


def run(command, cwd=None, env=None):
    """Run a command to its end (at most RUN_SECONDS); a Ran."""
    done = subprocess.run([str(part) for part in command], cwd=str(cwd or ROOT), env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=RUN_SECONDS)
    return Ran(done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8", "replace"))


def run_index(args, python=PYTHON, cwd=None, env=None):
    """``kindgi_pack_min.py index ARGS`` under ``python``: from the checkout's bytecode
    (``-m kindgi_pack_min``, as the service tests start the service: compiling the script is a
    third of a run's CPU), or the script by its path when run from another folder."""
    program = ["-m", "kindgi_pack_min"] if cwd is None else [SERVICE]
    return run([python] + program + ["index"] + list(args), cwd=cwd, env=env)


def run_sdk_index(args, python, cwd=None):
    """``python -m kindgi.pack index ARGS``: the SDK's indexer."""
    return run([python, "-m", "kindgi.pack", "index"] + list(args), cwd=cwd)


def copy_pack(source, target):
    """Copy a pack folder to target (no bytecode), adding what git can't hold: a __pycache__
    folder discovery must skip.  Returns target."""
    shutil.copytree(str(source), str(target), ignore=shutil.ignore_patterns("__pycache__"))
    tools = Path(target) / "tools"
    if tools.is_dir():
        (tools / "__pycache__").mkdir()
        (tools / "__pycache__" / "cached.py").write_text('raise RuntimeError("never walked")\n')
    return Path(target)


def write_files(folder, files):
    """Write {relative path: text} under folder; return folder."""
    for rel, text in files.items():
        path = Path(folder) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return Path(folder)


def outcome_of(ran, root):
    """The --json outcome of a run, comparable across runs: outputPath and each cause's
    stack dropped (they name this machine's paths), the pack's folder written <pack>."""
    lines = ran.stdout.splitlines()
    assert lines, ran
    outcome = json.loads(lines[-1])
    if outcome["kind"] == "ok":
        outcome["value"].pop("outputPath")
        for error in outcome["value"]["fileErrors"]:
            error.get("cause", {}).pop("stack", None)
    text = json.dumps(outcome, ensure_ascii=False)
    return json.loads(text.replace(json.dumps(str(root))[1:-1], "<pack>"))


# -- the run errors, written by the tests ----------------------------------------------

CONFIG = '[tool.kindgi.pack]\nid = "acme.run"\nversion = "1.0.0"\n'
TOOL = '''from kindgi import tool


@tool(id="acme.run.t", description="A tool.", input={"type": "object"}, output={})
def t(input):
    return {}
'''


def _pack(config=CONFIG, modules=None):
    """The files of a pack: pyproject.toml (unless config is None) and modules, by path
    (default: the one tool)."""
    files = {"pyproject.toml": config} if config is not None else {}
    files.update(modules or {"tools/t.py": TOOL})
    return files


def _tool_with(extra):
    return TOOL.replace('output={}', 'output={}, ' + extra)


# name -> (files of the pack, extra arguments); the outcome names the pack's folder <pack>.
RUN_ERRORS = {
    "no-pyproject": (_pack(config=None), []),
    "no-kindgi-table": (_pack(config='[project]\nname = "x"\n'), []),
    "config-path-missing": (_pack(), ["--config", "<pack>/missing.toml"]),
    "bad-toml": (_pack(config='[tool.kindgi.pack]\nid = "acme.run\nversion = "1.0.0"\n'), []),
    "no-pack-table": (_pack(config='[tool.kindgi.discovery]\ntools = "t/*.py"\n'), []),
    "empty-id": (_pack(config='[tool.kindgi.pack]\nid = ""\nversion = "1.0.0"\n'), []),
    "version-not-string": (_pack(config='[tool.kindgi.pack]\nid = "a"\nversion = 1\n'), []),
    "discovery-not-globs": (_pack(config=CONFIG + '[tool.kindgi.discovery]\ntools = 5\n'), []),
    "env-not-table": (_pack(config='[tool.kindgi]\nenv = "X"\n[tool.kindgi.pack]\nid = "a"\nversion = "1.0.0"\n'),
                      []),
    "env-unknown-key": (_pack(config=CONFIG + '[tool.kindgi.env]\nrequired = []\nsecret = ["X"]\n'), []),
    "env-problems": (_pack(config=CONFIG + '[tool.kindgi.env]\nrequired = ["1BAD", "KINDGI_TOKEN", "DUP", '
                           '"DUP", "BOTH"]\noptional = ["BOTH", "ok-not"]\n'), []),
    "env-not-list": (_pack(config=CONFIG + '[tool.kindgi.env]\nrequired = "X"\noptional = [1]\n'), []),
    "discovery-empty": (_pack(config=CONFIG + '[tool.kindgi.discovery]\ntools = "src/**/*.py"\n'), []),
    "published-at-not-date-time": (_pack(), ["--published-at", "yesterday"]),
    "published-at-offset-without-colon": (_pack(), ["--published-at", "2026-01-01T00:00:00+0100"]),
    "guardrail-kind-empty": (_pack(modules={"guardrails/g.py": '''from kindgi import guardrail


@guardrail(id="acme.run.g", kind="", on_violation="halt")
def g(config, trace):
    return True
'''}), []),
    "tool-sandbox-not-string": (_pack(modules={"tools/t.py": _tool_with("sandbox=5")}), []),
    "output-under-a-file": (_pack(), ["--output", "<pack>/pyproject.toml/index.json"]),
}


def run_error_args(case, root):
    """The arguments of a run-error case for a pack written at root."""
    _, extra = RUN_ERRORS[case]
    return ["--pack-dir", str(root), "--json"] + PINS + [arg.replace("<pack>", str(root)) for arg in extra]


# -- the official SDK ----------------------------------------------------------------------

def sdk_python():
    """An interpreter with kindgi 0.1.10, or None and the reason it can't be had."""
    named = os.environ.get("KINDGI_SDK_PYTHON")
    candidates = [named] if named else [str(SDK_VENV / "bin" / "python")]
    probe = "import kindgi, sys; sys.exit(kindgi.__version__ != %r)" % SDK_VERSION
    for python in candidates:
        if os.path.exists(python) and subprocess.call([python, "-c", probe], stderr=subprocess.DEVNULL) == 0:
            return python, None
    if named:
        return None, "$KINDGI_SDK_PYTHON (%s) has no kindgi %s" % (named, SDK_VERSION)
    if sys.version_info < (3, 11):
        return None, "the SDK needs Python 3.11+ to make %s" % SDK_VENV
    python = str(SDK_VENV / "bin" / "python")
    try:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(SDK_VENV)], check=True, timeout=120,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                        "kindgi==%s" % SDK_VERSION], check=True, timeout=600,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except (subprocess.SubprocessError, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        return None, "could not install kindgi==%s into %s: %s %s" % (
            SDK_VERSION, SDK_VENV, exc, detail.decode("utf-8", "replace")[-300:])
    return python, None


def require_sdk():
    """The interpreter with kindgi 0.1.10, or a pytest skip that says why there is none."""
    import pytest
    python, reason = sdk_python()
    if python is None:
        pytest.skip(reason)
    return python


def without_kindgi(sdk):
    """A command prefix running the SDK venv's interpreter with its packages (pydantic and
    all) but not kindgi: the indexer then uses the stand-in, with the SDK's pydantic."""
    site = subprocess.run([sdk, "-c", "import pydantic, os; print(os.path.dirname(os.path.dirname("
                                      "pydantic.__file__)))"],
                          stdout=subprocess.PIPE, check=True, timeout=60).stdout.decode().strip()
    folder = SDK_VENV / "without-kindgi"
    if not folder.is_dir():
        staging = SDK_VENV / ("without-kindgi.%d" % os.getpid())
        staging.mkdir(parents=True)
        for entry in sorted(os.listdir(site)):
            if not entry.startswith("kindgi"):
                os.symlink(os.path.join(site, entry), str(staging / entry))
        try:
            os.rename(str(staging), str(folder))
        except OSError:   # made meanwhile by another run
            shutil.rmtree(str(staging), ignore_errors=True)
    return ["env", "PYTHONPATH=%s" % folder, sdk, "-S"]


def write_expected():
    """Rewrite tests/packs/expected/ from the SDK's indexer."""
    import tempfile
    sdk, reason = sdk_python()
    if sdk is None:
        sys.exit(reason)
    EXPECTED.mkdir(exist_ok=True)
    for name in PLAIN_PACKS:
        with tempfile.TemporaryDirectory() as folder:
            root = copy_pack(PACKS / name, Path(folder) / name)
            ran = run_sdk_index(["--pack-dir", root, "--json"] + PINS, sdk)
            (EXPECTED / (name + ".index.json")).write_bytes((root / "index.json").read_bytes())
            (EXPECTED / (name + ".outcome.json")).write_text(
                json.dumps(outcome_of(ran, root), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            print("wrote the expected output of", name)


if __name__ == "__main__":
    write_expected()
