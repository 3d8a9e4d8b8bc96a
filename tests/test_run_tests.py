"""tools/run_tests.py: its arguments and statuses in process; the shards conftest.py keeps."""

import os
import subprocess
import sys

import pytest

from conftest import load_tool

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


runner = load_tool("run_tests.py", "kindgi_run_tests")


@pytest.mark.parametrize("argv, shards, rest", [
    (["--shards", "3", "-q"], 3, ["-q"]),
    (["tests/e2e", "--shards=1"], 1, ["tests/e2e"]),
    (["-k", "shards"], None, ["-k", "shards"]),
])
def test_shards_are_taken_out_of_the_arguments(argv, shards, rest):
    default = min(2 * (os.cpu_count() or 1), runner.MAX_SHARDS)
    assert runner.take_shards(argv) == (shards or default, rest)


@pytest.mark.parametrize("argv", [["--shards", "0"], ["--shards", "two"], ["--shards"]])
def test_a_bad_shard_count_is_a_usage_error(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        runner.take_shards(argv)
    assert stopped.value.code == 2
    assert "--shards wants a whole number" in capsys.readouterr().err


@pytest.mark.parametrize("statuses, combined", [
    ([0, 0, 0], 0),
    ([0, 5, 5], 0),          # fewer tests than shards
    ([5, 5], 5),             # nothing collected anywhere
    ([0, 1, 2], 1),          # the first failure's
    ([5, 2, 0], 2),
])
def test_the_shards_statuses_combine(statuses, combined):
    assert runner.combined_status(statuses) == combined


def collected(shard):
    """The node ids pytest collects from tests/test_build.py in *shard* ("i/N", or None for all)."""
    env = dict(os.environ)
    env.pop(runner.SHARD_VAR, None)
    if shard:
        env[runner.SHARD_VAR] = shard
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "tests/test_build.py"], cwd=ROOT, env=env, stdout=subprocess.PIPE, timeout=60)
    return [line for line in done.stdout.decode().splitlines() if line.startswith("tests/")]


def test_the_shards_split_the_collection_every_nth_test():
    whole = collected(None)
    parts = [collected("%d/2" % i) for i in range(2)]
    assert len(whole) > 10
    assert parts == [whole[0::2], whole[1::2]]
