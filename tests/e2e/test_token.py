"""End-to-end: the service token and undeclared variables are out of pack code's reach.

A probe tool looks everywhere pack code can look for its environment:
``os.environ``, ``/proc/self/environ``, ``/proc/self/cmdline``, the
environment of a child process it starts (``env``), and every pipe it holds
open.  The token must be in none of them, and under the env filter
(default on) neither may any variable the pack doesn't declare, while
declared names, the ``KINDGI_``/``LC_``/``PYTHON``/... prefixes and the 58
platform names are kept.  A hostile tool searches every object the collector
knows, every thread's frames and its own ``ctx`` for the token and a dropped
value, and finds neither: the service keeps only the token's digest.  Records
never carry the token as a value, not even when pack code logs it, and a
short token never alters the service's own text.  The same holds on the
fallback path, where the service re-executes itself (it can't write its own
memory) and hands the token's digest over a pipe.
"""

import errno
import hashlib
import json
import os
import re
import secrets
import shutil
import subprocess
import time

import pytest

from conftest import FROM_BYTECODE, PYTHON, ROOT, TOKEN, PackWriter, Service, service_env

# The env filter's platform names, written out again here so that the test checks the service's copy.
PLATFORM_NAMES = """
PATH HOME HOSTNAME USER LANG LANGUAGE TZ TMPDIR TMP TEMP PWD SHLVL _ __CF_USER_TEXT_ENCODING
NODE_ENV NODE_VERSION YARN_VERSION NODE_OPTIONS NODE_EXTRA_CA_CERTS JAVA_HOME JAVA_VERSION
JAVA_TOOL_OPTIONS JDK_JAVA_OPTIONS _JAVA_OPTIONS VIRTUAL_ENV PORT HTTP_PROXY HTTPS_PROXY NO_PROXY
http_proxy https_proxy no_proxy SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE
K_SERVICE K_REVISION K_CONFIGURATION AWS_REGION AWS_DEFAULT_REGION AWS_EXECUTION_ENV
AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI
AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN ECS_CONTAINER_METADATA_URI ECS_CONTAINER_METADATA_URI_V4
IDENTITY_ENDPOINT IDENTITY_HEADER MSI_ENDPOINT MSI_SECRET AZURE_CLIENT_ID AZURE_TENANT_ID
AZURE_FEDERATED_TOKEN_FILE AZURE_AUTHORITY_HOST
""".split()
KEPT_PREFIXES = ("KINDGI_", "LC_", "PYTHON", "OTEL_", "CLOUD_RUN_", "CONTAINER_APP_")

# Platform names the harness already sets (or must keep as they are).
HARNESS_NAMES = ("PATH", "HOME", "LANG", "PORT")

# Variables the services below get on top of the harness's: kept ones and dropped ones.
EXTRA_KEPT = {
    "DECLARED_REQUIRED": "req-value", "DECLARED_OPTIONAL": "opt-value",
    "KINDGI_SOMETHING": "k", "LC_PROBE": "lc", "PYTHONPROBE": "py", "OTEL_SERVICE_NAME": "otel",
    "CLOUD_RUN_JOB": "crj", "CONTAINER_APP_NAME": "can",
}
EXTRA_DROPPED = {
    "UNDECLARED_SECRET": "undeclared-value-7f3a", "DATABASE_URL": "postgres://user:pw-91c2@db/x",
    "kindgi_lower": "lower-value-55e1", "lc_lower": "lower-value-55e2", "Path": "mixed-case-value-55e3",
    "XKINDGI_NOT_A_PREFIX": "not-prefix-value-55e4",
}

PROBE = '''
import os, select, subprocess
from kindgi import tool

def read(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "replace")

def open_pipes():
    """What every pipe this process holds yields right now, without blocking."""
    found = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.readlink("/proc/self/fd/%d" % fd).startswith("pipe:") \\
                    and select.select([fd], [], [], 0)[0]:
                found[name] = os.read(fd, 65536).decode("utf-8", "replace")
        except OSError:
            pass
    return found

@tool(description="A test tool.", id="probe", version="1.0.0", input={"type": "object"}, output={"type": "object"})
def probe(input, ctx):
    """Everything pack code can read about its environment."""
    child = subprocess.run(["env", "-0"], stdout=subprocess.PIPE, check=True).stdout
    return {
        "environ": dict(os.environ),
        "procEnviron": read("/proc/self/environ"),
        "cmdline": read("/proc/self/cmdline"),
        "childEnv": child.decode("utf-8", "replace"),
        "pipes": open_pipes(),
    }

@tool(description="A test tool.", id="leak", version="1.0.0", input={"type": "object"}, output={"type": "object"})
def leak(input, ctx):
    """Logs and prints the value it is given."""
    secret = input["value"]
    ctx.log.info("pack code logs a value", token=secret, plain=secret, nested={"inner": secret})
    ctx.log.warn(secret, {"apiKey": secret, "list": [secret]})
    print("pack code prints " + secret)
    return {"ok": True}

@tool(id="search", version="1.0.0", input={"type": "object"}, output={"type": "object"})
def search(input, ctx):
    """Looks for each needle (sent reversed, so that the request holds none) everywhere it can."""
    import gc, sys
    needles = [text[::-1] for text in input["reversed"]]
    raws = [needle.encode() for needle in needles]
    mine = set(map(id, needles + raws))
    wanted = list(zip(needles, raws))
    found = []

    def look(value, where, depth=0):
        if isinstance(value, (str, bytes)):
            if id(value) not in mine:
                for text, raw in wanted:
                    if (text if isinstance(value, str) else raw) in value:
                        found.append("%s: %s" % (where, type(value).__name__))
        elif depth < 4 and isinstance(value, (dict, tuple, list, set, frozenset)) and not gc.is_tracked(value):
            # The collector doesn't list containers of strings alone: look inside them here.
            for item in (list(value) + list(value.values()) if isinstance(value, dict) else list(value)):
                look(item, where, depth + 1)

    for obj in gc.get_objects():
        for ref in gc.get_referents(obj):
            look(ref, type(obj).__name__)
    here = sys._getframe()
    for thread_id, frame in sys._current_frames().items():
        while frame is not None:
            if frame is not here:
                for name, value in list(frame.f_locals.items()):
                    look(value, "frame %s local %s" % (frame.f_code.co_name, name))
            frame = frame.f_back
    for name in ("tenant_id", "run_id", "env", "secrets", "config", "settings", "cancellation", "log"):
        value = getattr(ctx, name)
        for ref in [value] + list(vars(value).values() if hasattr(value, "__dict__") else []):
            look(ref, "ctx." + name)
    return {"found": sorted(set(found)), "objects": len(gc.get_objects())}
'''


def platform_values():
    """A value for every platform name the harness doesn't set itself."""
    values = {name: "platform-" + name.lower() for name in PLATFORM_NAMES if name not in HARNESS_NAMES}
    values.update(TMPDIR="/tmp", TMP="/tmp", TEMP="/tmp", PWD="/")
    return values


def input_environment(filter_value=None):
    env = platform_values()
    env.update(EXTRA_KEPT)
    env.update(EXTRA_DROPPED)
    if filter_value is not None:
        env["KINDGI_PACK_ENV_FILTER"] = filter_value
    return env


def names_of(nul_separated):
    return {entry.split("=", 1)[0] for entry in nul_separated.split("\0") if entry}


@pytest.fixture(scope="module")
def pack_index(tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("token"))
    pack.module("tools/probe.py", PROBE)
    pack.tool("probe", "tools/probe.py", version="1.0.0")
    pack.tool("leak", "tools/probe.py", version="1.0.0")
    pack.tool("search", "tools/probe.py", version="1.0.0")
    pack.env = {"required": ["DECLARED_REQUIRED"], "optional": ["DECLARED_OPTIONAL"]}
    return pack.write()


@pytest.fixture(scope="module")
def filtered(module_launcher, pack_index):
    return module_launcher.start(pack_index, env=input_environment())


@pytest.fixture(scope="module")
def unfiltered(module_launcher, pack_index):
    return module_launcher.start(pack_index, env=input_environment("off"))


def probe(service):
    response = service.call_tool("probe", {})
    assert response.status == 200, response
    return response.json["output"]


# -- the token ------------------------------------------------------------------

def test_platform_list_has_58_names():
    assert len(PLATFORM_NAMES) == len(set(PLATFORM_NAMES)) == 58


@pytest.mark.parametrize("where", ["environ", "procEnviron", "cmdline", "childEnv", "pipes"])
@pytest.mark.parametrize("which", ["filtered", "unfiltered"])
def test_pack_code_finds_no_token(request, which, where):
    seen = json.dumps(probe(request.getfixturevalue(which))[where])
    assert TOKEN not in seen
    assert "KINDGI_PACK_SERVICE_TOKEN" not in seen


def test_where_memory_can_be_written_the_token_is_hidden_in_place(filtered):
    """Where this process can write its own memory, the service can too: it overwrites its
    environment block in place, without the fallback's second start of the interpreter (whose
    block would still name the pipe the digest came by)."""
    try:
        open("/proc/self/mem", "r+b", buffering=0).close()
    except OSError as exc:
        pytest.skip("/proc/self/mem can't be written here: %s" % exc)
    assert "KINDGI_PACK_HANDOFF_FD" not in probe(filtered)["procEnviron"]


def test_token_still_works_on_the_wire(filtered):
    assert filtered.request("GET", "/v1/info").status == 200
    assert filtered.request("GET", "/v1/info", token=TOKEN + "x").status == 401
    assert filtered.call_tool("probe", {}, token="wrong").status == 401


def test_no_record_carries_the_token_even_when_pack_code_logs_it(filtered):
    """A caller that has the token sends it; pack code logs it as a message, a field, in a list:
    every value that is the token is written ``[redacted]``, and so is any secret-looking key."""
    response = filtered.call_tool("leak", {"value": TOKEN}, ctx={"tenantId": "t", "runId": TOKEN,
                                                                 "requestId": "leak-1"})
    assert response.status == 200, response
    assert TOKEN not in response.body.decode()
    logged = filtered.wait_record("call", where=lambda r: r.get("requestId") == "leak-1")
    assert (logged["outcome"], logged["runId"]) == ("ok", "[redacted]")
    info = filtered.wait_record(None, where=lambda r: r.get("message") == "pack code logs a value")
    assert (info["token"], info["plain"], info["nested"]) == ("[redacted]", "[redacted]", {"inner": "[redacted]"})
    warn = filtered.wait_record(None, where=lambda r: r.get("apiKey") is not None)
    assert (warn["message"], warn["apiKey"], warn["list"]) == ("[redacted]", "[redacted]", ["[redacted]"])
    assert [line for line in filtered.raw_stderr if TOKEN in line] == []


# Breaks the service itself with the caller's value as the error's message.
SERVICE_BUG = '''
import sys
from kindgi import tool

service = sys.modules.get("kindgi_pack_min") or sys.modules["__main__"]
run_tool = service.TARGETS["invoke"].run


def run_or_break(call):
    if call.target_id == "bug":
        raise RuntimeError(call.message["input"]["value"])
    return run_tool(call)


service.TARGETS["invoke"].run = run_or_break


@tool(description="A test tool.", id="bug", input={"type": "object"}, output={})
def bug(input):
    return {}
'''


@pytest.mark.parametrize("value, shown", [(TOKEN, "[redacted]"), ("Bearer abc.def-1", "Bearer [redacted]")],
                         ids=["token", "bearer"])
def test_a_service_failure_that_quotes_a_secret_does_not_write_it(launcher, tmp_path, value, shown):
    """The service's own failure, with a caller's value as its message: the service-error record
    masks it in its message and stack, as pack code's errors are masked."""
    pack = PackWriter(tmp_path)
    pack.module("tools/bug.py", SERVICE_BUG)
    pack.tool("bug", "tools/bug.py")
    service = launcher.start(pack.write())
    response = service.call_tool("bug", {"value": value})
    assert response.status == 500
    record = service.wait_record("service-error")
    assert record["message"] == "Call failed inside the service: RuntimeError: " + shown
    assert "RuntimeError: " + shown in record["stack"]
    secret = "abc.def-1" if value.startswith("Bearer") else TOKEN
    assert [line for line in service.raw_stderr if secret in line] == []


@pytest.mark.parametrize("which", ["filtered", "unfiltered", "reexecuted"])
def test_no_object_pack_code_can_reach_holds_the_token_or_a_dropped_value(request, which):
    """The collector's objects and their contents, every thread's frames, the objects on ctx."""
    service = request.getfixturevalue(which)
    needles = [TOKEN] + ([] if which == "unfiltered" else list(EXTRA_DROPPED.values()))
    response = service.call_tool("search", {"reversed": [needle[::-1] for needle in needles]})
    assert response.status == 200, response
    output = response.json["output"]
    assert output["objects"] > 1000, "the search saw too little to mean anything"
    assert output["found"] == []


def test_the_search_finds_what_the_service_holds(filtered):
    """The hostile tool's search works: it finds values that are in the process."""
    response = filtered.call_tool("search", {"reversed": ["platform-k_service"[::-1], "KINDGI_PACK"[::-1]]})
    assert response.json["output"]["found"] != []


# Reads every readable mapping of its own memory at import, looking for needles kept reversed and
# in two halves, so that no whole copy of one is in the process but the one the service left.
MEMORY_SCAN = '''
from kindgi import tool

NEEDLES = %r

def scan():
    halves = [(a[::-1].encode(), b[::-1].encode()) for a, b in NEEDLES]
    found = []
    with open("/proc/self/maps") as f:
        maps = f.read().splitlines()
    with open("/proc/self/mem", "rb", buffering=0) as memory:
        for line in maps:
            fields = line.split()
            if "r" not in fields[1] or fields[5:6] in (["[vvar]"], ["[vvar_vclock]"], ["[vsyscall]"]):
                continue
            start, end = (int(x, 16) for x in fields[0].split("-"))
            try:
                memory.seek(start)
                data = memory.read(end - start)
            except (OSError, OverflowError, ValueError):
                continue
            for n, (a, b) in enumerate(halves):
                i = data.find(a)
                while i >= 0:
                    if data[i + len(a):i + len(a) + len(b)] == b:
                        found.append("needle %%d in %%s" %% (n, " ".join(fields[1:2] + fields[5:])))
                    i = data.find(a, i + 1)
    return found

AT_IMPORT = scan()

@tool(id="scan", description="What the memory held at import.", input={"type": "object"}, output={})
def scan_tool(input, ctx):
    return AT_IMPORT
'''


def test_no_copy_of_a_dropped_value_is_left_in_memory(launcher, tmp_path):
    """Pack code that reads its own memory (/proc/self/mem) at import finds no copy of a dropped
    variable that the service's reading of its environment block left in memory it freed; the
    declared one, in the block the process started with, it finds.  Searched as the block writes
    them, ``NAME=value``: the interpreter's own copies of a value (os.environ's, freed when the
    variable is dropped) may stay in memory it freed, which no code of the service can clear."""
    try:
        open("/proc/self/mem", "rb", buffering=0).close()
    except OSError as exc:
        pytest.skip("/proc/self/mem can't be read here: %s" % exc)
    halves = [("DATABASE_URL=dropped-"[::-1], "value-zz9911"[::-1]),
              ("DECLARED_REQUIRED=declared-"[::-1], "value-aa7733"[::-1])]
    pack = PackWriter(tmp_path)
    pack.module("tools/scan.py", MEMORY_SCAN % (halves,))
    pack.tool("scan", "tools/scan.py")
    pack.env = {"required": ["DECLARED_REQUIRED"], "optional": []}
    service = launcher.start(pack.write(), env={"DATABASE_URL": "dropped-value-zz9911",
                                                "DECLARED_REQUIRED": "declared-value-aa7733"})
    assert "DATABASE_URL" in service.records_of("env-dropped")[0]["names"]
    response = service.call_tool("scan", {})
    assert response.status == 200, response
    assert [place for place in response.json["output"] if place.startswith("needle 0")] == []
    assert [place for place in response.json["output"] if place.startswith("needle 1")] != []


def test_token_is_trimmed(launcher, pack_index):
    service = launcher.start(pack_index, token="  %s\t" % TOKEN, env={"DECLARED_REQUIRED": "r"})
    assert service.request("GET", "/v1/info").status == 200


# -- short tokens never alter the service's own text ---------------------------

@pytest.mark.parametrize("token", ["x", "e"])
def test_a_missing_module_is_named_whatever_the_token(launcher, tmp_path, token):
    pack = PackWriter(tmp_path)
    pack.tool("gone", "tools/does-not-exist.py")
    code, service = launcher.run(["--index", pack.write()], token=token)
    assert code == 1
    assert service.wait_record("boot-failed")["problems"] == ["Missing module: tools/does-not-exist.py"]


@pytest.mark.parametrize("token", ["x", "e"])
def test_an_unreadable_index_is_named_whatever_the_token(launcher, tmp_path, token):
    code, service = launcher.run(["--index", tmp_path / "no-index.json"], token=token)
    assert code == 1
    problems = service.wait_record("boot-failed")["problems"]
    assert problems == ["Cannot read the pack index: [Errno 2] No such file or directory: '%s'"
                        % (tmp_path / "no-index.json")]


def one_life(launcher, pack_index, token):
    """Boot, a call, a check-less invoke error, a drain and a stop under ``token``: every record."""
    service = launcher.start(pack_index, token=token, env={"DECLARED_REQUIRED": "r", "UNDECLARED_X": "v"})
    assert service.call_tool("leak", {"value": "a value"}, token=token,
                             ctx={"tenantId": "t", "runId": "r", "requestId": "q"}).status == 200
    assert service.call_tool("nothing", {}, token=token, ctx={"tenantId": "t", "runId": "r"}).status == 200
    service.wait_record("call", where=lambda r: r.get("toolId") == "nothing")
    service.signal()
    assert service.wait_exit(15) == 0
    assert len(service.records) == len(service.raw_stderr), "a line is not a JSON record"
    return service.records


def normalised(records):
    """Records without what differs from run to run: times, the port, durations."""
    out = []
    for record in records:
        record = dict(record)
        record.pop("time")
        for key in ("port", "durationMs"):
            if key in record:
                record[key] = 0
        record["message"] = re.sub(r"\d+", "N", record["message"])
        out.append(record)
    return out


@pytest.mark.parametrize("token", ["e", "x", "a", ":", "true", "listening", "kind"])
def test_a_short_token_alters_no_record(launcher, pack_index, token):
    """Every record, field by field, is the same as under a long random token."""
    short = normalised(one_life(launcher, pack_index, token))
    long = normalised(one_life(launcher, pack_index, secrets.token_hex(32)))
    assert [r["kind"] for r in short if "kind" in r][:1] == ["env-dropped"]
    assert short == long


@pytest.mark.parametrize("token, problem", [
    (" \t ", "KINDGI_PACK_SERVICE_TOKEN is required"),
    ("secret with-spaces-0451", "KINDGI_PACK_SERVICE_TOKEN may hold only printable ASCII without spaces "
                                "(it travels in an HTTP header). Use a random value such as "
                                "`openssl rand -hex 32`."),
    ("secret-\u00e9-0452", None),
])
def test_unusable_token_is_config_invalid_and_never_logged(launcher, pack_index, token, problem):
    code, service = launcher.run(["--index", pack_index], token=token)
    assert code == 1
    record = service.wait_record("config-invalid")
    if problem is not None:
        assert record["problems"] == [problem]
    assert len(record["problems"]) == 1 and record["problems"][0].startswith("KINDGI_PACK_SERVICE_TOKEN ")
    if token.strip():
        assert all(token.strip() not in line for line in service.raw_stderr)


# -- the env filter -------------------------------------------------------------

def expected_kept(extra, dropped=()):
    """The environment pack code should see: the service's, less the token and ``dropped``."""
    env = service_env(extra)
    env.pop("KINDGI_PACK_SERVICE_TOKEN")
    for name in dropped:
        env.pop(name)
    return env


def test_filter_keeps_exactly_the_declared_prefixed_and_platform_names(filtered):
    output = probe(filtered)
    kept = expected_kept(input_environment(), EXTRA_DROPPED)
    assert output["environ"] == kept
    assert names_of(output["childEnv"]) == set(kept)


def test_filter_also_clears_proc_self_environ(filtered):
    output = probe(filtered)
    names = names_of(output["procEnviron"])
    assert set(expected_kept(input_environment())) - set(EXTRA_DROPPED) <= names
    assert not names & set(EXTRA_DROPPED)
    for value in EXTRA_DROPPED.values():
        assert value not in output["procEnviron"]
        assert value not in output["childEnv"]


def test_every_platform_name_and_prefix_survives(filtered):
    environ = probe(filtered)["environ"]
    assert set(PLATFORM_NAMES) <= set(environ)
    for name in EXTRA_KEPT:
        assert environ[name] == EXTRA_KEPT[name]
        assert name.startswith(KEPT_PREFIXES) or name.startswith("DECLARED_")


def test_env_dropped_names_what_was_dropped_sorted_without_values(filtered):
    record = filtered.wait_record("env-dropped")
    dropped = sorted(EXTRA_DROPPED)
    assert record["names"] == dropped
    assert record["level"] == "warn"
    assert record["message"] == (
        "Dropped %d variables the pack doesn't declare: %s (declare them in the pack's env, "
        "or set KINDGI_PACK_ENV_FILTER=off)" % (len(dropped), ", ".join(dropped)))
    assert len(filtered.records_of("env-dropped")) == 1
    for value in EXTRA_DROPPED.values():
        assert all(value not in line for line in filtered.raw_stderr)


def test_filter_off_keeps_everything_but_the_token(unfiltered):
    output = probe(unfiltered)
    kept = expected_kept(input_environment("off"))
    assert output["environ"] == kept
    assert names_of(output["childEnv"]) == set(kept)
    assert set(EXTRA_DROPPED) <= names_of(output["procEnviron"])
    assert unfiltered.records_of("env-dropped") == []


def test_index_without_env_keeps_only_prefixed_and_platform_names(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/probe.py", PROBE)
    pack.tool("probe", "tools/probe.py", version="1.0.0")
    index = pack.write()
    data = json.loads(index.read_text())
    del data["env"]
    index.write_text(json.dumps(data))
    service = launcher.start(index, env=input_environment())
    environ = probe(service)["environ"]
    assert "DECLARED_REQUIRED" not in environ and "DECLARED_OPTIONAL" not in environ
    assert set(environ) == set(expected_kept(input_environment())) - set(EXTRA_DROPPED) - {
        "DECLARED_REQUIRED", "DECLARED_OPTIONAL"}
    assert service.wait_record("env-dropped")["names"] == sorted(
        set(EXTRA_DROPPED) | {"DECLARED_REQUIRED", "DECLARED_OPTIONAL"})


def test_one_dropped_variable_is_named_in_the_singular(launcher, pack_index):
    service = launcher.start(pack_index, env={"DECLARED_REQUIRED": "r", "ONLY_ONE_UNDECLARED": "v"})
    record = service.wait_record("env-dropped")
    assert record["names"] == ["ONLY_ONE_UNDECLARED"]
    assert record["message"] == ("Dropped a variable the pack doesn't declare: ONLY_ONE_UNDECLARED "
                                 "(declare them in the pack's env, or set KINDGI_PACK_ENV_FILTER=off)")


# -- the fallback: re-executing the interpreter ----------------------------------

NO_MEMORY_WRITES_AT_FIRST_START = '''
import builtins, os, time
log = os.path.join(os.path.dirname(os.path.abspath(__file__)), "starts")
with open(log, "a") as f:
    f.write("%d\\n" % os.getpid())
with open(log) as f:
    starts = len(f.read().split())
if starts == 1:   # as in a sandbox that refuses /proc/self/mem
    real_open = builtins.open

    def open_without_memory(file, *args, **kwargs):
        if file == "/proc/self/mem":
            if os.environ.get("KINDGI_TEST_SLOW_HIDING"):   # a signal can come in this half second
                real_open(log + "-hiding", "w").close()
                time.sleep(0.5)
            raise PermissionError(13, "Permission denied", file)
        return real_open(file, *args, **kwargs)
    builtins.open = open_without_memory
elif starts == 2 and os.environ.get("KINDGI_TEST_SLOW_RESTART"):
    open(log + "-restarting", "w").close()
    time.sleep(1.0)
'''


def without_memory_writes_at_first_start(folder, slow_restart=False, slow_hiding=False):
    """Service env whose first interpreter start can't write /proc/self/mem: the token must go by re-exec.

    A ``sitecustomize`` on PYTHONPATH does it, and logs each interpreter
    start of the process in ``folder/starts``; with ``slow_restart`` the
    second start (the re-exec) takes a second and says so in
    ``folder/starts-restarting``; with ``slow_hiding`` the first start's
    attempt to write its memory takes half a second and says so in
    ``folder/starts-hiding``.
    """
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(NO_MEMORY_WRITES_AT_FIRST_START)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))}
    if slow_restart:
        env["KINDGI_TEST_SLOW_RESTART"] = "1"
    if slow_hiding:
        env["KINDGI_TEST_SLOW_HIDING"] = "1"
    return env


@pytest.fixture(scope="module")
def reexecuted(module_launcher, pack_index, tmp_path_factory):
    """A filtered service that had to re-execute itself to hide the token."""
    site = tmp_path_factory.mktemp("reexec") / "site"
    service = module_launcher.start(pack_index, env=dict(input_environment(), **without_memory_writes_at_first_start(site)))
    service.site = site
    return service


def test_without_memory_writes_the_service_re_executes_and_still_hides_everything(reexecuted, pack_index):
    service, tmp_path = reexecuted, reexecuted.site.parent
    env = dict(input_environment(), **without_memory_writes_at_first_start(tmp_path / "site"))
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(service.proc.pid)] * 2, "the service did not re-execute itself"
    output = probe(service)
    assert output["pipes"] == {}, "the pipe the digest came by is still open"
    seen = json.dumps(output)
    assert TOKEN not in seen and "KINDGI_PACK_SERVICE_TOKEN" not in seen
    for value in EXTRA_DROPPED.values():
        assert value not in seen
    assert output["cmdline"].split("\0")[-3:-1] == ["--index", str(pack_index)]
    assert service.records_of("token-exposed") == []
    assert service.wait_record("env-dropped")["names"] == sorted(EXTRA_DROPPED)
    assert output["environ"] == expected_kept(env, EXTRA_DROPPED)


def test_the_re_executed_service_serves_the_index_the_first_image_read(launcher, tmp_path):
    """An index file replaced between the two images' reads: the new image read the other one,
    so it served an index the first image never checked (nor hid its variables by)."""
    shutil.copytree(os.path.join(str(ROOT), "examples", "hello-pack"), str(tmp_path / "pack"))
    index = tmp_path / "pack" / "index.json"
    first = index.read_bytes()
    site = tmp_path / "site"
    service = launcher.start(str(index), env=without_memory_writes_at_first_start(site, slow_hiding=True),
                             expect_listening=False)
    deadline = time.monotonic() + 10
    while not (site / "starts-hiding").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert (site / "starts-hiding").exists(), service.raw_stderr
    (tmp_path / "replacement.json").write_bytes(first + b"\n")
    os.replace(str(tmp_path / "replacement.json"), str(index))
    assert service.wait_listening(), service.raw_stderr
    assert (site / "starts").read_text().split() == [str(service.proc.pid)] * 2, "the service did not re-execute"
    assert service.request("GET", "/v1/info").json["indexHash"] == "sha256:" + hashlib.sha256(first).hexdigest()


def feed_named_pipe(path, data, timeout=20.0):
    """Write ``data`` into the named pipe at ``path`` once a reader has it open (within ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(str(path), os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:   # ENXIO: no reader yet
            if exc.errno != errno.ENXIO or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    try:
        os.set_blocking(fd, True)
        os.write(fd, data)
    finally:
        os.close(fd)


def start_on_pipe(launcher, args, env, data, source, folder, cwd=str(ROOT)):
    """Start ``python args... --index X`` where X is a pipe (``/dev/stdin``) or a named pipe (in
    ``folder``) that gives ``data``."""
    if source == "pipe":
        read_end, write_end = os.pipe()
        os.write(write_end, data)   # less than a pipe's buffer
        os.close(write_end)
        try:
            proc = subprocess.Popen([PYTHON] + list(args) + ["--index", "/dev/stdin"], cwd=cwd, env=env,
                                    stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        finally:
            os.close(read_end)
        service = Service(proc)
        launcher.started.append(service)
        return service
    fifo = os.path.join(str(folder), "index.fifo")
    os.mkfifo(fifo)
    service = launcher.spawn(list(args) + ["--index", fifo], env=env, cwd=cwd)
    feed_named_pipe(fifo, data)
    return service


def handed_copies(service):
    """The service's open descriptors on a copy of the index handed over at the re-exec (an
    in-memory file, or an unlinked temporary file before Python 3.8)."""
    fds = "/proc/%d/fd" % service.proc.pid
    found = []
    for fd in os.listdir(fds):
        try:
            target = os.readlink(os.path.join(fds, fd))
            if "kindgi-pack-index" in target or target.endswith(" (deleted)"):
                found.append(fd)
        except FileNotFoundError:
            pass   # closed since it was listed
    return found


@pytest.mark.parametrize("source", ["pipe", "named pipe"])
def test_an_index_on_a_pipe_is_handed_over_to_the_re_executed_service(launcher, pack_index, tmp_path, source):
    """A pipe gives its bytes once, to the first image: it hands them over with the token's
    digest, and the new image boots from exactly those bytes (they were empty there, or, from a
    named pipe, awaited for 10 s), then closes the copy."""
    with open(str(pack_index), "rb") as f:
        data = f.read() + b"\n  "   # not the file's bytes: the hash proves which were served
    env = service_env(dict(input_environment(), **without_memory_writes_at_first_start(tmp_path / "site")))
    service = start_on_pipe(launcher, list(FROM_BYTECODE) + ["--module-root", os.path.dirname(str(pack_index))],
                            env, data, source, tmp_path)
    assert service.wait_listening(), "\n".join(service.raw_stderr)
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(service.proc.pid)] * 2, "the service did not re-execute itself"
    info = service.request("GET", "/v1/info")
    assert info.json["indexHash"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert handed_copies(service) == []
    output = probe(service)
    assert TOKEN not in json.dumps(output)
    assert service.records_of("token-exposed") == []
    assert service.wait_record("env-dropped")["names"] == sorted(EXTRA_DROPPED)


def test_thousands_of_dropped_names_are_handed_over_without_hanging_the_boot(launcher, pack_index, tmp_path):
    """Their hand-off took more than a pipe's 64 KiB, written before anything reads it: the boot
    hung for ever, SIGTERM held."""
    many = {"SERVICE_%05d_PORT_8080_TCP_ADDR" % i: "10.0.0.1" for i in range(5000)}
    env = dict(input_environment(), **without_memory_writes_at_first_start(tmp_path / "site"))
    service = launcher.start(pack_index, env=dict(env, **many))
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(service.proc.pid)] * 2, "the service did not re-execute itself"
    assert service.records_of("token-exposed") == []
    assert service.wait_record("env-dropped")["names"] == sorted(list(EXTRA_DROPPED) + list(many))
    output = probe(service)
    assert TOKEN not in json.dumps(output) and not set(many) & set(output["environ"])


WRAPPER_MAIN = '''
import signal, sys
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
from . import settings   # a relative import: this runs only as its package's module
import kindgi_pack_min
sys.exit(kindgi_pack_min.main())
'''


def test_a_service_run_with_dash_m_is_re_executed_with_dash_m(launcher, pack_index, tmp_path):
    """Re-run by its file's path, a package's __main__ lost its package: the new image died on its
    relative import, a traceback after the first image had gone."""
    package = tmp_path / "app" / "wrapper"
    package.mkdir(parents=True)
    for name, source in (("__init__.py", ""), ("settings.py", ""), ("__main__.py", WRAPPER_MAIN)):
        (package / name).write_text(source)
    env = dict(input_environment(), **without_memory_writes_at_first_start(tmp_path / "site"))
    env["PYTHONPATH"] += os.pathsep + str(ROOT)
    service = launcher.spawn(["-m", "wrapper", "--index", pack_index], env=service_env(env), cwd=str(tmp_path / "app"))
    assert service.wait_listening(), "\n".join(service.raw_stderr)
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert starts == [str(service.proc.pid)] * 2, "the service did not re-execute itself"
    output = probe(service)
    assert output["cmdline"].split("\0")[-5:-1] == ["-m", "wrapper.__main__", "--index", str(pack_index)]
    assert TOKEN not in json.dumps(output)
    assert service.records_of("token-exposed") == []


@pytest.mark.parametrize("closed", [1, 2])
def test_a_service_started_with_stdout_or_stderr_closed_re_executes(pack_index, tmp_path, closed):
    """Python makes a stream closed at start None: flushing it before the exec was a traceback,
    exit code 1, where the service that can write its memory boots."""
    env = service_env(dict(input_environment(), **without_memory_writes_at_first_start(tmp_path / "site")))
    done = subprocess.run([PYTHON] + list(FROM_BYTECODE) + ["--check", "--index", str(pack_index)], cwd=str(ROOT),
                          env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          preexec_fn=lambda: os.close(closed), timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    starts = (tmp_path / "site" / "starts").read_text().split()
    assert len(starts) == 2 and len(set(starts)) == 1, "the service did not re-execute itself"
    if closed == 1:
        assert b'"check-passed"' in done.stderr and b"Traceback" not in done.stderr


def test_a_handoff_variable_set_from_outside_is_ignored_not_waited_on(launcher, pack_index):
    """KINDGI_PACK_HANDOFF_FD is the re-exec's own pipe: naming stdin, a pipe whose writer stays
    open, it held the boot for ever.  It is ignored: the service boots and hides the token itself."""
    read_end, write_end = os.pipe()   # this test holds the writer until the end
    try:
        proc = subprocess.Popen([PYTHON] + list(FROM_BYTECODE) + ["--index", str(pack_index)], cwd=str(ROOT),
                                env=service_env(dict(input_environment(), KINDGI_PACK_HANDOFF_FD="0")),
                                stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        service = Service(proc)
        launcher.started.append(service)
        assert service.wait_listening(), "\n".join(service.raw_stderr)
        output = probe(service)
        assert TOKEN not in json.dumps(output)
        assert "KINDGI_PACK_HANDOFF_FD" not in output["environ"]
        assert service.records_of("token-exposed") == []
    finally:
        os.close(write_end)
        os.close(read_end)
