"""How long building an index takes: this indexer against the SDK's, on the same packs.

    python3 bench/index_time.py [--runs N] [--python PY ...] [--sdk-python PY]

Each run is a whole process (``kindgi_pack_min.py index`` or ``python -m kindgi.pack
index``) on a fresh copy of the pack, with pinned --artifact-version and --published-at,
timed from start to exit; the table shows the median and the fastest of N runs (default
10), per pack (bench/pack, examples/hello-pack) and per interpreter.  The SDK comes from
$KINDGI_SDK_PYTHON or .venv-sdk/ (see tests/e2e/indexing.py); without it, only ours is
timed.  Prints figures; never fails on a slow one.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SERVICE = os.path.join(ROOT, "kindgi_pack_min.py")
PACKS = ("bench/pack", "examples/hello-pack")
PINS = ["--artifact-version", "bench-1", "--published-at", "2026-01-01T00:00:00.000Z", "--json"]


def timed(command, pack, scratch):
    """Seconds from start to exit of command on a fresh copy of pack."""
    target = os.path.join(scratch, "pack")
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(os.path.join(ROOT, pack), target, ignore=shutil.ignore_patterns("__pycache__"))
    start = time.perf_counter()
    done = subprocess.run(command + ["--pack-dir", target] + PINS, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=120)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(command), done.stderr.decode()[-500:]))
    return seconds


def version_of(python):
    return subprocess.run([python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                          stdout=subprocess.PIPE, universal_newlines=True, timeout=30).stdout.strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--python", action="append", help="an interpreter for ours (repeatable; default: this one)")
    parser.add_argument("--sdk-python", help="an interpreter with kindgi 0.1.10 (default: .venv-sdk/)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
    from indexing import sdk_python
    sdk = args.sdk_python or sdk_python()[0]
    targets = [("ours, Python %s" % version_of(py), [py, SERVICE, "index"]) for py in args.python or [sys.executable]]
    if sdk:
        targets.append(("SDK, Python %s" % version_of(sdk), [sdk, "-m", "kindgi.pack", "index"]))
    else:
        print("(the SDK's indexer is not installed: only ours is timed)")
    print("%-24s %-22s %10s %10s" % ("indexer", "pack", "median ms", "best ms"))
    with tempfile.TemporaryDirectory(prefix="kindgi-index-time-") as scratch:
        for pack in PACKS:
            for name, command in targets:
                runs = [timed(command, pack, scratch) for _ in range(args.runs)]
                print("%-24s %-22s %10.0f %10.0f" % (name, pack, statistics.median(runs) * 1000, min(runs) * 1000))


if __name__ == "__main__":
    main()
