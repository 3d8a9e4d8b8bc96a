"""Run the test suite with pytest, installing pytest first when needed.

Usage (from anywhere; paths in the arguments are relative to the repo root):

    python3 tools/run_tests.py [pytest arguments...]

pytest is the project's only test dependency.  When the interpreter running
this script can import it, the suite runs under that interpreter.  Otherwise
the script makes a virtual environment in .venv-test/ at the repo root
(stdlib venv), installs pytest into it with pip, and runs the suite with the
venv's Python; a later run reuses that venv.  KINDGI_TEST_VENV=1 takes the
venv route even when pytest is importable (CI uses it to prove the route a
fresh machine takes).

The exit status is pytest's.  "No tests collected" (pytest's status 5) is a
failure too, and said so plainly: a suite that ran nothing proved nothing.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv-test")
NO_TESTS_COLLECTED = 5


def say(message):
    """Write one line about what this script is doing to stderr."""
    sys.stderr.write("run_tests: %s\n" % message)
    sys.stderr.flush()


def venv_python():
    """Return the path of the Python inside .venv-test/."""
    if os.name == "nt":
        return os.path.join(VENV, "Scripts", "python.exe")
    return os.path.join(VENV, "bin", "python")


def imports_pytest(python):
    """Tell whether *python* can import pytest."""
    probe = [python, "-c", "import pytest"]
    return subprocess.call(probe, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL) == 0


def run_or_die(command, what):
    """Run *command*; on failure say *what* failed and exit with its status."""
    status = subprocess.call(command, cwd=ROOT)
    if status != 0:
        say("%s failed (exit %d): %s" % (what, status, " ".join(command)))
        sys.exit(status or 1)


def ensure_venv():
    """Make .venv-test/ with pytest in it, unless it is there already."""
    python = venv_python()
    if not os.path.exists(python):
        say("creating %s" % VENV)
        run_or_die([sys.executable, "-m", "venv", VENV], "creating the venv")
    if not imports_pytest(python):
        say("installing pytest into %s" % VENV)
        run_or_die([python, "-m", "pip", "install", "--quiet", "pytest"],
                   "installing pytest")
    return python


def pick_python():
    """Return the interpreter that will run pytest."""
    forced = os.environ.get("KINDGI_TEST_VENV") == "1"
    if not forced and imports_pytest(sys.executable):
        return sys.executable
    return ensure_venv()


def main(argv):
    python = pick_python()
    command = [python, "-m", "pytest"] + argv
    say("running: %s" % " ".join(command))
    status = subprocess.call(command, cwd=ROOT)
    if status == NO_TESTS_COLLECTED:
        say("pytest collected no tests, which counts as a failure "
            "(arguments: %s)" % (" ".join(argv) or "none, so testpaths: tests/"))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
