"""The indexer's canonical JSON (kindgi_pack_index.stable_dumps), in process.

Keys in UTF-16 code-unit order at every level, two-space indentation, text as itself,
numbers as JavaScript writes them.  The expected texts are what JavaScript's
JSON.stringify / Number.prototype.toString give; with the SDK installed, a sample of
random doubles is also compared with the SDK's own formatting.
"""

import enum
import json
import math
import random
import struct
import subprocess
import sys
import types
from collections import OrderedDict

import pytest

from conftest import ROOT
from kindgi_pack_index import code_units, js_number, stable_dumps

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from indexing import require_sdk  # noqa: E402

JS_NUMBERS = [
    (1.0, "1"), (-0.0, "0"), (0.0, "0"), (0.1, "0.1"), (-2.5, "-2.5"), (100.0, "100"),
    (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (0.000001, "0.000001"), (2.5e-6, "0.0000025"),
    (1e20, "100000000000000000000"), (1e21, "1e+21"), (1.5e21, "1.5e+21"),
    (123456789012345680000.0, "123456789012345680000"), (1e16, "10000000000000000"),
    (5e-324, "5e-324"), (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.30000000000000004, "0.30000000000000004"), (123.456, "123.456"), (2.0 ** 53, "9007199254740992"),
    (1e300 * 10, "1e+301"), (-1e-300, "-1e-300"), (12e-7, "0.0000012"), (1.23e-5, "0.0000123"),
]


@pytest.mark.parametrize("value, text", JS_NUMBERS)
def test_numbers_as_javascript_writes_them(value, text):
    assert js_number(value) == text


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_number_json_has_no_room_for_is_refused(value):
    with pytest.raises(ValueError, match="not valid JSON"):
        js_number(value)


def random_doubles(count, seed=19):
    rng = random.Random(seed)
    doubles = []
    while len(doubles) < count:
        value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
        if math.isfinite(value):
            doubles.append(value)
    return doubles + [rng.uniform(-1e6, 1e6) for _ in range(count)] + [float(rng.randint(-10 ** 6, 10 ** 6))
                                                                       for _ in range(count)]


def test_every_number_reads_back_as_itself():
    for value in random_doubles(3000):
        text = js_number(value)
        assert float(text) == value, (value, text)


def test_numbers_match_the_sdks_formatting():
    python = require_sdk()
    doubles = random_doubles(2000)
    done = subprocess.run([python, "-c", "import json, sys\nfrom kindgi._json import js_number\n"
                           "print(json.dumps([js_number(v) for v in json.load(sys.stdin)]))"],
                          input=json.dumps(doubles).encode(), stdout=subprocess.PIPE, check=True, timeout=60)
    assert json.loads(done.stdout) == [js_number(v) for v in doubles]


def test_keys_sort_by_utf16_code_units_at_every_level():
    value = {"b": 1, "10": 2, "2": 3, "B": 4, "\uff21": 5, "\U0001f600": 6, "\u00e9": {"z": [], "a": {}}}
    assert stable_dumps(value) == (
        '{\n  "10": 2,\n  "2": 3,\n  "B": 4,\n  "b": 1,\n  "\u00e9": {\n    "a": {},\n    "z": []\n  },\n'
        '  "\U0001f600": 6,\n  "\uff21": 5\n}')


def test_code_units_put_astral_text_before_the_last_of_the_bmp():
    assert sorted(["\uff21", "\U0001f600", "a"], key=code_units) == ["a", "\U0001f600", "\uff21"]
    assert sorted(["\uff21", "\U0001f600", "a"]) == ["a", "\uff21", "\U0001f600"]   # code points differ


def test_layout_of_lists_and_empties():
    assert stable_dumps([1, [], {}, [True, None], "x"]) == '[\n  1,\n  [],\n  {},\n  [\n    true,\n    null\n  ],\n  "x"\n]'
    assert stable_dumps({}) == "{}" and stable_dumps([]) == "[]"


def test_text_is_itself_and_escaped_as_json_escapes_it():
    assert stable_dumps("Gr\u00fc\u00dfe \U0001f600") == '"Gr\u00fc\u00dfe \U0001f600"'
    assert stable_dumps('a"b\\c\n\x01\u2028') == '"a\\"b\\\\c\\n\\u0001\u2028"'


class Colour(enum.IntEnum):
    RED = 1


def test_python_values_that_are_json_values():
    """Any mapping is an object, any sequence but text and bytes an array, int subclasses numbers."""
    proxy = types.MappingProxyType(OrderedDict([("b", (1, 2)), ("a", range(2))]))
    assert stable_dumps(proxy) == '{\n  "a": [\n    0,\n    1\n  ],\n  "b": [\n    1,\n    2\n  ]\n}'
    assert stable_dumps([Colour.RED, True, 10 ** 30]) == "[\n  1,\n  true,\n  1000000000000000000000000000000\n]"


@pytest.mark.parametrize("value, problem", [
    ({1: "a"}, "JSON object keys must be strings, got int"),
    ([b"bytes"], "bytes is not JSON-serializable"),
    ([bytearray(b"bytes")], "bytearray is not JSON-serializable"),
    ({"a": {1, 2}}, "set is not JSON-serializable"),
])
def test_what_json_cannot_hold_is_refused(value, problem):
    with pytest.raises(TypeError, match=problem):
        stable_dumps(value)
