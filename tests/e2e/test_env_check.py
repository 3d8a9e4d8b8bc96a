"""End-to-end: the env check (README: Configuration).

The index requires five names, listed out of order.  A name counts as
missing when it is unset or empty; whitespace counts as set.  Under
``strict`` (the default) the missing names hold ``/readyz`` and every invoke
with 503 ``missing env`` while ``/healthz`` answers and ``/v1/info`` lists
them; under ``warn`` the service serves and still lists them.  Either way a
``missing-env`` record names them, sorted.
"""

import json

import pytest

from conftest import PackWriter

REQUIRED = ["ZETA_VAR", "SPACE_VAR", "ALPHA_VAR", "SET_VAR", "MID_VAR"]
STRICT_ENV = {"SET_VAR": "x", "SPACE_VAR": " \t", "MID_VAR": ""}     # ALPHA_VAR, ZETA_VAR unset
STRICT_MISSING = ["ALPHA_VAR", "MID_VAR", "ZETA_VAR"]
WARN_ENV = {"SET_VAR": "x", "SPACE_VAR": " ", "ALPHA_VAR": "a", "ZETA_VAR": "z",
            "KINDGI_PACK_ENV_CHECK": "warn"}                        # MID_VAR unset
WARN_MISSING = ["MID_VAR"]

PACK_CODE = '''
import os
from kindgi import tool, guardrail

RAN = os.path.join(os.path.dirname(__file__), "ran-by-%d.log" % os.getpid())

def ran(what):
    with open(RAN, "a") as log:
        log.write(what + "\\n")

@tool(description="A test tool.", input={"type": "object"}, output={}, id="mark", version="1.0.0")
def mark(input, ctx):
    ran("tool")
    return {"marked": True}

@guardrail(id="g", on_violation="block")
def g(config, trace):
    ran("check")
    return True
'''


@pytest.fixture(scope="module")
def pack_index(tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("envcheck"))
    pack.module("tools/mark.py", PACK_CODE)
    pack.tool("mark", "tools/mark.py", version="1.0.0")
    pack.guardrail("g", "tools/mark.py")
    pack.env = {"required": REQUIRED, "optional": []}
    return pack.write()


@pytest.fixture(scope="module")
def strict(module_launcher, pack_index):
    return module_launcher.start(pack_index, env=STRICT_ENV)


@pytest.fixture(scope="module")
def warn(module_launcher, pack_index):
    return module_launcher.start(pack_index, env=WARN_ENV)


def pack_code_ran(service, pack_index):
    """What pack code in that service process has run, from the log it keeps beside its module."""
    log = pack_index.parent / "tools" / ("ran-by-%d.log" % service.proc.pid)
    return log.read_text().split() if log.exists() else []


def missing_env_body(names):
    return json.dumps({"error": "missing env", "missingEnv": names}, separators=(",", ":")).encode()


def assert_missing_env_503(response, names):
    assert response.status == 503, response
    assert response.body == missing_env_body(names)
    assert response.header("retry-after") == "1"
    assert response.header("content-type") == "application/json; charset=utf-8"
    assert response.header("kindgi-duration-ms") is None


# -- strict -----------------------------------------------------------------------

def test_strict_readyz_is_503_missing_env_sorted(strict):
    assert_missing_env_503(strict.request("GET", "/readyz", token=False), STRICT_MISSING)


def test_strict_invokes_are_503_and_run_nothing(strict, pack_index):
    assert_missing_env_503(strict.call_tool("mark", {}), STRICT_MISSING)
    assert_missing_env_503(strict.call_check("g"), STRICT_MISSING)
    assert pack_code_ran(strict, pack_index) == []


def test_strict_healthz_is_200(strict):
    response = strict.request("GET", "/healthz", token=False)
    assert (response.status, response.body) == (200, b'{"status":"ok"}')


def test_strict_info_lists_missing_env_sorted(strict):
    response = strict.request("GET", "/v1/info")
    assert response.status == 200, response
    assert response.json["missingEnv"] == STRICT_MISSING
    assert list(response.json)[-1] == "missingEnv"


def test_strict_missing_env_record(strict):
    record = strict.wait_record("missing-env")
    assert record["level"] == "warn"
    assert record["check"] == "strict"
    assert record["names"] == STRICT_MISSING
    assert record["message"] == "The pack's env.required names have no value: ALPHA_VAR, MID_VAR, ZETA_VAR"
    assert len(strict.records_of("missing-env")) == 1


def test_strict_missing_env_is_logged_before_listening(strict):
    kinds = [r.get("kind") for r in strict.records]
    assert kinds.index("missing-env") < kinds.index("listening")


def test_no_call_record_for_a_503(strict):
    strict.call_tool("mark", {})
    assert strict.records_of("call") == []


# -- warn -------------------------------------------------------------------------

def test_warn_serves(warn, pack_index):
    assert warn.request("GET", "/readyz", token=False).body == b'{"status":"ready"}'
    response = warn.call_tool("mark", {})
    assert response.status == 200, response
    assert response.json == {"v": 2, "kind": "result", "output": {"marked": True}}
    assert warn.call_check("g").json == {"v": 2, "kind": "check-result", "result": {"passed": True}}
    assert pack_code_ran(warn, pack_index) == ["tool", "check"]


def test_warn_still_lists_missing_env(warn):
    assert warn.request("GET", "/v1/info").json["missingEnv"] == WARN_MISSING
    record = warn.wait_record("missing-env")
    assert (record["check"], record["names"]) == ("warn", WARN_MISSING)
    assert record["message"] == "The pack's env.required name has no value: MID_VAR"


# -- nothing missing --------------------------------------------------------------

def test_nothing_missing_means_ready_and_an_empty_list(launcher, pack_index):
    env = dict(STRICT_ENV, MID_VAR="m", ALPHA_VAR="a", ZETA_VAR="z", KINDGI_PACK_ENV_CHECK="strict")
    service = launcher.start(pack_index, env=env)
    assert service.request("GET", "/readyz", token=False).status == 200
    assert service.request("GET", "/v1/info").json["missingEnv"] == []
    assert service.records_of("missing-env") == []


def test_missing_env_is_reported_before_the_import_it_breaks(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/needs.py", 'import os\nAPI_URL = os.environ["API_URL"]\n')
    pack.tool("needs", "tools/needs.py")
    pack.env = {"required": ["API_URL"], "optional": []}
    code, failed = launcher.run(["--index", pack.write()])
    assert code == 1
    assert [r["kind"] for r in failed.records] == ["missing-env", "boot-failed"]
    assert failed.records[0]["names"] == ["API_URL"]
    assert failed.records[1]["problems"] == ["needs: 'API_URL'"]
