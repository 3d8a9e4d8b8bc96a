"""The indexer's TOML reader for Python 3.6-3.10 (kindgi_pack_index._TomlReader), in process.

Its promise: a document is read exactly as tomllib reads it, or refused with the line
it stops on; never a different reading.  Each document below is checked against
tomllib (the test interpreter is 3.11+), and so are a few thousand generated ones.
"""

import random
import sys

import pytest

from kindgi_pack_index import TomlError, _TomlReader

tomllib = pytest.importorskip("tomllib", reason="tomllib (Python 3.11+) is the reference the reader is held to")


def read(text):
    return _TomlReader(text).document()


READ_ALIKE = [
    "",
    "# only a comment\n\n   \n",
    '[tool.kindgi.pack]\nid = "acme"\nversion = "1.0.0"\n',
    '[tool.kindgi.pack]  # a comment after a header\nid="a"#and after a value\n',
    '[ tool . kindgi . "pack" ]\n"id" = \'lit\\eral\'\n',
    '[tool.kindgi]\npack.id = "dotted"\npack.version = "1"\n"quoted.key" = 1\n',
    'a = "esc: \\" \\\\ \\n \\t \\u00e9 \\U0001F600 \\b \\f \\r"\n',
    "n = [1, -2, +3, 0, 1_000, -0]\nb = [true, false]\n",
    'arr = [\n  "a",  # first\n  "b",\n\n  # a comment line\n  "c",\n]\nempty = []\nnested = [[1, 2], ["x"], []]\n',
    '[a.b]\nx = 1\n[a]\ny = 2\n[a.c]\nz = 3\n',
    '[fruit]\napple.color = "red"\n[fruit.apple.texture]\nsmooth = true\n',   # a table in a dotted key's
    'a.b.c = 1\n[a.b.d]\nx = 2\n[a.b.d.e]\n',
    '[project]\nname = "x"\ndependencies = ["kindgi==0.1.10", "pydantic>=2"]\n[tool.kindgi.pack]\nid = "p"\n',
    'key-with_dashes = "v"\n123 = "numeric key"\n"" = "empty key"\n',
    "tab\t=\t'x'\t\n",
    'x = "no newline at the end"',
    '[tool.kindgi.env]\nrequired = ["A", "B"]\noptional = []\n',
]


@pytest.mark.parametrize("text", READ_ALIKE)
def test_read_as_tomllib_reads_it(text):
    assert read(text) == tomllib.loads(text)


# Valid TOML outside the part the reader takes: refused, naming the line and the construct.
REFUSED = [
    ('a = 1.5\n', 1, "floats"),
    ('\nb = 1e3\n', 2, "floats"),
    ('d = 1979-05-27\n', 1, "dates"),
    ('t = 07:32:00\n', 1, "dates"),
    ('h = 0xff\n', 1, "non-decimal integers"),
    ('i = inf\n', 1, "the value inf"),
    ('s = """multi\nline"""\n', 1, "multi-line strings"),
    ("s = '''raw'''\n", 1, "multi-line strings"),
    ('x = 1\nt = {a = 1}\n', 2, "inline tables"),
    ('[[items]]\nname = "a"\n', 1, "arrays of tables"),
    ('a = [1, 2.5]\n', 1, "floats"),
    ('a = -inf\n', 1, "the value -inf"),
    ('a = +1_0.2_5e-0_3\n', 1, "the value +1_0.2_5e-0_3"),
    ('a = 1979-05-27 07:32:00.5+01:00\n', 1, "the value 1979-05-27 07:32:00.5+01:00"),
    ('a = [0o17, 0b1]\n', 1, "the value 0o17"),
]


@pytest.mark.parametrize("text, line, construct", REFUSED)
def test_valid_toml_outside_the_subset_is_refused_with_its_line(text, line, construct):
    tomllib.loads(text)   # valid TOML: the reader refuses it, it does not misread it
    with pytest.raises(TomlError) as refused:
        read(text)
    message = str(refused.value)
    assert message.startswith("line %d: " % line)
    assert construct in message and "Python 3.11+ reads all of TOML" in message


# Not TOML: refused by both.
INVALID = [
    ('a = "unterminated\n', 1),
    ('a = 1\na = 2\n', 2),
    ('[a]\n[a]\n', 2),
    ('[a]\nb = 1\n[a.b]\n', 3),
    ('[a]\nb.c = 1\n[a.b]\n', 3),
    ('[x]\n[a]\nb = 1\n[a.b.c]\n', 4),
    ('a = 1 b = 2\n', 1),
    ('a = 1 2\n', 1),
    ('a = "x" y\n', 1),
    ('[a.b]\nc = 1\n[a]\nb.d = 2\n', 4),
    ('a = \n', 1),
    ('= 1\n', 1),
    ('a = [1 2]\n', 1),
    ('a = [1,,2]\n', 1),
    ('a = 01\n', 1),
    ('a = 1__0\n', 1),
    ('a = 1_\n', 1),
    ('a = "bad \\x escape"\n', 1),
    ('a = "\\uD800"\n', 1),
    ('a = "tab\x01control"\n', 1),
    ('# control \x7f in a comment\n', 1),
    ('a = tru\n', 1),
    ('a.b = 1\na.b.c = 2\n', 2),
    ('[a\nb = 1\n', 1),
    ('a = [\n1,\n', 3),
    ('a = hello world\n', 1),
    ('a = 1.\n', 1),
    ('a = .5\n', 1),
    ('a = 0x\n', 1),
    ('a = trueish\n', 1),
    ('a = [1, infinity]\n', 1),
]


@pytest.mark.parametrize("text, line", INVALID)
def test_what_is_not_toml_is_refused_with_its_line(text, line):
    with pytest.raises(tomllib.TOMLDecodeError):
        tomllib.loads(text)
    with pytest.raises(TomlError, match="^line %d: " % line) as refused:
        read(text)
    assert "Python 3.11+ reads all of TOML" not in str(refused.value)   # it is not TOML at all


PIECES = ['a', 'b', '"q.k"', "'l'", 'a.b', 'b.a', 'x-y', '1']
VALUES = ['"s"', "'t'", '1', '-2', '1_0', 'true', 'false', '[]', '[1, "a"]', '[\n "x",\n]', '1.5',
          '{a = 1}', '"""m"""', '1979-05-27', '0x1', '"\\u00e9"', '"bad', '[1', '01', '']


def generated(rng):
    lines = []
    for _ in range(rng.randint(1, 6)):
        roll = rng.random()
        if roll < 0.25:
            lines.append("[%s]" % ".".join(rng.choice(PIECES) for _ in range(rng.randint(1, 3))))
        elif roll < 0.3:
            lines.append("# note")
        else:
            lines.append("%s = %s%s" % (rng.choice(PIECES), rng.choice(VALUES), rng.choice(["", "  # c"])))
    return "\n".join(lines) + rng.choice(["", "\n"])


def test_generated_documents_are_read_alike_or_refused():
    rng = random.Random(2026)
    read_alike = refused = 0
    for _ in range(4000):
        text = generated(rng)
        try:
            expected = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            expected = None
        try:
            got = read(text)
        except TomlError:
            refused += 1
            continue
        assert got == expected, text
        read_alike += 1
    assert read_alike > 500 and refused > 500   # both paths were taken


def tables_and_dotted_keys(rng):
    """A document of [headers] and dotted keys only: all of it inside the part the reader takes."""
    lines = []
    for _ in range(rng.randint(1, 7)):
        key = ".".join(rng.choice("abc") for _ in range(rng.randint(1, 4)))
        roll = rng.random()
        if roll < 0.4:
            lines.append("[%s]" % key)
        elif roll < 0.6:
            lines.append("%s = 1" % key.rpartition(".")[2])
        else:
            lines.append("%s = 1" % key)
    return "\n".join(lines) + "\n"


def test_tables_and_dotted_keys_tomllib_reads_are_read_not_refused():
    """Inside its part of TOML the reader refuses only what tomllib refuses."""
    rng = random.Random(2027)
    valid = 0
    for _ in range(3000):
        text = tables_and_dotted_keys(rng)
        try:
            expected = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            continue
        assert read(text) == expected, text
        valid += 1
    assert valid > 500


def test_the_reader_is_what_old_interpreters_use():
    import kindgi_pack_index
    assert (kindgi_pack_index.tomllib is None) == (sys.version_info < (3, 11))


@pytest.mark.parametrize("reader", ["tomllib", "ours"])
@pytest.mark.parametrize("text", ["x = " + "[" * 5000 + "]" * 5000 + "\n",
                                  "x = " + "{a = " * 5000 + "1" + "}" * 5000 + "\n"])
def test_nesting_past_the_recursion_limit_is_refused_not_raised(monkeypatch, reader, text):
    """tomllib and the reader both recurse into arrays (tomllib into inline tables too):
    a file nested past the recursion limit is a TomlError, so config-parse-failed."""
    import kindgi_pack_index
    if reader == "ours":
        monkeypatch.setattr(kindgi_pack_index, "tomllib", None)
    with pytest.raises(TomlError) as refused:
        kindgi_pack_index.read_toml(text)
    assert "nested too deeply" in str(refused.value) or "inline tables" in str(refused.value)
