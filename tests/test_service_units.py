"""The service's pure parts, in process: head parsing, chunked bodies, envelopes, records,
configuration, the token check, the index.  Each runs in microseconds, so a change to one of
them is checked in a second; the end-to-end tests in tests/e2e prove the whole.
"""

import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import io
import ipaddress
import json
import math
import os
import pathlib
import re
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import kindgi_pack_min as kpm  # noqa: E402

UUID = "3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b"


def reader(data):
    return io.BufferedReader(io.BytesIO(data))


def head(data):
    """parse_head over the lines of ``data`` (a whole head, CRLF-terminated)."""
    return kpm.read_request_head(reader(data), lambda: None)


# -- limits --------------------------------------------------------------------

def test_the_shipped_limits():
    limits = kpm.Limits()
    assert (limits.silence, limits.first_request, limits.head, limits.body, limits.write, limits.drain,
            limits.linger, limits.overflow) == (10.0, 3.0, 10.0, 30.0, 30.0, 8.0, 10.0, 1.0)
    assert set(kpm.Limits.NAMES) == {name for name in vars(kpm.Limits) if not name.startswith("_")} - {"NAMES"}


# -- request heads -----------------------------------------------------------

def test_a_head_is_parsed():
    request = head(b"POST /v1/invoke?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nX-A: 1\r\nx-a: 2\r\n\r\n")
    assert (request.method, request.target, request.path, request.version) == (
        "POST", "/v1/invoke?x=1", "/v1/invoke", "HTTP/1.1")
    assert request.headers == {"host": "a", "content-length": "12", "x-a": "1, 2"}
    assert (request.length, request.chunked, request.keep_alive) == (12, False, True)


def test_the_first_byte_is_reported_once_a_head_begins():
    seen = []
    assert kpm.read_request_head(reader(b""), lambda: seen.append(1)) is None
    assert seen == []
    kpm.read_request_head(reader(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"), lambda: seen.append(1))
    assert seen == [1]


@pytest.mark.parametrize("data, status, message", [
    (b"GET / HTTP/1.1\n\n", 400, "Malformed request line"),
    (b"GET / HTTP/1.1\r\nA: b\n\r\n", 400, "Malformed header line"),
    (b"GET / HTTP/1.1\r\nA: b", 400, "Incomplete request head"),
    (b"GET / HTTP/2.0\r\n\r\n", 505, "HTTP version not supported"),
    (b"GET / HTTP/1.1\r\nA: b\x01c\r\n\r\n", 400, "Malformed header line"),
    (b"GET / HTTP/1.1\r\n a: b\r\n\r\n", 400, "Obsolete header line folding"),
    (b"GET /a\x01b HTTP/1.1\r\n\r\n", 400, "Malformed request line"),
    (b"GET /a\tb HTTP/1.1\r\n\r\n", 400, "Malformed request line"),
    (b"GET / HTTP/0.9\r\n\r\n", 505, "HTTP version not supported"),
    (b"\x16\x03\x01", 400, "Malformed request line"),
    (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n", 414, "Request line too long"),
    (b"GET / HTTP/1.1\r\n" + b"a: b\r\n" * 101 + b"\r\n", 431, "Request header fields too large"),
    (b"POST / HTTP/1.1\r\ncontent-length: 1\r\ntransfer-encoding: chunked\r\n\r\n", 400,
     "Content-Length together with Transfer-Encoding"),
    (b"POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n", 400, "Malformed Content-Length"),
    (b"POST / HTTP/1.1\r\ncontent-length: \xd9\xa1\r\n\r\n", 400, "Malformed Content-Length"),
    (b"POST / HTTP/1.1\r\ncontent-length: 5, 6\r\n\r\n", 400, "Malformed Content-Length"),
    (b"POST / HTTP/1.1\r\ncontent-length: 5,\r\n\r\n", 400, "Malformed Content-Length"),
    (b"POST / HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n", 501, "Unsupported Transfer-Encoding"),
    (b"POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n", 400, "Unsupported Transfer-Encoding"),
    (b"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "Missing Host header"),
    (b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400, "More than one Host header"),
    (b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400, "More than one Host header"),
])
def test_a_bad_head_is_refused_with_its_reason(data, status, message):
    with pytest.raises(kpm.HttpError) as caught:
        head(data)
    assert (caught.value.status, caught.value.message) == (status, message)


def test_the_same_content_length_twice_is_one_length():
    """Two equal headers, or the list a proxy may join them into (RFC 9110, section 8.6)."""
    for lengths in (b"content-length: 5\r\ncontent-length: 5", b"content-length: 5, 5", b"content-length: 5 ,5"):
        assert head(b"POST / HTTP/1.1\r\nHost: a\r\n" + lengths + b"\r\n\r\n").length == 5


def test_a_content_length_may_have_leading_zeros_and_any_number_of_digits():
    """A length past every limit is still a length (answered 413 where a body is read), not a 400."""
    def length(value):
        return head(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: " + value + b"\r\n\r\n").length
    assert (length(b"0" * 19), length(b"0" * 30 + b"12"), length(b"9" * 18)) == (0, 12, 10 ** 18 - 1)
    assert length(b"1" + b"0" * 20) > kpm.MAX_BODY and length(b"7" * 8000) > kpm.MAX_BODY


def test_a_later_http_1_minor_version_is_read_as_1_1():
    """RFC 9110 section 2.5: a higher minor version of a major one the server speaks."""
    assert head(b"GET / HTTP/1.2\r\nHost: a\r\n\r\n").version == "HTTP/1.1"
    with pytest.raises(kpm.HttpError) as caught:
        head(b"GET / HTTP/1.9\r\n\r\n")   # read as 1.1, so it needs a Host
    assert caught.value.message == "Missing Host header"


@pytest.mark.parametrize("target, path", [
    ("/v1/info", "/v1/info"), ("/v1/info?a=b", "/v1/info"), ("http://pack:8080/v1/info?a=b", "/v1/info"),
    ("HTTPS://pack/healthz", "/healthz"), ("http://pack", "/"), ("http://pack?x", "/"), ("*", "*"),
    ("ftp://pack/healthz", "ftp://pack/healthz"), ("pack/healthz", "pack/healthz"),
])
def test_the_path_of_an_origin_or_absolute_form_target(target, path):
    """RFC 9112 section 3.2.2: a server takes the absolute form too (as a proxy sends it)."""
    assert kpm.target_path(target) == path


@pytest.mark.parametrize("host", [b"a b", b"a/b", b"user@a", b"a\\b", b"a?b", b"a#b", b"\"a\"", b"caf\xc3\xa9.example"],
                         ids=repr)
def test_a_host_that_is_no_host_and_port_is_refused(host):
    """RFC 9112 section 3.2: 400 for a Host field value that is not uri-host [":" port]."""
    with pytest.raises(kpm.HttpError) as caught:
        head(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n")
    assert (caught.value.status, caught.value.message) == (400, "Malformed Host header")


def test_a_host_and_port_in_any_form_is_taken():
    for host in (b"pack", b"pack.ns.svc.cluster.local:8080", b"127.0.0.1:80", b"[::1]:8080", b"", b"my_pack-1:"):
        assert head(b"GET / HTTP/1.1\r\nHost: " + host + b"\r\n\r\n").headers["host"] == host.decode()


def test_an_http10_request_needs_no_host():
    assert head(b"GET / HTTP/1.0\r\n\r\n").headers == {}


def test_keep_alive_follows_the_version_and_the_connection_header():
    assert head(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n").keep_alive is True
    assert head(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").keep_alive is False
    assert head(b"GET / HTTP/1.0\r\n\r\n").keep_alive is False
    assert head(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").keep_alive is True


@pytest.mark.parametrize("version, connection, keep_alive", [
    (b"1.0", b"keep-alive, close", False), (b"1.0", b"Close ,Keep-Alive", False),   # close wins (RFC 9112 9.3)
    (b"1.0", b"x-no-keep-alive", False), (b"1.0", b"te,\tkeep-alive", True),         # options, not text
    (b"1.1", b"x-closed", True), (b"1.1", b"te, close", False), (b"1.1", b"upgrade", True),
])
def test_the_connection_header_is_a_list_of_options(version, connection, keep_alive):
    request = head(b"GET / HTTP/" + version + b"\r\nHost: a\r\nConnection: " + connection + b"\r\n\r\n")
    assert request.keep_alive is keep_alive


def test_a_write_the_kernel_timed_out_raises_socket_timeout():
    """As a read does: a caller that stopped reading ends its connection (a 100 Continue it was
    sent made a 500 and a service-error record)."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, kpm.socket_timeval(0.1))
        with pytest.raises(socket.timeout):
            kpm.SocketWriter(ours).write(b"x" * (64 * 1024 * 1024))


# -- chunked bodies ------------------------------------------------------------

def chunked(data, take=lambda n: None):
    return kpm.read_chunked(reader(data), take)


def test_a_chunked_body_comes_back_whole_and_its_sizes_are_taken():
    taken = []
    body = chunked(b"3;a=b\r\nabc\r\nA; q = \"x\\\"y\"\r\n0123456789\r\n0\r\nx-t: 1\r\n\r\n", taken.append)
    assert bytes(body) == b"abc0123456789" and taken == [3, 10]


@pytest.mark.parametrize("data", [b"3\nabc\r\n0\r\n\r\n", b"3\r\r\nabc\r\n0\r\n\r\n", b"3\r\nabc\n0\r\n\r\n",
                                  b"3\x0b\r\nabc\r\n0\r\n\r\n", b"3;\r\nabc\r\n0\r\n\r\n", b"-3\r\nabc\r\n0\r\n\r\n",
                                  b"3\r\nabc\r\n0\r\nx y: 1\r\n\r\n", b"3\r\nabc\r\n0\r\nx: 1\n\r\n"])
def test_anything_but_rfc_9112_chunk_syntax_is_400(data):
    with pytest.raises(kpm.HttpError) as caught:
        chunked(data)
    assert caught.value.status == 400


def test_a_chunked_body_over_10_mib_or_too_much_framing_is_413():
    with pytest.raises(kpm.HttpError) as caught:
        chunked(b"a00001\r\n")
    assert caught.value.status == 413
    with pytest.raises(kpm.HttpError) as caught:
        chunked(b"1\r\nx\r\n" * 300000 + b"0\r\n\r\n")
    assert caught.value.status == 413


def test_the_memory_budget_can_refuse_a_chunk():
    def refuse(size):
        raise kpm.HttpError(503, "overloaded", kpm.RETRY)

    with pytest.raises(kpm.HttpError) as caught:
        chunked(b"3\r\nabc\r\n0\r\n\r\n", refuse)
    assert (caught.value.status, caught.value.headers) == (503, kpm.RETRY)


# -- envelopes -----------------------------------------------------------------

@pytest.mark.parametrize("text, code, message", [
    (None, "malformed-message", "Request body is not valid JSON"),
    ("{", "malformed-message", "Request body is not valid JSON"),
    ('{"a": NaN}', "malformed-message", "Request body is not valid JSON"),
    ("[1" * 100000, "malformed-message", "Request body is not valid JSON"),
    ("1" * 5000, "malformed-message", "Request body is not valid JSON"),
    ("[]", "malformed-message", "Message must be a JSON object"),
    ('{"v": true}', "unknown-protocol-version", "Expected protocol v2, got true"),
    ('{"v": "2"}', "unknown-protocol-version", 'Expected protocol v2, got "2"'),
    ('{"v": 2}', "unexpected-message-kind", "Unknown request kind null"),
    ('{"v": 2, "kind": "invoke", "tool": {"id": ""}}', "malformed-message", "`tool.id` is required"),
    ('{"v": 2, "kind": "invoke", "tool": {"id": "a", "version": 1}}', "malformed-message",
     "`tool.version` must be a string"),
    ('{"v": 2, "kind": "invoke", "tool": {"id": "a"}, "ctx": {"tenantId": "t"}}', "malformed-message",
     "`ctx` needs string `tenantId` and `runId`"),
    ('{"v": 2, "kind": "check-invoke", "check": {}}', "malformed-message", "`check.id` is required"),
    ('{"v": 2, "kind": "check-invoke", "check": {"id": "c"}, "config": []}', "malformed-message",
     "`config` must be an object"),
])
def test_an_envelope_refused_says_why(text, code, message):
    parsed, refused = kpm.read_envelope(text)
    assert parsed is None
    assert refused == {"v": 2, "kind": "error", "code": code, "message": message}


def test_a_good_envelope_is_the_message():
    text = '{"v": 2.0, "kind": "invoke", "tool": {"id": "a"}, "ctx": {"tenantId": "t", "runId": "r"}, "x": 1}'
    assert kpm.read_envelope(text) == (json.loads(text), None)


@pytest.mark.parametrize("raw, ms", [(None, 120000), ("", 120000), (" 700 ", 700), ("0", 120000), ("1.5", 120000),
                                     ("\u0661", 120000), ("9" * 20, 10 ** 12),
                                     ("0" * 13 + "100", 100), ("0" * 40 + "7", 7), ("0" * 20, 120000),
                                     ("\xa05", 120000), ("5\x85", 120000), ("\t300\t", 300)])
def test_timeout_header(raw, ms):
    """Leading zeros are no digits of the number: 13 of them before 100 are 100 ms, as the SDK reads it.
    A longer number is read as 10**12 ms (31 years: no deadline a caller could mean), written out
    here rather than read from the module under test.  Only HTTP's blanks around it are no part
    of it: a no-break space (latin-1 U+00A0) or U+0085 makes it no number (a 5 ms deadline
    before)."""
    assert kpm.parse_timeout_ms(raw) == ms


def test_trace_fields():
    fields = kpm.trace_fields("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert fields["traceId"] == "4bf92f3577b34da6a3ce929d0e0e4736" and re.match("^[0-9a-f]{16}$", fields["spanId"])
    for bad in ("", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra"):
        assert kpm.trace_fields(bad) == {}


def parse_cost(text, body_type=bytes):
    return kpm.json_parse_cost(body_type(text.encode("utf-8")), text)


def test_the_parse_cost_grows_with_what_json_makes_of_the_text():
    small = parse_cost('"' + "x" * 1000 + '"')
    assert small < 3000
    assert parse_cost("[" + ",".join(["{}"] * 1000) + "]") > 200000
    records = json.dumps([{"k\u00e9%d" % i: "v\u2713" for i in range(3)}] * 50, ensure_ascii=False)
    counted_in_the_text = (2 * sys.getsizeof(records) + 184 * records.count("{") + 24 * records.count(":")
                           + 72 * records.count("[") + 48 * records.count(",") + 26 * records.count('"'))
    assert parse_cost(records) == parse_cost(records, bytearray) == counted_in_the_text


@pytest.mark.parametrize("escape", ["\\ud83d\\ude00", "\\u0100", "\\uD83D\\uDE00"])
def test_the_parse_cost_counts_strings_an_escape_makes_wider(escape):
    """One escape past U+00FF makes every character of its string 2 or 4 bytes: 10 MiB of ASCII
    text would parse into up to 40 MiB, copied from the text on the way."""
    text = '["' + escape + "a" * 100000 + '"]'
    parsed = json.loads(text)[0]
    for body_type in (bytes, bytearray):
        assert parse_cost(text, body_type) >= 2 * sys.getsizeof(text) + sys.getsizeof(parsed)


@pytest.mark.parametrize("plain", ["\\u00e9", "C:\\\\users\\\\", "\\n"])
def test_the_parse_cost_of_escapes_that_widen_nothing(plain):
    text = '["' + plain + "a" * 100000 + '"]'
    assert parse_cost(text) < 2 * sys.getsizeof(text) + 1000


def test_the_parse_cost_of_text_made_of_escapes():
    """Each escape is six characters of text and one of a string: 10 MiB of escaped emoji is not
    counted as 40 MiB of string."""
    text = '["' + "\\ud83d\\ude00" * 10000 + '"]'
    assert 2 * sys.getsizeof(text) < parse_cost(text) < 3 * sys.getsizeof(text)


PARSE_PEAKS = r"""
import json, sys, tracemalloc
sys.path.insert(0, sys.argv[1])
import kindgi_pack_min as kpm
size = 1024 * 1024
shapes = {
    "ASCII, one astral escape": '"\\ud83d\\ude00' + "a" * size + '"',
    "ASCII, one escape past U+00FF": '"\\u0100' + "a" * size + '"',
    "escaped newlines": '"' + "ab\\n" * (size // 4) + '"',
    "escaped CJK": '"' + "ab\\u4e2d" * (size // 8) + '"',
    "escaped CJK between latin-1": '"' + "\u00e9\u00e9\\u4e2d" * (size // 8) + '"',
    "escaped emoji": '"' + "\\ud83d\\ude00" * (size // 12) + '"',
}
for name, text in shapes.items():
    tracemalloc.start()
    kpm._load_strict(text)   # the parse itself (load_json_text's scan for long numbers takes 2 MiB at most)
    peak = sys.getsizeof(text) + tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(json.dumps([name, kpm.json_parse_cost(text.encode("utf-8"), text), peak]))
"""


def test_the_parse_cost_is_at_least_what_parsing_takes():
    """Measured under the service's interpreter ($KINDGI_TEST_PYTHON): escapes that widen a
    string's characters, and, before Python 3.9, the pieces a string with escapes is made from."""
    done = subprocess.run([os.environ.get("KINDGI_TEST_PYTHON") or sys.executable, "-c", PARSE_PEAKS, ROOT],
                          stdout=subprocess.PIPE, timeout=120)
    measured = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(measured) == 6, done
    assert [(name, cost, peak) for name, cost, peak in measured if cost < peak - 1024] == []   # give or take a header


def test_answers_are_utf8_even_with_lone_surrogates():
    assert kpm.dump_json({"a": "\ud800\u00e9"}) == b'{"a":"\\ud800\\u00e9"}'
    assert kpm.dump_json({"a": "\u00e9"}) == '{"a":"\u00e9"}'.encode()


def test_a_result_is_built_around_the_text_as_written():
    assert kpm.result_body("result", "output", '{"a":"\u00e9"}') == '{"v":2,"kind":"result","output":{"a":"\u00e9"}}'.encode()
    assert kpm.result_body("check-result", "result", '{"passed":true}') == b'{"v":2,"kind":"check-result","result":{"passed":true}}'
    escaped = kpm.result_body("result", "output", '{"a":"\ud800\u00e9"}')   # a lone surrogate can't be UTF-8
    assert escaped == b'{"v":2,"kind":"result","output":{"a":"\\ud800\\u00e9"}}'
    assert json.loads(escaped.decode("utf-8")) == {"v": 2, "kind": "result", "output": {"a": "\ud800\u00e9"}}


# -- what pack code returns ------------------------------------------------------

class Shade(enum.Enum):
    DAY = datetime.date(2026, 1, 1)


@dataclasses.dataclass
class Spot:
    x: int
    when: datetime.time


@dataclasses.dataclass(frozen=True)
class FrozenSpot:
    x: int


class Dumps:
    def model_dump(self, mode, by_alias):
        return {"mode": mode, "byAlias": by_alias}


@pytest.mark.parametrize("value, text", [
    (Shade.DAY, '"2026-01-01"'),
    (Spot(1, datetime.time(1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=5, minutes=30)))),
     '{"x":1,"when":"01:02:00+05:30"}'),
    (collections.deque([fractions.Fraction(1, 3), 2j]), '["1/3","2j"]'),
    (iter([ipaddress.ip_address("::1"), re.compile("a+")]), '["::1","a+"]'),
    (pathlib.Path("/srv/x"), '"/srv/x"'),
    ({"nested": [Dumps()]}, '{"nested":[{"mode":"json","byAlias":true}]}'),
    (datetime.timedelta(days=-1, seconds=1), '"-PT23H59M59S"'),
    (datetime.timedelta(0), '"PT0S"'),
    (datetime.timedelta(days=730, microseconds=10), '"P2YT0.00001S"'),
    ([1 + 2j, -1j, complex(-1.5, -0.0), complex(1e20, 1e-7), complex(float("inf"), float("nan")), 0j],
     '["1+2j","-1j","-1.5-0j","100000000000000000000+0.0000001j","inf+NaNj","0j"]'),
    ({FrozenSpot(1): "a", (FrozenSpot(2), 3): "b"}, '{"FrozenSpot(x=1)":"a","FrozenSpot(x=2),3":"b"}'),
])
def test_what_the_sdk_converts_is_written_as_it_writes_it(value, text):
    assert kpm.to_json_text(value) == (text, None)


@pytest.mark.parametrize("value", [range(3), {}.keys(), object(), pathlib.PurePosixPath("/x"), b"\xff", Spot])
def test_what_the_sdk_doesnt_convert_is_not_json(value):
    with pytest.raises((TypeError, ValueError)):
        kpm.to_jsonable(value)


def test_only_what_cant_be_converted_is_an_issue():
    text, issues = kpm.to_json_text({"ok": [datetime.date(2026, 1, 1), {object()}], "also": uuid.UUID(int=1)})
    assert text is None
    assert [(i["instancePath"], i["message"]) for i in issues] == [("/ok/1/0", "must be JSON, not object")]


class FailingDump:
    def model_dump(self, mode="python", by_alias=False):
        raise ValueError("field 'held' has no JSON form")


def test_a_conversion_that_raises_is_told_in_its_own_words():
    """A model whose dump raises is JSON to the SDK: the cause is what its dump said, not its type."""
    text, issues = kpm.to_json_text({"ok": 1, "model": FailingDump()})
    assert text is None
    assert [(i["instancePath"], i["message"]) for i in issues] == [
        ("/model", "could not be written as JSON: ValueError: field 'held' has no JSON form")]


def test_a_dataclass_that_holds_itself_is_a_circular_reference():
    spot = Spot(1, datetime.time(1, 2))
    spot.x = spot   # each conversion is a new dict: only the dataclass itself tells the cycle
    text, issues = kpm.to_json_text({"spot": spot})
    assert text is None
    assert [(i["instancePath"], i["message"]) for i in issues] == [
        ("/spot/x", "must not contain itself (a circular reference)")]


def test_conversions_nested_in_conversions_are_no_circular_reference():
    """Each conversion makes a new dict, freed when its walk ends: a later one could take its id."""
    text, issues = kpm.to_json_text({"a": Spot(Spot(Spot(Spot(1, None), None), None), None), "b": object()})
    assert [(i["instancePath"], i["message"]) for i in issues] == [("/b", "must be JSON, not object")]


@pytest.mark.parametrize("key, text", [
    ((1, ("a", None, True)), "1,a,null,true"), ((), ""), (datetime.date(2026, 1, 2), "2026-01-02"),
    (Shade.DAY, "2026-01-01"), (decimal.Decimal("2.50"), "2.50"), (float("-inf"), "-inf"), (1e20, "1e+20"),
    (b"raw", "raw"), (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
])
def test_a_dict_key_the_json_module_cant_write_is_written_as_the_sdk_writes_it(key, text):
    assert kpm.to_json_text({key: 1, None: 2}) == (json.dumps({text: 1, "null": 2}, separators=(",", ":")), None)


def test_a_dict_key_with_no_text_is_an_issue():
    text, issues = kpm.to_json_text({"ok": {(1, 2): 1}, "bad": {frozenset([1]): 1}})
    assert text is None
    assert [(i["instancePath"], i["message"]) for i in issues] == [
        ("/bad/frozenset({1})", "must have a string key, not frozenset")]


def test_an_iterator_beside_a_key_to_convert_is_refused_not_written_empty():
    """The first write read the rows to their end before it met the key: a second would write []."""
    text, issues = kpm.to_json_text({"rows": iter([1, 2]), "byPair": {(1, 2): 1}})
    assert text is None
    assert "an iterator beside a dict key that needs converting" in issues[0]["message"]


def test_a_context_id_that_is_not_a_string_is_dropped_as_the_sdk_drops_it():
    ctx = kpm.ToolContext.from_wire({"tenantId": "t", "runId": "r", "requestId": 7, "idempotencyKey": 5,
                                     "orgId": ["o"], "projectId": "p"}, kpm.Cancellation())
    assert (ctx.request_id, ctx.idempotency_key, ctx.org_id, ctx.project_id) == (None, None, None, "p")


TRACE_IDS = {"runId": "r", "tenantId": "t"}


@pytest.mark.parametrize("sent, name, value", [
    ({"turnNumber": "5.0"}, "turn_number", 5), ({"turnNumber": " +7 "}, "turn_number", 7),
    ({"turnNumber": "1_000"}, "turn_number", 1000), ({"turnNumber": 9.2e18}, "turn_number", 9200000000000000000),
    ({"totalCostUsd": "1e400"}, "total_cost_usd", float("inf")), ({"durationMs": ".5"}, "duration_ms", 0.5),
])
def test_trace_numbers_are_read_as_pydantic_reads_them(sent, name, value):
    assert getattr(kpm.RunTrace.from_wire(dict(TRACE_IDS, **sent)), name) == value


@pytest.mark.parametrize("sent, path, keyword", [
    ({"turnNumber": "\u0661\u0662"}, "/turnNumber", "int_parsing"), ({"turnNumber": "5.5"}, "/turnNumber", "int_parsing"),
    ({"turnNumber": 1e19}, "/turnNumber", "int_parsing_size"), ({"turnNumber": "1" * 4301}, "/turnNumber", "int_parsing_size"),
    ({"turnNumber": float("nan")}, "/turnNumber", "finite_number"), ({"totalCostUsd": "\uff11"}, "/totalCostUsd", "float_parsing"),
    ({"totalCostUsd": 10 ** 400}, "/totalCostUsd", "float_type"),
    ({"org_id": 5}, "/org_id", "string_type"),   # named by the key it was sent under, as pydantic names it
])
def test_trace_values_pydantic_refuses_are_refused_alike(sent, path, keyword):
    with pytest.raises(kpm.ValidationError) as refused:
        kpm.RunTrace.from_wire(dict(TRACE_IDS, **sent))
    assert [(i["instancePath"], i["keyword"]) for i in refused.value.issues] == [(path, keyword)]


class Verdict(enum.Enum):
    FINE = "fine"


@pytest.mark.parametrize("passed, expected", [("Yes", True), ("OFF", False), (b"true", True), (1.0, True),
                                              (decimal.Decimal("0"), False)])
def test_a_check_result_takes_for_passed_what_pydantic_takes(passed, expected):
    assert kpm.CheckResult(passed=passed).passed is expected


def test_a_check_results_text_and_keys_are_taken_as_pydantic_takes_them():
    result = kpm.CheckResult(passed=True, reason=b"why", judge_response=Verdict.FINE, attributes={b"k": 1})
    assert (result.reason, result.judge_response, result.attributes) == ("why", "fine", {"k": 1})


@pytest.mark.parametrize("fields, path, keyword", [
    ({"passed": " true"}, "/passed", "bool_parsing"), ({"passed": 2}, "/passed", "bool_parsing"),
    ({"passed": 0.5}, "/passed", "bool_type"), ({"passed": 2 ** 63}, "/passed", "bool_type"),
    ({"passed": True, "reason": b"\xff"}, "/reason", "string_unicode"), ({"passed": True, "reason": 5}, "/reason", "string_type"),
    ({"passed": True, "attributes": {1: "x"}}, "/attributes/1/[key]", "string_type"),
])
def test_a_check_result_refuses_what_pydantic_refuses(fields, path, keyword):
    with pytest.raises(kpm.ValidationError) as refused:
        kpm.CheckResult(**fields)
    assert [(i["instancePath"], i["keyword"]) for i in refused.value.issues] == [(path, keyword)]


class ValidationError(Exception):
    """A pack's own exception that pydantic lets through a field validator: its shape is anyone's."""

    def __init__(self, issues=None, errors=None):
        Exception.__init__(self, "not valid")
        if issues is not None:
            self.issues = issues
        self._errors = errors

    def errors(self):
        return self._errors


@pytest.mark.parametrize("error", [ValidationError(issues=[{"message": object()}]),
                                   ValidationError(errors=["not a dict"]), ValidationError(errors=[{"loc": 5}]),
                                   ValidationError(errors=None)], ids=["issues", "errors-str", "loc-int", "none"])
def test_a_model_error_of_another_shape_is_one_issue_with_its_text(error):
    assert kpm.is_model_error(error)
    assert kpm.model_issues(error) == [{"instancePath": "", "schemaPath": "#", "params": {}, "message": "not valid"}]


def test_a_model_errors_issues_are_taken_as_they_are():
    issues = [{"instancePath": "/a", "schemaPath": "#", "keyword": "x", "params": {}, "message": "m"}]
    assert kpm.model_issues(ValidationError(issues=issues)) is issues
    assert kpm.model_issues(ValidationError(errors=[{"loc": ("a", 0), "msg": "m", "type": "x"}])) == [
        {"instancePath": "/a/0", "schemaPath": "#", "keyword": "x", "params": {}, "message": "m"}]


def test_a_dict_check_result_is_converted_when_written():
    wire = kpm.normalise_check_result({"passed": True, "at": decimal.Decimal("2.50")}, kpm.CheckResult)
    assert kpm.to_json_text(wire) == ('{"passed":true,"at":"2.50"}', None)


def test_a_check_results_attributes_are_dumped_as_pydantic_dumps_them():
    """Records in them without their None fields, NaN and infinities None, tuples as lists; one
    that holds itself is left for writing to refuse, not a RecursionError."""
    calls = [kpm.ToolCallRecord(tool_id="t", tool_name="n", at="a")]
    wire = kpm.CheckResult(passed=True, attributes={"calls": calls, "n": float("nan"), "t": (1, float("-inf"))},
                           extra={"x": float("inf")}).to_wire()
    assert wire == {"passed": True, "attributes": {"calls": [{"toolId": "t", "toolName": "n", "arguments": {}, "at": "a"}],
                                                   "n": None, "t": [1, None]}, "extra": {"x": None}}
    loop = {}
    loop["self"] = loop
    text, issues = kpm.to_json_text(kpm.CheckResult(passed=True, attributes=loop).to_wire())
    assert issues[0]["message"] == "must not contain itself (a circular reference)"
    holds_itself = kpm.CheckResult(passed=True, attributes={})
    holds_itself.attributes["me"] = holds_itself
    text, issues = kpm.to_json_text(holds_itself.to_wire())
    assert issues[0]["message"] == "must not contain itself (a circular reference)"


def test_only_a_check_result_is_read_by_its_to_wire():
    """Another object with a ``to_wire`` is not a check result, whatever it gives (as on the official service)."""
    class Wired:
        def to_wire(self):
            return {"passed": True}

    assert kpm.normalise_check_result(Wired(), kpm.CheckResult) is None
    assert kpm.normalise_check_result(kpm.CheckResult(passed=False, judge_response="j"), kpm.CheckResult) == {
        "passed": False, "judgeResponse": "j"}


# -- records -------------------------------------------------------------------

@pytest.fixture
def pipe_records():
    read_end, write_end = os.pipe()

    def lines(records):
        os.close(write_end)
        with os.fdopen(read_end, "rb") as f:
            return f.read().decode().splitlines()

    yield (lambda **kw: kpm.Records(write_end, **kw)), lines


def test_a_record_has_its_keys_in_order_and_the_bound_fields_last(pipe_records):
    make, lines = pipe_records
    records = make()
    records.bound = {"packId": "p", "artifactVersion": "a"}
    records.write("warn", "hello", event="thing", fields={"zeta": 1, "runId": "r", "traceId": "t"})
    records.write("info", "mine", event="call", fields={"packId": "own", "x": 2})
    first, second = [json.loads(line) for line in lines(records)]
    assert list(first) == ["time", "level", "severity", "subsystem", "message", "traceId", "runId", "event", "kind",
                           "zeta", "packId", "artifactVersion"]
    assert (first["severity"], second["packId"], list(second)[-2:]) == ("WARNING", "own", ["x", "artifactVersion"])


def test_a_batch_goes_out_in_writes_a_pipe_never_splits():
    """Whole records, at most PIPE_WRITE bytes a write (a packet socket keeps each write apart)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours, theirs:
        records = kpm.Records(ours.fileno())
        sizes = [100, 3000, 1500, 4096, 10, 20, 4000]
        records.waiting.extend(b"%s\n" % (b"x" * (size - 1)) for size in sizes)
        records._write_waiting()
        ours.shutdown(socket.SHUT_WR)
        writes = list(iter(lambda: theirs.recv(65536), b""))
    assert [[len(line) + 1 for line in write.splitlines()] for write in writes] == \
        [[100, 3000], [1500], [4096], [10, 20, 4000]]
    assert records.waiting == []


def _records_on_a_small_pipe(monkeypatch, reader_pause):
    """Records batched by their writer thread into a 4 KB pipe, read 4 KB every ``reader_pause``
    seconds (never, when None) once ``start`` is set: ``(records, start, finish)``, ``finish()``
    giving the lines read."""
    import fcntl
    import threading
    import time
    monkeypatch.setattr(kpm, "STUCK_STDERR_SECONDS", 0.2)
    monkeypatch.setattr(kpm, "MAX_WAITING_RECORDS", 20)
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, 1031, 4096)   # F_SETPIPE_SZ: a pipe that fills at once
    records = kpm.Records(write_end)
    assert records.start_writer()
    start, got = threading.Event(), []

    def reader():
        start.wait(30)
        while True:
            chunk = os.read(read_end, 4096)
            if not chunk:
                break
            got.append(chunk)
            if reader_pause:
                time.sleep(reader_pause)

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()

    def finish():
        start.set()
        deadline = time.monotonic() + 20
        while (records.waiting or records.dropped) and time.monotonic() < deadline:
            time.sleep(0.05)
        with records.lock:
            os.close(write_end)
            records.fd = -1   # the writer thread, still running, writes nowhere
        thread.join(20)
        os.close(read_end)
        return b"".join(got).decode().splitlines()

    return records, start, finish


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_a_slow_stderr_that_takes_writes_loses_no_record(monkeypatch):
    """A log collector that reads slowly keeps the writer thread in a long batch, lock held, for
    longer than a stuck stderr is given: the records made meanwhile wait, they are not dropped."""
    records, start, finish = _records_on_a_small_pipe(monkeypatch, 0.06)
    start.set()
    for number in range(150):
        records.write("info", "record %d %s" % (number, "x" * 900))
    lines = [json.loads(line) for line in finish()]
    assert [line["message"].split()[1] for line in lines] == [str(number) for number in range(150)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_a_stuck_stderr_drops_records_and_counts_them_once_it_takes_writes(monkeypatch):
    import time
    records, start, finish = _records_on_a_small_pipe(monkeypatch, None)
    for number in range(10):
        records.write("info", "record %d %s" % (number, "x" * 900))
    time.sleep(0.2)   # the writer thread takes them, and blocks on the full pipe
    began = time.monotonic()
    for number in range(10, 60):
        records.write("info", "record %d %s" % (number, "x" * 900))
    assert time.monotonic() - began < 5, "a stuck stderr held the records' maker"
    dropped = records.dropped
    lines = [json.loads(line) for line in finish()]
    counts = [line["count"] for line in lines if line.get("event") == "records-dropped"]
    assert dropped > 0 and counts == [dropped]
    assert len(lines) == 60 - dropped + 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_a_long_record_is_never_written_by_the_thread_making_it_once_serving(monkeypatch):
    """Its thread would block in write(2) for as long as stderr stays stuck, its call unanswered."""
    import threading
    import time
    records, start, finish = _records_on_a_small_pipe(monkeypatch, None)
    unblock = threading.Timer(3, start.set)   # where the maker blocks, the test fails rather than hangs
    unblock.start()
    writers = []
    write_all = records._write_all
    monkeypatch.setattr(records, "_write_all",
                        lambda data: (writers.append(threading.current_thread()), write_all(data)))
    began = time.monotonic()
    for number in range(3):
        records.write("error", "long %d" % number, fields={"stack": "x" * 300000})
        records.write("info", "short %d" % number)
    assert time.monotonic() - began < 1, "a stuck stderr held the maker of a long record"
    unblock.cancel()
    lines = [json.loads(line) for line in finish()]
    assert [line["message"] for line in lines] == ["long 0", "short 0", "long 1", "short 1", "long 2", "short 2"]
    assert writers and set(writers) == {records.writer}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_the_records_waiting_are_bounded_in_bytes_too(monkeypatch):
    """A stuck stderr: records wait up to MAX_WAITING_BYTES, beyond which they are dropped, and
    counted; a record alone longer than that still waits, when none do."""
    import time
    monkeypatch.setattr(kpm, "MAX_WAITING_BYTES", 20000)
    records, start, finish = _records_on_a_small_pipe(monkeypatch, None)
    records.write("info", "first %s" % ("x" * 5000))
    time.sleep(0.2)   # the writer thread takes it, and blocks on the full pipe
    assert records.waiting == []
    records.write("info", "alone %s" % ("x" * 30000))
    assert len(records.waiting) == 1 and records.waiting_bytes == len(records.waiting[0]) > 20000
    records.write("info", "one too many")
    assert records.dropped == 1 and len(records.waiting) == 1
    lines = [json.loads(line) for line in finish()]
    assert [line["message"].split()[0] for line in lines] == ["first", "alone", "1"]
    assert lines[-1]["count"] == 1 and lines[-1]["message"].startswith("1 record was dropped:")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_the_bytes_waiting_are_counted_exactly_and_never_pass_the_bound(monkeypatch):
    import threading
    monkeypatch.setattr(kpm, "MAX_WAITING_BYTES", 30000)
    records, start, finish = _records_on_a_small_pipe(monkeypatch, 0.01)
    start.set()
    seen = []

    def make(name):
        for number in range(40):
            records.write("info", "%s %d %s" % (name, number, "x" * (200 + 4000 * (number % 3))))
            with records.queue_lock:
                seen.append((records.waiting_bytes, sum(map(len, records.waiting))))

    threads = [threading.Thread(target=make, args=(name,)) for name in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    lines = [json.loads(line) for line in finish()]
    assert all(counted == actual <= 30000 for counted, actual in seen)
    for name in "abc":   # none lost, each thread's in the order made
        assert [int(line["message"].split()[1]) for line in lines
                if line["message"].startswith(name + " ")] == list(range(40))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ")
def test_long_and_short_records_keep_their_order_through_a_slow_stderr(monkeypatch):
    records, start, finish = _records_on_a_small_pipe(monkeypatch, 0.03)
    start.set()
    for number in range(80):
        records.write("info", "record %d %s" % (number, "x" * (9000 if number % 4 == 0 else 300)))
    lines = [json.loads(line) for line in finish()]
    assert [line["message"].split()[1] for line in lines] == [str(number) for number in range(80)]


def test_records_escape_what_splits_or_drives_a_terminal(pipe_records):
    make, lines = pipe_records
    records = make()
    records.write("info", "a\u2028b\x85c\x1bd", event="x")
    line, = lines(records)
    assert "\\u2028" in line and "\\u0085" in line and "\\u001b" in line
    assert json.loads(line)["message"] == "a\u2028b\x85c\x1bd"


def test_pretty_lines_escape_controls(pipe_records):
    make, lines = pipe_records
    records = make(pretty=True)
    records.write("info", "one\ntwo\x1b[2J\x7f", event="x")
    line, = lines(records)
    assert line.endswith('INFO  pack one\\u000atwo\\u001b[2J\\u007f  event="x"'), line


def test_pretty_lines_escape_bidirectional_controls(pipe_records):
    """A right-to-left override in a caller's id would show the rest of the line reversed."""
    make, lines = pipe_records
    records = make(pretty=True)
    records.write("warn", "tool a\u202eb ok", event="call", fields={"requestId": "\u2066x\u2069\u200f\u061c"})
    line, = lines(records)
    assert line.endswith('WARN  pack tool a\\u202eb ok  requestId="\\u2066x\\u2069\\u200f\\u061c" event="call"'), line


def test_levels_filter_all_but_lifecycle_records(pipe_records):
    make, lines = pipe_records
    records = make(level="warn", levels={"pack.tool": "debug"})
    records.write("info", "dropped")
    records.write("info", "kept", always=True)
    records.write("debug", "tool", subsystem="pack.tool")
    assert [json.loads(line)["message"] for line in lines(records)] == ["kept", "tool"]


@pytest.mark.parametrize("subsystem, rank", [("pack.tool.db.pool", "debug"), ("pack.tool.dbx", "error"),
                                             ("pack.tool", "error"), ("pack", "trace"), ("mine.sub", "warn")])
def test_a_subsystem_takes_its_nearest_dotted_parents_level(subsystem, rank):
    records = kpm.Records(2, level="warn", levels={"pack": "trace", "pack.tool": "error", "pack.tool.db": "debug"})
    assert records.rank_for(subsystem) == kpm.LEVELS.index(rank)


def test_the_level_of_a_subsystem_with_many_dots_takes_linear_time():
    """A subsystem of pack code's was cut down to its parents a dot at a time: 800,000 characters
    of "a.a.…" held the interpreter (and so the whole service) for tens of seconds."""
    done = subprocess.run([sys.executable, "-c", "import kindgi_pack_min as k; "
                           "k.Records(2, levels={'pack': 'debug'}).rank_for('a.' * 400000)"],
                          cwd=ROOT, timeout=10)
    assert done.returncode == 0


def test_pack_code_fields_lose_secret_keys_and_the_token(pipe_records):
    make, lines = pipe_records
    records = make()
    records.token = kpm.TokenCheck(kpm.sha256(b"s3cret-token").digest(), len("s3cret-token"))
    logger = kpm.PackLogger(records, "pack.tool")
    logger.info("s3cret-token", {"apiKey": "k", "plain": "s3cret-token", "nested": ["s3cret-token", "ok"]},
                other="s3cret-token and more")
    record = json.loads(lines(records)[0])
    assert (record["message"], record["apiKey"], record["plain"], record["nested"], record["other"]) == (
        "[redacted]", "[redacted]", "[redacted]", ["[redacted]", "ok"], "s3cret-token and more")


def test_the_token_as_a_field_name_a_subsystem_or_in_a_stack_is_masked(pipe_records):
    """Where pack code's record holds the token whole: a key, a subsystem, an error's message (and so
    its stack, which quotes the message)."""
    make, lines = pipe_records
    records = make()
    records.token = kpm.TokenCheck(kpm.sha256(b"s3cret-token").digest(), len("s3cret-token"))
    logger = kpm.PackLogger(records, "pack.tool").child(subsystem="s3cret-token")
    try:
        raise ValueError("s3cret-token")
    except ValueError as exc:
        logger.error("failed", {"s3cret-token": 1, "nested": {"s3cret-token": 2}}, err=exc)
    line = lines(records)[0]
    assert "s3cret-token" not in line, line
    record = json.loads(line)
    assert (record["subsystem"], record["[redacted]"], record["nested"]) == ("[redacted]", 1, {"[redacted]": 2})
    assert record["err"]["message"] == "[redacted]" and "ValueError: [redacted]" in record["err"]["stack"]


@pytest.mark.parametrize("key", ["token", "accessToken", "refresh_token", "password", "DB_PASSWD", "pass_word",
                                 "Pass-Phrase", "clientSecret", "secrets", "x-api-key", "API_KEY", "private_key",
                                 "authorization", "Set-Cookie", "credentials",
                                 "secretKey", "passwordHash", "apiKeyId"])   # the last three: the SDK writes them
def test_secret_looking_keys(key):
    assert kpm.is_secret_key(key)


@pytest.mark.parametrize("key", ["tokens", "promptTokens", "tokenizer", "tokenId", "sessionId", "key", "author"])
def test_keys_that_only_look_a_little_secret(key):
    assert not kpm.is_secret_key(key)


@pytest.mark.parametrize("text, scrubbed", [
    ("Authorization: Bearer abc.def-1", "Authorization: Bearer [redacted]"),
    ("bearer   x,y", "bearer [redacted],y"),
    ("Bearer a then bearer b", "Bearer [redacted] then bearer [redacted]"),
    ("postgres://app:pw@db:5432/x and https://u:p@h/", "postgres://app:***@db:5432/x and https://u:***@h/"),
    ("kgi_bt_0123456789abcdefWXYZ kgi_ak_short kgi_lrk_x", "kgi_bt_\u2026WXYZ kgi_ak_\u2026 kgi_lrk_\u2026"),
    ("no secrets: https://host/path, kgi_x_y, Bearer", "no secrets: https://host/path, kgi_x_y, Bearer"),
    ("-https://u:p@h x_ftp://u:p@h", "-https://u:***@h x_ftp://u:***@h"),
    ("redis://:s3cret@cache:6379/0", "redis://:***@cache:6379/0"),   # a password with no user name
])
def test_known_shapes_of_secrets_are_masked(text, scrubbed):
    assert kpm.scrub_text(text) == scrubbed


def test_masking_a_long_string_takes_linear_time():
    """A URL's scheme was looked for from every letter of "a.a.a…": 400,000 such characters held
    the interpreter for minutes (and so the whole service).  Linear, they take milliseconds."""
    done = subprocess.run([sys.executable, "-c", "import kindgi_pack_min as k; k.scrub_text('a.' * 200000)"],
                          cwd=ROOT, timeout=60)
    assert done.returncode == 0


def test_fields_are_copied_with_cycles_depth_and_times_as_the_sdk_writes_them():
    loop = [1]
    loop.append(loop)
    shared = {"n": 1}
    deep = {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}}}}}}}
    at = datetime.datetime(2026, 1, 2, 3, 4, 5, 6000, datetime.timezone(datetime.timedelta(hours=-2)))
    fields = {"loop": loop, "twice": [shared, shared], "deep": deep, "at": at, "naive": datetime.datetime(2026, 1, 2),
              "pair": (1, "Bearer q"), "secretKey": {"nested": 1}, "obj": ValueError("Bearer z"),
              "numbers": [float("nan"), float("-inf"), 1.5, 10 ** 5000]}
    assert kpm.redact_fields(fields) == {
        "loop": [1, "[circular]"], "twice": [{"n": 1}, {"n": 1}],
        "deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": "[too deep]"}}}}}}},
        "at": "2026-01-02T05:04:05.006Z", "naive": "2026-01-02T00:00:00.000Z",
        "pair": [1, "Bearer [redacted]"], "secretKey": "[redacted]", "obj": "Bearer [redacted]",
        "numbers": [None, None, 1.5, "[an integer of 16610 bits, too long to write]"]}


def test_an_error_carries_its_code_and_what_it_was_raised_from():
    class Coded(Exception):
        code = 404

    try:
        try:
            raise KeyError("kgi_sk_0123456789abcdefWXYZ")
        except KeyError as exc:
            raise Coded("see postgres://a:b@c") from exc
    except Coded as exc:
        fields = kpm.redact_fields(kpm.error_fields(exc, with_stack=True))
        without_stack = kpm.error_fields(exc, with_stack=False)
    assert (fields["name"], fields["message"], fields["code"]) == ("Coded", "see postgres://a:***@c", "404")
    assert fields["cause"]["message"] == "'kgi_sk_\u2026WXYZ'" and "0123456789" not in fields["stack"]
    assert "stack" not in without_stack and "stack" not in without_stack["cause"]


def test_a_log_call_never_fails_the_pack_code_that_makes_it(pipe_records):
    """Fields that are not a dict, a name or a message whose ``str()`` raises, an integer too long
    to write: the SDK's logger loses such records; here each is written, and nothing raises."""
    class Unprintable:
        def __str__(self):
            raise SystemExit("no")

    make, lines = pipe_records
    records = make()
    logger = kpm.PackLogger(records, "pack.tool")
    logger.info("listed", [1, 2])
    logger.info(Unprintable(), {Unprintable(): 10 ** 5000})
    listed, unprintable = [json.loads(line) for line in lines(records)]
    assert listed["fields"] == [1, 2]
    assert unprintable["message"] == "<Unprintable with an unprintable message>"
    assert unprintable["<Unprintable with an unprintable message>"].startswith("[an integer of")


def test_a_log_call_with_values_whose_own_methods_raise_is_written(pipe_records):
    """Pack code's subclasses whose comparisons, iteration, search or text raise: the log call
    raised into the handler (a ``handler-throw`` with the service's stack); the record is
    written with what can be read of them."""
    class Touchy(float):
        def __eq__(self, other):
            raise RuntimeError("compared")
        __hash__ = float.__hash__

    class Big(int):
        def __lt__(self, other):
            raise RuntimeError("compared")
        __gt__ = __lt__

    class Items(dict):
        def items(self):
            raise RuntimeError("items")

    class NoIter(list):
        def __iter__(self):
            raise RuntimeError("iterated")

    class Sly(str):
        def __contains__(self, part):
            raise RuntimeError("searched")

        def __str__(self):
            raise RuntimeError("no text")

    class Spoken:
        def __str__(self):
            return Sly("spoken")

    class ClassRaises:
        @property
        def __class__(self):
            raise RuntimeError("looked at")

    make, lines = pipe_records
    records = make()
    logger = kpm.PackLogger(records, "pack.tool")
    logger.info(Spoken(), {"float": Touchy(1.5), "int": Big(7), "items": Items(a=1), "list": NoIter([1]),
                           "text": Sly("plain"), "odd": ClassRaises()}, err=ClassRaises())
    [record] = [json.loads(line) for line in lines(records)]
    assert (record["message"], record["float"], record["int"], record["text"]) == ("spoken", 1.5, 7, "plain")
    assert (record["items"], record["list"]) == ("{'a': 1}", "[1]")   # their text
    assert "ClassRaises object at" in record["odd"] and "ClassRaises object at" in record["err"]


def test_a_log_call_takes_a_message_and_fields_by_position_and_any_name_by_keyword(pipe_records):
    make, lines = pipe_records
    records = make()
    logger = kpm.PackLogger(records, "pack.tool")
    for bad in [(), ("m", {}, {})]:
        with pytest.raises(TypeError, match=r"info\(\) takes a message and an optional dict of fields"):
            logger.info(*bad)
    logger.info("m", {"a": 1}, level="l", message="n", self="s", in_message=["a"])
    kpm.NoopLogger().info("m", level="l", message="n", self="s")
    record = json.loads(lines(records)[0])
    assert (record["a"], record["self"], record["fields"], record["inMessage"]) == (
        1, "s", {"level": "l", "message": "n"}, ["a"])


def test_a_subsystem_that_is_not_a_non_empty_string_is_root(pipe_records):
    """As the SDK's logger takes ``child(subsystem=None)``, ``get_logger("")``: never an empty or
    made-up subsystem."""
    make, lines = pipe_records
    records = make()
    logger = kpm.PackLogger(records, "pack.tool")
    for subsystem in (None, "", 5):
        logger.child(subsystem=subsystem).info("m")
    kpm.PackLogger(records, "").info("m")
    logger.child(subsystem="mine").info("m")
    assert [json.loads(line)["subsystem"] for line in lines(records)] == ["root"] * 4 + ["mine"]


def test_a_loggers_is_level_enabled_follows_its_own_subsystems_level():
    records = kpm.Records(2, level="warn", levels={"pack.tool": "debug"})
    tool, pack = kpm.PackLogger(records, "pack.tool.db"), kpm.PackLogger(records, "pack")
    assert [tool.is_level_enabled(level) for level in kpm.LEVELS] == [True, True, True, True, False]
    assert [pack.is_level_enabled(level) for level in kpm.LEVELS] == [True, True, False, False, False]
    assert tool.child(subsystem="pack").is_level_enabled("info") is False
    assert not tool.is_level_enabled("loud") and not kpm.NoopLogger().is_level_enabled("error")


def test_the_table_of_enabled_levels_stays_small_whatever_subsystems_pack_code_names():
    records = kpm.Records(2, level="warn", levels={"pack": "debug"})
    answers = [records.enabled("info", "pack.sub%d" % number) for number in range(300)]
    assert answers == [True] * 300 and not records.enabled("info", "other")
    assert len(records.known) <= 256


def test_a_records_time_is_utc_to_the_millisecond_in_json_and_pretty_lines(pipe_records, monkeypatch):
    make, lines = pipe_records
    records = make()
    monkeypatch.setattr(kpm.time, "time", lambda: 1767225600.25)   # 2026-01-01T00:00:00.250Z
    records.write("info", "json")
    records.pretty = True
    records.write("warn", "pretty")
    monkeypatch.undo()
    json_line, pretty_line = lines(records)
    assert json.loads(json_line)["time"] == "2026-01-01T00:00:00.250Z"
    assert pretty_line == "00:00:00.250 WARN  pack pretty"


def test_an_errors_causes_are_written_three_deep():
    try:
        try:
            try:
                try:
                    raise ValueError("4")
                except ValueError as exc:
                    raise ValueError("3") from exc
            except ValueError as exc:
                raise ValueError("2") from exc
        except ValueError as exc:
            raise ValueError("1") from exc
    except ValueError as exc:
        fields = kpm.error_fields(exc, with_stack=False)
    messages = []
    while fields is not None:
        messages.append(fields["message"])
        fields = fields.get("cause")
    assert messages == ["1", "2", "3", "4"]


def test_an_err_has_its_stack_at_error_or_when_its_subsystem_debugs(pipe_records):
    make, lines = pipe_records
    records = make(levels={"pack.debugging": "debug"})
    try:
        raise ValueError("boom")
    except ValueError as exc:
        kpm.PackLogger(records, "pack").info("quiet", err=exc)
        kpm.PackLogger(records, "pack").error("loud", err=exc)
        kpm.PackLogger(records, "pack.debugging").info("debugging", err=exc)
    quiet, loud, debugging = [json.loads(line)["err"] for line in lines(records)]
    assert "stack" not in quiet and "ValueError: boom" in loud["stack"] and "ValueError: boom" in debugging["stack"]


def test_in_message_names_only_the_fields_the_record_has_but_never_err(pipe_records):
    make, lines = pipe_records
    records = make()
    kpm.PackLogger(records, "pack").info("m", {"a": 1}, err=ValueError("e"), in_message=["err", "a", "missing"])
    assert json.loads(lines(records)[0])["inMessage"] == ["a"]


def test_a_long_record_wakes_the_writer_at_once_and_a_short_one_lets_a_batch_gather():
    records = kpm.Records(2)
    records.writer = object()   # as if serving: records wait for the writer thread (not started here)
    idle, woken = threading.Event(), []

    def wait_as_the_idle_writer_does():
        with records.queue_lock:
            idle.set()   # the lock is let go only inside the wait: the record below comes after it
            woken.append(records.wake.wait(10))

    thread = threading.Thread(target=wait_as_the_idle_writer_does)
    thread.start()
    assert idle.wait(10)
    records.write("info", "short")
    thread.join(10)
    assert woken == [True] and not records.hurried
    records.write("info", "x" * kpm.LONG_RECORD)
    assert records.hurried and len(records.waiting) == 2


def test_pack_codes_text_waits_among_the_records_while_a_batch_is_written(pipe_records, capfd):
    """While the records' lock is held (the writer thread writing a batch), pack code's text joins
    the records waiting, and its write returns once the text is out.  Waiting for the lock
    instead, a pack thread lost it to the writer thread's next batch again and again: 2 lines
    in 2 s under a heavy load of records."""
    make, _ = pipe_records
    records = make()
    assert records.start_writer()
    stream = kpm.PackStderr(records, None)
    returned = threading.Event()
    pack_thread = threading.Thread(target=lambda: (stream.write(b"a line\n"), returned.set()), daemon=True)
    with records.lock:   # as the writer thread holds it while it writes
        pack_thread.start()
        deadline = time.monotonic() + 10
        while records.waiting != [b"a line\n"] and time.monotonic() < deadline:
            time.sleep(0.005)
        assert records.waiting == [b"a line\n"] and not returned.is_set()
    assert returned.wait(10) and records.texts_written == records.texts_queued == 1
    records.stop_writer()
    assert capfd.readouterr().err == "a line\n"   # pack code's text goes to descriptor 2


def test_the_writer_thread_lives_on_after_a_batch_fails(pipe_records):
    """A batch whose write fails (MemoryError, say) is lost and reported, and pack code's text in
    it waits no more; the records after it are written.  The thread died with the batch: every
    record after it waited in vain, and pack code's write spun for ever."""
    make, lines = pipe_records
    records = make()
    failures = [MemoryError("no room for the batch")]
    write_entry = records._write_entry

    def fail_once(data, kind):
        if failures:
            raise failures.pop()
        write_entry(data, kind)

    records._write_entry = fail_once
    assert records.start_writer()
    stream = kpm.PackStderr(records, None)
    returned = threading.Event()
    pack_thread = threading.Thread(target=lambda: (stream.write(b"lost text\n"), returned.set()), daemon=True)
    with records.lock:   # the record and the text wait together, for the batch that fails
        records.write("info", "lost with its batch")
        pack_thread.start()
        deadline = time.monotonic() + 10
        while len(records.waiting) < 2 and time.monotonic() < deadline:
            time.sleep(0.005)
    assert returned.wait(10), "pack code's write still waits for its text"
    deadline = time.monotonic() + 10
    while records.queued < 2 and time.monotonic() < deadline:   # the report joins what waits
        time.sleep(0.005)
    records.write("info", "after")
    while records.written < 3 and time.monotonic() < deadline:
        time.sleep(0.005)
    records.stop_writer()
    written = [json.loads(line) for line in lines(records)]
    assert [(r["message"], r.get("event")) for r in written] == [
        ("Writing records failed inside the service: MemoryError: no room for the batch", "service-error"),
        ("after", None)], written
    assert "fail_once" in written[0]["stack"]


PACK_TEXT_IS_OUT_WHEN_THE_WRITE_RETURNS = r"""
import json, os, sys
sys.path.insert(0, sys.argv[1])
import kindgi_pack_min as kpm

read_end, write_end = os.pipe()
os.dup2(write_end, 2)   # pack code's sys.stderr writes to descriptor 2
os.set_blocking(read_end, False)
records = kpm.Records(write_end)
kpm.pack_stderr(records)
assert records.start_writer()   # serving: records wait for the writer thread
kpm.PackLogger(records).info("a record that gathers for 20 ms")
seen = []
for n in range(20):
    sys.stderr.write("line %d\n" % n)          # line buffered: written, then flushed
    sys.stderr.buffer.write(b"raw %d," % n)     # the layer itself
    out = b""
    while True:
        try:
            out += os.read(read_end, 65536)
        except BlockingIOError:
            break
    seen.append(out.decode())
print(json.dumps(seen))
"""


def test_pack_codes_text_is_out_when_its_write_returns():
    """As from a plain stream: a line written just before a crash, ``os._exit`` or a close of
    descriptor 2 is not lost (nor written, after the close, to what takes the descriptor's number
    next).  Once serving, records wait for the writer thread; the write still returns once its
    text is out, after them."""
    done = subprocess.run([os.environ.get("KINDGI_TEST_PYTHON") or sys.executable, "-c",
                           PACK_TEXT_IS_OUT_WHEN_THE_WRITE_RETURNS, str(ROOT)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout.decode())
    assert [chunk.endswith("line %d\nraw %d," % (n, n)) for n, chunk in enumerate(seen)] == [True] * 20, seen
    assert '"a record that gathers for 20 ms"' in seen[0], seen[0]   # out with the text, in its order


def test_a_write_that_goes_through_ends_the_stuck_state(pipe_records):
    """Found stuck, the next record is dropped at once; once stderr takes a write again, records wait
    for room again instead."""
    make, lines = pipe_records
    records = make()
    records.stuck = True
    records.write("info", "taken", always=True)
    assert records.stuck is False and records.writes == 1
    assert [json.loads(line)["message"] for line in lines(records)] == ["taken"]


def test_records_that_cant_be_written_count_as_written_out_once_stderr_took_nothing_for_a_while(monkeypatch):
    """The drain waits for the records, but not for ever for a stuck stderr."""
    import time
    monkeypatch.setattr(kpm, "STUCK_STDERR_SECONDS", 0.2)
    records = kpm.Records(2)
    assert records.written_out()
    records.writer = object()   # as if serving: the record waits for the writer thread (not started here)
    records.write("info", "waits")
    assert not records.written_out()
    time.sleep(0.1)
    records.writes += 1   # stderr took a write: it is slow, not stuck
    assert not records.written_out()
    time.sleep(0.15)
    assert not records.written_out()
    time.sleep(0.1)
    assert records.written_out()


def test_last_words_go_on_a_line_of_their_own_when_stderr_is_stuck_mid_record(pipe_records):
    make, lines = pipe_records
    records = make()
    stuck, done = threading.Event(), threading.Event()

    def write_half_a_record():   # another thread: the lock is one its own thread may take again
        with records.lock:   # a write stuck mid-record holds it
            os.write(records.fd, b'{"half a record')
            stuck.set()
            done.wait(10)

    holder = threading.Thread(target=write_half_a_record)
    holder.start()
    assert stuck.wait(10)
    records.write("info", "Stopped", event="stopped", always=True, lock_timeout=0.05)
    done.set()
    holder.join(10)
    half, stopped = lines(records)
    assert half == '{"half a record' and json.loads(stopped)["event"] == "stopped"


WRITES_FROM_A_SIGNAL_HANDLER_AMID_WRITES = r"""
import os, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
import kindgi_pack_min as kpm

read_end, write_end = os.pipe()
os.dup2(write_end, 2)   # pack code's sys.stderr writes to descriptor 2
records = kpm.Records(write_end)
kpm.pack_stderr(records)
log = kpm.PackLogger(records)
if sys.argv[2] == "serving":   # the writes wait for the writer thread
    assert records.start_writer()
done = False
threading.Thread(target=lambda: [None for _ in iter(lambda: os.read(read_end, 65536), b"")], daemon=True).start()

def tick(signum, frame):
    sys.stderr.write("h" * 9000 + "\n")
    log.info("tick from the handler", blob="t" * 9000)
    if not done:
        signal.setitimer(signal.ITIMER_REAL, 0.003)   # once the handler is done: handlers never nest

signal.signal(signal.SIGALRM, tick)
signal.setitimer(signal.ITIMER_REAL, 0.003)
end = time.monotonic() + 1.5
while time.monotonic() < end:
    sys.stderr.write("w" * 9000 + "\n")
    log.info("a record")
done = True
signal.setitimer(signal.ITIMER_REAL, 0)
print("done")
"""


@pytest.mark.parametrize("when", ["boot", "serving"])
def test_a_signal_handler_that_writes_amid_a_write_to_stderr_does_not_hang(when):
    """Under the service's interpreter: a handler run every 3 ms writes a long line to sys.stderr
    and logs, amid the main thread's own.  At the boot, run just after the records' lock was taken,
    before it was marked as that thread's, it waited for that lock for ever; serving, run amid an
    Event's set() that woke the writer thread, it waited for ever for the Event's own lock."""
    try:
        done = subprocess.run([os.environ.get("KINDGI_TEST_PYTHON") or sys.executable, "-c",
                               WRITES_FROM_A_SIGNAL_HANDLER_AMID_WRITES, ROOT, when], stdout=subprocess.PIPE,
                              timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("the writes hung")
    assert done.stdout == b"done\n"


def test_a_record_its_own_thread_cant_queue_is_dropped_and_counted():
    """A finalizer the collector runs in a thread that holds the queue's lock: its record is
    dropped after the wait, not waited for for ever."""
    records = kpm.Records(2)
    records.writer = object()
    with records.queue_lock:
        records.write("warn", "from a task's __del__", lock_timeout=0.05)
    assert (records.dropped, records.waiting) == (1, [])


def test_a_childs_records_carry_its_ancestors_bindings_and_warning_is_warn(pipe_records):
    make, lines = pipe_records
    records = make()
    kpm.PackLogger(records, "pack", {"a": 1}).child({"b": 2}).child(c=3).warning("m")
    record = json.loads(lines(records)[0])
    assert (record["level"], record["a"], record["b"], record["c"]) == ("warn", 1, 2, 3)


def test_a_no_op_loggers_children_write_nothing_either():
    noop = kpm.NoopLogger()
    child = noop.child({"a": 1}, b=2)
    child.info("m", {"x": 1})
    child.warning("m")
    assert child is noop and not child.is_level_enabled("error")


def test_an_errors_code_is_text_or_a_number_never_a_flag():
    class Flagged(Exception):
        code = True

    class Numbered(Exception):
        code = 7

    assert "code" not in kpm.error_fields(Flagged("x"), with_stack=False)
    assert kpm.error_fields(Numbered("x"), with_stack=False)["code"] == "7"


def test_a_naive_datetime_is_taken_as_utc_whatever_the_local_zone(monkeypatch):
    import time
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        written = kpm.redact_fields(datetime.datetime(2026, 1, 2, 3, 4, 5))
    finally:
        monkeypatch.undo()
        time.tzset()
    assert written == "2026-01-02T03:04:05.000Z"


def test_the_records_waiting_are_bounded_in_number():
    records = kpm.Records(2)
    records.writer = object()
    records.stuck = True   # found stuck: a record with no room is dropped at once
    for number in range(kpm.MAX_WAITING_RECORDS + 2):
        records.write("info", "record %d" % number)
    assert (len(records.waiting), records.dropped) == (kpm.MAX_WAITING_RECORDS, 2)


def test_a_forked_child_writes_its_records_at_once_without_the_parents_writer(pipe_records):
    make, lines = pipe_records
    records = make()
    records.writer = object()
    records.waiting.append(b'{"message":"the parent\'s"}\n')
    records.after_fork()
    records.write("info", "the child's")
    assert [json.loads(line)["message"] for line in lines(records)] == ["the child's"]


def test_errors_in_a_records_fields_are_written_as_errors_and_err_comes_last(pipe_records):
    make, lines = pipe_records
    records = make()
    kpm.PackLogger(records, "pack").info("m", {"failure": ValueError("bad")}, err=KeyError("k"), after=1)
    record = json.loads(lines(records)[0])
    assert record["failure"] == {"name": "ValueError", "message": "bad"}
    assert list(record)[-2:] == ["after", "err"] and record["err"]["name"] == "KeyError"


def test_a_service_error_masks_the_secrets_pack_code_put_in_it(pipe_records):
    make, lines = pipe_records
    service = object.__new__(kpm.PackService)   # only what failed() uses
    service.records = make()
    body = service.failed(ValueError("Bearer abc"), "Writing the answer")
    record = json.loads(lines(service.records)[0])
    assert record["message"] == "Writing the answer failed inside the service: ValueError: Bearer [redacted]"
    assert "abc" not in record["stack"] and body == kpm.error_body("ValueError: Bearer abc")   # the answer: as thrown


# -- the stand-in kindgi module -------------------------------------------------

def test_a_cancellations_first_reason_wins_and_every_waiter_sees_it():
    cancellation = kpm.Cancellation()
    cancellation.cancel("deadline-exceeded")
    cancellation.cancel("cancelled")
    assert cancellation.wait(0) is True and cancellation.reason == "deadline-exceeded"
    with pytest.raises(kpm.CallCancelled) as raised:
        cancellation.raise_if_cancelled()
    assert (raised.value.reason, str(raised.value)) == ("deadline-exceeded", "deadline-exceeded")


def test_every_callback_runs_once_though_one_raises_system_exit():
    cancellation = kpm.Cancellation()
    ran = []

    def leaves(reason):
        ran.append("leaves")
        raise SystemExit(3)

    cancellation.add_callback(leaves)
    cancellation.add_callback(ran.append)
    cancellation.cancel("cancelled")
    cancellation.cancel("cancelled")
    cancellation.add_callback(ran.append)   # already cancelled: at once
    assert ran == ["leaves", "cancelled", "cancelled"]


def test_every_wait_async_wakes_on_cancel():
    import asyncio
    import threading
    cancellation = kpm.Cancellation()

    async def both():
        return await asyncio.wait_for(asyncio.gather(cancellation.wait_async(), cancellation.wait_async()), 5)

    loop = asyncio.new_event_loop()
    threading.Timer(0.05, cancellation.cancel, ("cancelled",)).start()
    try:
        reasons = loop.run_until_complete(both())
    finally:
        loop.close()
    assert reasons == ["cancelled", "cancelled"]


def test_a_tool_contexts_fields_and_mappings_cant_be_changed():
    ctx = kpm.ToolContext.from_wire({"tenantId": "t", "runId": "r", "env": {"A": "1"}, "secrets": {"S": "s"},
                                     "config": {"c": 1}, "settings": {"s": 1}}, kpm.Cancellation())
    for name in ("env", "secrets", "config", "settings"):
        with pytest.raises(TypeError):
            getattr(ctx, name)["new"] = 1
    with pytest.raises(AttributeError, match="cannot assign to field 'tenant_id'"):   # FrozenInstanceError is one
        ctx.tenant_id = "other"
    with pytest.raises(AttributeError, match="cannot delete field 'run_id'"):
        del ctx.run_id
    assert (ctx.tenant_id, ctx.run_id, dict(ctx.env)) == ("t", "r", {"A": "1"})


def test_records_list_defaults_are_their_own_and_compare_only_with_their_kind():
    first, second = kpm.RunTrace(run_id="r", tenant_id="t"), kpm.RunTrace(run_id="r", tenant_id="t")
    first.tool_calls.append("made by one")
    assert (second.tool_calls, second.tool_results, second.model_calls) == ([], [], [])
    assert first != second and kpm.RunTrace(run_id="r", tenant_id="t") == second
    assert kpm.CheckResult(passed=True) != {"passed": True}
    assert kpm.RunTrace(run_id="r", tenant_id="t") != kpm.CheckResult(passed=True)


def test_a_fields_wire_name_wins_over_its_python_name_which_is_kept_as_an_extra():
    """As pydantic takes a model's alias and its field name both given."""
    result = kpm.CheckResult(passed=True, judgeResponse="wire", judge_response="python")
    assert (result.judge_response, result.to_wire()) == (
        "wire", {"passed": True, "judgeResponse": "wire", "judge_response": "python"})
    trace = kpm.RunTrace.model_validate({"runId": "wire", "run_id": "python", "tenantId": "t"})
    assert (trace.run_id, trace.model_extra) == ("wire", {"run_id": "python"})


def test_a_traces_mode_is_ci_or_runtime_only():
    assert kpm.RunTrace(run_id="r", tenant_id="t", mode="ci").mode == "ci"
    with pytest.raises(kpm.ValidationError, match="Input should be 'ci' or 'runtime'"):
        kpm.RunTrace(run_id="r", tenant_id="t", mode="test")


def test_none_is_refused_where_a_field_has_a_default_that_is_not_none():
    for sent in ({"toolCalls": None}, {"mode": None}):
        with pytest.raises(kpm.ValidationError):
            kpm.RunTrace.from_wire(dict(TRACE_IDS, **sent))
    with pytest.raises(kpm.ValidationError):
        kpm.CheckResult(passed=None)
    assert kpm.RunTrace.from_wire(dict(TRACE_IDS, output=None)).output is None


def test_a_check_results_nan_is_kept_in_python_and_null_on_the_wire():
    result = kpm.CheckResult(passed=True, attributes={"r": float("nan")})
    assert math.isnan(result.model_dump()["attributes"]["r"])
    assert result.to_wire() == {"passed": True, "attributes": {"r": None}}


def test_a_copied_tool_context_has_every_field():
    import copy
    ctx = kpm.ToolContext.for_test(request_id="q", project_id="p", org_id="o", env={"E": "1"}, secrets={"S": "s"},
                                   config={"c": 1}, settings={"s": 2}, idempotency_key="k")
    copied = copy.copy(ctx)
    assert [getattr(copied, name) for name in kpm.ToolContext.__slots__] == [
        getattr(ctx, name) for name in kpm.ToolContext.__slots__]


def _check(config, trace):
    return kpm.CheckResult(passed=True)


@pytest.mark.parametrize("arguments, check, message", [
    ({"id": "mine", "check_id": "must-cite", "on_violation": "block"}, _check,
     'its check id "must-cite" is a built-in check\'s'),
    ({"id": "g", "on_violation": "block", "action": {"on-violation": "block"}}, _check,
     "pass exactly one of on_violation= or action="),
    ({"id": "g"}, _check, "pass exactly one of on_violation= or action="),
    ({"id": "g", "action": {"on-violation": 3}}, _check, 'action needs a string "on-violation"'),
    ({"id": "g", "on_violation": "block"}, lambda config, trace, more: None, "got 3 parameters"),
    ({"id": "g", "on_violation": "block"}, lambda config: None, "got 1 parameters"),
    ({"id": "   ", "on_violation": "block"}, _check, "id must be a non-empty string"),
])
def test_a_guardrail_is_refused_where_the_sdk_refuses_it(arguments, check, message):
    with pytest.raises(kpm.DefinitionError, match=re.escape(message)):
        kpm._standin_guardrail(**arguments)(check)


def test_a_guardrail_named_as_a_built_in_may_run_under_a_check_id_of_its_own():
    guardrail = kpm._standin_guardrail(id="must-cite", check_id="mine.checks.cite", on_violation="block")(_check)
    assert (guardrail.id, guardrail.check_id) == ("must-cite", "mine.checks.cite")


def test_a_tools_handler_takes_one_or_two_parameters():
    make = kpm._standin_tool(id="t", description="d", input={"type": "object"}, output={})
    assert [make(handler).takes_context for handler in (lambda input: 1, lambda input, ctx: 1)] == [False, True]
    for handler in (lambda: 1, lambda input, ctx, more: 1):
        with pytest.raises(kpm.DefinitionError, match="the handler takes"):
            make(handler)


# -- the stop ------------------------------------------------------------------

def test_the_drains_end_and_a_second_signal_say_stopped_once(monkeypatch):
    """A second signal gives up on the calls in flight, which ends the drain too: both threads
    then stop the process, and only one may write ``stopped``."""
    import threading
    import time

    class SlowRecords:   # a stderr that takes its time, so both stops meet at their last words
        def __init__(self):
            self.stopped = []
            self.lock = threading.RLock()

        def write(self, level, message, event=None, **kw):
            time.sleep(0.2)
            self.stopped.append(event)

        def stop_writer(self):
            pass

    exits = []
    monkeypatch.setattr(kpm.os, "_exit", exits.append)
    lifecycle = object.__new__(kpm.Lifecycle)   # no signal handlers, no thread: only what stop() uses
    lifecycle.lock = threading.Lock()
    lifecycle.exit_handlers_once = threading.Lock()
    lifecycle.last_words_once = threading.Lock()
    lifecycle.records = SlowRecords()
    lifecycle.service = None
    lifecycle.checking = False
    both = threading.Barrier(2)

    def stop():
        both.wait()
        lifecycle.stop(0)

    threads = [threading.Thread(target=stop) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert lifecycle.records.stopped == ["stopped"]
    assert exits == [0]


# -- configuration -------------------------------------------------------------

def test_every_configuration_problem_at_once():
    config, problems = kpm.read_config(["--host"], {"PORT": "x", "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": "0",
                                                    "KINDGI_PACK_ENV_CHECK": "lax", "KINDGI_PACK_ENV_FILTER": "maybe",
                                                    "KINDGI_PACK_TENANT_ID": "acme",
                                                    "KINDGI_PACK_MIN_TEST": "head=fast"})
    assert problems == [
        "--host needs an address", "KINDGI_PACK_SERVICE_TOKEN is required", 'PORT must be a port number, got "x"',
        "KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be a positive integer",
        'KINDGI_PACK_ENV_CHECK must be `strict` or `warn`, not "lax"',
        'KINDGI_PACK_ENV_FILTER must be `on` or `off`, not "maybe"',
        "KINDGI_PACK_TENANT_ID must be the tenant's id, a UUID such as 3f2b8c1e-4a5d-4e6f-9a0b-1c2d3e4f5a6b. "
        "Got a value that isn't one.",
        'KINDGI_PACK_MIN_TEST: "head=fast" is not a test setting this service knows']


def test_logging_variables_are_read_in_any_case_and_spacing():
    config = kpm.Config()
    assert kpm.read_log_config({"KINDGI_LOG_LEVEL": " WARN ", "KINDGI_LOG_LEVELS": " pack = DEBUG ,, pack.tool=Error ",
                                "KINDGI_LOG_FORMAT": " Pretty "}, config) is None
    assert (config.log_level, config.log_levels, config.log_format) == (
        "warn", {"pack": "debug", "pack.tool": "error"}, "pretty")
    assert kpm.read_log_config({"KINDGI_LOG_LEVELS": " =debug"}, kpm.Config()) == (
        'KINDGI_LOG_LEVELS: "=debug" isn\'t subsystem=level (levels: error, warn, info, debug, trace).')


@pytest.mark.parametrize("flag, action", [("--help", "help"), ("--version", "version")])
@pytest.mark.parametrize("variable, value", [("KINDGI_LOG_LEVEL", "loud"), ("KINDGI_LOG_LEVELS", "pack"),
                                             ("KINDGI_LOG_FORMAT", "xml"), ("PORT", "x")])
def test_help_and_version_answer_whatever_the_environment_holds(flag, action, variable, value):
    """A bad logging variable refused --help and --version (config-invalid, exit 1), where any
    other bad variable let them answer: the usage is what a user reads to fix the variable."""
    config, problems = kpm.read_config([flag], {variable: value})
    assert (config.action, problems) == (action, [])


def test_a_good_configuration():
    config, problems = kpm.read_config(
        ["--index", "/x/index.json", "--check"],
        {"KINDGI_PACK_SERVICE_TOKEN": " tok ", "PORT": "0", "KINDGI_PACK_TENANT_ID": " " + UUID.upper(),
         "KINDGI_PACK_MIN_TEST": "head=0.5,connections=7,gc=off"})
    assert problems == []
    assert (config.index_path, config.module_root, config.port, config.check_only) == ("/x/index.json", "/x", 0, True)
    assert config.tenant_id == UUID
    assert config.token.matches("tok") and not config.token.matches("tok ") and config.token.length == 3
    assert (config.limits.head, config.limits.body, config.max_connections, config.collect_garbage) == (
        0.5, 30.0, 7, False)
    assert kpm.Limits.head == 10.0, "a test setting changed the shipped limits"


@pytest.mark.parametrize("entry", ["head=0", "body=-1", "connections=0", "gc=no", "nothing=1",
                                   "exit_handlers=1e10", "drain=inf", "silence=nan"])
def test_a_test_setting_must_be_known_and_positive(entry):
    """And a limit at most an hour: ``exit_handlers=1e10`` overflowed a wait's deadline into a
    traceback after ``check-passed``."""
    assert kpm.read_test_settings(entry, kpm.Config()) == (
        'KINDGI_PACK_MIN_TEST: "%s" is not a test setting this service knows' % entry)


def test_the_index_argument_wins_over_the_variable_wherever_it_stands():
    environ = {"KINDGI_PACK_SERVICE_TOKEN": "t", "KINDGI_PACK_INDEX": "/from-env/index.json"}
    for argv in (["--index", "/x/index.json", "--host", "h"], ["--host=h", "--index=/x/index.json", "--check"]):
        config, problems = kpm.read_config(argv, environ)
        assert (config.index_path, config.module_root, problems) == ("/x/index.json", "/x", [])
    assert kpm.read_config(["--host", "h"], environ)[0].index_path == "/from-env/index.json"


def test_a_port_is_at_most_65535():
    config, problems = kpm.read_config([], {"KINDGI_PACK_SERVICE_TOKEN": "t", "PORT": "65535"})
    assert (config.port, problems) == (65535, [])
    _, problems = kpm.read_config([], {"KINDGI_PACK_SERVICE_TOKEN": "t", "PORT": "65536"})
    assert problems == ['PORT must be a port number, got "65536"']


def test_a_flag_is_not_taken_for_the_value_of_the_one_before():
    config, problems = kpm.read_config(["--index", "--check", "--host", "--module-root", "-x"],
                                       {"KINDGI_PACK_SERVICE_TOKEN": "t"})
    assert problems == ["--index needs a path", "--host needs an address"]
    assert (config.check_only, config.index_path, config.host, config.module_root) == (
        True, "/app/index.json", "", "-x")


@pytest.mark.parametrize("argv, action", [(["--version", "--help"], "version"), (["-h", "--version"], "help")])
def test_the_first_of_help_and_version_is_answered(argv, action):
    assert kpm.read_config(argv, {})[0].action == action


def test_numbers_of_any_length_are_read_without_converting_them():
    # Python 3.11+ refuses to convert 4,300 digits or more: a traceback at boot before this.
    many = "9" * 5000
    _, problems = kpm.read_config([], {"KINDGI_PACK_SERVICE_TOKEN": "t", "PORT": many})
    assert problems == ["PORT must be a port number, got %s" % json.dumps(many)]
    config, problems = kpm.read_config([], {"KINDGI_PACK_SERVICE_TOKEN": "t", "PORT": "0" * 5000 + "8081",
                                            "KINDGI_PACK_SERVICE_MAX_CONCURRENCY": many})
    assert problems == [] and config.port == 8081 and config.max_concurrency == kpm.MANY
    assert [kpm.read_decimal(text) for text in ("0", "007", "1" * 18, "1" * 19, "+1", "1.0", "\u0661", "")] == [
        0, 7, int("1" * 18), kpm.MANY, None, None, None, None]


def test_the_id_no_tenant_has_is_refused():
    _, problems = kpm.read_config([], {"KINDGI_PACK_SERVICE_TOKEN": "t",
                                       "KINDGI_PACK_TENANT_ID": "00000000-0000-4000-8000-000000000000"})
    assert problems == ["KINDGI_PACK_TENANT_ID is 00000000-0000-4000-8000-000000000000, the id no tenant has: "
                        "no pack call carries it. Set the tenant's own id."]


def test_a_handoff_brings_the_digest_not_the_token():
    check = kpm.TokenCheck(kpm.sha256(b"tok").digest(), 3)
    config, problems = kpm.read_config([], {}, dict(check.handoff(), dropped=["A"], index=7, indexDigest="00"))
    assert problems == [] and config.token.matches("tok") and config.dropped == ["A"]
    assert config.handed_index == (7, "00")
    assert "tok" not in json.dumps(check.handoff())


@pytest.mark.parametrize("memfd", ["there", "missing", "refused"])
def test_the_index_is_handed_over_in_an_anonymous_copy(monkeypatch, memfd):
    """The re-executed image gets the bytes the first one read, in an anonymous copy (an unlinked
    temporary file where os.memfd_create is missing, before Python 3.8, or refused)."""
    def refused(name, flags=0):
        raise PermissionError(1, "Operation not permitted")
    if memfd == "missing":
        monkeypatch.delattr(os, "memfd_create", raising=False)
    elif memfd == "refused":
        monkeypatch.setattr(os, "memfd_create", refused, raising=False)
    fd = kpm.hand_over_index(b'{"packId": "p"}')
    assert os.get_inheritable(fd) and os.fstat(fd).st_nlink == 0
    assert kpm.read_handed_index(fd, kpm.sha256(b'{"packId": "p"}').hexdigest()) == b'{"packId": "p"}'
    with pytest.raises(OSError):
        os.fstat(fd)   # closed once read


def test_a_handed_over_index_must_be_the_anonymous_copy_with_its_digest(tmp_path):
    digest = kpm.sha256(b"{}").hexdigest()
    fd = kpm.hand_over_index(b"{}")
    assert kpm.read_handed_index(fd, kpm.sha256(b"{ }").hexdigest()) == (
        "Cannot read the pack index handed over by the first image: its bytes changed")
    named = tmp_path / "index.json"
    named.write_bytes(b"{}")
    with open(str(named), "rb") as f:
        assert kpm.read_handed_index(f.fileno(), digest) == (
            "Cannot read the pack index handed over by the first image: descriptor %d is not its copy" % f.fileno())
        os.fstat(f.fileno())   # left open: it is not the service's
    assert kpm.read_handed_index(fd, digest).startswith(
        "Cannot read the pack index handed over by the first image: [Errno 9]")


def test_an_index_that_cant_be_handed_over_fails_the_boot_instead_of_re_executing(monkeypatch):
    def full(raw):
        raise OSError(28, "No space left on device")
    execs = []
    monkeypatch.delenv(kpm.TOKEN_VAR, raising=False)
    monkeypatch.setattr(kpm, "scrub_environ_block", lambda names: False)
    monkeypatch.setattr(kpm, "hand_over_index", full)
    monkeypatch.setattr(kpm, "reexec_with", lambda handoff, argv: execs.append(handoff))
    config, _ = kpm.read_config(["--index", "/dev/stdin"], {"KINDGI_PACK_SERVICE_TOKEN": "tok",
                                                           "KINDGI_PACK_ENV_FILTER": "off"})
    assert kpm.hide_secrets(config, ["kindgi_pack_min.py"], None, b"{}") == (
        [], "Cannot hand the pack index over to the re-executed service: [Errno 28] No space left on device")
    assert execs == []


def test_a_handoff_larger_than_a_pipe_is_written_whole_without_waiting():
    """A large environment's dropped names (Kubernetes' service links: thousands) took more than
    the pipe's 64 KiB: the write waited for a reader that comes only after the exec, for ever."""
    check = kpm.TokenCheck(kpm.sha256(b"tok").digest(), 3)
    names = ["SERVICE_%05d_PORT_8080_TCP_ADDR" % i for i in range(8000)]   # 300 KiB of JSON
    read_end = kpm.write_handoff(dict(check.handoff(), dropped=names, index=0, indexDigest="00"))
    assert kpm.receive_handoff({kpm.HANDOFF_VAR: str(read_end)})["dropped"] == names
    with pytest.raises(OSError):
        os.fstat(read_end)   # closed once read


@pytest.mark.parametrize("value", ["99999999999999999999", "-5", "x", ""])
def test_a_handoff_variable_that_names_no_descriptor_is_ignored(value):
    """One past a C int raised OverflowError: a traceback at start."""
    environ = {kpm.HANDOFF_VAR: value}
    assert kpm.receive_handoff(environ) is None and environ == {}


def test_a_handed_over_index_past_a_c_int_is_a_problem_not_a_traceback():
    assert kpm.read_handed_index(1 << 70, "00").startswith("Cannot read the pack index handed over by the first image: ")


def test_a_handoff_the_pipe_took_only_in_part_is_not_handed_over(monkeypatch):
    write = os.write
    monkeypatch.setattr(kpm.os, "write", lambda fd, data: write(fd, data[:10]))
    before = sorted(os.listdir("/proc/self/fd"))
    assert kpm.write_handoff({"digest": "00", "length": 3, "dropped": []}) is None
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_a_handoff_variable_that_names_a_file_is_ignored_and_left_open(tmp_path):
    """Only a pipe whose writer is gone is a hand-off: a file holding one's text is not."""
    named = tmp_path / "handoff"
    named.write_text(json.dumps({"digest": "00", "length": 3, "dropped": []}))
    with open(str(named), "rb") as f:
        assert kpm.receive_handoff({kpm.HANDOFF_VAR: str(f.fileno())}) is None
        os.fstat(f.fileno())   # left open: it is not the service's


def test_an_index_that_is_a_folder_is_a_problem_naming_it(tmp_path):
    assert kpm.read_index(str(tmp_path), 1.0) == (
        "Cannot read the pack index: [Errno 21] Is a directory: %s" % repr(str(tmp_path)))


def test_an_index_on_a_pipe_may_come_slowly_as_long_as_bytes_keep_coming(tmp_path):
    """``silence`` is the longest wait between two pieces, not for the whole index."""
    fifo = str(tmp_path / "index")
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb", buffering=0) as f:
            for piece in (b'{"v": ', b'1, ', b'"packId": ', b'"p"}'):
                f.write(piece)
                time.sleep(0.15)
    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert kpm.read_stream(fifo, 0.4) == b'{"v": 1, "packId": "p"}'
    finally:
        thread.join(5)


def test_an_entry_module_missing_twice_is_named_once_and_a_look_alike_root_is_outside(tmp_path):
    index = kpm.Index(index_bytes(tools=[{"id": "a", "modulePath": "t.py"}, {"id": "b", "modulePath": "t.py"}],
                                  guardrails=[{"id": "g", "checkModulePath": "t.py"}]))
    assert kpm.Pack(index, str(tmp_path), None).missing_modules() == ["Missing module: t.py"]
    (tmp_path / "app").mkdir()
    (tmp_path / "app2").mkdir()
    (tmp_path / "app2" / "t.py").write_text("")
    os.symlink(str(tmp_path / "app2" / "t.py"), str(tmp_path / "app" / "t.py"))
    real_root = os.path.realpath(str(tmp_path / "app"))
    assert kpm.outside_root(str(tmp_path / "app" / "t.py"), real_root) == os.path.join(real_root + "2", "t.py")
    assert kpm.outside_root(real_root, real_root) is None


@pytest.mark.parametrize("fields", [{"index": "3"}, {"indexDigest": "x"}, {"index": None}, {"indexDigest": None},
                                    {"length": "3"}, {"dropped": "A"}, {"digest": "0"}])
def test_a_handoff_with_a_mistyped_or_missing_field_is_ignored(fields):
    """A descriptor given as text reached os.fstat at boot: a traceback.  (None: the field left out.)"""
    handoff = dict({"digest": "00", "length": 3, "dropped": [], "index": 3, "indexDigest": "00"}, **fields)
    handoff = {name: value for name, value in handoff.items() if value is not None}
    read_end = kpm.write_handoff(handoff)
    try:
        assert kpm.receive_handoff({kpm.HANDOFF_VAR: str(read_end)}) is None
    finally:
        os.close(read_end)


def test_a_handoff_too_large_to_hand_over_is_not_written():
    before = sorted(os.listdir("/proc/self/fd"))
    assert kpm.write_handoff({"dropped": ["N" * 1000] * 1100}) is None
    assert sorted(os.listdir("/proc/self/fd")) == before


def test_the_re_executed_interpreter_keeps_the_flags_that_change_what_pack_code_sees():
    """-P keeps the script's folder off sys.path (Python 3.11+); -b and -bb make a bytes/str
    comparison warn or raise, which a -W option alone does not."""
    flags = ["-P", "-bb"] if sys.version_info >= (3, 11) else ["-bb"]
    done = subprocess.run([sys.executable] + flags + ["-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                                      "import json, kindgi_pack_min; print(json.dumps(kindgi_pack_min.interpreter_flags()))",
                           ROOT], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert done.returncode == 0, done.stderr
    carried = json.loads(done.stdout.decode())
    assert carried.count("-b") == 2 and ("-P" in carried) == (sys.version_info >= (3, 11))


def test_the_env_filter_keeps_declared_and_platform_names():
    assert kpm.kept_by_filter("MINE", {"MINE"}) and kpm.kept_by_filter("KINDGI_X", set())
    assert kpm.kept_by_filter("PATH", set()) and not kpm.kept_by_filter("kindgi_x", set())
    assert len(kpm.KEPT_NAMES) == 58


# -- the index -----------------------------------------------------------------

def index_bytes(**fields):
    data = {"v": 1, "packId": "p", "packVersion": "1.0.0", "artifactVersion": "a", "tools": [], "guardrails": []}
    data.update(fields)
    return json.dumps(data).encode()


def test_the_index_hash_is_of_the_bytes():
    raw = index_bytes() + b"\n\n"
    assert kpm.Index(raw).hash == "sha256:" + kpm.sha256(raw).hexdigest()


@pytest.mark.parametrize("version", ["a\r\nb", "a\x00", " a", "a ", "\u00e9", "x" * 1025])
def test_an_artifact_version_that_is_no_header_value_is_refused(version):
    with pytest.raises(kpm.IndexProblem) as caught:
        kpm.Index(index_bytes(artifactVersion=version))
    assert "artifactVersion" in str(caught.value)


@pytest.mark.parametrize("field,value", [("artifactVersion", 0), ("artifactVersion", False), ("artifactVersion", []),
                                         ("env", {"required": 0}), ("env", {"optional": ""}),
                                         ("env", {"required": {}})])
def test_a_mistyped_field_is_refused_even_when_it_is_falsy(field, value):
    # Taken for an absent field before: an empty artifactVersion, no env names, silently.
    with pytest.raises(kpm.IndexProblem) as caught:
        kpm.Index(index_bytes(**{field: value}))
    assert field in str(caught.value)
    assert kpm.Index(index_bytes(artifactVersion=None, env={"required": None})).artifact_version == ""


def test_an_empty_check_id_is_the_entry_id_and_an_empty_env_name_is_refused():
    guardrail = {"id": "g", "checkId": "", "checkModulePath": "checks/g.py"}
    assert [c.check_id for c in kpm.Index(index_bytes(guardrails=[guardrail])).checks] == ["g"]
    with pytest.raises(kpm.IndexProblem) as caught:
        kpm.Index(index_bytes(env={"optional": ["A", ""]}))
    assert str(caught.value) == "Index field env.optional must be an array of names"


@pytest.mark.parametrize("fields, problem", [
    ({"packId": None}, "Index field packId is missing"),
    ({"packVersion": ""}, "Index field packVersion must be a non-empty string"),
    ({"packId": 7}, "Index field packId must be a non-empty string"),
    ({"tools": {}}, "Index field tools must be an array"),
    ({"guardrails": "g"}, "Index field guardrails must be an array"),
    ({"env": []}, "Index field env must be an object"),
    ({"tools": [{"id": "t", "modulePath": "t.py"}, "t"]}, "Index field tools[1] must be an object"),
    ({"tools": [{"modulePath": "t.py"}]}, "Index field tools[0].id is missing"),
    ({"tools": [{"id": "t"}]}, "Index field tools[0].modulePath is missing"),
    ({"tools": [{"id": "t", "modulePath": "t.py", "version": 1}]}, "Index field tools[0].version must be a string"),
    ({"guardrails": [None]}, "Index field guardrails[0] must be an object"),
    ({"guardrails": [{"id": "g"}]}, "Index field guardrails[0].checkModulePath is missing"),
    ({"guardrails": [{"id": "g", "checkModulePath": "g.py", "checkId": 1}]},
     "Index field guardrails[0].checkId must be a non-empty string"),
])
def test_each_index_problem_names_its_field(fields, problem):
    with pytest.raises(kpm.IndexProblem) as caught:
        kpm.Index(index_bytes(**fields))
    assert str(caught.value) == problem


@pytest.mark.parametrize("raw, problem", [(b"[]", "The pack index must be a JSON object"),
                                          (b'{"v": 1.5}', "Index envelope v1.5 is not v1"),
                                          (b"\xff", "The pack index is not valid JSON: ")])
def test_an_index_that_is_no_v1_object_is_refused(raw, problem):
    with pytest.raises(kpm.IndexProblem) as caught:
        kpm.Index(raw)
    assert str(caught.value).startswith(problem)


def test_an_index_entry_keeps_its_version_and_an_empty_one():
    tools = [{"id": "t", "modulePath": "t.py", "version": ""}, {"id": "t", "modulePath": "t.py", "version": "2"},
             {"id": "u", "modulePath": "u.py"}]
    assert [(t.id, t.version) for t in kpm.Index(index_bytes(tools=tools)).tools] == [
        ("t", ""), ("t", "2"), ("u", None)]


def test_an_artifact_version_may_hold_inner_spaces():
    assert kpm.Index(index_bytes(artifactVersion="build 7 (x)")).artifact_version == "build 7 (x)"


# -- small helpers ---------------------------------------------------------------

def test_http_date_is_imf_fixdate_whatever_the_locale():
    assert kpm.http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT"


def test_module_paths():
    assert kpm.module_name_for("tools/ledger.py") == "_kindgi_pack.tools.ledger"
    assert kpm.module_name_for("pkg/__init__.py") == "_kindgi_pack.pkg"
    for path in ("./tools/m.py", "tools//m.py", "tools/./m.py", "tools\\m.py"):
        assert kpm.module_name_for(path) == "_kindgi_pack.tools.m"
    for bad in ("../x.py", "/abs.py", "tools/x.txt", "tools/../x.py", "./", ".py", "tools/my-tool.py"):
        with pytest.raises(ImportError):
            kpm.module_name_for(bad)


def test_json_pointers():
    assert kpm._pointer(["a/b", "c~d", 0]) == "/a~1b/c~0d/0"


# -- sizing from the container ---------------------------------------------------

MiB = 1024 * 1024


@pytest.mark.parametrize("limit, resident, budget", [
    (None, 30 * MiB, kpm.MEMORY_BUDGET),             # no limit: the fixed budget
    (2048 * MiB, 30 * MiB, kpm.MEMORY_BUDGET),       # a roomy limit: never more than the fixed budget
    (192 * MiB, 30 * MiB, 54 * MiB),                 # a third of what the limit leaves
    (64 * MiB, 70 * MiB, 0),                         # over its limit already: nothing to hand out
])
def test_the_memory_budget_is_a_third_of_what_the_containers_limit_leaves(limit, resident, budget):
    assert kpm.memory_budget(limit, resident) == budget


def test_the_containers_limits_and_the_resident_memory_are_read():
    membership = kpm.cgroup_membership()
    memory, threads = kpm.memory_limit(membership), kpm.thread_room(membership)
    assert memory is None or (isinstance(memory, int) and memory > 0)
    assert threads is None or isinstance(threads, int)   # below zero when the cgroup is full already
    assert 1 * MiB < kpm.resident_memory() < 1024 * MiB


def cgroup_tree(root, files):
    """Write a cgroup mount's files under ``root``: {relative path: text}."""
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(root)


V1_NONE = "9223372036854771712\n"   # how cgroup v1 says "no limit"


def test_a_parents_memory_limit_binds_the_process_in_cgroup_v1(tmp_path):
    root = cgroup_tree(tmp_path, {"memory/memory.limit_in_bytes": V1_NONE,
                                  "memory/slice/memory.limit_in_bytes": "%d\n" % (200 * MiB),
                                  "memory/slice/svc/memory.limit_in_bytes": V1_NONE,
                                  "memory/slice/svc/memory.stat": "cache 0\nhierarchical_memory_limit %s" % V1_NONE})
    membership = "5:pids:/slice/svc\n4:memory:/slice/svc\n0::/\n"
    assert kpm.cgroup_folders("memory", membership, root) == (
        [os.path.join(root, "memory", "slice", "svc"), os.path.join(root, "memory", "slice"),
         os.path.join(root, "memory")], False)
    assert kpm.memory_limit(membership, root) == 200 * MiB


def test_a_parent_a_v1_container_cant_see_still_binds_it(tmp_path):
    """Inside the container its own cgroup is the mount's root; memory.stat counts the parents."""
    root = cgroup_tree(tmp_path, {"memory/memory.limit_in_bytes": V1_NONE,
                                  "memory/memory.stat": "rss 1\nhierarchical_memory_limit %d\n" % (96 * MiB)})
    assert kpm.memory_limit("4:memory:/kubepods/pod1/abc\n", root) == 96 * MiB
    assert kpm.cgroup_folders("memory", "4:memory:/kubepods/pod1/abc\n", root) == (
        [os.path.join(root, "memory")], False)


def test_the_lowest_memory_limit_on_the_way_up_binds_the_process_in_cgroup_v2(tmp_path):
    root = cgroup_tree(tmp_path, {"cgroup.controllers": "cpu memory pids\n",
                                  "user.slice/memory.max": "%d\n" % (150 * MiB),
                                  "user.slice/app/memory.max": "%d\n" % (300 * MiB)})
    assert kpm.memory_limit("0::/user.slice/app\n", root) == 150 * MiB
    assert kpm.memory_limit("0::/user.slice\n", root) == 150 * MiB
    assert kpm.memory_limit("0::/\n", root) is None   # the root has no memory.max


@pytest.mark.parametrize("membership", [
    "",                                      # no /proc/self/cgroup
    "0::/user.slice/app\n",                  # v2's line, but no v2 mount here
    "4:cpu:/user.slice/app\n",               # the controller in no hierarchy
    "0::/../../outside\n",                   # outside what the container sees
])
def test_no_cgroup_in_view_means_no_limit(tmp_path, membership):
    root = cgroup_tree(tmp_path, {"user.slice/app/memory.max": "1000\n", "cpu/memory.max": "1000\n"})
    if "outside" in membership:
        cgroup_tree(tmp_path, {"cgroup.controllers": "memory\n", "memory.max": "1000\n"})
    assert kpm.memory_limit(membership, root) is None
    assert kpm.thread_room(membership, root) is None


def test_the_thread_room_is_what_the_fullest_limited_cgroup_leaves(tmp_path):
    root = cgroup_tree(tmp_path, {"cgroup.controllers": "memory pids\n",
                                  "pod/pids.max": "100\n", "pod/pids.current": "40\n",
                                  "pod/c1/pids.max": "500\n", "pod/c1/pids.current": "10\n",
                                  "pod/c2/pids.max": "max\n", "pod/c2/pids.current": "30\n"})
    assert kpm.thread_room("0::/pod/c1\n", root) == 60 - kpm.THREAD_HEADROOM
    assert kpm.thread_room("0::/pod/c2\n", root) == 60 - kpm.THREAD_HEADROOM
    cgroup_tree(tmp_path, {"pod/c1/pids.max": "20\n"})
    assert kpm.thread_room("0::/pod/c1\n", root) == 10 - kpm.THREAD_HEADROOM


# -- over-long integers ------------------------------------------------------------

LONG = kpm.MAX_INT_DIGITS + 1


@pytest.mark.parametrize("text, found", [
    ("", False),
    ("1" * (LONG - 1), False),
    ("1" * LONG, True),
    ('{"n":' + "9" * LONG + "}", True),
    (",".join(["9" * (LONG - 1)] * 50), False),                # many runs just under the limit
    ("\u00e9" * 3000 + "7" * LONG, True),                      # after text that is not ASCII
    ("\ud800" + "7" * LONG, True),                             # after a lone surrogate (a pack's output)
    ("x" * (1024 * 1024 - 10) + "5" * LONG + "x", True),       # across the edge of the first piece
])
def test_a_run_of_digits_over_the_limit_is_found(text, found):
    assert kpm.has_long_digit_run(text) is found
    assert kpm.has_long_digit_run(text, piece=LONG) is found   # small pieces: every edge is crossed


@pytest.mark.parametrize("number, too_long", [
    (10 ** 4300 - 1, False), (-(10 ** 4300 - 1), False), (10 ** 3999, False), (0, False),
    (10 ** 4300, True), (-(10 ** 4300), True), (2 ** 20000, True),
], ids=["4300 nines", "minus 4300 nines", "4000 digits", "zero", "4301 digits", "minus 4301 digits", "2**20000"])
def test_an_integer_is_too_long_past_4300_digits_exactly(number, too_long):
    assert kpm.is_too_long(number) is too_long


def test_over_long_integers_are_refused_and_long_digit_strings_are_not():
    with pytest.raises(ValueError, match="more than 4300 digits"):
        kpm.load_json_text("[" + "1" * LONG + "]")
    assert kpm.load_json_text('["' + "1" * LONG + '"]') == ["1" * LONG]
