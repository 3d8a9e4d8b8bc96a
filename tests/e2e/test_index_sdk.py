"""Differential: the SDK's indexer and this one on the same packs, same pins, same bytes.

The SDK (kindgi 0.1.10, Python 3.11+) runs from .venv-sdk/ (see indexing.py); each
indexer gets its own copy of the pack.  The index bytes and the --json outcome (less
outputPath and each cause's stack) must be identical, for every pack in tests/packs/,
the example, the benchmark pack and every run error.  The pydantic pack is indexed by
this indexer with the SDK venv's pydantic but without kindgi, so the stand-in derives
the model schemas.  Runs on the main interpreter only (tomllib, like the SDK).
"""

import json
import os
import sys

import pytest

from indexing import (EXPECTED, PACKS, PINS, PLAIN_PACKS, ROOT, RUN_ERRORS, SERVICE, TYPED_PACKS, copy_pack,
                      outcome_of, run, run_error_args, require_sdk, run_sdk_index, without_kindgi, write_files)

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("KINDGI_TEST_PYTHON")) or sys.version_info < (3, 11),
    reason="the SDK needs Python 3.11+; the differential runs once, on the main interpreter "
           "(tests/e2e/test_index.py proves every interpreter against the same bytes)")


@pytest.fixture(scope="module")
def sdk():
    return require_sdk()


def both(tmp_path, source, args, sdk, ours=(sys.executable,)):
    """Index a copy of source with each indexer; ((sdk root, Ran), (our root, Ran))."""
    sdk_root = copy_pack(source, tmp_path / "sdk")
    our_root = copy_pack(source, tmp_path / "ours")
    sdk_ran = run_sdk_index(["--pack-dir", sdk_root] + args, sdk)
    our_ran = run(list(ours) + [SERVICE, "index", "--pack-dir", our_root] + args)
    return (sdk_root, sdk_ran), (our_root, our_ran)


def assert_same(sdk_side, our_side):
    (sdk_root, sdk_ran), (our_root, our_ran) = sdk_side, our_side
    assert sdk_ran.code == our_ran.code, (sdk_ran, our_ran)
    assert outcome_of(our_ran, our_root) == outcome_of(sdk_ran, sdk_root)
    assert json.dumps(outcome_of(our_ran, our_root)) == json.dumps(outcome_of(sdk_ran, sdk_root)), \
        "the keys in the SDK's order"
    written = (sdk_root / "index.json").exists()
    assert (our_root / "index.json").exists() == written
    if written:
        assert (our_root / "index.json").read_bytes() == (sdk_root / "index.json").read_bytes()


@pytest.mark.parametrize("name", PLAIN_PACKS)
def test_each_pack(sdk, tmp_path, name):
    sdk_side, our_side = both(tmp_path, PACKS / name, ["--json"] + PINS, sdk)
    assert_same(sdk_side, our_side)
    assert (sdk_side[0] / "index.json").read_bytes() == (EXPECTED / (name + ".index.json")).read_bytes(), \
        "tests/packs/expected/ is stale: python3 tests/e2e/indexing.py rewrites it"


@pytest.mark.parametrize("folder", ["examples/hello-pack", "bench/pack"])
def test_the_committed_packs(sdk, tmp_path, folder):
    assert_same(*both(tmp_path, ROOT / folder, ["--json"] + PINS, sdk))


@pytest.mark.parametrize("name", TYPED_PACKS)
def test_pydantic_models_with_the_same_pydantic(sdk, tmp_path, name):
    sdk_side, our_side = both(tmp_path, PACKS / name, ["--json"] + PINS, sdk, ours=without_kindgi(sdk))
    assert_same(sdk_side, our_side)
    index = json.loads((our_side[0] / "index.json").read_text(encoding="utf-8"))
    assert any("$defs" in tool["input"] for tool in index["tools"]), "a recursive model keeps its $defs"


@pytest.mark.parametrize("case", sorted(RUN_ERRORS))
def test_each_run_error(sdk, tmp_path, case):
    sides = []
    for who in ("sdk", "ours"):
        root = write_files(tmp_path / who, RUN_ERRORS[case][0])
        args = run_error_args(case, root)
        ran = run_sdk_index(args, sdk) if who == "sdk" else run([sys.executable, SERVICE, "index"] + args)
        sides.append((root, ran))
    assert_same(*sides)
    assert sides[0][1].code == 1


@pytest.mark.parametrize("args", [[], ["--pack-dir"], ["--pack-dir", ".", "--colour"], ["--help"], ["-h"]])
def test_the_same_exit_status_for_the_command_line(sdk, args):
    ours = run([sys.executable, SERVICE, "index"] + args)
    theirs = run_sdk_index(args, sdk)
    assert ours.code == theirs.code
