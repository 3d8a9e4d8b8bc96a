"""End-to-end: the HTTP surface of the service (README: Protocol coverage).

Routes, methods, the token, the content type, the body limit, readiness and
the concurrency cap, the probes, ``/v1/info``, and how every answer is
written: compact UTF-8 JSON, its content type, keep-alive, and the two
headers only invoke answers carry.

One service serves most tests: it runs with a concurrency cap of 2 so that
the overloaded answer can be provoked by two calls held open.  A held call
is a ``gate`` tool: it writes ``<name>.started`` and waits for
``<name>.release`` in a folder the test owns.
"""

import email.utils
import hashlib
import json
import re
import socket
import threading
import time

import pytest

from conftest import TOKEN, PackWriter

MiB10 = 10 * 1024 * 1024
JSON_TYPE = "application/json; charset=utf-8"

ECHO = '''\
from kindgi import tool

@tool(description="A test tool.", id="echo", version="1.0.0", input={"type": "object"}, output={})
def echo(input):
    return input
'''

SIZE = '''\
from kindgi import tool

@tool(description="A test tool.", id="size", version="1.0.0", input={"type": "object"}, output={})
def size(input):
    return {"chars": len(input["pad"])}
'''

GATE = '''\
import os, time
from kindgi import tool

@tool(description="A test tool.", id="gate", input={"type": "object"}, output={})
def gate(input):
    base = os.path.join(input["dir"], input["name"])
    open(base + ".started", "w").close()
    end = time.monotonic() + 10
    while not os.path.exists(base + ".release") and time.monotonic() < end:
        time.sleep(0.01)
    return {"released": os.path.exists(base + ".release")}
'''

TOUCH = '''\
from kindgi import tool

@tool(description="A test tool.", id="touch", input={"type": "object"}, output={})
def touch(input):
    open(input["path"], "w").close()
    return {"touched": True}
'''

CHECK = '''\
from kindgi import guardrail

@guardrail(id="g-a", check_id="shared-check", on_violation="block")
def a(config, trace):
    return True
'''

CHECK_B = '''\
from kindgi import guardrail

@guardrail(id="g-b", check_id="shared-check", on_violation="block")
def b(config, trace):
    return True
'''

CHECK_PLAIN = '''\
from kindgi import guardrail

@guardrail(id="plain-check", on_violation="block")
def plain(config, trace):
    return True
'''


def write_pack(root):
    pack = PackWriter(root)
    pack.module("tools/echo.py", ECHO)
    pack.module("tools/echo_v2.py", ECHO.replace('"1.0.0"', '"2.0.0"'))
    pack.module("tools/size.py", SIZE)
    pack.module("tools/gate.py", GATE)
    pack.module("tools/touch.py", TOUCH)
    pack.module("checks/a.py", CHECK)
    pack.module("checks/b.py", CHECK_B)
    pack.module("checks/plain.py", CHECK_PLAIN)
    pack.tool("echo", "tools/echo.py", version="1.0.0")
    pack.tool("echo", "tools/echo_v2.py", version="2.0.0")
    pack.tool("size", "tools/size.py", version="1.0.0")
    pack.tool("gate", "tools/gate.py")
    pack.tool("touch", "tools/touch.py", version="")
    pack.guardrail("g-a", "checks/a.py", check_id="shared-check")
    pack.guardrail("g-b", "checks/b.py", check_id="shared-check")
    pack.guardrail("plain-check", "checks/plain.py")
    return pack.write(artifactVersion="art-routes-7")


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    return write_pack(tmp_path_factory.mktemp("routes"))


@pytest.fixture(scope="module")
def service(module_launcher, index):
    return module_launcher.start(index, env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "2"})


def echo_message(input, version="1.0.0"):
    return {"v": 2, "kind": "invoke", "tool": {"id": "echo", "version": version},
            "input": input, "ctx": {"tenantId": "t", "runId": "r"}}


def echo_bytes(input):
    return json.dumps(echo_message(input)).encode()


def json_headers(extra=None):
    headers = {"content-type": "application/json"}
    headers.update(extra or {})
    return headers


def invoke_head(framing):
    """The head of a raw POST /v1/invoke with the token, a JSON type and ``framing`` (a header line)."""
    return ("POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: %s\r\ncontent-type: application/json\r\n"
            "%s\r\n\r\n" % (TOKEN, framing)).encode()


def assert_answer(resp, status, body):
    """Status, exact compact body bytes, the JSON content type and a right content-length."""
    assert resp.status == status, resp
    assert resp.body == body
    assert resp.header("content-type") == JSON_TYPE
    assert resp.header("content-length") == str(len(resp.body))


def assert_no_invoke_headers(resp):
    assert resp.header("kindgi-duration-ms") is None
    assert resp.header("kindgi-artifact-version") is None


def gate_call(service, folder, name):
    """Start a ``gate`` call in a thread; returns (thread, result holder) once it runs."""
    result = {}

    def run():
        result["resp"] = service.call_tool("gate", {"dir": str(folder), "name": name})

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    started = folder / (name + ".started")
    deadline = time.monotonic() + 10
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.exists(), "the gate handler never started"
    return thread, result


def release_gate(folder, name, thread, result):
    (folder / (name + ".release")).write_text("")
    thread.join(15)
    assert result["resp"].json == {"v": 2, "kind": "result", "output": {"released": True}}


# -- status lines ---------------------------------------------------------------

STATUS_LINES = [
    (b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n", b"HTTP/1.1 200 OK\r\n"),
    (b"GET /healthz HTTP/1.1\r\n\r\n", b"HTTP/1.1 400 Bad Request\r\n"),
    (b"GET /v1/info HTTP/1.1\r\nhost: x\r\n\r\n", b"HTTP/1.1 401 Unauthorized\r\n"),
    (b"GET /nope HTTP/1.1\r\nhost: x\r\n\r\n", b"HTTP/1.1 404 Not Found\r\n"),
    (b"POST /healthz HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n", b"HTTP/1.1 405 Method Not Allowed\r\n"),
    (invoke_head("content-length: 99999999999"), b"HTTP/1.1 413 Content Too Large\r\n"),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nhost: x\r\n\r\n", b"HTTP/1.1 414 URI Too Long\r\n"),
    (b"POST /v1/invoke HTTP/1.1\r\nhost: x\r\nkindgi-pack-token: " + TOKEN.encode() + b"\r\ncontent-length: 0\r\n\r\n",
     b"HTTP/1.1 415 Unsupported Media Type\r\n"),
    (b"GET /healthz HTTP/1.1\r\nhost: x\r\nx-long: " + b"a" * 9000 + b"\r\n\r\n",
     b"HTTP/1.1 431 Request Header Fields Too Large\r\n"),
    (invoke_head("transfer-encoding: gzip"), b"HTTP/1.1 501 Not Implemented\r\n"),
    (b"GET /healthz HTTP/2.0\r\nhost: x\r\n\r\n", b"HTTP/1.1 505 HTTP Version Not Supported\r\n"),
]


@pytest.mark.parametrize("request_bytes,status_line", STATUS_LINES, ids=[s[9:12].decode() for _, s in STATUS_LINES])
def test_status_lines_are_the_same_on_every_python(service, request_bytes, status_line):
    """RFC 9110's reason phrases, whatever the interpreter: http.server's differ by version
    (Python 3.13 renamed 413 and 414; 3.6 has none for 421, see test_tenant.py).  The first
    chunk holds the status line: reading on would wait for kept-alive connections to idle out."""
    assert service.raw(request_bytes, read_until_close=False).startswith(status_line)


# -- 404 and 405 -------------------------------------------------------------

@pytest.mark.parametrize("path", ["/", "/nope", "/v1/invoke/", "/healthz/", "/v1", "/V1/INFO", "/v2/invoke"])
def test_unknown_path_is_404_without_token(service, path):
    resp = service.request("GET", path, token=False)
    assert_answer(resp, 404, ('{"error":"No route %s"}' % path).encode())
    assert_no_invoke_headers(resp)


def test_404_names_the_path_without_its_query(service):
    resp = service.request("POST", "/nope?x=1&y=2", body=b"{}", token=False, headers=json_headers())
    assert_answer(resp, 404, b'{"error":"No route /nope"}')


@pytest.mark.parametrize("method,path,allowed", [
    ("GET", "/v1/invoke", "POST"), ("PUT", "/v1/invoke", "POST"), ("DELETE", "/v1/invoke", "POST"),
    ("OPTIONS", "/v1/invoke", "POST"), ("POST", "/v1/info", "GET"), ("POST", "/healthz", "GET"),
    ("OPTIONS", "/readyz", "GET"), ("PATCH", "/readyz", "GET"),
])
def test_known_path_other_method_is_405_before_the_token(service, method, path, allowed):
    resp = service.request(method, path, token=False)
    assert_answer(resp, 405, ('{"error":"Use %s"}' % allowed).encode())
    assert resp.header("allow") == allowed   # RFC 9110 section 15.5.6: a 405 says what is allowed
    assert_no_invoke_headers(resp)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/v1/info", "/v1/invoke"])
def test_head_is_405(service, path):
    resp = service.request("HEAD", path, token=False)
    assert resp.status == 405
    assert resp.body == b""
    assert resp.header("content-type") == JSON_TYPE


# -- 401 ------------------------------------------------------------------------

@pytest.mark.parametrize("token", [False, "", "wrong", TOKEN.upper(), TOKEN[:-1], TOKEN + "x", " " + TOKEN + "0"])
@pytest.mark.parametrize("path", ["/v1/info", "/v1/invoke"])
def test_bad_or_missing_token_is_401(service, path, token):
    method = "POST" if path == "/v1/invoke" else "GET"
    body = echo_bytes({}) if method == "POST" else None
    resp = service.request(method, path, body=body, token=token, headers=json_headers())
    assert_answer(resp, 401, b'{"error":"Bad pack token"}')
    assert_no_invoke_headers(resp)


@pytest.mark.parametrize("token", ["\xa0" + TOKEN, TOKEN + "\xa0", TOKEN + "\x85"])
def test_a_token_with_other_whitespace_around_it_is_401(service, token):
    """Only spaces and tabs around a header's value are not part of it: a no-break space or a
    NEL byte (whitespace to str.strip) makes another token."""
    resp = service.request("GET", "/v1/info", token=token)
    assert_answer(resp, 401, b'{"error":"Bad pack token"}')


def test_authorization_header_is_not_a_token(service):
    resp = service.request("GET", "/v1/info", token=False,
                           headers={"authorization": "Bearer " + TOKEN})
    assert resp.status == 401


def test_token_is_not_needed_on_probes(service):
    assert service.request("GET", "/healthz", token="wrong").status == 200
    assert service.request("GET", "/readyz", token=False).status == 200


# -- 415 ------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [None, "text/plain", "Application/JSON", "application/x-www-form-urlencoded",
                                          "application/jso"])
def test_content_type_not_json_is_415(service, content_type):
    headers = {} if content_type is None else {"content-type": content_type}
    resp = service.request("POST", "/v1/invoke", body=echo_bytes({"a": 1}), headers=headers)
    assert_answer(resp, 415, b'{"error":"Content-Type must be application/json"}')
    assert_no_invoke_headers(resp)


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8",
                                          "application/json;charset=UTF-8"])
def test_json_content_types_are_accepted(service, content_type):
    resp = service.request("POST", "/v1/invoke", body=echo_bytes({"a": 1}),
                           headers={"content-type": content_type})
    assert resp.status == 200
    assert resp.json == {"v": 2, "kind": "result", "output": {"a": 1}}


# -- 413 and the body ---------------------------------------------------------

def padded_size_message(total):
    """An invoke of the ``size`` tool whose JSON text is exactly ``total`` bytes."""
    head = b'{"v":2,"kind":"invoke","tool":{"id":"size"},"ctx":{"tenantId":"t","runId":"r"},"input":{"pad":"'
    tail = b'"}}'
    pad = total - len(head) - len(tail)
    return head + b"x" * pad + tail, pad


def test_body_of_exactly_10_mib_is_accepted(service):
    body, pad = padded_size_message(MiB10)
    assert len(body) == MiB10
    resp = service.request("POST", "/v1/invoke", body=body, headers=json_headers(), timeout=60)
    assert resp.status == 200, resp
    assert resp.json == {"v": 2, "kind": "result", "output": {"chars": pad}}


def test_content_type_is_checked_before_the_size(service):
    head = invoke_head("content-length: %d" % (MiB10 + 1)).replace(b"application/json", b"text/plain")
    data = service.raw(head)
    assert data.startswith(b"HTTP/1.1 415 ")
    assert data.endswith(b'{"error":"Content-Type must be application/json"}')


def test_body_one_byte_over_10_mib_is_413(service):
    body, _ = padded_size_message(MiB10 + 1)
    head = invoke_head("content-length: %d" % len(body))
    # The service may answer from the head alone; send the body only if it still listens.
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(head)
        try:
            sock.sendall(body)
        except OSError:
            pass
        data = read_until_close(sock)
    status_line, _, rest = data.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 413 "), data[:200]
    assert rest.endswith(b'\r\n\r\n{"error":"Request body too large"}')
    assert b"content-type: application/json; charset=utf-8" in rest.lower()
    assert b"kindgi-duration-ms" not in rest.lower()


def read_until_close(sock, limit_seconds=30):
    chunks = []
    end = time.monotonic() + limit_seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def post_chunked(service, body, size):
    """POST ``body`` to /v1/invoke in chunks of ``size`` bytes; returns (status, parsed answer)."""
    conn = service.connection(timeout=60)
    try:
        conn.request("POST", "/v1/invoke", body=(body[i:i + size] for i in range(0, len(body), size)),
                     encode_chunked=True, headers={"kindgi-pack-token": TOKEN, "content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_chunked_body_is_accepted(service):
    status, answer = post_chunked(service, echo_bytes({"chunked": True, "text": "abc" * 1000}), 97)
    assert status == 200
    assert answer["output"] == {"chunked": True, "text": "abc" * 1000}


def test_chunked_body_of_exactly_10_mib_is_accepted(service):
    body, pad = padded_size_message(MiB10)
    assert post_chunked(service, body, 1024 * 1024) == (200, {"v": 2, "kind": "result", "output": {"chars": pad}})


def test_chunked_body_one_byte_over_10_mib_is_413(service):
    body, _ = padded_size_message(MiB10 + 1)
    head = invoke_head("transfer-encoding: chunked")
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(head)
        try:
            sock.sendall(b"%x\r\n" % MiB10 + body[:MiB10] + b"\r\n")
            sock.sendall(b"1\r\n" + body[MiB10:] + b"\r\n0\r\n\r\n")
        except OSError:
            pass
        data = read_until_close(sock)
    assert data.startswith(b"HTTP/1.1 413 "), data[:200]
    assert data.endswith(b'\r\n\r\n{"error":"Request body too large"}')


# -- 503: not ready, overloaded --------------------------------------------------

def test_at_the_cap_invoke_is_503_overloaded_and_the_call_does_not_run(service, tmp_path):
    first = gate_call(service, tmp_path, "cap1")
    second = gate_call(service, tmp_path, "cap2")
    marker = tmp_path / "touched"
    try:
        resp = service.call_tool("touch", {"path": str(marker)})
        assert_answer(resp, 503, b'{"error":"overloaded"}')
        assert resp.header("retry-after") == "1"
        assert_no_invoke_headers(resp)
        # the cap is checked before the content type (the protocol's order of checks)
        resp = service.request("POST", "/v1/invoke", body=b"{}", headers={"content-type": "text/plain"})
        assert resp.status == 503
        # probes and info still answer, and the token is still checked first
        assert service.request("GET", "/healthz").status == 200
        assert service.request("GET", "/readyz").status == 200
        assert service.request("GET", "/v1/info").status == 200
        assert service.call_tool("echo", {}, token="wrong").status == 401
    finally:
        release_gate(tmp_path, "cap1", *first)
        release_gate(tmp_path, "cap2", *second)
    assert not marker.exists()
    resp = service.call_tool("touch", {"path": str(marker)})
    assert resp.json["kind"] == "result"
    assert marker.exists()


def test_a_call_whose_body_ends_once_the_cap_is_reached_is_503_and_does_not_run(service, tmp_path):
    """The cap is checked again when the body has come: a call whose head came while a slot was
    free takes none if the slots were taken while its body arrived."""
    marker = tmp_path / "touched"
    body = json.dumps({"v": 2, "kind": "invoke", "tool": {"id": "touch"}, "input": {"path": str(marker)},
                       "ctx": {"tenantId": "t", "runId": "r"}}).encode()
    with socket.create_connection(("127.0.0.1", service.port), timeout=30) as sock:
        sock.sendall(invoke_head("content-length: %d" % len(body)) + body[:-1])
        time.sleep(0.2)   # the head is read and admitted past the first check
        first = gate_call(service, tmp_path, "late1")
        second = gate_call(service, tmp_path, "late2")
        try:
            sock.sendall(body[-1:])
            data = b""
            while not data.endswith(b"}"):   # the answer, whatever it is, ends its JSON body there
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        finally:
            release_gate(tmp_path, "late1", *first)
            release_gate(tmp_path, "late2", *second)
    assert data.startswith(b"HTTP/1.1 503 "), data[:200]
    assert data.endswith(b'\r\n\r\n{"error":"overloaded"}') and b"\r\nretry-after: 1\r\n" in data
    assert not marker.exists()


def test_sequential_calls_at_cap_1_are_never_refused(launcher, index):
    """A caller that has its answer has no call in flight: its next call must be admitted."""
    service = launcher.start(index, env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "1"})
    conn = service.connection()
    try:
        statuses = [service.request("POST", "/v1/invoke", body=echo_message({"i": i}),
                                    conn=conn if i % 2 else None).status for i in range(120)]
    finally:
        conn.close()
    assert statuses == [200] * 120


def test_missing_env_makes_readyz_and_invoke_503(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/echo.py", ECHO)
    pack.tool("echo", "tools/echo.py", version="1.0.0")
    pack.env = {"required": ["ZZ_NEEDED", "AA_NEEDED", "SET_ONE"], "optional": []}
    service = launcher.start(pack.write(), env={"SET_ONE": "yes", "AA_NEEDED": ""})
    body = b'{"error":"missing env","missingEnv":["AA_NEEDED","ZZ_NEEDED"]}'
    resp = service.request("GET", "/readyz", token=False)
    assert_answer(resp, 503, body)
    assert resp.header("retry-after") == "1"
    resp = service.call_tool("echo", {})
    assert_answer(resp, 503, body)
    assert resp.header("retry-after") == "1"
    assert_no_invoke_headers(resp)
    # readiness comes before the content type
    resp = service.request("POST", "/v1/invoke", body=b"{}", headers={"content-type": "text/plain"})
    assert resp.status == 503
    # and the token before readiness
    assert service.call_tool("echo", {}, token="wrong").status == 401
    assert service.request("GET", "/healthz", token=False).json == {"status": "ok"}
    info = service.request("GET", "/v1/info")
    assert info.status == 200
    assert info.json["missingEnv"] == ["AA_NEEDED", "ZZ_NEEDED"]


def test_missing_env_under_warn_serves(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/echo.py", ECHO)
    pack.tool("echo", "tools/echo.py", version="1.0.0")
    pack.env = {"required": ["ZZ_NEEDED"], "optional": []}
    service = launcher.start(pack.write(), env={"KINDGI_PACK_ENV_CHECK": "warn"})
    assert service.request("GET", "/readyz", token=False).status == 200
    assert service.call_tool("echo", {"x": 1}).json["output"] == {"x": 1}
    assert service.request("GET", "/v1/info").json["missingEnv"] == ["ZZ_NEEDED"]


def test_draining_makes_readyz_and_invoke_503(launcher, tmp_path):
    index = write_pack(tmp_path / "pack")
    service = launcher.start(index)
    thread, result = gate_call(service, tmp_path, "drain")
    try:
        service.signal()
        service.wait_record("draining")
        resp = service.request("GET", "/readyz", token=False)
        assert_answer(resp, 503, b'{"error":"draining"}')
        assert resp.header("retry-after") == "1"
        resp = service.call_tool("echo", {}, version="1.0.0")
        assert_answer(resp, 503, b'{"error":"draining"}')
        assert resp.header("retry-after") == "1"
        assert service.request("GET", "/healthz", token=False).status == 200
        assert service.request("GET", "/v1/info").status == 200
    finally:
        release_gate(tmp_path, "drain", thread, result)
    assert service.wait_exit(12) == 0


# -- probes and info -----------------------------------------------------------------

def test_healthz_body(service):
    resp = service.request("GET", "/healthz", token=False)
    assert_answer(resp, 200, b'{"status":"ok"}')
    assert_no_invoke_headers(resp)


def test_readyz_body(service):
    resp = service.request("GET", "/readyz", token=False)
    assert_answer(resp, 200, b'{"status":"ready"}')
    assert resp.header("retry-after") is None
    assert_no_invoke_headers(resp)


def test_info_body_exact_bytes_and_key_order(service, index):
    expected = json.dumps({
        "protocol": 2, "packId": "test-pack", "packVersion": "1.0.0", "artifactVersion": "art-routes-7",
        "indexHash": "sha256:" + hashlib.sha256(index.read_bytes()).hexdigest(),
        "tools": [{"id": "echo", "version": "1.0.0"}, {"id": "echo", "version": "2.0.0"},
                  {"id": "size", "version": "1.0.0"}, {"id": "gate"}, {"id": "touch"}],
        "checks": ["shared-check", "plain-check"],
        "missingEnv": []}, separators=(",", ":")).encode()
    resp = service.request("GET", "/v1/info")
    assert_answer(resp, 200, expected)
    assert_no_invoke_headers(resp)


def test_query_is_ignored_for_routing(service):
    assert service.request("GET", "/healthz?verbose=1", token=False).body == b'{"status":"ok"}'
    assert service.request("GET", "/v1/info?x=y").json["packId"] == "test-pack"
    resp = service.request("POST", "/v1/invoke?debug=true", body=echo_message({"q": 1}))
    assert resp.json == {"v": 2, "kind": "result", "output": {"q": 1}}


# -- how answers are written ---------------------------------------------------------

def test_invoke_answer_headers(service):
    resp = service.request("POST", "/v1/invoke", body=echo_message({"a": 1}))
    assert resp.status == 200
    assert resp.header("content-type") == JSON_TYPE
    assert resp.header("kindgi-duration-ms").isdigit()
    assert resp.header("kindgi-artifact-version") == "art-routes-7"


def test_invoke_error_answer_carries_the_headers_too(service):
    resp = service.call_tool("nope", {})
    assert resp.json["code"] == "tool-not-in-pack"
    assert resp.header("kindgi-duration-ms").isdigit()
    assert resp.header("kindgi-artifact-version") == "art-routes-7"
    resp = service.invoke(b"not json", headers=json_headers())
    assert resp.json["code"] == "malformed-message", resp
    assert resp.header("kindgi-duration-ms").isdigit()
    assert resp.header("kindgi-artifact-version") == "art-routes-7"


IMF_FIXDATE = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d\d (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                         r"\d{4} \d\d:\d\d:\d\d GMT$")


def assert_dated(resp):
    """RFC 9110 section 6.6.1: an origin server with a clock sends Date, in IMF-fixdate form."""
    value = resp.header("date")
    assert value and IMF_FIXDATE.match(value), value
    sent = email.utils.parsedate_to_datetime(value).timestamp()
    assert abs(sent - time.time()) < 5, value


def test_every_answer_has_a_date(service, tmp_path):
    assert_dated(service.request("GET", "/healthz", token=False))
    assert_dated(service.request("GET", "/v1/info"))
    assert_dated(service.call_tool("echo", {"a": 1}, version="1.0.0"))
    assert_dated(service.request("GET", "/nope"))
    assert_dated(service.request("POST", "/healthz"))
    assert_dated(service.request("GET", "/v1/info", token="wrong"))
    assert_dated(service.invoke("{}", headers={"content-type": "text/plain"}))


def test_421_503_and_500_answers_have_a_date_too(launcher, tmp_path):
    pack = PackWriter(tmp_path)
    pack.module("tools/bug.py", SERVICE_BUG)
    pack.tool("bug", "tools/bug.py")
    pack.env = {"required": ["NEVER_SET"], "optional": []}
    tenant = "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b"
    service = launcher.start(pack.write(), env={"KINDGI_PACK_TENANT_ID": tenant, "KINDGI_PACK_ENV_CHECK": "warn"})
    resp = service.request("GET", "/v1/info")
    assert resp.status == 421
    assert_dated(resp)
    resp = service.call_tool("bug", {}, headers={"kindgi-tenant-id": tenant}, ctx={"tenantId": tenant, "runId": "r"})
    assert (resp.status, resp.json) == (500, {"error": "RuntimeError: a bug in the service"})
    assert resp.header("connection") == "close"   # after the service's own failure, nothing on it is trusted
    assert_dated(resp)
    strict = launcher.start(pack.write("strict.json"))
    resp = strict.request("GET", "/readyz", token=False)
    assert resp.status == 503
    assert_dated(resp)


SERVICE_BUG = '''\
import sys
from kindgi import tool

service = sys.modules.get("kindgi_pack_min") or sys.modules["__main__"]


def broken(call):
    raise RuntimeError("a bug in the service")


service.TARGETS["invoke"].run = broken   # pack code can do anything: here, break the service


@tool(id="bug", description="A test tool.", input={"type": "object"},
      output={"type": "object"})
def bug(input, ctx):
    return {}
'''


def test_answers_are_compact_utf8_json(service):
    text = "h\u00e9llo \u2713 \U0001F600 \"quoted\" \\ end"
    resp = service.request("POST", "/v1/invoke", body=echo_message({"text": text, "list": [1, 2], "n": None}))
    expected = ('{"v":2,"kind":"result","output":{"text":%s,"list":[1,2],"n":null}}'
                % json.dumps(text, ensure_ascii=False)).encode("utf-8")
    assert resp.body == expected
    assert resp.header("content-length") == str(len(expected))


def test_lone_surrogates_still_make_utf8_json(service):
    body = b'{"v":2,"kind":"invoke","tool":{"id":"echo","version":"1.0.0"},"ctx":{"tenantId":"t","runId":"r"},' \
           b'"input":{"text":"a\\ud800b\\udfff \xc3\xa9"}}'
    resp = service.request("POST", "/v1/invoke", body=body, headers=json_headers())
    assert resp.status == 200, resp
    assert json.loads(resp.body.decode("utf-8"))["output"] == {"text": "a\ud800b\udfff \u00e9"}


def test_keep_alive_connection_is_reused(service):
    conn = service.connection()
    try:
        first = service.request("GET", "/healthz", conn=conn)
        sock = conn.sock
        assert sock is not None
        port = sock.getsockname()[1]
        second = service.request("POST", "/v1/invoke", body=echo_message({"n": 1}), conn=conn)
        third = service.request("GET", "/v1/info", conn=conn)
        fourth = service.request("POST", "/v1/invoke", body=echo_message({"n": 2}), conn=conn)
        assert conn.sock is sock and sock.getsockname()[1] == port
    finally:
        conn.close()
    assert first.status == third.status == 200
    assert second.json["output"] == {"n": 1}
    assert fourth.json["output"] == {"n": 2}
    for resp in (first, second, third, fourth):
        assert (resp.header("connection") or "").lower() != "close"


def test_keep_alive_over_raw_socket_serves_pipelined_requests(service):
    body = echo_bytes({"p": 1})
    one = invoke_head("content-length: %d" % len(body)) + body
    last = b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n"
    data = service.raw(one + one + last)
    assert data.count(b"HTTP/1.1 200 ") == 3
    assert data.count(b'{"v":2,"kind":"result","output":{"p":1}}') == 2
    assert data.endswith(b'{"status":"ok"}')


def test_http_1_0_request_is_answered(service):
    data = service.raw(b"GET /healthz HTTP/1.0\r\n\r\n")
    assert data.split(b"\r\n", 1)[0].split(b" ")[1] == b"200"
    assert data.endswith(b'{"status":"ok"}')


def test_ignored_headers_do_not_change_the_answer(service):
    resp = service.request("POST", "/v1/invoke", body=echo_message({"a": 1}),
                           headers={"kindgi-run-id": "x", "kindgi-request-id": "y", "kindgi-protocol": "9",
                                    "traceparent": "garbage"})
    assert resp.json == {"v": 2, "kind": "result", "output": {"a": 1}}


def test_process_keeps_serving_after_a_client_leaves_mid_request(service):
    body = echo_bytes({"x": 1})
    head = invoke_head("content-length: %d" % len(body))
    with socket.create_connection(("127.0.0.1", service.port), timeout=5) as sock:
        sock.sendall(head + body[:5])
    resp = service.request("POST", "/v1/invoke", body=echo_message({"after": True}))
    assert resp.json["output"] == {"after": True}
    assert service.proc.poll() is None


def test_no_answer_is_a_500_for_pack_outcomes(service):
    """Sanity for the whole module: nothing above made the service write a 500 or die."""
    assert service.proc.poll() is None
    assert not [r for r in service.records if r.get("kind") == "service-error"]
