"""schema_lite against the official JSON Schema test suite and the Ajv oracle.

Both live in ../shared (read-only sources of truth); without it these tests skip.
The figures themselves are printed by tools/schema_report.py, which also holds the
thresholds asserted here (``threshold_checks``), so that ``schema_report.py
--check`` checks the same things under interpreters pytest doesn't run on.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
REPORT = ROOT / "tools" / "schema_report.py"
sys.path.insert(0, str(ROOT / "tools"))

import schema_report  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (SHARED / "jsonschema-suite").is_dir() or not (SHARED / "ajv-oracle" / "cases.json").is_file(),
    reason="../shared (jsonschema-suite and ajv-oracle) is absent: nothing to compare with")


@pytest.fixture(scope="module")
def suite():
    return schema_report.run_suite(str(SHARED))


@pytest.fixture(scope="module")
def oracle():
    return schema_report.run_oracle(str(SHARED))


def test_thresholds(suite, oracle):
    failed = [(what, detail) for what, ok, detail in schema_report.threshold_checks(suite, oracle) if not ok]
    assert failed == []


def test_the_figures_themselves(suite, oracle):
    """The figures docs/schema_lite.md shows: a change to any of them is a change to document."""
    figures = schema_report.suite_figures(suite)
    assert figures["required"] == (1283, 1299)
    assert (oracle["issues"], oracle["compiled"]) == (412, 412)
    assert (oracle["defaults"], oracle["defaulted"]) == (410, 410)


@pytest.mark.skipif(not os.environ.get("KINDGI_TEST_PYTHON"),
                    reason="KINDGI_TEST_PYTHON names no other interpreter to compare with")
def test_same_answers_under_the_service_interpreter(suite, oracle):
    """schema_report.py --check passes under $KINDGI_TEST_PYTHON (3.6 and up, no pytest
    there) and digests the very answers given here."""
    done = subprocess.run([os.environ["KINDGI_TEST_PYTHON"], str(REPORT), "--check"], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=600)
    out = done.stdout.decode("utf-8", "replace")
    assert done.returncode == 0, out[-3000:]
    digest = schema_report.answers_digest(suite, oracle)
    assert digest in out, out[-500:]


def run_report(*args):
    done = subprocess.run([sys.executable, str(REPORT)] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120)
    return done.returncode, done.stdout.decode("utf-8", "replace")


def test_report_help_prints_the_usage_without_running_the_cases():
    """--help used to run the whole report, and print no usage."""
    status, out = run_report("--help")
    assert status == 0, out
    assert "--shared DIR" in out and "--answers FILE" in out, out
    assert "answers digest" not in out, out


@pytest.mark.parametrize("flag", ["--shared", "--answers"])
def test_report_flag_without_its_value_is_a_usage_error(flag):
    """A flag missing its value was a traceback (--answers: after the whole report ran)."""
    status, out = run_report("--check", flag)
    assert status == 2, out
    assert "Traceback" not in out and "expected one argument" in out, out
