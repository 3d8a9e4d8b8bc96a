"""Run the test suite with pytest, installing pytest first when needed.

Usage (from anywhere; paths in the arguments are relative to the repo root):

    python3 tools/run_tests.py [--shards N] [pytest arguments...]

pytest is the project's only test dependency.  When the interpreter running
this script can import it, the suite runs under that interpreter.  Otherwise
the script makes a virtual environment in .venv-test/ at the repo root
(stdlib venv), installs pytest into it with pip, and runs the suite with the
venv's Python; a later run reuses that venv.  KINDGI_TEST_VENV=1 takes the
venv route even when pytest is importable (CI uses it to prove the route a
fresh machine takes).

The suite runs in N pytest processes side by side, by default two per CPU
(at most MAX_SHARDS; ``--shards 1`` runs one pytest as usual): most tests
wait on a subprocess, a socket or a timer, so one process per CPU leaves the
CPUs idle half the time.  Shard i of N runs every Nth test of the
collection, from the i-th on (tests/conftest.py reads KINDGI_TEST_SHARD="i/N"),
which spreads each module's slow tests across the shards.  Every shard gets
the same pytest arguments, so an argument that writes a file (--junitxml)
wants ``--shards 1``.  The first shard reports as it runs; the others' output
is printed whole as each one ends.

The exit status is pytest's: the first failing shard's.  "No tests collected"
(pytest's status 5) in every shard is a failure too, and said so plainly: a
suite that ran nothing proved nothing.
"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, ".venv-test")
NO_TESTS_COLLECTED = 5
MAX_SHARDS = 8
SHARD_VAR = "KINDGI_TEST_SHARD"


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


def take_shards(argv):
    """Remove ``--shards N`` from *argv*; return N and the rest (default N: two per CPU, at most MAX_SHARDS)."""
    shards = min(2 * (os.cpu_count() or 1), MAX_SHARDS)
    rest = []
    args = iter(argv)
    for arg in args:
        if arg == "--shards" or arg.startswith("--shards="):
            value = arg.partition("=")[2] if "=" in arg else next(args, "")
            if not value.isdigit() or int(value) < 1:
                say("--shards wants a whole number of at least 1, not %r" % value)
                sys.exit(2)
            shards = int(value)
        else:
            rest.append(arg)
    return shards, rest


def run_shards(command, shards):
    """Run *command* as *shards* pytest processes; return pytest's status.

    The first shard writes to this script's output as it runs, so progress
    shows; the others write to logs, printed whole as each one ends.
    """
    say("shard 1 of %d reports as it runs; the others when they end" % shards)
    statuses = []
    with tempfile.TemporaryDirectory() as logs:
        running = []
        for shard in range(shards):
            log = open(os.path.join(logs, "shard-%d.log" % shard), "w+b") if shard else None
            env = dict(os.environ, **{SHARD_VAR: "%d/%d" % (shard, shards)})
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log,
                                       stderr=subprocess.STDOUT if log else None)
            running.append((shard, log, process))
        for shard, log, process in running:
            statuses.append(process.wait())
            sys.stdout.flush()
            say("shard %d of %d, exit %d%s" % (shard + 1, shards, statuses[-1], ":" if log else ""))
            if log:
                log.seek(0)
                sys.stdout.buffer.write(log.read())
                sys.stdout.flush()
                log.close()
    return combined_status(statuses)


def combined_status(statuses):
    """The shards' statuses as one: the first failure's; else 0 if any shard ran tests; else 5."""
    failed = [status for status in statuses if status not in (0, NO_TESTS_COLLECTED)]
    if failed:
        return failed[0]
    return 0 if 0 in statuses else NO_TESTS_COLLECTED


def main(argv):
    shards, argv = take_shards(argv)
    python = pick_python()
    command = [python, "-m", "pytest"] + argv
    if shards == 1 or "--version" in argv or "--help" in argv or "-h" in argv:
        say("running: %s" % " ".join(command))
        status = subprocess.call(command, cwd=ROOT)
    else:
        say("running in %d shards: %s" % (shards, " ".join(command)))
        status = run_shards(command, shards)
    if status == NO_TESTS_COLLECTED:
        say("pytest collected no tests, which counts as a failure "
            "(arguments: %s)" % (" ".join(argv) or "none, so testpaths: tests/"))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
