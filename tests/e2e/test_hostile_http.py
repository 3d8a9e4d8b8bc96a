"""End-to-end: hostile HTTP.  Malformed and oversized heads, bodies that lie,
smuggling attempts, early answers over unread bodies, slow and idle clients,
pipelining, clients that reset.

Every test talks raw bytes to the real service (tests/conftest.py starts it
with PORT=0 on 127.0.0.1) and reads the answers back with the parser of
tools/fuzz.py.  After every test the service must still answer /healthz and
must not have logged a ``service-error`` (its own bug) record.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import sys
import threading
import time

import pytest

from conftest import ROOT, TOKEN, PackWriter

sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402

MAX_BODY = 10 * 1024 * 1024
TENANT = "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b"
def short_id(value):
    """A readable test id for a parameter made of bytes."""
    return repr(value[:40])[2:-1] if isinstance(value, bytes) else None



TOOLS = '''\
import time
from kindgi import tool


@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo")
def echo(input, ctx):
    return input


@tool(description="A test tool.", input={"type": "object"}, output={}, id="sleep")
def sleep(input, ctx):
    time.sleep(min(float(input.get("s", 1)), 5))
    return {"slept": input.get("s", 1)}


@tool(description="A test tool.", input={"type": "object"}, output={}, id="big")
def big(input, ctx):
    return {"s": "x" * int(input.get("n", 1000))}
'''


def write_pack(root):
    pack = PackWriter(root)
    pack.module("tools/t.py", TOOLS)
    for tool_id in ("echo", "sleep", "big"):
        pack.tool(tool_id, "tools/t.py")
    return pack.write()


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    return module_launcher.start(write_pack(tmp_path_factory.mktemp("http")))


@pytest.fixture(scope="module")
def strict_service(module_launcher, tmp_path_factory):
    """A second service: concurrency cap 1, pinned to TENANT, for the 503 and 421 refusals;
    heads and bodies must come within 2 s."""
    return module_launcher.start(write_pack(tmp_path_factory.mktemp("strict")),
                                 env={"KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "1",
                                      "KINDGI_PACK_TENANT_ID": TENANT,
                                      "KINDGI_PACK_MIN_TEST": "head=2,body=2"})


@pytest.fixture(autouse=True)
def still_serving(request):
    """After each test: every service it used answers /healthz and logged no service error."""
    yield
    for name in ("service", "strict_service"):
        if name in request.fixturenames:
            svc = request.getfixturevalue(name)
            assert svc.request("GET", "/healthz", token=False, timeout=10).status == 200
            errors = svc.records_of("service-error")
            assert not errors, errors


# -- helpers -------------------------------------------------------------------

def message(tool_id="echo", input=None):
    return json.dumps({"v": 2, "kind": "invoke", "tool": {"id": tool_id}, "input": input or {"a": 1},
                       "ctx": {"tenantId": TENANT, "runId": "run-1"}}).encode()


def invoke(body=None, headers=(), token=TOKEN, **kw):
    """The bytes of a POST /v1/invoke with this suite's token and the tenant header."""
    return fuzz.invoke_request(message() if body is None else body,
                               [("kindgi-tenant-id", TENANT)] + list(headers), token, **kw)


def bare_invoke_head():
    """The head of an invoke without its framing header and blank line, to add our own."""
    return invoke(b"")[:-len(b"content-length: 0\r\n\r\n")]


def get(path, headers=()):
    return fuzz.http_request("GET", path, headers=[("kindgi-pack-token", TOKEN)] + list(headers))


def answers_to(svc, data, idle=0.5):
    """Send *data* on a new connection: ``(answers, closed)``; leftover bytes fail the test."""
    raw, closed = fuzz.exchange(svc.port, data, idle=idle)
    answers, leftover = fuzz.parse_answers(raw)
    assert not leftover, (answers, leftover[:200])
    for answer in answers:
        assert fuzz.answer_problem(answer) is None, answer
    return answers, closed


def answer_to(svc, data):
    """Send *data* on a new connection and return the first answer (not waiting for more)."""
    with fuzz.connect(svc.port) as sock:
        sock.sendall(data)
        answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=10)[0])
    assert answers, "no answer"
    return answers[0]


def refused_and_closed(svc, data, status):
    """The request is refused with *status*, ``connection: close``, and nothing more is answered."""
    answers, closed = answers_to(svc, data)
    assert [a.status for a in answers] == [status], answers
    assert answers[0].closes and closed, answers[0].headers
    assert set(answers[0].json()) & {"error", "code"}
    return answers[0]


def result_of(answer):
    assert answer.status == 200, answer
    body = answer.json()
    assert body["kind"] == "result", body
    return body["output"]


# -- malformed and oversized heads ----------------------------------------------

@pytest.mark.parametrize("head, status", [
    (b"GET\r\n\r\n", 400),
    (b"GET /healthz\r\n\r\n", 400),                          # HTTP/0.9
    (b"GET /healthz HTTP/1.1 extra\r\n\r\n", 400),
    (b"GET  /healthz HTTP/1.1\r\n\r\n", 400),
    (b"G\x00T /healthz HTTP/1.1\r\n\r\n", 400),
    (b"G(T /healthz HTTP/1.1\r\n\r\n", 400),
    (b"\xff\xfe /healthz HTTP/1.1\r\n\r\n", 400),
    (b"GET /h\xffealthz HTTP/1.1\r\n\r\n", 400),
    (b"GET /healthz FOO/1.1\r\n\r\n", 400),
    (b"GET /healthz HTTP/1\r\n\r\n", 400),
    (b"GET /healthz http/1.1\r\n\r\n", 400),
    (b"GET /healthz HTTP/2.0\r\n\r\n", 505),
    (b"GET /hea\tlthz HTTP/1.1\r\nHost: a\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nno-colon-here\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nbad name: x\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nbad(name): x\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\n: empty-name\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nx-a: b\x00c\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nx-\xe9: b\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nx-a: b\r\n folded\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nx-a: b\rc\r\n\r\n", 400),
    (b"GET /healthz HTTP/1.1\r\nx-a: " + b"a" * 9000 + b"\r\n\r\n", 431),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414),
    (b"GET /healthz HTTP/1.1\r\n" + b"".join(b"x-%d: v\r\n" % i for i in range(200)) + b"\r\n", 431),
    (b"GET /healthz HTTP/1.1\r\n" + b"".join(b"x-%d: %s\r\n" % (i, b"v" * 1000) for i in range(80)) + b"\r\n",
     431),
], ids=short_id)
def test_malformed_or_oversized_head_is_refused_and_closed(service, head, status):
    """A head with header lines names its Host: the refusal is for what is malformed, not for a missing Host."""
    answer = refused_and_closed(service, head, status)
    assert answer.json() != {"error": "Missing Host header"}


def test_one_header_repeated_until_the_head_limit(service):
    """The same name 16,000 times: refused by the total size, quickly enough to answer."""
    head = b"GET /healthz HTTP/1.1\r\n" + b"x: y\r\n" * 16000 + b"\r\n"
    refused_and_closed(service, head, 431)


def test_blank_lines_before_a_request_are_tolerated(service):
    answers, _ = answers_to(service, b"\r\n\r\nGET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    assert [a.status for a in answers] == [200]


@pytest.mark.parametrize("head, message", [
    (b"GET /healthz HTTP/1.1\r\n\r\n", "Missing Host header"),
    (b"GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "More than one Host header"),
])
def test_an_http11_request_needs_exactly_one_host(service, head, message):
    """RFC 9112 section 3.2: 400 for a missing Host, or more than one (a proxy may route by either)."""
    answer = refused_and_closed(service, head + b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n", 400)
    assert answer.json() == {"error": message}


def test_http10_closes_unless_asked(service):
    answers, closed = answers_to(service, b"GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n")
    assert [a.status for a in answers] == [200] and closed


def test_http10_keep_alive_is_said_in_the_answer(service):
    """A 1.0 client that asked to keep the connection reads an answer without the header as ending at a close."""
    asked = b"GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    answers, closed = answers_to(service, asked * 2 + b"GET /healthz HTTP/1.0\r\n\r\n")
    assert [(a.status, a.header("connection")) for a in answers] == [(200, "keep-alive")] * 2 + [(200, "close")]
    assert closed


def test_http11_closes_when_close_is_one_of_the_connection_options(service):
    answers, closed = answers_to(service, b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: TE, Close\r\n\r\n"
                                          b"GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
    assert [(a.status, a.header("connection")) for a in answers] == [(200, "close")] and closed


@pytest.mark.parametrize("head", [
    b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, upgrade\r\nUpgrade: h2c\r\n\r\n",
    b"CONNECT pack.internal:443 HTTP/1.1\r\nHost: pack.internal:443\r\n\r\n",
], ids=["websocket", "h2c", "connect"])
def test_after_an_upgrade_or_connect_request_the_connection_closes(service, head):
    """The upgrade is not made, yet a proxy that takes it as made would send a tunnel's bytes,
    not requests it has checked: none of them is read as a request."""
    answers, closed = answers_to(service, head + get("/v1/info"))
    assert len(answers) == 1 and answers[0].closes and closed, answers


def test_an_absolute_form_target_is_routed_by_its_path(service):
    """RFC 9112 section 3.2.2: a server takes ``http://host/path`` as a target (a proxy sends it)."""
    answers, _ = answers_to(service, get("http://pack.internal:8080/v1/info?x=1")
                            + fuzz.http_request("GET", "http://pack.internal/healthz"))
    assert [a.status for a in answers] == [200, 200] and answers[0].json()["protocol"] == 2


def test_after_a_head_request_the_next_refusal_still_has_its_body(service):
    """HEAD is 405 and keeps the connection; the next head is malformed: its 400 comes whole."""
    raw, closed = fuzz.exchange(service.port, b"HEAD /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
                                              b"GET /healthz HTTP/1.1\r\nHost: a\r\nx-a b\r\n\r\n")
    assert raw.startswith(b"HTTP/1.1 405 ") and closed, raw
    answers, leftover = fuzz.parse_answers(raw[raw.index(b"\r\n\r\n") + 4:])   # the HEAD answer has no body
    assert [(a.status, a.json()) for a in answers] == [(400, {"error": "Malformed header line"})] and not leftover


def test_bad_token_bytes_are_401(service):
    data = b"GET /v1/info HTTP/1.1\r\nHost: a\r\nkindgi-pack-token: t\xe9st\xff\r\n\r\n"
    answers, _ = answers_to(service, data)
    assert [a.status for a in answers] == [401]


# -- framing: Content-Length and Transfer-Encoding ------------------------------

SMUGGLED = b"GET /v1/info HTTP/1.1\r\nkindgi-pack-token: " + TOKEN.encode() + b"\r\n\r\n"


@pytest.mark.parametrize("framing", [
    [b"content-length: %d" % len(SMUGGLED), b"transfer-encoding: chunked"],
    [b"transfer-encoding: chunked", b"content-length: 0"],
    [b"content-length: 0", b"transfer-encoding:  chunked "],
    [b"content-length: 0", b"content-length: %d" % len(SMUGGLED)],
    [b"content-length: 0, %d" % len(SMUGGLED)],
    [b"content-length: +%d" % len(SMUGGLED)],
    [b"content-length: -1"],
    [b"content-length: 0x10"],
    [b"content-length: 1 0"],
    [b"content-length: \xef\xbc\x91"],
    [b"content-length: 99999999999999999999999"],
    [b"transfer-encoding: chunked, chunked"],
    [b"transfer-encoding: gzip, chunked"],
    [b"transfer-encoding: identity"],
    [b"transfer-encoding: chunked\xa0"],      # NBSP and NEL are no whitespace in HTTP
    [b"transfer-encoding: \x85chunked"],
    [b"content-length: 0,\xa00"],
    [b"content-length: \x850, 0"],
], ids=lambda framing: short_id(b" + ".join(framing)))
def test_ambiguous_framing_is_refused_and_nothing_is_smuggled(service, framing):
    """Content-Length with Transfer-Encoding, or any framing a proxy could read differently.

    The head is valid but for its framing (a Host header too), so the refusal is the framing's."""
    head = b"POST /v1/invoke HTTP/1.1\r\nHost: a\r\nkindgi-pack-token: " + TOKEN.encode() + \
        b"\r\ncontent-type: application/json\r\n" + b"\r\n".join(framing) + b"\r\n\r\n"
    answers, closed = answers_to(service, head + b"0\r\n\r\n" + SMUGGLED)
    assert len(answers) == 1 and answers[0].status in (400, 413, 501), answers
    assert answers[0].json() != {"error": "Missing Host header"}
    assert answers[0].closes and closed


def test_chunked_under_http10_is_refused(service):
    data = b"POST /v1/invoke HTTP/1.0\r\nkindgi-pack-token: " + TOKEN.encode() + \
        b"\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n"
    refused_and_closed(service, data, 400)


@pytest.mark.parametrize("size_line", [b"zz", b"-1", b"", b"0x5", b"1" * 17, b"5 5", b"\xff", b"5;" + b"e" * 9000],
                         ids=short_id)
def test_chunk_with_a_bad_size_is_refused(service, size_line):
    data = bare_invoke_head() + \
        b"transfer-encoding: chunked\r\n\r\n" + size_line + b"\r\nabcde\r\n0\r\n\r\n" + SMUGGLED
    refused_and_closed(service, data, 400)


@pytest.mark.parametrize("framing", [
    b"5\nabcde\r\n0\r\n\r\n",                 # a size line ended by a bare LF
    b"5\r\r\nabcde\r\n0\r\n\r\n",             # CR CR LF
    b"5\r\nabcde\n0\r\n\r\n",                 # the data ended by a bare LF
    b"5\r\nabcde\r\n0\n\r\n",                 # the last chunk's line ended by a bare LF
    b"5\x0b\r\nabcde\r\n0\r\n\r\n",           # VT after the size
    b"5\x0c\r\nabcde\r\n0\r\n\r\n",           # FF after the size
    b"5\x00\r\nabcde\r\n0\r\n\r\n",           # NUL after the size
    b" 5\r\nabcde\r\n0\r\n\r\n",             # space before the size
    b"5;a\x00b\r\nabcde\r\n0\r\n\r\n",        # NUL in an extension
    b"5;=v\r\nabcde\r\n0\r\n\r\n",             # an extension without a name
    b"5;a=\"v\r\nabcde\r\n0\r\n\r\n",          # an unterminated quoted value
    b"5;a b\r\nabcde\r\n0\r\n\r\n",            # a space inside an extension name
    b"5\r\nabcde\r\n0\r\nx-t: 1\n\r\n",        # a trailer ended by a bare LF
    b"5\r\nabcde\r\n0\r\nx t: 1\r\n\r\n",     # a trailer whose name isn't a token
], ids=short_id)
def test_chunk_syntax_is_exactly_rfc_9112(service, framing):
    """Anything a proxy in front could frame differently is refused: 400 and the connection closes."""
    data = bare_invoke_head() + b"transfer-encoding: chunked\r\n\r\n" + framing + SMUGGLED
    refused_and_closed(service, data, 400)


@pytest.mark.parametrize("extensions", [b";a", b"; a = b", b';a="quoted \\" value"', b";a=1;b=2", b'; x = ""'],
                         ids=short_id)
def test_chunk_extensions_in_rfc_9112_syntax_are_accepted(service, extensions):
    body = message(input={"ext": True})
    data = bare_invoke_head() + b"transfer-encoding: chunked\r\n\r\n" + \
        b"%x%s\r\n%s\r\n0\r\n\r\n" % (len(body), extensions, body)
    answers, _ = answers_to(service, data)
    assert [result_of(a) for a in answers] == [{"ext": True}]


def test_many_tiny_chunks_are_refused_once_their_framing_passes_a_mebibyte(service):
    """Chunk lines count too: a body sent a byte at a time can't cost a million Python objects."""
    data = bare_invoke_head() + b"transfer-encoding: chunked\r\n\r\n" + b"1\r\n \r\n" * 250000 + b"0\r\n\r\n"
    raw, closed = fuzz.exchange(service.port, data, idle=10)   # a second of work on a slow machine
    answers, _ = fuzz.parse_answers(raw)
    assert [a.status for a in answers] == [413] and answers[0].closes and closed, answers


def test_chunk_longer_than_its_size_is_refused(service):
    body = message()
    data = bare_invoke_head() + b"transfer-encoding: chunked\r\n\r\n" + \
        b"%x\r\n%sEXTRA\r\n0\r\n\r\n" % (len(body), body)
    refused_and_closed(service, data, 400)


def test_huge_chunk_size_is_413_before_reading(service):
    data = bare_invoke_head() + \
        b"transfer-encoding: chunked\r\n\r\nffffffffffffffff\r\nabc"
    refused_and_closed(service, data, 413)


def test_chunked_with_extensions_and_trailers_is_answered(service):
    body = message(input={"chunked": True})
    data = bare_invoke_head() + b"transfer-encoding: chunked\r\n\r\n" + \
        b"3;name=value\r\n" + body[:3] + b"\r\n%x\r\n" % (len(body) - 3) + body[3:] + \
        b"\r\n0\r\nx-trailer: 1\r\n\r\n"
    answers, _ = answers_to(service, data)
    assert [result_of(a) for a in answers] == [{"chunked": True}]


def test_body_longer_than_content_length(service):
    """The bytes past Content-Length are the next request: here garbage, refused and closed."""
    body = message()
    data = invoke(body)[:-len(body)].replace(b"content-length: %d" % len(body), b"content-length: 5") + body
    answers, closed = answers_to(service, data)
    assert [a.status for a in answers] == [200, 400], answers
    assert answers[0].json()["code"] == "malformed-message"
    assert answers[1].closes and closed


def test_huge_timeout_header_is_answered(service):
    for value in ("9" * 400, "9" * 5000):
        answers, _ = answers_to(service, invoke(headers=[("kindgi-timeout-ms", value)]))
        assert [result_of(a) for a in answers] == [{"a": 1}]


def test_expect_100_continue(service):
    answers, _ = answers_to(service, invoke(headers=[("expect", "100-continue")]))
    assert [result_of(a) for a in answers] == [{"a": 1}]
    refused_and_closed(service, invoke(headers=[("expect", "100-continue")], token="nope"), 401)


def test_100_continue_only_to_http11_and_only_for_a_body_that_is_taken(service):
    """Never to HTTP/1.0 (RFC 9110 section 15.2), and not before a refusal of the body."""
    expect = [("expect", "100-continue")]
    raw, _ = fuzz.exchange(service.port, invoke(headers=expect).replace(b" HTTP/1.1\r\n", b" HTTP/1.0\r\n", 1))
    assert raw.startswith(b"HTTP/1.1 200 "), raw[:100]
    raw, _ = fuzz.exchange(service.port, bare_invoke_head() + b"expect: 100-continue\r\n"
                           b"content-length: %d\r\n\r\n" % (MAX_BODY + 1))
    assert raw.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in raw, raw[:100]
    raw, _ = fuzz.exchange(service.port, invoke(headers=expect))
    assert raw.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), raw[:100]


def test_the_expectation_is_read_in_any_case(service):
    raw, _ = fuzz.exchange(service.port, invoke(headers=[("Expect", "100-Continue")]))
    assert raw.startswith(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 "), raw[:100]


@pytest.mark.parametrize("length", [b"1" + b"0" * 20, b"9" * 5000], ids=["21 digits", "5000 digits"])
def test_a_content_length_of_any_size_is_413(service, length):
    """A length of more digits than any body this service takes is still a length, not a 400."""
    answer = refused_and_closed(service, bare_invoke_head() + b"content-length: " + length + b"\r\n\r\n", 413)
    assert answer.json() == {"error": "Request body too large"}


def test_a_content_length_with_leading_zeros_is_its_number(service):
    body = message()
    data = invoke(body).replace(b"content-length: %d" % len(body), b"content-length: %020d" % len(body))
    answers, _ = answers_to(service, data)
    assert [result_of(a) for a in answers] == [{"a": 1}]


@pytest.mark.parametrize("missing", [1, 10])
def test_a_body_cut_short_by_the_callers_close_runs_nothing(service, missing):
    """The caller stops sending before the Content-Length it announced: what came is a whole JSON
    message, but not the body; it is not run, and there is no one to answer."""
    body = message(input={"cut": missing})
    data = bare_invoke_head() + b"content-length: %d\r\n\r\n" % (len(body) + missing) + body
    with fuzz.connect(service.port, 10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        raw, closed = fuzz.read_answers(sock, idle=1.0, total=10)
    assert raw == b"" and closed, raw[:300]


# -- early answers over an unread body ---------------------------------------------

EARLY = [
    ("404", fuzz.http_request("POST", "/nowhere", SMUGGLED), 404),
    ("405", fuzz.http_request("POST", "/healthz", SMUGGLED), 405),
    ("405 invoke", fuzz.http_request("PUT", "/v1/invoke", SMUGGLED, [("kindgi-pack-token", TOKEN)]), 405),
    ("401", invoke(SMUGGLED, token="wrong"), 401),
    ("401 chunked", invoke(SMUGGLED, token="wrong", chunks=[5, 5]), 401),
    ("415", invoke(SMUGGLED, content_type="text/plain"), 415),
    ("415 absent", invoke(SMUGGLED, content_type=None), 415),
    ("413", bare_invoke_head() + b"content-length: %d\r\n\r\n" % (MAX_BODY + 1)
     + SMUGGLED, 413),
]


@pytest.mark.parametrize("name, data, status", EARLY, ids=[name for name, _, _ in EARLY])
def test_early_answer_closes_over_the_unread_body(service, name, data, status):
    """The body holds a whole request: it must not be answered as one."""
    refused_and_closed(service, data, status)


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/v1/info"])
def test_get_with_body_is_not_a_second_request(service, path):
    """A GET carrying a body: the body is read and dropped, or the connection closes after the answer."""
    data = fuzz.http_request("GET", path, SMUGGLED, [("kindgi-pack-token", TOKEN)])
    answers, closed = answers_to(service, data)
    assert [a.status for a in answers] == [200], answers
    assert "protocol" not in answers[0].json() or path == "/v1/info"


def test_421_and_503_close_over_the_unread_body(strict_service):
    refused_and_closed(strict_service, fuzz.invoke_request(SMUGGLED, [("kindgi-tenant-id", "other")], TOKEN), 421)
    with fuzz.connect(strict_service.port) as busy:
        busy.sendall(invoke(message("sleep", {"s": 1.5})))
        time.sleep(0.3)
        answer = refused_and_closed(strict_service, invoke(SMUGGLED), 503)
        assert answer.json() == {"error": "overloaded"} and answer.header("retry-after") == "1"
        answers, _ = fuzz.parse_answers(fuzz.read_answers(busy, want=1, idle=5)[0])
        assert [result_of(a) for a in answers] == [{"slept": 1.5}]


@pytest.mark.parametrize("size, token, framing, status", [
    (4 * 1024 * 1024, "wrong", {}, 401),
    (MAX_BODY + 1, TOKEN, {}, 413),
    (4 * 1024 * 1024, TOKEN, {"content-length": "5, 6"}, 400),         # refused as the head is read
    (4 * 1024 * 1024, TOKEN, {"transfer-encoding": "gzip"}, 501),
], ids=["401", "413", "400 head", "501 head"])
def test_early_refusal_with_big_body_is_seen(service, size, token, framing, status):
    """A client sends the whole body before reading (as http.client does): it must still get the answer."""
    conn = http.client.HTTPConnection("127.0.0.1", service.port, timeout=30)
    try:
        conn.request("POST", "/v1/invoke", body=b" " * size,
                     headers=dict(framing, **{"kindgi-pack-token": token, "content-type": "application/json"}))
        response = conn.getresponse()
        assert response.status == status
        response.read()
    finally:
        conn.close()


# -- slow, idle, many ----------------------------------------------------------------

HEAD = invoke()


def trickle(socks, rounds, step=1.0, on_round=lambda: None, until_closed=0.0):
    """Send each socket the next byte of HEAD every *step* seconds; return the sockets the service
    closed, waiting up to *until_closed* seconds more for all of them to be."""
    closed = set()
    start = time.monotonic()
    for i in range(rounds):
        for sock in socks:
            if sock not in closed:
                try:
                    sock.send(HEAD[i:i + 1])
                except OSError:
                    closed.add(sock)
        on_round()
        time.sleep(max(0.0, start + (i + 1) * step - time.monotonic()))
    for sock in socks:
        sock.setblocking(False)
    deadline = time.monotonic() + until_closed
    while True:
        for sock in socks:
            try:
                if sock not in closed and sock.recv(65536) == b"":
                    closed.add(sock)
            except BlockingIOError:
                pass
            except OSError:
                closed.add(sock)
        if len(closed) == len(socks) or time.monotonic() >= deadline:
            return closed
        time.sleep(0.05)


def test_slowloris_while_others_are_answered(service):
    """200 connections sending a head a byte every half second; calls on other connections go through."""
    socks = [fuzz.connect(service.port) for _ in range(200)]
    outputs = []
    try:
        trickle(socks, 4, step=0.5, on_round=lambda: outputs.append(result_of(answer_to(service, invoke()))))
    finally:
        for sock in socks:
            sock.close()
    assert outputs == [{"a": 1}] * 4


def test_hundreds_of_idle_keepalive_connections(service):
    """300 keep-alive connections sit idle; others are answered; then each idle one still answers.

    Each first asks /v1/info, whose token check makes it a connection that showed the token: one
    that only asked a probe would be closed after 3 s of silence, which a busy machine can reach."""
    socks = []
    try:
        for _ in range(300):
            sock = fuzz.connect(service.port)
            sock.sendall(get("/v1/info"))
            socks.append(sock)
        for sock in socks:
            answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1)[0])
            assert [a.status for a in answers] == [200]
        for _ in range(20):
            assert result_of(answer_to(service, invoke())) == {"a": 1}
        for sock in socks:
            sock.sendall(invoke())
        for sock in socks:
            answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1)[0])
            assert [result_of(a) for a in answers] == [{"a": 1}]
    finally:
        for sock in socks:
            sock.close()


def test_stalled_connections_are_closed_and_free_their_slot(strict_service):
    """A body that stops coming, and heads trickled a byte a second, are closed once their
    phase's limit passes (2 s for this service; 10 s and 30 s as shipped).

    The stalled body held the memory its length asked for; once it is dropped, a call runs again.
    """
    stalled = fuzz.connect(strict_service.port)
    body = message()
    stalled.sendall(invoke(body)[:-len(body) // 2])
    socks = [fuzz.connect(strict_service.port) for _ in range(50)]
    try:
        closed = trickle(socks, 2, until_closed=5)   # the head's limit passes as the second byte is in
        assert len(closed) == len(socks)
        assert fuzz.read_answers(stalled, idle=5)[1], "the stalled body's connection is still open"
    finally:
        stalled.close()
        for sock in socks:
            sock.close()
    assert result_of(answer_to(strict_service, invoke())) == {"a": 1}


# -- pipelining -----------------------------------------------------------------------

def test_pipelined_requests_are_answered_in_order(service):
    data = b"".join([get("/healthz"), invoke(message(input={"n": 1})), get("/v1/info"),
                     invoke(message(input={"n": 2}), chunks=[7, 7]), get("/readyz"),
                     invoke(message("sleep", {"s": 0.2})), invoke(message(input={"n": 3}))])
    answers, closed = answers_to(service, data)
    assert [a.status for a in answers] == [200] * 7 and not closed
    bodies = [a.json() for a in answers]
    assert bodies[0] == {"status": "ok"} and bodies[2]["protocol"] == 2 and bodies[4] == {"status": "ready"}
    assert [bodies[i]["output"] for i in (1, 3, 5, 6)] == [{"n": 1}, {"n": 2}, {"slept": 0.2}, {"n": 3}]


def test_pipelined_request_keeps_the_deadline(service):
    """A request arriving on the socket while a call runs must not switch off the call's deadline."""
    with fuzz.connect(service.port) as sock:
        sock.sendall(invoke(message("sleep", {"s": 3}), headers=[("kindgi-timeout-ms", "500")]))
        time.sleep(0.2)
        sock.sendall(get("/healthz"))
        answers, _ = fuzz.parse_answers(fuzz.read_answers(sock, want=1, idle=5)[0])
    assert answers and answers[0].json()["code"] == "deadline-exceeded", answers


# -- clients that reset ------------------------------------------------------------------

def reset(sock):
    """Close with SO_LINGER 0: the kernel sends RST instead of FIN."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_client_resets_mid_answer(service):
    """Twenty clients ask for 8 MB answers and reset after the first bytes."""
    def one():
        sock = fuzz.connect(service.port, 30)
        try:
            sock.sendall(invoke(message("big", {"n": 8000000})))
            sock.recv(1000)
        except socket.timeout:
            pass   # a machine busy enough to take 30 s: the reset comes mid-call instead
        finally:
            reset(sock)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert result_of(answer_to(service, invoke())) == {"a": 1}


def test_client_resets_mid_call_and_mid_body(service):
    sock = fuzz.connect(service.port)
    sock.sendall(invoke(message("sleep", {"s": 1}), headers=[("kindgi-request-id", "x")]))
    time.sleep(0.2)
    reset(sock)
    service.wait_record("call", 5, lambda r: r.get("id") == "sleep" and r.get("outcome") == "cancelled")
    data = invoke(message("big", {"n": 10}))
    for cut in (10, len(data) - 5):
        sock = fuzz.connect(service.port)
        sock.sendall(data[:cut])
        time.sleep(0.05)
        reset(sock)
    assert result_of(answer_to(service, invoke())) == {"a": 1}
