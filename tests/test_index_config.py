"""The indexer's configuration and discovery (kindgi_pack_index), in process, on files in tmp_path.

The messages are the SDK's (tests/e2e/test_index_sdk.py compares whole runs); here each
rule is checked on its own: what [tool.kindgi] must hold, how [tool.kindgi.env] is
checked and sorted, what a glob matches and which files discovery never yields.
"""

import pytest

from kindgi_pack_index import (ConfigError, discover, discover_pack, glob_static_prefix, glob_to_regex,
                               load_config)

CONFIG = '[tool.kindgi.pack]\nid = "acme"\nversion = "1.0.0"\n'


def config_in(tmp_path, text, name="pyproject.toml"):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return load_config(tmp_path)


def refusal(tmp_path, text):
    with pytest.raises(ConfigError) as refused:
        config_in(tmp_path, text)
    error = refused.value
    return error.code, error.message.replace(str(tmp_path), "<pack>"), error.field


def test_what_the_config_gives(tmp_path):
    config = config_in(tmp_path, CONFIG + 'description = "An example"\n[tool.kindgi.discovery]\n'
                                          'tools = "src/*.py"\nchecks = "c/*.py"\n')
    assert (config.id, config.version, config.description) == ("acme", "1.0.0", "An example")
    assert config.path == tmp_path / "pyproject.toml"
    assert config.discovery == {"tools": "src/*.py", "guardrails": "guardrails/**/*.py",
                                "agents": "agents/**/*.py", "flows": "flows/**/*.py", "checks": "c/*.py"}
    assert config.env is None


def test_a_description_that_is_not_text_is_left_out(tmp_path):
    assert config_in(tmp_path, CONFIG + "description = 5\n").description is None


def test_env_is_sorted_by_code_units_and_absent_when_empty(tmp_path):
    config = config_in(tmp_path, CONFIG + '[tool.kindgi.env]\nrequired = ["b", "B", "_c", "A1"]\n'
                                          'optional = ["Z"]\n')
    assert config.env == (("A1", "B", "_c", "b"), ("Z",))
    assert config_in(tmp_path, CONFIG + "[tool.kindgi.env]\nrequired = []\n").env is None
    assert config_in(tmp_path, CONFIG + "[tool.kindgi.env]\n").env is None


def test_only_the_upper_case_kindgi_prefix_is_reserved(tmp_path):
    """``KINDGI_*`` names configure Kindgi; the check is case-sensitive, as the index schema's."""
    config = config_in(tmp_path, CONFIG + '[tool.kindgi.env]\nrequired = ["kindgi_x", "Kindgi_Y"]\n')
    assert config.env == (("Kindgi_Y", "kindgi_x"), ())


def test_a_config_path_through_a_file_is_not_found(tmp_path):
    """A folder on the way that is a file (ENOTDIR) is no config file: config-not-found, not a
    read failure."""
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    with pytest.raises(ConfigError) as missing:
        load_config(tmp_path, tmp_path / "pyproject.toml" / "kindgi.toml")
    assert missing.value.code == "config-not-found"


def test_config_path_elsewhere(tmp_path):
    (tmp_path / "kindgi.toml").write_text(CONFIG)
    assert load_config(tmp_path / "pack", tmp_path / "kindgi.toml").id == "acme"
    with pytest.raises(ConfigError) as missing:
        load_config(tmp_path, tmp_path / "nope.toml")
    assert missing.value.code == "config-not-found"
    assert missing.value.message == "No pyproject.toml found at pack root %s" % tmp_path


@pytest.mark.parametrize("text, code, message", [
    ('[project]\nname = "x"\n', "config-not-found", "<pack>/pyproject.toml has no [tool.kindgi] table"),
    ('[tool]\nkindgi = 1\n', "config-not-found", "<pack>/pyproject.toml has no [tool.kindgi] table"),
    ('[tool.kindgi]\npack = "x"\n', "config-parse-failed",
     "Config file <pack>/pyproject.toml: 'pack' field is missing or not an object"),
    ('[tool.kindgi.pack]\nversion = "1"\n', "config-parse-failed",
     "Config file <pack>/pyproject.toml: 'pack.id' is missing or not a non-empty string"),
    ('[tool.kindgi.pack]\nid = "a"\nversion = ""\n', "config-parse-failed",
     "Config file <pack>/pyproject.toml: 'pack.version' is missing or not a non-empty string"),
    (CONFIG + '[tool.kindgi]\ndiscovery = ["a"]\n', "config-parse-failed",
     "Config file <pack>/pyproject.toml: 'discovery' must map kinds to glob strings"),
    ('x = "\n', "config-parse-failed", "Failed to read <pack>/pyproject.toml: "),
])
def test_config_refusals(tmp_path, text, code, message):
    got_code, got_message, _ = refusal(tmp_path, text)
    assert got_code == code
    assert got_message.startswith(message)


@pytest.mark.parametrize("reader", ["tomllib", "ours"])
def test_a_config_with_windows_line_ends_is_read(tmp_path, monkeypatch, reader):
    """Read as text (CRLF made LF), as tomllib is given it: the reader used before 3.11 reads it too."""
    import kindgi_pack_index
    if reader == "ours":
        monkeypatch.setattr(kindgi_pack_index, "tomllib", None)
    (tmp_path / "pyproject.toml").write_bytes(CONFIG.replace("\n", "\r\n").encode())
    assert load_config(tmp_path).id == "acme"


def test_a_file_that_is_not_utf8_is_a_parse_failure(tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.kindgi.pack]\nid = "\xff"\n')
    with pytest.raises(ConfigError) as refused:
        load_config(tmp_path)
    assert refused.value.code == "config-parse-failed"
    assert "utf-8" in refused.value.message


@pytest.mark.parametrize("env, problem", [
    ('env = ["A"]', "`env` must be a table: required = [...], optional = [...]"),
    ('env = {required = [], other = 1, more = 2}', "`env` takes only `required` and `optional`, not `other`, `more`"),
    ('env = {required = "A"}', "`env.required` must be a list of names"),
    ('env = {optional = ["A", 1]}', "`env.optional` must be a list of names"),
    ('env = {required = ["A-B"]}', '"A-B" in `env.required` isn\'t an environment variable name'),
    ('env = {required = ["\\u00e9"]}', '"\\u00e9" in `env.required` isn\'t an environment variable name'),
    ('env = {optional = ["KINDGI_X"]}', '"KINDGI_X" in `env.optional`: `KINDGI_*` names configure Kindgi, not the pack'),
    ('env = {required = ["A", "A"]}', '"A" is listed twice in `env.required`'),
    ('env = {required = ["A"], optional = ["A"]}', '"A" is in both `env.required` and `env.optional`'),
])
def test_env_refusals(tmp_path, env, problem):
    code, message, field = refusal(tmp_path, CONFIG + "[tool.kindgi]\n" + env + "\n")
    assert (code, field) == ("config-invalid", "env")
    assert message == "Config file <pack>/pyproject.toml: " + problem


def test_every_env_problem_at_once(tmp_path):
    _, message, _ = refusal(tmp_path, CONFIG + '[tool.kindgi.env]\nrequired = ["1", "A", "A"]\noptional = ["A"]\n')
    assert message.count(";") == 2


# -- discovery ---------------------------------------------------------------------------------

@pytest.mark.parametrize("glob, matches, misses", [
    ("tools/**/*.py", ["tools/a.py", "tools/x/y/b.py"], ["tools/a.pyc", "other/a.py", "tools.py"]),
    ("**/*.py", ["a.py", "x/a.py"], ["a.txt"]),
    ("tools/*.py", ["tools/a.py"], ["tools/x/a.py"]),
    ("t/check_?.py", ["t/check_a.py"], ["t/check_ab.py", "t/check_.py", "t/check_/.py"]),
    ("{tools,extra}/**/*.py", ["tools/a.py", "extra/b/c.py"], ["other/a.py"]),
    ("{x.y,z+}/*.py", ["x.y/a.py", "z+/a.py"], ["xay/a.py", "zz/a.py"]),
    ("a{b/c.py", ["a{b/c.py"], ["ab/c.py"]),
    ("lib/**", ["lib/a", "lib/x/y.py"], ["lib"]),
    ("a.b/[x].py", ["a.b/[x].py"], ["axb/x.py"]),
])
def test_globs(glob, matches, misses):
    regex = glob_to_regex(glob)
    assert [m for m in matches if not regex.match(m)] == []
    assert [m for m in misses if regex.match(m)] == []


@pytest.mark.parametrize("glob, prefix", [
    ("tools/**/*.py", "tools"), ("a/b/*.py", "a/b"), ("*.py", ""), ("./src/x.py", "src"),
    ("{a,b}/*.py", ""), ("src/file.py", "src"), ("a//b/c?.py", "a/b"),
])
def test_a_glob_is_walked_from_its_static_prefix(glob, prefix):
    assert glob_static_prefix(glob) == prefix


def make_tree(root, paths):
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("")


def test_discovery_skips_tests_hidden_and_vendored_files(tmp_path):
    make_tree(tmp_path, ["tools/b.py", "tools/a.py", "tools/sub/c.py", "tools/test_x.py", "tools/x_test.py",
                         "tools/conftest.py", "tools/sub/test_y.py", "tools/.h.py", "tools/.git/d.py",
                         "tools/node_modules/e.py", "tools/__pycache__/f.py", "tools/venv/g.py",
                         "tools/site-packages/h.py", "tools/testing.py", "tools/_helper.py"])
    assert discover(tmp_path, "tools/**/*.py") == ["tools/_helper.py", "tools/a.py", "tools/b.py",
                                                   "tools/testing.py", "tools/sub/c.py"]   # as walked
    assert discover(tmp_path, "missing/**/*.py") == []


def test_discover_pack_takes_each_file_once_and_checks_kinds_in_default_folders(tmp_path):
    """A file goes to the first kind whose glob matches it (tools, guardrails, agents, flows);
    its kind is checked only when it sits in that kind's default folder."""
    make_tree(tmp_path, ["tools/t.py", "guardrails/g.py", "shared/s.py", "agents/a.py"])
    globs = {"tools": "{tools,shared}/*.py", "guardrails": "**/*.py", "agents": "agents/*.py", "flows": "x/*.py"}
    assert discover_pack(tmp_path, globs) == [("agents/a.py", None), ("guardrails/g.py", "guardrail"),
                                              ("shared/s.py", None), ("tools/t.py", "tool")]


def test_discovery_order_is_by_path_not_by_walk(tmp_path):
    make_tree(tmp_path, ["tools/b/a.py", "tools/a_.py", "tools/a/z.py"])
    paths = [p for p, _ in discover_pack(tmp_path, {"tools": "tools/**/*.py"})]
    assert paths == sorted(paths) == ["tools/a/z.py", "tools/a_.py", "tools/b/a.py"]


def test_test_file_rule():
    from kindgi_pack_index import TEST_FILE
    assert [p for p in ("test_a.py", "x/test_.py", "a_test.py", "conftest.py", "x/conftest.py")
            if not TEST_FILE.search(p)] == []
    assert [p for p in ("atest_a.py", "testing.py", "conftest_x.py", "test_a/b.py", "a_test.pyc")
            if TEST_FILE.search(p)] == []
