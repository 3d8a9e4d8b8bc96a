"""End-to-end: tenant pinning, protocol 2.7.0.

``KINDGI_PACK_TENANT_ID`` pins the service to a tenant's id, a UUID (anything
else, and the id no tenant has, is ``config-invalid``).  ``/v1/invoke`` and
``/v1/info`` without a matching ``kindgi-tenant-id`` header, and tool calls
whose ``ctx.tenantId`` names another tenant, get 421
``{"error":"This pack service serves another tenant","code":"pack-tenant-mismatch"}``,
run nothing, and leave one ``tenant-mismatch`` record saying ``via`` which.
UUIDs compare in any case.  The check sits after 404/405/401 and before every
503, 415 and 413; the ctx check sits after the envelope is parsed.  Probes
are exempt, and an unpinned service ignores the header.
"""

import errno
import hashlib
import json
import os
import threading
import time

import pytest

from conftest import TOKEN, PackWriter

TENANT = "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b"
OTHER = "9e1d2c3b-4a5f-4e6d-8c7b-6a5f4e3d2c1b"
MISMATCH = b'{"error":"This pack service serves another tenant","code":"pack-tenant-mismatch"}'
PINNED = {"kindgi-tenant-id": TENANT}

PACK_CODE = '''
from kindgi import tool, guardrail

@tool(description="A test tool.", input={"type": "object"}, output={}, id="mark", version="1.0.0")
def mark(input, ctx):
    open(input["path"], "w").close()
    return {"tenant": ctx.tenant_id}

@tool(description="A test tool.", input={"type": "object"}, output={}, id="hold", version="1.0.0")
def hold(input, ctx):
    """Holds its slot until the test writes to the FIFO."""
    with open(input["fifo"]) as fifo:
        return {"read": fifo.read()}

@guardrail(id="g", on_violation="block")
def g(config, trace):
    open(config["path"], "w").close()
    return True
'''


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("tenant"))
    pack.module("tools/code.py", PACK_CODE)
    pack.tool("mark", "tools/code.py", version="1.0.0")
    pack.tool("hold", "tools/code.py", version="1.0.0")
    pack.guardrail("g", "tools/code.py")
    return pack


@pytest.fixture(scope="module")
def pinned(module_launcher, pack):
    """Pinned to TENANT, one call at a time (for the overload ordering)."""
    return module_launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": TENANT,
                                                    "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "1"})


@pytest.fixture(scope="module")
def pinned_not_ready(module_launcher, pack):
    """Pinned, and not ready: a required variable is missing under the strict check."""
    pack.env = {"required": ["NEVER_SET"], "optional": []}
    index = pack.write("index-needs-env.json")
    pack.env = {"required": [], "optional": []}
    return module_launcher.start(index, env={"KINDGI_PACK_TENANT_ID": TENANT})


def assert_mismatch(response):
    assert response.status == 421, response
    assert response.body == MISMATCH
    assert response.header("content-type") == "application/json; charset=utf-8"
    for name in ("retry-after", "kindgi-duration-ms", "kindgi-artifact-version"):
        assert response.header(name) is None, name


def mark_call(service, path, tenant_id=TENANT, headers=PINNED, run_id="run-1", **kw):
    ctx = {"tenantId": tenant_id, "runId": run_id}
    return service.call_tool("mark", {"path": str(path)}, ctx=ctx, headers=headers, **kw)


# -- the header -----------------------------------------------------------------

WRONG_HEADERS = [{}, {"kindgi-tenant-id": OTHER}, {"kindgi-tenant-id": TENANT + "0"},
                 {"kindgi-tenant-id": TENANT.replace("-", "")}, {"kindgi-tenant-id": ""},
                 {"kindgi-tenant-id": "%s, %s" % (TENANT, TENANT)}]
WRONG_IDS = ["none", "other", "longer", "no-dashes", "empty", "twice"]


@pytest.mark.parametrize("headers", WRONG_HEADERS, ids=WRONG_IDS)
def test_invoke_without_the_pinned_header_is_421_and_runs_nothing(pinned, tmp_path, headers):
    marker = tmp_path / "ran"
    assert_mismatch(mark_call(pinned, marker, headers=headers, run_id="run-refused"))
    assert not marker.exists()


@pytest.mark.parametrize("headers", WRONG_HEADERS, ids=WRONG_IDS)
def test_info_without_the_pinned_header_is_421(pinned, headers):
    assert_mismatch(pinned.request("GET", "/v1/info", headers=headers))


def test_the_421_status_line_names_its_reason_on_every_python(pinned):
    # Python 3.6's http.server has no phrase for 421: the line was "HTTP/1.1 421 "
    data = pinned.raw(b"GET /v1/info HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\n\r\n" % TOKEN.encode(),
                      read_until_close=False)
    assert data.startswith(b"HTTP/1.1 421 Misdirected Request\r\n"), data[:100]


def test_matching_header_and_ctx_run(pinned, tmp_path):
    marker = tmp_path / "ran"
    response = mark_call(pinned, marker)
    assert response.status == 200, response
    assert response.json["output"] == {"tenant": TENANT}
    assert marker.exists()
    assert pinned.request("GET", "/v1/info", headers=PINNED).status == 200


@pytest.mark.parametrize("written", [TENANT.upper(), TENANT[:8].upper() + TENANT[8:]], ids=["upper", "mixed"])
def test_header_and_ctx_in_any_case_run_and_the_handler_gets_ctx_as_sent(pinned, tmp_path, written):
    marker = tmp_path / "ran"
    response = mark_call(pinned, marker, tenant_id=written, headers={"kindgi-tenant-id": written})
    assert response.status == 200, response
    assert response.json["output"] == {"tenant": written}
    assert marker.exists()
    assert pinned.request("GET", "/v1/info", headers={"kindgi-tenant-id": written}).status == 200


def test_each_refusal_writes_one_record_saying_how(launcher, pack, tmp_path):
    # A service of its own: the shared one may still be writing other tests' records.
    pinned = launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": TENANT})
    mark_call(pinned, tmp_path / "x", headers={"kindgi-tenant-id": OTHER})
    mark_call(pinned, tmp_path / "y", tenant_id=OTHER)
    pinned.request("GET", "/v1/info", headers={})
    deadline = time.monotonic() + 10
    while len(pinned.records_of("tenant-mismatch")) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    records = pinned.records_of("tenant-mismatch")
    assert [(r["via"], r["path"]) for r in records] == [("header", "/v1/invoke"), ("context", "/v1/invoke"),
                                                        ("header", "/v1/info")]
    for record in records:
        assert (record["level"], record["message"], record["event"], record["kind"]) == (
            "warn", "A call for another tenant was refused", "tenant-mismatch", "tenant-mismatch")
        assert (record["packId"], record["artifactVersion"]) == ("test-pack", "art-1")


def test_header_is_matched_after_trimming_whitespace(pinned):
    head = ("GET /v1/info HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\n"
            "kindgi-tenant-id: \t %s \t\r\nconnection: close\r\n\r\n") % (TOKEN, TENANT)
    assert pinned.raw(head.encode()).startswith(b"HTTP/1.1 200 ")


def test_no_call_record_for_a_421(pinned, tmp_path):
    mark_call(pinned, tmp_path / "x", headers={}, run_id="run-421-header")
    mark_call(pinned, tmp_path / "y", tenant_id=OTHER, run_id="run-421-ctx")
    mark_call(pinned, tmp_path / "z", run_id="run-421-control")
    pinned.wait_record("call", where=lambda r: r.get("runId") == "run-421-control")
    assert [r for r in pinned.records_of("call") if r.get("runId") in ("run-421-header", "run-421-ctx")] == []


# -- ctx.tenantId ---------------------------------------------------------------

def test_tool_call_for_another_tenant_is_421_and_runs_nothing(pinned, tmp_path):
    marker = tmp_path / "ran"
    assert_mismatch(mark_call(pinned, marker, tenant_id=OTHER))
    assert_mismatch(mark_call(pinned, marker, tenant_id=" " + TENANT))
    assert not marker.exists()
    # The service allows one call at a time: a slot kept by a refused call would make this 503.
    assert mark_call(pinned, marker).status == 200


def test_the_context_is_checked_before_the_tool_is_looked_up(pinned):
    ctx = {"tenantId": OTHER, "runId": "run-1"}
    assert_mismatch(pinned.call_tool("no-such-tool", {}, ctx=ctx, headers=PINNED))
    assert_mismatch(pinned.call_tool("mark", {}, version="9.9.9", ctx=ctx, headers=PINNED))


@pytest.mark.parametrize("first, last", [(OTHER, TENANT), (TENANT, OTHER)], ids=["pinned-last", "other-last"])
def test_a_repeated_tenant_id_key_is_read_once_for_the_pin_and_the_handler(pinned, tmp_path, first, last):
    """The last of two ``tenantId`` keys is the one both the pin and the handler see."""
    marker = tmp_path / "ran"
    body = ('{"v":2,"kind":"invoke","tool":{"id":"mark"},"input":{"path":%s},'
            '"ctx":{"tenantId":"%s","runId":"run-1","tenantId":"%s"}}' % (json.dumps(str(marker)), first, last))
    response = pinned.invoke(body, headers=dict(PINNED, **{"content-type": "application/json"}))
    if last == TENANT:
        assert response.status == 200, response
        assert response.json["output"] == {"tenant": TENANT}
    else:
        assert_mismatch(response)
        assert not marker.exists()


def test_malformed_messages_still_get_their_200_error(pinned):
    bad_ctx = {"v": 2, "kind": "invoke", "tool": {"id": "mark"}, "input": {}, "ctx": {"tenantId": OTHER}}
    response = pinned.invoke(bad_ctx, headers=PINNED)
    assert response.status == 200, response
    assert response.json == {"v": 2, "kind": "error", "code": "malformed-message",
                             "message": "`ctx` needs string `tenantId` and `runId`"}
    response = pinned.invoke(b"{not json", headers=dict(PINNED, **{"content-type": "application/json"}))
    assert response.status == 200, response
    assert response.json["code"] == "malformed-message"


def test_check_invokes_are_checked_by_header_only(pinned, tmp_path):
    marker = tmp_path / "ran"
    other_trace = {"runId": "run-1", "tenantId": OTHER}
    response = pinned.call_check("g", {"path": str(marker)}, trace=other_trace, headers=PINNED)
    assert response.status == 200, response
    assert response.json == {"v": 2, "kind": "check-result", "result": {"passed": True}}
    assert marker.exists()
    marker.unlink()
    assert_mismatch(pinned.call_check("g", {"path": str(marker)}, headers={"kindgi-tenant-id": OTHER}))
    assert not marker.exists()


# -- what comes before, what comes after ----------------------------------------

def test_probes_are_exempt(pinned):
    assert pinned.request("GET", "/healthz", token=False).status == 200
    assert pinned.request("GET", "/readyz", token=False).status == 200


def test_404_405_401_come_before_421(pinned):
    assert pinned.request("GET", "/v1/nope").status == 404
    assert pinned.request("GET", "/v1/invoke").status == 405
    assert pinned.request("POST", "/v1/info").status == 405
    assert pinned.request("GET", "/v1/info", token=False).status == 401
    assert pinned.call_tool("mark", {}, token="wrong").status == 401


def test_421_comes_before_415(pinned):
    response = pinned.invoke("{}", headers={"content-type": "text/plain", "kindgi-tenant-id": OTHER})
    assert_mismatch(response)
    assert pinned.invoke("{}", headers=dict(PINNED, **{"content-type": "text/plain"})).status == 415


def test_421_comes_before_413(pinned):
    head = ("POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\nkindgi-tenant-id: %s\r\n"
            "content-type: application/json\r\ncontent-length: %d\r\n\r\n") % (TOKEN, OTHER, 10485761)
    answer = pinned.raw(head.encode(), timeout=5)
    assert answer.startswith(b"HTTP/1.1 421 "), answer[:200]
    assert answer.endswith(MISMATCH)


def open_fifo_once_read(path, seconds=10):
    """Open a FIFO for writing as soon as a reader has it open (the handler is then running)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return os.open(str(path), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise
            time.sleep(0.01)
    raise AssertionError("the handler never opened %s" % path)


def test_421_comes_before_overloaded(pinned, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(str(fifo))
    answers = []
    held = threading.Thread(target=lambda: answers.append(pinned.call_tool(
        "hold", {"fifo": str(fifo)}, ctx={"tenantId": TENANT, "runId": "run-hold"}, headers=PINNED)))
    held.start()
    writer = open_fifo_once_read(fifo)
    try:
        assert pinned.call_tool("mark", {"path": str(tmp_path / "x")}, headers=PINNED).body \
            == b'{"error":"overloaded"}'
        assert_mismatch(mark_call(pinned, tmp_path / "x", headers={}))
    finally:
        os.write(writer, b"done")
        os.close(writer)
        held.join(15)
    assert [a.json["output"] for a in answers] == [{"read": "done"}]


def test_421_comes_before_not_ready(pinned_not_ready, tmp_path):
    assert_mismatch(mark_call(pinned_not_ready, tmp_path / "x", headers={}))
    response = mark_call(pinned_not_ready, tmp_path / "x")
    assert (response.status, response.json["error"]) == (503, "missing env")
    assert pinned_not_ready.request("GET", "/readyz", token=False).status == 503


# -- configuration --------------------------------------------------------------

def test_unpinned_service_ignores_the_header(launcher, pack, tmp_path):
    service = launcher.start(pack.write())
    marker = tmp_path / "ran"
    response = mark_call(service, marker, tenant_id="tenant-b", headers={"kindgi-tenant-id": "not-a-uuid"})
    assert response.status == 200, response
    assert marker.exists()
    assert service.request("GET", "/v1/info").status == 200


def test_blank_pinned_value_means_unpinned(launcher, pack):
    service = launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": " \t "})
    assert service.request("GET", "/v1/info", headers={"kindgi-tenant-id": "anyone"}).status == 200
    assert service.request("GET", "/v1/info").status == 200


def test_pinned_value_is_trimmed_and_read_in_any_case(launcher, pack):
    service = launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": "  %s\t" % TENANT.upper()})
    assert service.request("GET", "/v1/info", headers=PINNED).status == 200
    assert_mismatch(service.request("GET", "/v1/info"))


def test_pinned_value_is_trimmed_as_javascript_trims(launcher, pack):
    """A byte order mark and other Unicode spaces around the id are trimmed, as upstream trims them."""
    service = launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": "\ufeff\u3000%s\u00a0\u2028" % TENANT})
    assert service.request("GET", "/v1/info", headers=PINNED).status == 200
    assert_mismatch(service.request("GET", "/v1/info", headers={"kindgi-tenant-id": OTHER}))


NOT_A_UUID = ("KINDGI_PACK_TENANT_ID must be the tenant's id, a UUID such as "
              "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b. Got a value that isn't one.")
NO_TENANT = ("KINDGI_PACK_TENANT_ID is 00000000-0000-4000-8000-000000000000, the id no tenant has: "
             "no pack call carries it. Set the tenant's own id.")


@pytest.mark.parametrize("value, problem", [
    ("acme", NOT_A_UUID),
    ("t-pinned", NOT_A_UUID),
    (TENANT.replace("-", ""), NOT_A_UUID),
    ("{%s}" % TENANT, NOT_A_UUID),
    (TENANT + "0", NOT_A_UUID),
    ("tenant a", NOT_A_UUID),
    ("tenant\x7fa", NOT_A_UUID),
    ("00000000-0000-4000-8000-000000000000", NO_TENANT),
    (" 00000000-0000-4000-8000-000000000000 ", NO_TENANT),
    # Not whitespace to JavaScript's trim(), as upstream reads the pin: not blank, and not a UUID.
    ("\x1f", NOT_A_UUID),
    ("\x85", NOT_A_UUID),
    ("\x1c" + TENANT, NOT_A_UUID),
], ids=["word", "t-pinned", "no-dashes", "braces", "longer", "space", "control", "no-tenant", "no-tenant-spaced",
        "unit-separator", "next-line", "file-separator-before"])
def test_a_pin_that_is_not_a_tenants_id_is_config_invalid(launcher, pack, value, problem):
    code, service = launcher.run(["--index", pack.write()], env={"KINDGI_PACK_TENANT_ID": value})
    assert code == 1
    record = service.wait_record("config-invalid")
    assert record["message"] == "The pack service configuration is invalid"
    assert record["problems"] == [problem]
    assert service.records_of("listening") == []


def test_a_bad_pin_is_listed_with_every_other_problem(launcher, pack):
    code, service = launcher.run(["--index", pack.write()], env={"KINDGI_PACK_TENANT_ID": "acme", "PORT": "x"},
                                 token=" ")
    assert code == 1
    assert service.wait_record("config-invalid")["problems"] == [
        "KINDGI_PACK_SERVICE_TOKEN is required", 'PORT must be a port number, got "x"', NOT_A_UUID]


# -- indexHash ------------------------------------------------------------------

def test_info_carries_the_index_hash_pinned_or_not(launcher, pinned, pack):
    index = pack.write("index-hash.json")
    index.write_bytes(index.read_bytes() + b"\n\n")    # the bytes are hashed, not a re-serialisation
    expected = "sha256:" + hashlib.sha256(index.read_bytes()).hexdigest()
    info = launcher.start(index).request("GET", "/v1/info").json
    assert info["indexHash"] == expected
    assert list(info) == ["protocol", "packId", "packVersion", "artifactVersion", "indexHash", "tools",
                          "checks", "missingEnv"]
    pinned_hash = "sha256:" + hashlib.sha256((pack.root / "index.json").read_bytes()).hexdigest()
    assert pinned.request("GET", "/v1/info", headers=PINNED).json["indexHash"] == pinned_hash
