"""End-to-end: hostile JSON bodies on POST /v1/invoke.

Invalid UTF-8, lone surrogates, NaN/Infinity, duplicate keys, 100,000-digit
integers, nesting 100,000 deep, 10 MiB exactly and one byte more.  Every
answer must be a clean 200 response message in valid UTF-8 JSON (or the 413
the protocol names), never a 500, and the service keeps serving.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import TOKEN, PackWriter

MAX_BODY = 10 * 1024 * 1024
CTX = b'"ctx":{"tenantId":"t","runId":"r"}'

TOOLS = '''\
from kindgi import tool


@tool(description="A test tool.", input={"type": "object"}, output={}, id="echo")
def echo(input, ctx):
    return input
'''


@pytest.fixture(scope="module")
def service(module_launcher, tmp_path_factory):
    pack = PackWriter(tmp_path_factory.mktemp("json"))
    pack.module("tools/echo.py", TOOLS)
    pack.tool("echo", "tools/echo.py", input={"type": "object"}, output={})
    return module_launcher.start(pack.write())


@pytest.fixture(autouse=True)
def still_serving(service):
    yield
    assert service.request("GET", "/healthz", token=False).status == 200
    assert not service.records_of("service-error")


def post(service, body, **kw):
    return service.request("POST", "/v1/invoke", body=body, headers={"content-type": "application/json"}, **kw)


def message_of(response):
    """The response message: status 200, strict UTF-8, JSON, a protocol message."""
    assert response.status == 200, response
    message = json.loads(response.body.decode("utf-8"))
    assert message["v"] == 2 and message["kind"] in ("result", "error"), message
    return message


def invoke_body(input_text):
    return b'{"v":2,"kind":"invoke","tool":{"id":"echo"},"input":' + input_text + b"," + CTX + b"}"


def assert_malformed(response, text="Request body is not valid JSON"):
    message = message_of(response)
    assert (message["code"], message["message"]) == ("malformed-message", text), message


@pytest.mark.parametrize("body", [
    b"\xff\xfe{}",
    invoke_body(b'{"s":"\xc3"}'),
    invoke_body(b'{"s":"\xed\xa0\x80"}'),          # a surrogate written as UTF-8 bytes
    invoke_body(b'{"s":"\xf8\x88\x80\x80\x80"}'),
    b"\xef\xbb\xbf" + invoke_body(b"{}"),          # a byte order mark
    b"",
    b"{",
    b'{"v":2,}',
    b"{'v':2}",
    invoke_body(b"NaN"),
    invoke_body(b'{"x":Infinity}'),
    invoke_body(b'{"x":[-Infinity]}'),
    b'{"v":NaN}',
    invoke_body(b"{}") + b"x",
    invoke_body(b"{}") + invoke_body(b"{}"),
])
def test_not_json_is_malformed(service, body):
    assert_malformed(post(service, body))


@pytest.mark.parametrize("body", [b"null", b"[]", b"2", b'"x"', b"true"])
def test_not_an_object_is_malformed(service, body):
    assert_malformed(post(service, body), "Message must be a JSON object")


def test_lone_surrogates_are_answered_in_valid_utf8(service):
    """Escaped lone surrogates are valid JSON; echoed back they must still be valid UTF-8 JSON."""
    output = message_of(post(service, invoke_body(b'{"a":"\\ud800","b":"x\\udfffy","\\udbff":1}')))["output"]
    assert output == {"a": "\ud800", "b": "x\udfffy", "\udbff": 1}
    missing = message_of(post(service, b'{"v":2,"kind":"invoke","tool":{"id":"\\ud800"},"input":{},' + CTX + b"}"))
    assert missing["code"] == "tool-not-in-pack" and missing["toolId"] == "\ud800"
    kind = message_of(post(service, b'{"v":2,"kind":"\\udc00"}'))
    assert kind["code"] == "unexpected-message-kind"


def test_duplicate_keys_last_wins(service):
    """As JSON.parse does: the last of duplicate keys counts."""
    message = message_of(post(service, b'{"v":3,"v":2,"kind":"x","kind":"invoke","tool":{"id":"nope"},'
                                       b'"tool":{"id":"echo"},"input":{"a":1,"a":2},' + CTX + b"}"))
    assert message == {"v": 2, "kind": "result", "output": {"a": 2}}


@pytest.mark.parametrize("body", [
    b'{"v":' + b"1" * 100000 + b"}",
    invoke_body(b'{"n":' + b"9" * 100000 + b"}"),
    invoke_body(b'{"n":-' + b"9" * 100000 + b"}"),
])
def test_huge_integers_are_malformed(service, body):
    assert_malformed(post(service, body))


def test_many_long_digit_runs_in_strings_are_answered_at_once(service):
    """Runs of 4,300 digits (the integer limit) in strings: input, not numbers.

    The look for over-long integers once took quadratic time over such runs:
    14 s of held interpreter for these 4.3 MB, 30 s for 10 MiB.
    """
    text = " ".join(["1" * 4300] * 1000)
    message = message_of(post(service, invoke_body(b'{"s":"' + text.encode() + b'"}'), timeout=10))
    assert message == {"v": 2, "kind": "result", "output": {"s": text}}


def test_huge_floats_are_answered(service):
    """Long decimals and exponents are JSON numbers: an answer either way, never a 500."""
    for number in (b"1" * 100000 + b".5", b"1e999999999", b"-1e-999999999", b"0." + b"0" * 100000 + b"1"):
        message_of(post(service, invoke_body(b'{"n":' + number + b"}")))


def assert_clean_answer(response):
    """A 200 response message in UTF-8, read by its head only.

    The answer may echo a nesting deeper than this process can decode under pytest.
    """
    assert response.status == 200, response
    response.body.decode("utf-8")
    assert re.match(rb'\{"v":2,"kind":"(result|error)",', response.body), response.body[:200]


@pytest.mark.parametrize("opening, closing", [(b"[", b"]"), (b'{"a":', b"}")])
def test_deep_nesting_is_malformed(service, opening, closing):
    depth = 100000
    assert_malformed(post(service, opening * depth + closing * depth))
    assert_malformed(post(service, invoke_body(b'{"x":' + opening * depth + closing * depth + b"}")))


@pytest.mark.parametrize("opening, closing", [(b"[", b"]"), (b'{"a":', b"}")])
@pytest.mark.parametrize("depth", [200, 500, 900, 990, 5000])
def test_deep_but_parseable_input(service, opening, closing, depth):
    """Deep enough to strain recursion, maybe shallow enough for the parser (3.13's goes deeper).

    Either way a clean answer: a result, or an error message such as malformed-message.
    """
    assert_clean_answer(post(service, opening * depth + closing * depth))
    assert_clean_answer(post(service, invoke_body(b'{"x":' + opening * depth + closing * depth + b"}")))


def padded(size):
    """A valid invoke of exactly *size* bytes: the input's string fills the room."""
    empty = invoke_body(b'{"pad":""}')
    body = invoke_body(b'{"pad":"' + b"x" * (size - len(empty)) + b'"}')
    assert len(body) == size
    return body


def test_ten_mib_exactly_is_accepted(service):
    message = message_of(post(service, padded(MAX_BODY), timeout=60))
    assert message["kind"] == "result" and len(message["output"]["pad"]) > MAX_BODY - 200


@pytest.mark.parametrize("chunked", [False, True])
def test_ten_mib_plus_one_is_413(service, chunked):
    body = padded(MAX_BODY + 1)
    conn = service.connection(60)
    try:
        conn.request("POST", "/v1/invoke", body=iter([body[:MAX_BODY // 2], body[MAX_BODY // 2:]]) if chunked else body,
                     headers={"content-type": "application/json", "kindgi-pack-token": TOKEN},
                     encode_chunked=chunked)
        response = conn.getresponse()
        assert response.status == 413 and json.loads(response.read()) == {"error": "Request body too large"}
        assert response.getheader("connection") == "close"
    finally:
        conn.close()
