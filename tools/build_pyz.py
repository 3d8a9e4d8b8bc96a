"""Build dist/kindgi_pack_min.pyz: the whole service as one file to copy.

Usage:

    python3 tools/build_pyz.py [--output PATH] [--python INTERPRETER]

The archive is a stdlib zipapp holding kindgi_pack_min.py, schema_lite.py,
their bytecode for the Python that builds it, and a __main__.py that calls
kindgi_pack_min.main(), so

    python3 kindgi_pack_min.pyz --index /app/index.json

behaves like `python3 kindgi_pack_min.py --index /app/index.json`.  It needs
nothing but the standard library, also under `python -I -S` (no
site-packages), which is what a distroless image gives.

The bytecode spares every start the compile of the two modules (a third of
the boot, and megabytes of memory that stay with the process): build the
archive with the Python version that will run it (deploy/Dockerfile does).
Another version finds the bytecode's magic number wrong and compiles the
sources, as without it.  The bytecode is checked against its source's hash
(PEP 552), so an edited source in the archive is never run stale.

The zip is assembled in memory with one fixed timestamp for every member, so
the same sources always give the same bytes (a reproducible image layer);
zipapp then writes it out behind its `#!` line.
"""

import argparse
import io
import os
import subprocess
import sys
import tempfile
import zipapp
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = ("kindgi_pack_min.py", "schema_lite.py")
DEFAULT_OUTPUT = os.path.join(ROOT, "dist", "kindgi_pack_min.pyz")
DEFAULT_PYTHON = "/usr/bin/env python3"
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold

MAIN = b'''"""Entry point of kindgi_pack_min.pyz: run the pack service."""

import signal
import sys

# Hold SIGTERM and SIGINT while the service loads; main() installs their handlers.
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})

import kindgi_pack_min  # noqa: E402

sys.exit(kindgi_pack_min.main())
'''


def members():
    """Yield (name, bytes) for every file the archive holds."""
    for name in MODULES:
        source = os.path.join(ROOT, name)
        with open(source, "rb") as f:
            yield name, f.read()
        yield name + "c", bytecode(source, name)   # zipimport looks for module.pyc beside module.py
    yield "__main__.py", MAIN


# Run in a child interpreter with a fixed hash seed: before Python 3.11 a set
# constant is written in hash order, so the bytes would change from build to build.
COMPILE = """import py_compile, sys
py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile=sys.argv[3], doraise=True,
                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
"""


def bytecode(source, name):
    """The .pyc of *source* for this interpreter, validated by the source's hash."""
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, name + "c")
        subprocess.run([sys.executable, "-c", COMPILE, source, target, name], check=True,
                       env=dict(os.environ, PYTHONHASHSEED="0"), timeout=120)
        with open(target, "rb") as f:
            return f.read()


def archive_bytes():
    """Return the zip part of the archive, built in memory."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members():
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def build(output, python):
    """Write the executable archive to *output*; return its size in bytes.

    zipapp puts the `#!` line before the zip and marks the file executable,
    so `./kindgi_pack_min.pyz` also runs where *python* exists.  The archive
    is written beside *output* and renamed, so a reader never sees half of it.
    """
    folder = os.path.dirname(os.path.abspath(output))
    os.makedirs(folder, exist_ok=True)
    partial = output + ".partial"
    zipapp.create_archive(io.BytesIO(archive_bytes()), partial, interpreter=python)
    os.replace(partial, output)
    return os.path.getsize(output)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build the one-file kindgi_pack_min.pyz (stdlib zipapp).")
    parser.add_argument("--output", default=DEFAULT_OUTPUT,
                        help="where to write the archive (default: %(default)s)")
    parser.add_argument("--python", default=DEFAULT_PYTHON,
                        help="interpreter named on the #! line (default: %(default)s)")
    args = parser.parse_args(argv)
    missing = [n for n in MODULES if not os.path.isfile(os.path.join(ROOT, n))]
    if missing:
        parser.error("missing in %s: %s" % (ROOT, ", ".join(missing)))
    size = build(args.output, args.python)
    print("wrote %s (%d bytes)" % (args.output, size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
