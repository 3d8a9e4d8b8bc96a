"""End-to-end: ``kindgi_pack_min.py index`` as a subprocess, under $KINDGI_TEST_PYTHON.

On every interpreter CI runs this file with, the indexer must write for each pack in
tests/packs/ the bytes the SDK's indexer wrote (tests/packs/expected/, checked against
the SDK itself by test_index_sdk.py) and report the same outcome; re-index the example
and the benchmark pack to their committed bytes; answer every run error as expected;
and the service must boot from each index it wrote and answer its tools and checks.
Most runs are ``python -m kindgi_pack_min index`` from the checkout, the same code from
bytecode compiled once (``run_index``); the tests of a run from another folder, under
``-S`` or ``ulimit``, run the script by its path.
"""

import json
import os
import signal
import subprocess
import time
from datetime import datetime, timedelta, timezone

import pytest

from indexing import (CONFIG, EXPECTED, PACKS, PINS, PLAIN_PACKS, PYTHON, ROOT, RUN_ERRORS, SERVICE, TOOL,
                      copy_pack, outcome_of, run, run_error_args, run_index, write_files)


def index_copy(name, tmp_path):
    """Copy tests/packs/NAME to tmp_path and index it with the pins; (root, Ran)."""
    root = copy_pack(PACKS / name, tmp_path / name)
    return root, run_index(["--pack-dir", root, "--json"] + PINS)


# -- byte for byte, every pack ---------------------------------------------------------------

@pytest.mark.parametrize("name", PLAIN_PACKS)
def test_the_index_is_the_sdks_byte_for_byte(tmp_path, name):
    root, ran = index_copy(name, tmp_path)
    assert ran.code == 0, ran
    assert (root / "index.json").read_bytes() == (EXPECTED / (name + ".index.json")).read_bytes()
    expected = json.loads((EXPECTED / (name + ".outcome.json")).read_text(encoding="utf-8"))
    assert outcome_of(ran, root) == expected
    assert json.dumps(outcome_of(ran, root)) == json.dumps(expected), "the keys in the SDK's order"


@pytest.mark.parametrize("folder", ["examples/hello-pack", "bench/pack"])
def test_the_committed_indexes_are_the_indexers_output(tmp_path, folder):
    committed = (ROOT / folder / "index.json").read_bytes()
    pins = json.loads(committed.decode("utf-8"))
    root = copy_pack(ROOT / folder, tmp_path / "pack")
    ran = run_index(["--pack-dir", root, "--artifact-version", pins["artifactVersion"],
                     "--published-at", pins["publishedAt"]])
    assert ran.code == 0, ran
    assert (root / "index.json").read_bytes() == committed


def test_the_json_outcome_is_one_ascii_line(tmp_path):
    root = write_files(tmp_path / "pack", {"pyproject.toml": '[tool.kindgi.pack]\nid = "a"\nversion = "1.0.0"\n',
                                           "tools/gr\u00fc\u00dfe.py": 'raise ValueError("Gr\u00fc\u00dfe")\n'})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert ran.stdout.endswith("\n") and ran.stdout.count("\n") == 1
    assert ran.stdout.isascii() and "Gr\\u00fc\\u00dfe" in ran.stdout
    assert ran.stdout.startswith('{"kind":"ok","value":{"packId":"a","packVersion":"1.0.0",')   # compact
    value = json.loads(ran.stdout)["value"]
    assert value["outputPath"] == str(root / "index.json")
    assert value["fileErrors"][0]["cause"]["message"] == "Gr\u00fc\u00dfe"


# -- run errors --------------------------------------------------------------------------

def run_error(case, tmp_path):
    root = write_files(tmp_path / "pack", RUN_ERRORS[case][0])
    ran = run_index(run_error_args(case, root))
    assert ran.code == 1, ran
    assert not (root / "index.json").exists()
    return outcome_of(ran, root)["error"]


NOT_READ = "Failed to read <pack>/pyproject.toml: "


def config_error(code, problem, field=None):
    """The outcome's error for a config file that can't be used."""
    error = {"code": code, "filePath": "<pack>/pyproject.toml", "message": "Config file <pack>/pyproject.toml: "
             + problem}
    if field is not None:
        error["field"] = field
    return error


def not_matching(where, problem):
    """The outcome's error for an index that does not match pack-index.schema.json."""
    return {"code": "manifest-validation-failed",
            "message": "The index does not match pack-index.schema.json at %s: %s" % (where, problem)}


RUN_ERROR_OUTCOMES = {
    "no-pyproject": {"code": "config-not-found", "message": "No pyproject.toml found at pack root <pack>"},
    "config-path-missing": {"code": "config-not-found", "message": "No pyproject.toml found at pack root <pack>"},
    "no-kindgi-table": {"code": "config-not-found", "message": "<pack>/pyproject.toml has no [tool.kindgi] table",
                        "filePath": "<pack>/pyproject.toml"},
    "no-pack-table": config_error("config-parse-failed", "'pack' field is missing or not an object"),
    "empty-id": config_error("config-parse-failed", "'pack.id' is missing or not a non-empty string"),
    "version-not-string": config_error("config-parse-failed", "'pack.version' is missing or not a non-empty string"),
    "discovery-not-globs": config_error("config-parse-failed", "'discovery' must map kinds to glob strings"),
    "env-not-table": config_error("config-invalid", "`env` must be a table: required = [...], optional = [...]",
                                  "env"),
    "env-unknown-key": config_error("config-invalid", "`env` takes only `required` and `optional`, not `secret`",
                                    "env"),
    "env-problems": config_error("config-invalid", '"1BAD" in `env.required` isn\'t an environment variable name; '
                                 '"KINDGI_TOKEN" in `env.required`: `KINDGI_*` names configure Kindgi, not the pack; '
                                 '"DUP" is listed twice in `env.required`; "BOTH" is in both `env.required` and '
                                 '`env.optional`; "ok-not" in `env.optional` isn\'t an environment variable name', "env"),
    "env-not-list": config_error("config-invalid", "`env.required` must be a list of names; `env.optional` must be "
                                 "a list of names", "env"),
    "discovery-empty": {"code": "discovery-empty", "message": "Indexer discovered zero files under <pack>. "
                        "Check the [tool.kindgi.discovery] patterns."},
    "published-at-not-date-time": not_matching("/publishedAt", 'must match format "date-time"'),
    "published-at-offset-without-colon": not_matching("/publishedAt", 'must match format "date-time"'),
    "guardrail-kind-empty": not_matching("/guardrails/0/kind", "must NOT have fewer than 1 characters"),
    "tool-sandbox-not-string": not_matching("/tools/0/sandbox", "must be string"),
}


@pytest.mark.parametrize("case", sorted(RUN_ERROR_OUTCOMES))
def test_run_errors(tmp_path, case):
    assert run_error(case, tmp_path) == RUN_ERROR_OUTCOMES[case]


def test_a_toml_error_names_the_line(tmp_path):
    """tomllib's words on 3.11+, the project's reader's before: both name the line."""
    error = run_error("bad-toml", tmp_path)
    assert error["code"] == "config-parse-failed"
    assert error["filePath"] == "<pack>/pyproject.toml"
    assert error["message"].startswith(NOT_READ)
    assert "line 2" in error["message"]


def test_output_write_failed(tmp_path):
    error = run_error("output-under-a-file", tmp_path)
    assert error["code"] == "output-write-failed"
    assert error["filePath"] == "<pack>/pyproject.toml/index.json"
    assert error["message"].startswith("Failed to write <pack>/pyproject.toml/index.json: ")


def test_a_write_that_fails_midway_is_output_write_failed_and_leaves_no_temporary_file(tmp_path):
    """The index is written to a temporary file first: a write that fails (here past a file
    size limit, 2 blocks) removes it, and the previous output is left as it was."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL.replace(
        '"A tool."', '"%s"' % ("A long description. " * 200)), "index.json": "previous\n"})
    ran = run(["sh", "-c", 'ulimit -f 2 && exec "$@"', "sh", PYTHON, SERVICE, "index", "--pack-dir", root, "--json"]
              + PINS)
    assert (ran.code, ran.stderr) == (1, ""), ran
    error = json.loads(ran.stdout)["error"]
    assert (error["code"], error["filePath"]) == ("output-write-failed", str(root / "index.json"))
    assert sorted(os.listdir(str(root))) == ["index.json", "pyproject.toml", "tools"]
    assert (root / "index.json").read_text() == "previous\n"


def test_a_folder_at_the_output_path_is_output_write_failed_as_the_sdk_says_it(tmp_path):
    """A folder is not a device to write into: the temporary file's rename onto it fails, in the
    SDK's words, and the temporary file goes."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL})
    (root / "index.json").mkdir()
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    error = json.loads(ran.stdout)["error"]
    assert (ran.code, error["code"], error["filePath"]) == (1, "output-write-failed", str(root / "index.json"))
    assert "Is a directory: '%s.tmp-" % (root / "index.json") in error["message"], error
    assert error["message"].endswith("' -> '%s'" % (root / "index.json")), error
    assert sorted(os.listdir(str(root))) == ["index.json", "pyproject.toml", "tools"]


def test_a_link_at_the_temporary_name_is_not_written_through(tmp_path):
    """The temporary file's name can be guessed (pid and time): one who can write to the output's
    folder puts links there, to a file of theirs or of the system's.  The index was written through
    the link into that file, and the output became the link; the name is refused now.  The pack
    stops the indexer's clock so that the one planted name is the one it picks, however slow the
    machine (links planted for the next 20 s missed it once on a loaded CI machine)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    plant = ("import os, time\nfrozen = time.time()\ntime.time = lambda: frozen\n"
             "os.symlink(%r, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "
             "'index.json.tmp-%%d-%%d' %% (os.getpid(), int(frozen * 1000))))\n" % str(victim))
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": plant + TOOL})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (1, ""), ran
    error = json.loads(ran.stdout)["error"]
    assert (error["code"], error["filePath"]) == ("output-write-failed", str(root / "index.json"))
    assert "File exists" in error["message"]
    assert victim.read_text() == "precious\n"
    assert not (root / "index.json").exists()


def link_loop(path):
    """Make path a symbolic link to a link that leads back to it."""
    back = path.parent / (path.name + "-back")
    os.symlink(back.name, str(path))
    os.symlink(path.name, str(back))
    return path


def test_a_link_loop_is_an_outcome_not_a_traceback(tmp_path):
    """A pack folder, a config or an output behind a link that loops: the error any path that
    isn't there gives, on every interpreter (Path.resolve() raises for it before 3.13)."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL})
    loop = link_loop(tmp_path / "loop")
    cases = [
        (["--pack-dir", loop], {"code": "config-not-found", "message": "No pyproject.toml found at pack root %s"
                                % loop}),
        (["--pack-dir", root, "--config", loop], {"code": "config-not-found",
                                                   "message": "No pyproject.toml found at pack root %s" % root}),
    ]
    for args, error in cases:
        ran = run_index(args + ["--json"] + PINS)
        assert (ran.code, ran.stderr) == (1, ""), ran
        assert json.loads(ran.stdout) == {"kind": "err", "error": error}
    ran = run_index(["--pack-dir", root, "--output", loop / "index.json", "--json"] + PINS)
    assert (ran.code, ran.stderr) == (1, ""), ran
    error = json.loads(ran.stdout)["error"]
    assert (error["code"], error["filePath"]) == ("output-write-failed", str(loop / "index.json"))


def index_with_a_closed_folder(closed, args):
    """Run the indexer with the folder closed unsearchable (mode 0600); a Ran, or a skip.

    root reads anything: it runs without the capabilities that let it (util-linux's setpriv).
    """
    inside = str(next(closed.iterdir()))
    os.chmod(str(closed), 0o600)
    try:
        prefix = [] if os.geteuid() else ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
        try:
            probe = subprocess.call(prefix + ["test", "-e", inside])   # 1: it can't be seen
        except OSError:
            probe = 0
        if probe != 1:
            pytest.skip("the folder can't be closed to this user (setpriv missing or not allowed)")
        return run(prefix + [PYTHON, SERVICE, "index"] + args + ["--json"] + PINS)
    finally:
        os.chmod(str(closed), 0o700)


def test_a_config_in_a_folder_that_cant_be_searched_says_why(tmp_path):
    """Path.is_file() raises PermissionError there (the SDK's indexer stops with it): the
    config is read, and the refusal is the reason, as for a config that can't be read."""
    root = write_files(tmp_path / "closed" / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL})
    ran = index_with_a_closed_folder(tmp_path / "closed", ["--pack-dir", str(root)])
    assert (ran.code, ran.stderr) == (1, ""), ran
    config = str(root / "pyproject.toml")
    assert json.loads(ran.stdout) == {"kind": "err", "error": {
        "code": "config-parse-failed", "filePath": config,
        "message": "Failed to read %s: [Errno 13] Permission denied: '%s'" % (config, config)}}


def test_a_glob_in_a_folder_that_cant_be_searched_finds_nothing_there(tmp_path):
    """As os.walk skips a folder it can't list (the SDK's indexer stops with PermissionError)."""
    root = write_files(tmp_path / "pack", {
        "pyproject.toml": CONFIG + '[tool.kindgi.discovery]\nguardrails = "closed/inner/*.py"\n',
        "tools/t.py": TOOL, "closed/inner/g.py": "raise RuntimeError('never imported')\n"})
    ran = index_with_a_closed_folder(root / "closed", ["--pack-dir", str(root)])
    assert (ran.code, ran.stderr) == (0, ""), ran
    value = json.loads(ran.stdout)["value"]
    assert (value["counts"]["tools"], value["fileErrors"]) == (1, [])


def test_a_glob_under_a_link_loop_finds_nothing_there(tmp_path):
    root = write_files(tmp_path / "pack", {
        "pyproject.toml": CONFIG + '[tool.kindgi.discovery]\nguardrails = "loop/*.py"\n', "tools/t.py": TOOL})
    link_loop(root / "loop")
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert json.loads(ran.stdout)["value"]["counts"]["tools"] == 1


def test_a_relative_output_is_named_from_the_folder_the_command_runs_in(tmp_path):
    """A module that changes the current folder as it is imported: --output dist/index.json is
    still written under the folder the command ran in, not under the module's (the index went
    to tools/dist/, and dist/index.json stayed as it was)."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": "import os\n"
                                           "os.chdir(os.path.dirname(os.path.abspath(__file__)))\n" + TOOL})
    ran = run_index(["--pack-dir", "pack", "--output", "dist/index.json", "--json"] + PINS, cwd=tmp_path)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert json.loads(ran.stdout)["value"]["outputPath"] == str(tmp_path / "dist" / "index.json")
    assert (tmp_path / "dist" / "index.json").is_file()
    assert not (root / "tools" / "dist").exists()


@pytest.mark.parametrize("args", [["--pack-dir", "pack"], ["--pack-dir", "/nowhere", "--config", "pack.toml"]])
def test_a_relative_path_from_a_removed_folder_is_an_outcome_not_a_traceback(tmp_path, args):
    """The current folder was removed: a relative path can't be made absolute (os.getcwd()
    raises), and is looked for where it is, where nothing is found."""
    gone = tmp_path / "gone"
    gone.mkdir()
    ran = run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", gone, PYTHON, SERVICE, "index"]
              + args + ["--json"] + PINS)
    assert (ran.code, ran.stderr) == (1, ""), ran
    error = json.loads(ran.stdout)["error"]
    assert (error["code"], error["message"]) == ("config-not-found", "No pyproject.toml found at pack root "
                                                 + args[1])


@pytest.mark.parametrize("replace, stdout, stderr", [
    ("sys.stderr", "", "from the module\n"),
    ("None", "", ""),
    ("io.StringIO()", "", ""),
    ("io.TextIOWrapper(sys.stdout.buffer, encoding='utf-8')", "from the module\n", ""),
    ("io.TextIOWrapper(sys.stdout.detach(), encoding='utf-8')", "from the module\n", ""),
])
def test_the_outcome_goes_to_stdout_whatever_a_module_put_in_sys_stdout(tmp_path, replace, stdout, stderr):
    """A module that keeps its prints off stdout (sys.stdout = sys.stderr), or silences them:
    the outcome still ends the command's stdout (it went to stderr, or nowhere).  One that
    re-wraps stdout (for UTF-8) keeps it: the old wrapper is detached, or closed with the new."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL, "tools/quiet.py":
                                           "import io, sys\nsys.stdout = %s\nprint('from the module')\n" % replace})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, stderr), ran
    printed, _, outcome = ran.stdout[:-1].rpartition("\n")
    assert printed + _ == stdout
    assert json.loads(outcome)["value"]["counts"]["tools"] == 1


def test_a_stdout_a_module_closed_is_one_line_on_stderr(tmp_path):
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL,
                                           "tools/closer.py": "import sys\nsys.stdout.close()\n"})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stdout) == (1, ""), ran
    assert ran.stderr == "kindgi_pack_min: cannot write to stdout: I/O operation on closed file.\n"


def test_a_previous_output_nested_too_deep_counts_as_none(tmp_path):
    """The default artifactVersion reads the previous output's; one JSON can't read (nested
    past the parser's depth) starts the day's count at 1, as an unreadable one does."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL,
                                           "index.json": "[" * 100000})
    ran = run_index(["--pack-dir", root, "--json", "--published-at", PINS[3]])
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert json.loads(ran.stdout)["value"]["artifactVersion"].endswith(".1")


def test_the_default_artifact_version_counts_on_from_todays_previous_output_only(tmp_path):
    """YYYYMMDD.N: N is one more than the previous output's when it was made today, else 1
    (a previous output that is no index, a JSON list say, counts as none)."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL})
    for previous, n in (('{"artifactVersion": "19990101.7"}', 1), ('{"artifactVersion": "TODAY.41"}', 42),
                        ('{"artifactVersion": "TODAY.x"}', 1), ('["TODAY.41"]', 1), ('"TODAY.41"', 1)):
        today = datetime.now(timezone.utc).strftime("%Y%m%d")
        (root / "index.json").write_text(previous.replace("TODAY", today))
        ran = run_index(["--pack-dir", root, "--json", "--published-at", PINS[3]])
        assert (ran.code, ran.stderr) == (0, ""), ran
        version = json.loads(ran.stdout)["value"]["artifactVersion"]
        assert version in ("%s.%d" % (today, n), "%s.1" % datetime.now(timezone.utc).strftime("%Y%m%d"))


def test_a_discovered_file_that_is_not_a_module_is_the_sdks_file_error(tmp_path):
    """A glob can take README.md too: a file error in the SDK's words, the rest indexed."""
    root = write_files(tmp_path / "pack", {
        "pyproject.toml": CONFIG + '[tool.kindgi.discovery]\ntools = "tools/*"\n', "tools/t.py": TOOL,
        "tools/README.md": "# tools\n"})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert ran.code == 0, ran
    assert_only_file_error_is_not_a_module_path(outcome_of(ran, root)["value"], "tools/README.md")


def assert_only_file_error_is_not_a_module_path(value, path):
    """The SDK's file error for a file a glob found that is no module of the pack; the tool indexed."""
    problem = "not a pack-relative Python module path: " + path
    assert value["fileErrors"] == [{"code": "file-import-failed", "filePath": path,
                                    "message": "Failed to import %s: ValueError: %s" % (path, problem),
                                    "cause": {"name": "ValueError", "message": problem}}]
    assert value["counts"]["tools"] == 1


def test_a_discovered_file_outside_the_pack_is_the_sdks_file_error_not_imported(tmp_path):
    """A glob can reach past the pack (``../lib/*.py``): the file is not imported, a file
    error in the SDK's words, the rest indexed."""
    write_files(tmp_path / "lib", {"x.py": 'raise RuntimeError("imported from outside the pack")\n'})
    root = write_files(tmp_path / "pack", {
        "pyproject.toml": CONFIG + '[tool.kindgi.discovery]\nagents = "../lib/*.py"\n', "tools/t.py": TOOL})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert_only_file_error_is_not_a_module_path(outcome_of(ran, root)["value"], "../lib/x.py")


def test_a_backslash_in_a_file_name_is_no_python_name(tmp_path):
    """``tools/a\\b.py`` is a file of its own on Linux, but the service reads a backslash in a
    module path as a separator: it was imported as tools/a/b.py, and reported as a duplicate of it."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL,
                                           "tools/a\\b.py": TOOL.replace("acme.run.t", "acme.run.backslash"),
                                           "tools/a/b.py": TOOL.replace("acme.run.t", "acme.run.b")})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    problem = 'Module path "tools/a\\\\b.py" is not importable: every part must be a Python name'
    assert_one_import_failure(outcome_of(ran, root)["value"], "tools/a\\b.py", "ImportError", problem, tools=2)


def assert_one_import_failure(value, path, name, problem, tools=1):
    """The outcome's one file error: ``path`` failed to import with ``name: problem``; the rest indexed."""
    assert value["fileErrors"] == [{"code": "file-import-failed", "filePath": path,
                                    "message": "Failed to import %s: %s: %s" % (path, name, problem),
                                    "cause": {"name": name, "message": problem}}]
    assert value["counts"]["tools"] == tools


def test_an_exception_that_cant_be_printed_is_still_a_file_error(tmp_path):
    """A module that raises an exception whose str() raises too: a file error saying so, the
    rest indexed (the SDK's indexer stops with a traceback)."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL, "tools/u.py":
                                           "class Odd(Exception):\n    def __str__(self):\n"
                                           "        raise RuntimeError('no text')\n\n\nraise Odd()\n"})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert_one_import_failure(outcome_of(ran, root)["value"], "tools/u.py", "Odd", "<Odd with an unprintable message>")


def test_a_lazy_proxy_at_module_level_is_passed_over_by_the_indexer_and_the_service(launcher, tmp_path):
    """A module imports a lazy proxy (Django's ``settings`` before it is configured, Flask's
    ``request`` outside a request): ``isinstance`` reads its ``__class__``, which raises.  Both
    stopped with a traceback (the indexer, and the service's boot); the proxy is no tool."""
    proxy = ("class Proxy(object):\n    @property\n    def __class__(self):\n"
             "        raise RuntimeError('Working outside of application context.')\n\n\nrequest = Proxy()\n")
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": proxy + TOOL})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    value = json.loads(ran.stdout)["value"]
    assert (value["counts"]["tools"], value["fileErrors"]) == (1, [])
    service = launcher.start(str(root / "index.json"))
    assert service.call_tool("acme.run.t", {}, version="1.0.0").json["kind"] == "result"


def test_a_module_that_leaves_no_module_in_its_place_is_a_file_error(tmp_path):
    """``sys.modules[__name__] = 42``: what the import gives has no names to look through (the
    indexer stopped with a TypeError); a file error, and the rest is indexed."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL,
                                           "tools/odd.py": "import sys\nsys.modules[__name__] = 42\n"})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert_one_import_failure(outcome_of(ran, root)["value"], "tools/odd.py", "TypeError",
                              "vars() argument must have __dict__ attribute")


def test_without_pydantic_an_agents_typed_output_is_refused_not_a_traceback(tmp_path):
    """Without pydantic (``-S``: no site-packages), an agent whose output is a type only pydantic
    describes is a file error, as a tool's is, and the rest is indexed; an output block whose
    schema is None is null, as pydantic gives it.  Both stopped the indexer with a traceback."""
    agent = 'from kindgi import Agent\n\nA = Agent(id="acme.run.%s", version="1.0.0", name="n", instructions="i", ' \
            'output=%s)\n'
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL,
                                           "agents/typed.py": agent % ("typed", "int"),
                                           "agents/null.py": agent % ("null", '{"schema": None, "name": "N"}')})
    ran = run([PYTHON, "-S", SERVICE, "index", "--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    value = outcome_of(ran, root)["value"]
    refused = ('Agent "acme.run.typed": cannot derive the output JSON Schema: the type int needs pydantic 2, '
               'which is not installed: pass a JSON Schema dict instead, or install pydantic')
    assert value["fileErrors"] == [{"code": "file-import-failed", "filePath": "agents/typed.py",
                                    "message": "Failed to import agents/typed.py: DefinitionError: " + refused,
                                    "cause": {"name": "DefinitionError", "message": refused}}]
    assert value["counts"] == {"tools": 1, "guardrails": 0, "agents": 1, "flows": 0}
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    assert index["agents"][0]["output"] == {"name": "N", "schema": {"type": "null"}}


def test_a_broken_sdk_is_passed_over_as_the_service_passes_it_over(tmp_path):
    """An installed kindgi that raises at import: the service serves with its stand-in, and the
    indexer indexes with it too, the same bytes, not a traceback."""
    site = write_files(tmp_path / "site", {"kindgi/__init__.py": 'raise RuntimeError("half-installed")\n'})
    root = copy_pack(PACKS / "env", tmp_path / "env")
    ran = run_index(["--pack-dir", root, "--json"] + PINS, env=dict(os.environ, PYTHONPATH=str(site)))
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert (root / "index.json").read_bytes() == (EXPECTED / "env.index.json").read_bytes()


@pytest.mark.parametrize("tool_id, artifact", [("acme.run.t", "v-\udcff"), ("acme.run.\\udcff", "v-1")])
def test_text_that_is_not_utf8_is_output_write_failed(tmp_path, tool_id, artifact):
    """An --artifact-version with a byte that isn't UTF-8 (argv), or an id with a lone surrogate
    (pack code): the index can't be written as UTF-8, an error outcome, and no file is left."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL.replace("acme.run.t",
                                                                                                 tool_id)})
    ran = run_index(["--pack-dir", root, "--json", "--artifact-version", artifact, "--published-at", PINS[3]])
    assert (ran.code, ran.stderr) == (1, ""), ran
    error = json.loads(ran.stdout)["error"]
    assert (error["code"], error["filePath"]) == ("output-write-failed", str(root / "index.json"))
    assert "surrogates not allowed" in error["message"]
    assert sorted(os.listdir(str(root))) == ["pyproject.toml", "tools"]


def test_a_schema_nested_as_deep_as_the_sdk_writes_is_written(tmp_path):
    """The canonical writer takes one call per level, as the SDK's: a schema 700 levels deep
    is written by both (at about 990 both stop, at Python's recursion limit)."""
    nested = "deep = {}\nlevel = deep\nfor _ in range(700):\n    level['a'] = {}\n    level = level['a']\n"
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": nested + TOOL.replace(
        'input={"type": "object"}', 'input={"type": "object", "x-deep": deep}')})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    assert (root / "index.json").read_text(encoding="utf-8").count('"a": {') == 700


def test_a_flow_nested_too_deeply_to_check_is_a_file_error(tmp_path):
    """A condition built 300 `not`s deep: the flow check can't follow it (the SDK's indexer
    stops with a RecursionError); here the flow is a file error and the rest is indexed."""
    flow = ("from kindgi import Flow\n\ncond = {'op': 'truthy', 'value': {'path': 'state.done'}}\n"
            "for _ in range(300):\n    cond = {'op': 'not', 'child': cond}\n"
            "deep = Flow(id='acme.run.deep', version='1.0.0', nodes=[{'id': 'a', 'kind': 'tool', 'ref': 'x'}, "
            "{'id': 'b', 'kind': 'tool', 'ref': 'y'}], edges=[{'id': 'e', 'from': 'a', 'to': 'b', 'when': cond}])\n")
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL, "flows/deep.py": flow})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    assert (ran.code, ran.stderr) == (0, ""), ran
    value = json.loads(ran.stdout)["value"]
    assert value["fileErrors"] == [{"code": "manifest-validation-failed", "filePath": "flows/deep.py",
                                    "message": "flows/deep.py: flow 'acme.run.deep' is nested too deeply to check"}]
    assert value["counts"] == {"tools": 1, "guardrails": 0, "agents": 0, "flows": 0}


def test_toml_outside_the_readers_part_is_refused_before_3_11_and_read_after(tmp_path):
    config = '[tool.kindgi.pack]\nid = "acme.run"\nversion = "1.0.0"\nmeta = {owner = "x"}\n'
    root = write_files(tmp_path / "pack", {"pyproject.toml": config, "tools/t.py": TOOL})
    ran = run_index(["--pack-dir", root, "--json"] + PINS)
    reads_all = run_python("import sys; print(sys.version_info >= (3, 11))") == "True"
    if reads_all:
        assert ran.code == 0, ran
    else:
        error = outcome_of(ran, root)["error"]
        assert error["code"] == "config-parse-failed"
        assert error["message"].startswith(NOT_READ + "line 4: inline tables")


def run_python(code):
    return subprocess.run([PYTHON, "-c", code], stdout=subprocess.PIPE, timeout=60,
                          universal_newlines=True).stdout.strip()


# -- the command line ----------------------------------------------------------------------

def test_the_command_ends_though_a_module_left_a_thread_running(tmp_path):
    """A module starts a worker at import (not a daemon): the index is written and the command
    ends, where a normal exit waited for the worker for ever."""
    (tmp_path / "tools").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.kindgi.pack]\nid = "worker"\nversion = "1.0.0"\n'
                                             'description = "A pack whose module starts a worker"\n')
    (tmp_path / "tools" / "worker.py").write_text(
        "import threading, time\nfrom kindgi import tool\n"
        "threading.Thread(target=time.sleep, args=(3600,)).start()\n"
        "@tool(description='A test tool.', input={'type': 'object'}, output={}, id='worker')\n"
        "def worker(input):\n    return input\n")
    done = subprocess.run([PYTHON, str(SERVICE), "index", "--pack-dir", str(tmp_path), "--json"] + PINS,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=20)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["value"]["counts"]["tools"] == 1


def test_help_explains_the_command():
    ran = run_index(["--help"])
    assert ran.code == 0
    for flag in ("--pack-dir", "--config", "--output", "--artifact-version", "--published-at", "--json"):
        assert flag in ran.stdout
    assert "Exit status" in ran.stdout and ran.stderr == ""


@pytest.mark.parametrize("args", [["--help"], ["--json"], []])
@pytest.mark.parametrize("stdout", ["closed", "full"])
def test_help_and_report_to_a_stdout_that_takes_nothing_say_so_in_one_line(tmp_path, args, stdout):
    """--help, the --json outcome and the report: one line on stderr and 1, not a traceback."""
    root = write_files(tmp_path / "pack", {"pyproject.toml": CONFIG, "tools/t.py": TOOL})
    command = [PYTHON, str(SERVICE), "index"] + (args if args == ["--help"] else ["--pack-dir", str(root)] + args)
    with open(os.devnull if stdout == "closed" else "/dev/full", "wb") as target:
        done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=target, stderr=subprocess.PIPE, timeout=60,
                              preexec_fn=(lambda: os.close(1)) if stdout == "closed" else None)
    assert done.returncode == 1
    assert done.stderr.decode("utf-8") == "kindgi_pack_min: cannot write to stdout: %s\n" % (
        "it is closed" if stdout == "closed" else "[Errno 28] No space left on device")


@pytest.mark.parametrize("args, problem", [
    ([], "--pack-dir is required"),
    (["--json"], "--pack-dir is required"),
    (["--pack-dir"], "unexpected argument --pack-dir"),
    (["--pack-dir", ".", "--colour", "red"], "unexpected argument --colour"),
    (["pack"], "unexpected argument pack"),
])
def test_usage_errors_exit_2(args, problem):
    ran = run_index(args)
    assert ran.code == 2, ran
    assert ran.stdout == ""
    assert ran.stderr.startswith("kindgi_pack_min index: %s\nusage: " % problem)


def test_without_json_the_report_is_printed_and_an_error_goes_to_stderr(tmp_path):
    root, _ = index_copy("env", tmp_path)
    ran = run_index(["--pack-dir", root] + PINS)
    assert ran.code == 0, ran
    assert json.loads(ran.stdout)["counts"] == {"tools": 1, "guardrails": 0, "agents": 0, "flows": 0}
    assert ran.stdout == json.dumps(json.loads(ran.stdout), indent=2) + "\n"
    ran = run_index(["--pack-dir", tmp_path / "nowhere"])
    assert (ran.code, ran.stdout) == (1, "")
    assert ran.stderr == "kindgi_pack_min index: config-not-found: No pyproject.toml found at pack root %s\n" % (
        tmp_path / "nowhere")


def test_config_and_output_elsewhere(tmp_path):
    """--config names the TOML file, --output the index: folders are made, no temporary file stays."""
    root = copy_pack(PACKS / "env-empty", tmp_path / "pack")
    (root / "pyproject.toml").rename(tmp_path / "kindgi.toml")
    output = tmp_path / "out" / "deeper" / "index.json"
    ran = run_index(["--pack-dir", root, "--config", tmp_path / "kindgi.toml", "--output", output, "--json"]
                    + PINS)
    assert ran.code == 0, ran
    assert output.read_bytes() == (EXPECTED / "env-empty.index.json").read_bytes()
    assert os.listdir(str(output.parent)) == ["index.json"]
    assert not (root / "index.json").exists()


def test_an_output_that_is_a_named_pipe_is_written_into_not_replaced(tmp_path):
    """--output /dev/null, /dev/stdout or a named pipe: renamed over, the first replaced the
    machine's /dev/null with a file; read back for the previous artifactVersion, a pipe or a
    terminal waited for ever.  (A named pipe stands for them here.)"""
    import threading
    root = copy_pack(PACKS / "env-empty", tmp_path / "pack")
    fifo = tmp_path / "index.fifo"
    os.mkfifo(str(fifo))
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    try:
        ran = run_index(["--pack-dir", root, "--output", fifo, "--published-at", PINS[3]])
    finally:
        if reader.is_alive():   # let a reader still waiting go: a writer that closes at once
            os.close(os.open(str(fifo), os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    assert ran.code == 0, ran
    assert os.path.exists(str(fifo)) and not os.path.isfile(str(fifo))
    index = json.loads(received[0].decode("utf-8"))
    assert index["artifactVersion"].endswith(".1") and index["publishedAt"] == PINS[3]
    assert sorted(os.listdir(str(tmp_path))) == ["index.fifo", "pack"]


def test_output_dev_stdout_on_a_pipe_is_written_into(tmp_path):
    """--output /dev/stdout with stdout a pipe (`... | sha256sum`): its link leads to "pipe:[N]",
    which no path reaches, and the index could not be written; it goes into the pipe."""
    root = copy_pack(PACKS / "env-empty", tmp_path / "pack")
    ran = run_index(["--pack-dir", root, "--output", "/dev/stdout"] + PINS)
    assert ran.code == 0, ran
    assert ran.stdout.startswith((EXPECTED / "env-empty.index.json").read_text(encoding="utf-8")), ran
    assert not (root / "index.json").exists()


def test_artifact_version_and_published_at_default_to_today(tmp_path):
    root = copy_pack(PACKS / "env-empty", tmp_path / "pack")
    days = {(datetime.now(timezone.utc) + timedelta(seconds=s)).strftime("%Y%m%d") for s in (0, 60)}
    versions = []
    for _ in range(3):
        ran = run_index(["--pack-dir", root, "--json"])
        assert ran.code == 0, ran
        value = json.loads(ran.stdout)["value"]
        versions.append(value["artifactVersion"])
        published = datetime.strptime(value["publishedAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
        assert value["publishedAt"][-5] == "." and published.strftime("%Y%m%d") in days
    day, _, n = versions[0].partition(".")
    assert day in days
    if all(v.startswith(day + ".") for v in versions):   # not across midnight
        assert versions == ["%s.%d" % (day, int(n) + i) for i in range(3)]


def test_ctrl_c_stops_the_indexer(tmp_path):
    """SIGINT reaches the indexer (the service holds it until its handlers are in)."""
    marker = tmp_path / "importing"
    root = write_files(tmp_path / "pack", {
        "pyproject.toml": '[tool.kindgi.pack]\nid = "acme.slow"\nversion = "1.0.0"\n',
        "tools/slow.py": "import time\nopen(%r, 'w').close()\ntime.sleep(60)\n" % str(marker)})
    # SIGINT as at a terminal: a job a shell starts in the background (CI's lanes) has it
    # ignored, and an interpreter started so keeps ignoring it, as it should.
    proc = subprocess.Popen([PYTHON, str(SERVICE), "index", "--pack-dir", str(root), "--json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert marker.exists(), proc.communicate(timeout=10)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=20)
        assert proc.returncode != 0
        assert b"KeyboardInterrupt" in stderr
        assert not (root / "index.json").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


# -- the service serves what the indexer wrote ---------------------------------------------

SERVED = {name: {} for name in PLAIN_PACKS}
SERVED["env"] = {"ZED_URL": "z", "alpha_key": "a", "_UNDER": "u", "Beta": "b"}


@pytest.mark.parametrize("name", PLAIN_PACKS)
def test_the_service_boots_from_the_index_and_answers(launcher, tmp_path, name):
    root, ran = index_copy(name, tmp_path)
    assert ran.code == 0, ran
    index = json.loads((root / "index.json").read_text(encoding="utf-8"))
    service = launcher.start(str(root / "index.json"), env=SERVED[name])
    info = service.request("GET", "/v1/info").json
    assert sorted((t["id"], t["version"]) for t in info["tools"]) == sorted(
        (t["id"], t["version"]) for t in index["tools"])
    assert sorted(info["checks"]) == sorted(g["checkId"] for g in index["guardrails"])
    assert info["missingEnv"] == []
    for entry in index["tools"]:
        answer = service.call_tool(entry["id"], {"value": 1, "city": "Oslo"}, version=entry["version"]).json
        if "spec" in entry:   # an http tool: the runtime makes its request, not pack code
            assert answer["code"] == "handler-throw", answer
            assert "is an HTTP tool" in answer["message"]
        else:
            assert answer["kind"] == "result", (entry["id"], answer)
    for entry in index["guardrails"]:
        answer = service.call_check(entry["checkId"], trace={"runId": "r", "tenantId": "t", "output": "bitte"}).json
        assert answer["kind"] == "check-result", (entry["id"], answer)

