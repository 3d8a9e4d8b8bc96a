"""tools/build.py in process: the string literals of the standalone script, and its guard.

The built files themselves are proved end to end in tests/e2e/test_one_file.py.
"""

import ast
import os

import pytest

from conftest import load_tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

build = load_tool("build.py", "kindgi_build")


@pytest.mark.parametrize("text", [
    "", "plain\n", "'", "''", "'''", "''''''", "a'", "a''\n", "'''x'''", '"""', '"', 'x"', "\\", "x\\",
    "\\'''", "\\\\'", "\\n is not a newline", "r'\\d+'\n", "\r\n", "\r", "line\r\nnext\n", "\x0c\t\v",
    "caf\u00e9 \u2028 \U0001f600", "\\N{BULLET}", "{}%s%(x)s",
])
def test_string_literal_holds_the_text_as_it_is(text):
    literal = build.string_literal(text)
    assert ast.literal_eval(literal) == text
    compile("x = " + literal, "<literal>", "exec")


def test_string_literal_starts_the_text_on_the_next_line_and_keeps_its_lines():
    text = "first\nsecond 'quoted'\nthird\n"
    literal = build.string_literal(text)
    assert literal.split("\n") == ["'''\\", "first", "second 'quoted'", "third", "'''"]


def test_build_refuses_to_write_over_the_sources(capsys):
    with pytest.raises(SystemExit) as raised:
        build.main(["--dist", ROOT])
    assert raised.value.code == 2
    assert "would replace kindgi_pack_min.py" in capsys.readouterr().err


@pytest.mark.skipif(not build.HASH_CHECKED_BYTECODE, reason="Python 3.6 and 3.7 build an archive of sources only")
def test_bytecode_is_the_same_under_pythonoptimize(monkeypatch):
    """The archive's bytes don't depend on the environment: PYTHONOPTIMIZE dropped the docstrings."""
    monkeypatch.delenv("PYTHONOPTIMIZE", raising=False)
    plain = build.bytecode("schema_lite")
    monkeypatch.setenv("PYTHONOPTIMIZE", "2")
    assert build.bytecode("schema_lite") == plain


def copy_of_the_sources(folder, broken=None):
    """The modules build.py reads, copied into *folder*; *broken* gets a line that doesn't compile."""
    for module in build.modules():
        with open(build.source_path(module), encoding="utf-8") as f:
            source = f.read()
        if module == broken:
            source += "\ndef broken(:\n"
        (folder / (module + ".py")).write_text(source, encoding="utf-8")


def test_a_source_that_does_not_compile_is_one_line_and_nothing_written(tmp_path, monkeypatch, capsys):
    sources, dist = tmp_path / "src", tmp_path / "dist"
    sources.mkdir()
    copy_of_the_sources(sources, broken="schema_lite")
    monkeypatch.setattr(build, "ROOT", str(sources))
    assert build.main(["--dist", str(dist)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("build.py: %s line " % (sources / "schema_lite.py")) and err.count("\n") == 1, err
    assert "Traceback" not in err and not dist.exists()


def test_a_dist_that_can_not_be_written_is_one_line(tmp_path, capsys):
    in_the_way = tmp_path / "a-file"
    in_the_way.write_text("not a folder")
    assert build.main(["--dist", str(in_the_way)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("build.py: cannot write the one-file forms into %s: " % in_the_way), err
    assert err.count("\n") == 1


def test_a_failed_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "kindgi_pack_min.pyz"
    target.mkdir()
    (target / "kept").write_text("a folder with a file can't be replaced by a file")
    with pytest.raises(OSError):
        build.write(str(target), b"data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kindgi_pack_min.pyz"]


@pytest.mark.parametrize("python", ["", "  ", "/usr/bin/python3\nimport os"])
def test_an_interpreter_that_makes_no_single_line_is_refused(python, tmp_path, capsys):
    """--python "" wrote a bare #! line, and a shell ran the script as shell commands; a line
    break put the rest of the value into both files as code."""
    with pytest.raises(SystemExit) as raised:
        build.main(["--dist", str(tmp_path), "--python", python])
    assert raised.value.code == 2
    assert "name the interpreter, on one line" in capsys.readouterr().err
    assert os.listdir(str(tmp_path)) == []
