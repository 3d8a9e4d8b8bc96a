"""Build the one-file forms of the pack service: dist/kindgi_pack_min.pyz and dist/kindgi_pack_min.py.

Usage:

    python3 tools/build.py [--dist FOLDER] [--python INTERPRETER]

The service is kindgi_pack_min.py and the modules it imports (MODULES:
schema_lite.py, and kindgi_pack_index.py where it exists).  Each form is one
file that holds them all and runs alone, with nothing but the standard
library, also under `python -I -S` (no site-packages, no PYTHON* variables,
no script folder on sys.path), which is what a distroless image gives:

kindgi_pack_min.pyz
    A stdlib zipapp: the modules' sources, their bytecode for the Python that
    builds it, and a __main__.py that runs kindgi_pack_min.main().  The form
    to deploy: built with the Python version that runs it (deploy/Dockerfile
    does), no start compiles the modules, which spares a third of the boot
    and megabytes that stay with the process.  Another version finds the
    bytecode's magic number wrong and compiles the sources instead.  The
    bytecode is checked against its source's hash (PEP 552), so an edited
    source in the archive is never run stale.

kindgi_pack_min.py
    A plain script: the modules' sources as string literals, and a finder
    first on sys.meta_path that imports them by name, so the service's
    `import schema_lite` works unchanged.  Any Python version runs it the
    same way; it compiles the sources at every start.

Both run as `python3 FILE --index /app/index.json` and behave like
`python3 kindgi_pack_min.py --index ...` in a checkout: the signals are held
from the first line, and the service can re-execute the file to hide its
token.  The same sources always give the same bytes (a reproducible image
layer).  zipimport reads hash-checked bytecode from Python 3.8 on: built by
3.6 or 3.7, the archive holds the sources only, and every start compiles
them, as for the script.
"""

import argparse
import io
import os
import re
import subprocess
import sys
import tempfile
import zipapp
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REQUIRED = ("kindgi_pack_min", "schema_lite")
OPTIONAL = ("kindgi_pack_index",)   # imported only by `kindgi_pack_min.py index`
DEFAULT_DIST = os.path.join(ROOT, "dist")
DEFAULT_PYTHON = "/usr/bin/env python3"
ARCHIVE_NAME = "kindgi_pack_min.pyz"
SCRIPT_NAME = "kindgi_pack_min.py"
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def source_path(module):
    return os.path.join(ROOT, module + ".py")


def modules():
    """The modules to build in: the required ones, and the optional ones that exist."""
    return REQUIRED + tuple(m for m in OPTIONAL if os.path.isfile(source_path(m)))


def read_source(module):
    """The module's source as text, its line ends kept as they are in the file."""
    with open(source_path(module), encoding="utf-8", newline="") as f:
        return f.read()


# ---------------------------------------------------------------------------
# Entry point lines, shared by the archive's __main__.py and the script
# ---------------------------------------------------------------------------

HOLD_SIGNALS = '''\
import signal
import sys

if __name__ == "__main__":
    # Hold SIGTERM and SIGINT until main() has handlers for them: a held signal
    # waits, where an unhandled one kills the service (or, as PID 1, is ignored).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
'''

RUN_MAIN = '''\
if __name__ == "__main__":
    import kindgi_pack_min
    sys.exit(kindgi_pack_min.main())
'''

ARCHIVE_MAIN = ('"""Entry point of kindgi_pack_min.pyz: run the pack service."""\n\n'
                + HOLD_SIGNALS + "\n" + RUN_MAIN)


# ---------------------------------------------------------------------------
# The archive: dist/kindgi_pack_min.pyz
# ---------------------------------------------------------------------------

def archive_members(names):
    """Yield (name, bytes) for every file the archive holds."""
    for module in names:
        yield module + ".py", read_source(module).encode("utf-8")
        if HASH_CHECKED_BYTECODE:
            yield module + ".pyc", bytecode(module)   # zipimport looks for module.pyc beside module.py
    yield "__main__.py", ARCHIVE_MAIN.encode("utf-8")


# zipimport reads hash-checked bytecode (PEP 552) from Python 3.8 on; 3.6 can't write it, and 3.7's
# zipimport passes it over and compiles the source.
HASH_CHECKED_BYTECODE = sys.version_info >= (3, 8)


# Run in a child interpreter with a fixed hash seed: before Python 3.11 a set
# constant is written in hash order, so the bytes would change from build to build.
# Never optimized: a PYTHONOPTIMIZE in the environment would drop the asserts
# (and docstrings) and change the bytes.
COMPILE = """import py_compile, sys
py_compile.compile(sys.argv[1], cfile=sys.argv[2], dfile=sys.argv[3], doraise=True, optimize=0,
                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)
"""


def bytecode(module):
    """The .pyc of *module* for this interpreter, validated by the source's hash."""
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, module + ".pyc")
        subprocess.run([sys.executable, "-c", COMPILE, source_path(module), target, module + ".py"],
                       check=True, env=dict(os.environ, PYTHONHASHSEED="0"), timeout=120)
        with open(target, "rb") as f:
            return f.read()


def archive_bytes(names, python):
    """The whole archive: the `#!` line and a zip built in memory, every entry at one fixed time."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in archive_members(names):
            info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    # zipapp puts the `#!` line before the zip (a zip is read from its end).
    output = io.BytesIO()
    zipapp.create_archive(io.BytesIO(buffer.getvalue()), output, interpreter=python)
    return output.getvalue()


# ---------------------------------------------------------------------------
# The script: dist/kindgi_pack_min.py
# ---------------------------------------------------------------------------

SCRIPT_DOC = '''\
#!%(python)s
"""The Kindgi pack service in one file: kindgi_pack_min.py with %(others)s built in.

Generated by tools/build.py from the project's sources: edit those, not this.
Copy this file alone into an image and run it:

    KINDGI_PACK_SERVICE_TOKEN=... python3 kindgi_pack_min.py --index /app/index.json

SOURCES below holds each module's source as a string literal (backslashes
doubled, a quote that another quote follows escaped); EmbeddedModules, first
on sys.meta_path, imports them by name, so `import schema_lite` works as in a
checkout.  A traceback names a module as this file's path followed by
/<module>.py, with the module's own line numbers and lines.
"""

'''

FINDER = '''
import importlib.machinery  # noqa: E402
import os  # noqa: E402


class EmbeddedModules:
    """Finder and loader (PEP 451) of the modules whose sources this file holds.

    A module's file name is this file's path followed by /<module>.py, as
    zipimport names a module in an archive; linecache reads the lines of a
    traceback from get_source().
    """

    def __init__(self, sources, path):
        self.sources = sources
        self.path = path

    def find_spec(self, name, path=None, target=None):
        if name not in self.sources:
            return None
        spec = importlib.machinery.ModuleSpec(name, self, origin=self.filename(name))
        spec.has_location = True   # the origin becomes the module's __file__
        return spec

    def filename(self, name):
        return self.path + "/" + name + ".py"

    def create_module(self, spec):
        return None   # the usual module object

    def exec_module(self, module):
        name = module.__spec__.name
        code = compile(self.sources[name], self.filename(name), "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, name):
        return self.sources[name]


SOURCES = {}
'''

INSTALL_FINDER = '''
# First on sys.meta_path, so a stray module of the same name beside this file
# (or this file itself, found as `kindgi_pack_min`) never stands in for one here.
sys.meta_path.insert(0, EmbeddedModules(SOURCES, os.path.abspath(__file__)))

'''


def string_literal(text):
    """*text* as a triple-quoted string literal whose lines read as the text's own.

    Escaped are only what such a literal can't hold as it is: backslashes,
    carriage returns, and a single quote that another quote follows or that
    ends the text (so no three quotes in a row can close the literal).  The
    first line of the text starts on the line after the opening quotes.
    """
    body = text.replace("\\", "\\\\").replace("\r", "\\r")
    body = re.sub(r"'(?='|\Z)", "\\\\'", body)
    return "'''\\\n" + body + "'''"


def embedded_source(module):
    """The lines of the script that hold *module*'s source."""
    source = read_source(module)
    banner = "# %s.py (%d lines) " % (module, source.count("\n"))
    return "\n\n%s\nSOURCES[%r] = %s\n" % (banner.ljust(79, "-"), module, string_literal(source))


def script_text(names, python):
    """The standalone script that holds *names* and runs kindgi_pack_min.main()."""
    others = ", ".join(module + ".py" for module in names if module != "kindgi_pack_min")
    return (SCRIPT_DOC % {"python": python, "others": others} + HOLD_SIGNALS + FINDER
            + "".join(embedded_source(module) for module in names)
            + INSTALL_FINDER + RUN_MAIN)


# ---------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------

def write(path, data):
    """Write *data* to *path* as an executable file; a reader never sees half of it, and a
    failed write leaves nothing behind."""
    partial = path + ".partial"
    try:
        with open(partial, "wb") as f:
            f.write(data)
        os.chmod(partial, 0o755)
        os.replace(partial, path)
    except BaseException:
        if os.path.lexists(partial):
            os.remove(partial)
        raise


def syntax_problem(names):
    """The first source that doesn't compile, in one line, else None.

    Checked here, before anything is written: the bytecode's child compiler
    would say it in a traceback, and before Python 3.8 nothing compiles the
    sources at all (the archive holds them only).
    """
    for module in names:
        try:
            compile(read_source(module), source_path(module), "exec", dont_inherit=True)
        except SyntaxError as exc:
            return "%s line %s: %s" % (source_path(module), exc.lineno, exc.msg)
    return None


def build(dist, python):
    """Write both forms into *dist*; return their paths."""
    os.makedirs(dist, exist_ok=True)
    names = modules()
    archive = os.path.join(dist, ARCHIVE_NAME)
    script = os.path.join(dist, SCRIPT_NAME)
    write(archive, archive_bytes(names, python))
    write(script, script_text(names, python).encode("utf-8"))
    return archive, script


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Build the one-file forms of the pack service: %s and %s." % (ARCHIVE_NAME, SCRIPT_NAME))
    parser.add_argument("--dist", default=DEFAULT_DIST,
                        help="the folder to write both files into (default: %(default)s)")
    parser.add_argument("--python", default=DEFAULT_PYTHON,
                        help="interpreter named on the #! lines (default: %(default)s)")
    args = parser.parse_args(argv)
    missing = [m + ".py" for m in REQUIRED if not os.path.isfile(source_path(m))]
    if missing:
        parser.error("missing in %s: %s" % (ROOT, ", ".join(missing)))
    if not args.python.strip() or "\n" in args.python or "\r" in args.python:
        # An empty #! line makes a shell run the file as its own commands; a line break would
        # put the rest of the value into both files as code.
        parser.error("--python %r: name the interpreter, on one line, e.g. /usr/bin/python3" % args.python)
    if os.path.realpath(args.dist) == os.path.realpath(ROOT):
        parser.error("--dist %s is the folder of the sources: the script would replace "
                     "kindgi_pack_min.py; name another folder" % args.dist)
    problem = syntax_problem(modules())
    if problem:
        sys.stderr.write("build.py: %s; nothing was written\n" % problem)
        return 1
    try:
        paths = build(args.dist, args.python)
    except (OSError, subprocess.SubprocessError) as exc:
        sys.stderr.write("build.py: cannot write the one-file forms into %s: %s\n" % (args.dist, exc))
        return 1
    for path in paths:
        print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
