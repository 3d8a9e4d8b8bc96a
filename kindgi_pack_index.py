"""kindgi_pack_index: a pack's ``index.json``, built with the standard library only.

    python3 kindgi_pack_min.py index --pack-dir DIR [--config PATH] [--output PATH]
                                     [--artifact-version V] [--published-at ISO] [--json]

The pack service serves an index; this module builds one from the pack's source: byte for
byte what the Kindgi SDK's indexer (``python -m kindgi.pack index``, kindgi 0.1.10) writes
for the same source, with the same outcomes, but without the SDK, pydantic or Python 3.11.
The runtime checks an index by the SHA-256 of its bytes, so "almost the same" would be
refused.

A pack is indexed in five steps (``run_indexer`` takes them in order):

1. Configuration: the ``[tool.kindgi]`` tables of ``pyproject.toml`` (``load_config``),
   read with ``tomllib`` where the interpreter has it and otherwise with a small reader
   that refuses what it does not read (``read_toml``).
2. Discovery: the files the globs of ``[tool.kindgi.discovery]`` match (``discover``).
3. Loading: each file imported as the pack service imports it, with the ``kindgi`` the
   service would give it (the SDK when it imports, else the service's stand-in); the
   tools, guardrails, agents and flows it defines at module level are collected.  A file
   that fails is a file error; the rest of the pack still indexes (``index_pack``).
4. Entries: one per primitive (``tool_entry``, ``guardrail_entry``, ``agent_entry``,
   ``flow_entry``).
5. The index is checked against ``pack-index.schema.json`` and written atomically in the
   canonical form (``stable_dumps``: keys in UTF-16 order, numbers as JavaScript writes
   them).

The sections below: the command line; indexing a pack (``run_indexer``, and step 3:
``index_pack``); entries (4); configuration (1) and its TOML reader; discovery (2);
canonical JSON and the schema check (5); and, as an appendix, the schemas.

The kindgi JSON Schemas (pack-index, flow, tool) are embedded at the end of the file,
copied unchanged from the kindgi 0.1.10 wheel (``kindgi/_specs/``, Apache-2.0, Copyright
(C) 2026 Kindgi Inc.).  ``KindgiSchema`` checks a value against them as the SDK's
validator does, keyword by keyword in the schema's own order, so that the issue a refusal
names and its wording are the SDK's.  (``schema_lite`` answers as Ajv does, for the
runtime's wire; the indexer's refusals are read against the SDK's.)

Runs on CPython 3.6 and newer.  ``main(argv, service)`` is what ``kindgi_pack_min.py
index`` calls, with the service module: its pack loading and its stand-in ``kindgi`` are
the ones used here, so what is indexed is what the service will serve.
"""

import errno
import importlib
import json
import numbers
import os
import re
import stat
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime, time as clock_time, timezone
from functools import lru_cache
from pathlib import Path

try:
    import tomllib   # Python 3.11+
except ImportError:
    tomllib = None

__all__ = ["main", "run_indexer", "load_config", "ConfigError", "read_toml", "TomlError",
           "discover", "stable_dumps", "js_number", "code_units", "KindgiSchema", "kindgi_schema"]

INDEX_ENVELOPE_VERSION = 1
KERNEL_PAYLOAD_VERSION = 1
CONFIG_FILENAME = "pyproject.toml"

# The discovery folders, the kind each holds, and the key of its count in the outcome.
FOLDERS = (("tools", "tool"), ("guardrails", "guardrail"), ("agents", "agent"), ("flows", "flow"))
DEFAULT_DISCOVERY = {folder: folder + "/**/*.py" for folder, _ in FOLDERS}


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------

USAGE = """\
usage: kindgi_pack_min.py index --pack-dir DIR [--config PATH] [--output PATH]
                                [--artifact-version V] [--published-at ISO] [--json]
"""

HELP = USAGE + """
Build the pack's index.json from its source, with the Python standard library only.
The output and the outcome are those of the Kindgi SDK's indexer for the same source
(`python -m kindgi.pack index`, kindgi 0.1.10), byte for byte.

It reads [tool.kindgi.pack] (id, version), [tool.kindgi.discovery] (globs, default
tools|guardrails|agents|flows/**/*.py) and [tool.kindgi.env] (required, optional) from
pyproject.toml, imports every discovered file as the pack service would, and writes one
entry per tool, guardrail, agent and flow defined at module level.  A file that fails to
import, defines nothing (name a helper module _like_this.py) or defines the wrong kind for
its folder is reported as a file error, and the rest of the pack is still indexed.

  --pack-dir DIR          the pack's root folder (required)
  --config PATH           the TOML file with [tool.kindgi] (default: DIR/pyproject.toml)
  --output PATH           where to write the index (default: DIR/index.json); written
                          to a temporary file first, then renamed (a device or a named
                          pipe, such as /dev/stdout, is written into)
  --artifact-version V    the index's artifactVersion (default: YYYYMMDD.N, today in
                          UTC, N one more than the previous output's same-day N)
  --published-at ISO      the index's publishedAt (default: now, UTC, e.g.
                          2026-10-01T12:00:00.000Z); pin both for reproducible bytes
  --json                  print the outcome as one JSON line: {"kind": "ok", "value":
                          {...}} or {"kind": "err", "error": {"code", "message", ...}}
  -h, --help              print this help

Exit status: 0 when the index was written (file errors included), 1 on an error
(config-not-found, config-parse-failed, config-invalid, discovery-empty,
manifest-validation-failed, output-write-failed), 2 on a usage error.
Before Python 3.11 the TOML reader takes tables, strings, integers, booleans, arrays and
comments only; see docs/indexer.md.
"""

VALUE_FLAGS = ("--pack-dir", "--config", "--output", "--artifact-version", "--published-at")


def main(argv, service):
    """Run ``index`` with its arguments; return the exit status.

    ``service`` is the pack service's module (``kindgi_pack_min``): its pack loading and
    its stand-in ``kindgi`` are used.
    """
    options = {}
    as_json = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--json":
            as_json = True
            i += 1
        elif arg in ("-h", "--help"):
            return service.write_out(HELP)
        elif arg in VALUE_FLAGS and i + 1 < len(argv):
            options[arg] = argv[i + 1]
            i += 2
        else:
            return _usage_error("unexpected argument %s" % arg)
    if "--pack-dir" not in options:
        return _usage_error("--pack-dir is required")
    streams = sys.stdout, sys.stderr
    descriptors = [_descriptor(stream) for stream in streams]
    outcome = run_indexer(
        service, Path(options["--pack-dir"]),
        config_path=Path(options["--config"]) if "--config" in options else None,
        output_path=Path(options["--output"]) if "--output" in options else None,
        artifact_version=options.get("--artifact-version"),
        published_at=options.get("--published-at"))
    sys.stdout = _stream_for(sys.stdout, streams[0], descriptors[0])
    sys.stderr = _stream_for(sys.stderr, streams[1], descriptors[1])
    if as_json:
        if service.write_out(json.dumps(outcome, separators=(",", ":")) + "\n"):
            return 1   # stdout takes nothing: said in one line on stderr
        return 0 if outcome["kind"] == "ok" else 1
    if outcome["kind"] == "err":
        error = outcome["error"]
        sys.stderr.write("kindgi_pack_min index: %s: %s\n" % (error["code"], error["message"]))
        return 1
    return service.write_out(json.dumps(outcome["value"], indent=2) + "\n")


def _stream_for(current, started, descriptor):
    """The stream the outcome is written to: ``started``, the command's own, unless the one pack
    code put in its place writes to the same descriptor (stdout re-wrapped for UTF-8: the old
    one may be detached, or closed with it).  Anything else a module put there (``sys.stderr``
    to keep its prints off stdout, a StringIO to silence them, None) is undone."""
    if descriptor is not None and _descriptor(current) == descriptor:
        return current
    return started


def _descriptor(stream):
    """The file descriptor a stream writes to; None for None, a StringIO, a closed stream."""
    try:
        return stream.fileno()
    except Exception:
        return None


def _usage_error(problem):
    sys.stderr.write("kindgi_pack_min index: %s\n%s(--help explains each option)\n" % (problem, USAGE))
    return 2


# ---------------------------------------------------------------------------
# Indexing a pack
# ---------------------------------------------------------------------------

def run_indexer(service, pack_dir, config_path=None, output_path=None, artifact_version=None,
                published_at=None):
    """Index the pack in ``pack_dir`` (a Path) and write the index; return the outcome.

    ``{"kind": "ok", "value": report}`` or ``{"kind": "err", "error": {code, message, ...}}``.
    Exceptions from pack code at import are file errors; the SDK's indexer lets a value the
    index can't hold (an effect that is not a mapping, a set in a schema) raise, and so
    does this one.
    """
    pack_dir = resolved(pack_dir)
    if output_path is not None:   # pack code may change the current folder: name the output from this one
        output_path = absolute(output_path)
    try:
        config = load_config(pack_dir, config_path)
    except ConfigError as error:
        return _err(error.code, error.message,
                    file_path=None if error.path is None else str(error.path), field=error.field)
    discovered = discover_pack(pack_dir, config.discovery)
    if not discovered:
        return _err("discovery-empty", "Indexer discovered zero files under %s. "
                    "Check the [tool.kindgi.discovery] patterns." % pack_dir)
    kindgi = _kindgi(service)
    service.mount_package(str(pack_dir))
    entries, file_errors, warnings = index_pack(service, kindgi, discovered, config)

    output = resolved(output_path or pack_dir / "index.json")
    # /dev/stdout on a pipe resolves to "pipe:[N]", which no path reaches: a device or a pipe
    # is written into as it was named.
    target = output_path if output_path is not None and _is_special(output_path) else output
    version = artifact_version or _auto_artifact_version(target)
    when = published_at or datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")
    index = {
        "v": INDEX_ENVELOPE_VERSION,
        "packId": config.id,
        "packVersion": config.version,
        "artifactVersion": version,
        "publishedAt": when,
        "tools": _sorted(entries["tool"]),
        "guardrails": _sorted(entries["guardrail"]),
        "agents": _sorted(entries["agent"]),
        "flows": _sorted(entries["flow"]),
    }
    if config.env is not None:
        index["env"] = {"optional": list(config.env[1]), "required": list(config.env[0])}
    issues = kindgi_schema("pack-index").issues(index)
    if issues:
        return _err("manifest-validation-failed", "The index does not match pack-index.schema.json "
                    "at %s: %s" % (issues[0]["instancePath"] or "/", issues[0]["message"]))
    try:
        _atomic_write(target, stable_dumps(index) + "\n")
    except (OSError, UnicodeEncodeError) as cause:   # a lone surrogate (from argv or pack code) isn't UTF-8
        return _err("output-write-failed", "Failed to write %s: %s" % (output, cause),
                    file_path=str(output))
    return {"kind": "ok", "value": {
        "packId": config.id,
        "packVersion": config.version,
        "artifactVersion": version,
        "publishedAt": when,
        "counts": {plural: len(entries[kind]) for plural, kind in FOLDERS},
        "outputPath": str(output),
        "fileErrors": file_errors,
        "warnings": warnings,
    }}


def resolved(path):
    """The absolute path with its links followed, as ``Path.resolve()`` gives it.

    A symbolic link loop makes ``resolve()`` raise RuntimeError before Python 3.13; from
    3.13 on it gives the path as far as it could follow it, and so does this, on every
    interpreter: the loop is then reported where the path is used (no config found, the
    output can't be written), not as a traceback.  A relative path from a current folder
    that was removed can't be made absolute: it is given as it is, and is not found there.
    """
    try:
        return path.resolve()
    except RuntimeError:
        return Path(os.path.realpath(str(path)))
    except OSError:   # os.getcwd() of a removed folder
        return path


def absolute(path):
    """The path from the current folder, as named (its links not followed); as it is when
    the current folder was removed."""
    try:
        return Path(os.getcwd()) / path
    except OSError:
        return path


def _kindgi(service):
    """The ``kindgi`` pack modules import: the SDK when it imports, else the service's stand-in.

    The service's own choice (``installed_sdk``), so the indexed objects are those it will
    serve: a broken or partial SDK is passed over here too.  The stand-in's loggers write
    nothing here: the indexer's output is the outcome alone.
    """
    kindgi, _ = service.installed_sdk()
    return kindgi if kindgi is not None else service.install_standin()


def index_pack(service, kindgi, discovered, config):
    """Import each discovered file and build its entries; return (entries, fileErrors, warnings).

    ``discovered`` is [(relative path, the kind its folder holds or None)], in path order.
    """
    classes = ((kindgi.Tool, "tool"), (kindgi.Guardrail, "guardrail"), (kindgi.Agent, "agent"),
               (kindgi.Flow, "flow"))
    entries = {kind: [] for _, kind in FOLDERS}
    owners = {}   # (kind, id) -> {version or None: the file that defined it}
    file_errors = []
    warnings = []
    for rel_path, expected in discovered:
        try:
            module = importlib.import_module(_module_name(service, rel_path))
            # What the import left in sys.modules may be pack code's object, not a module (42).
            primitives = service.primitives_of(module, tuple(cls for cls, _ in classes))
        except BaseException as cause:   # pack code: an import may raise anything, SystemExit too
            if isinstance(cause, KeyboardInterrupt):
                raise
            # The service's {name, message, stack}: an exception whose str() fails is still told.
            fields = service.serialize_cause(cause)
            file_errors.append(_file_error(
                "file-import-failed", "Failed to import %s: %s: %s" % (rel_path, fields["name"], fields["message"]),
                rel_path, cause=fields))
            continue
        if not primitives:
            if rel_path.rpartition("/")[2].startswith("_"):
                continue
            file_errors.append(_file_error(
                "no-primitives", "File %s defines no tool, guardrail, agent or flow at module level "
                "(a helper module's name starts with `_`)" % rel_path, rel_path))
            continue
        for primitive in primitives:
            kind = next(name for cls, name in classes if isinstance(primitive, cls))
            if expected is not None and kind != expected:
                file_errors.append(_file_error(
                    "kind-mismatch", "File %s is under the default folder for kind '%s' but defines "
                    "a '%s' (%s)" % (rel_path, expected, kind, primitive.id), rel_path))
                continue
            entry, problem = _build(primitive, kind, rel_path, config.version, kindgi, service)
            if problem is not None:
                file_errors.append(_manifest_error(rel_path, problem))
                continue
            duplicate = _duplicate_of(owners, kind, primitive.id, entry.get("version"), rel_path)
            if duplicate is not None:
                file_errors.append(_manifest_error(rel_path, duplicate))
                continue
            entries[kind].append(entry)
            if kind == "guardrail" and not primitive.check_id.startswith(config.id + "."):
                warnings.append(_unprefixed_check(primitive.check_id, rel_path, config.id))
    return entries, file_errors, warnings


def _module_name(service, rel_path):
    """The module a discovered file is imported as, as the service names it.

    A glob can match a file that is no module (``tools/*`` takes ``tools/README.md``) or
    one outside the pack (``../lib/*.py``): that is a ValueError, worded as the SDK's
    indexer words it, so that its file error is the SDK's.  A backslash in a file's name
    (``tools/a\\b.py``) is no Python name: the service reads one in a module path as a
    separator, and would import another module (``tools/a/b.py``) for it.
    """
    if not rel_path.endswith(".py") or rel_path.startswith("/") or ".." in rel_path.split("/"):
        raise ValueError("not a pack-relative Python module path: %s" % rel_path)
    if "\\" in rel_path:
        raise ImportError("Module path %s is not importable: every part must be a Python name"
                          % json.dumps(rel_path))
    return service.module_name_for(rel_path)


def _duplicate_of(owners, kind, primitive_id, version, rel_path):
    """The problem when (kind, id, version) is defined already, else None (and it is recorded).

    Several versions of one primitive may sit side by side (an agent pins the one it
    uses); the same version twice is refused, and so is an entry without a version next
    to any other of its id: nothing would tell them apart.
    """
    defined = owners.setdefault((kind, primitive_id), {})
    if version is None or None in defined:
        owner = next(iter(defined.values()), None)
    else:
        owner = defined.get(version)
    if owner is None:
        defined[version] = rel_path
        return None
    what = "%s '%s'" % (kind, primitive_id) + (" version %s" % version if version else "")
    return "duplicate %s (also defined in %s)" % (what, owner)


def _build(primitive, kind, rel_path, pack_version, kindgi, service):
    """(entry, None), or (None, problem) for an agent or flow that can't be indexed."""
    if kind == "tool":
        return tool_entry(primitive, rel_path, pack_version), None
    if kind == "guardrail":
        return guardrail_entry(primitive, rel_path), None
    if kind == "agent":
        try:
            return agent_entry(primitive, rel_path, pack_version, kindgi, service.wire_schema), None
        except ValueError as cause:
            return None, str(cause)
    try:
        return flow_entry(primitive, rel_path, kindgi)
    except RecursionError:   # nodes or conditions nested past what a recursive check can follow
        return None, "flow '%s' is nested too deeply to check" % primitive.id


def _sorted(entries):
    return sorted(entries, key=lambda entry: code_units(str(entry["id"])))


def _err(code, message, file_path=None, field=None):
    return {"kind": "err", "error": _compact(
        {"code": code, "message": message, "filePath": file_path, "field": field})}


def _file_error(code, message, rel_path, **extra):
    error = {"code": code, "message": message, "filePath": rel_path}
    error.update(extra)
    return _compact(error)


def _manifest_error(rel_path, message):
    return _file_error("manifest-validation-failed", "%s: %s" % (rel_path, message), rel_path)


def _unprefixed_check(check_id, rel_path, pack_id):
    """The warning for a check id that doesn't start with ``<pack id>.``.

    Packs in one tenant share one space of check names; a check named for its pack can't
    collide with another pack's.  A warning only: the pack builds as it is.
    """
    return _file_error(
        "check-id-unprefixed",
        "%s: check \"%s\" doesn't start with this pack's id (\"%s.\"). Name it \"%s.checks.<name>\" "
        "so it can't collide with another pack's check in the same tenant. The pack builds as it is."
        % (rel_path, check_id, pack_id, pack_id), rel_path, field="check")


def _is_special(path):
    """Whether ``path`` names a device or a pipe (/dev/null, /dev/stdout, a named pipe): written
    into, never replaced, and never read back as a previous index.  A folder is not: the
    temporary file's rename onto it fails, as the SDK's does."""
    try:
        mode = os.stat(str(path)).st_mode
    except OSError:   # absent (or unreachable: the write says why)
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _auto_artifact_version(output):
    """``YYYYMMDD.N`` for today (UTC): N is 1, or one more than the previous output's same-day N."""
    today = datetime.now(timezone.utc).strftime("%Y%m%d")
    n = 1
    if _is_special(output):
        return "%s.%d" % (today, n)
    try:
        with open(str(output), encoding="utf-8") as f:
            previous = json.loads(f.read()).get("artifactVersion")
        day, _, count = str(previous).partition(".")
        if day == today and count.isdigit():
            n = int(count) + 1
    except (OSError, ValueError, AttributeError, RecursionError):   # not an index: start at 1
        pass
    return "%s.%d" % (today, n)


def _atomic_write(path, text):
    """Write text (UTF-8) to a temporary file beside path, then rename it over path.

    A device or a named pipe is written into instead: renamed over, --output /dev/null would
    have replaced the machine's /dev/null with a file.  The temporary file is a new one: a link
    or a file already at its name (which can be guessed) is refused, not written through.
    """
    data = text.encode("utf-8")
    if _is_special(path):
        with open(str(path), "wb") as f:
            f.write(data)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("%s.tmp-%d-%d" % (path.name, os.getpid(), int(time.time() * 1000)))
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(str(tmp), str(path))
    except OSError:
        try:
            os.unlink(str(tmp))
        except OSError:
            pass
        raise


# ---------------------------------------------------------------------------
# Entries: one per primitive, the fields the SDK's indexer writes
# ---------------------------------------------------------------------------

def _compact(entry):
    """The entry without its None fields."""
    return {key: value for key, value in entry.items() if value is not None}


def _dict(value):
    return None if value is None else dict(value)


def tool_entry(tool, rel_path, pack_version):
    """A tool's entry; its version defaults to the pack's, ``effects`` is always there."""
    return _compact({
        "id": tool.id,
        "description": tool.description,
        "version": tool.version or pack_version,
        "input": tool.input_schema,
        "output": tool.output_schema,
        "effects": [dict(effect) for effect in tool.effects],
        "mutating": tool.mutating,
        "needsApprovalWhenUnattended": tool.needs_approval_when_unattended,
        "needs": None if tool.needs is None else [dict(need) for need in tool.needs],
        "needsSpec": _dict(tool.needs_spec),
        "sandbox": tool.sandbox,
        "limits": _dict(tool.limits),
        "network": _dict(tool.network),
        "spec": _dict(tool.spec),
        "modulePath": rel_path,
    })


def guardrail_entry(guardrail, rel_path):
    """A guardrail's entry; ``checkId`` is always there, ``configSchema`` only for a typed config."""
    return _compact({
        "id": guardrail.id,
        "name": guardrail.name,
        "kind": guardrail.kind,
        "action": dict(guardrail.action),
        "severity": guardrail.severity,
        "scope": _dict(guardrail.scope),
        "checkModulePath": rel_path,
        "checkId": guardrail.check_id,
        "config": _dict(guardrail.config),
        "configSchema": guardrail.config_schema,
        "sandbox": guardrail.sandbox,
        "limits": _dict(guardrail.limits),
        "network": _dict(guardrail.network),
    })


def agent_entry(agent, rel_path, pack_version, kindgi, wire_schema):
    """An agent's entry: tools pinned by version, guardrails by id, typed output as a schema.

    Raises ValueError for a tool reference that is neither a Tool nor an {id, version}.
    """
    tools = []
    for ref in agent.tools:
        if isinstance(ref, kindgi.Tool):
            tools.append({"id": ref.id, "version": ref.version or pack_version})
            continue
        if not (isinstance(ref, Mapping) and isinstance(ref.get("id"), str)
                and isinstance(ref.get("version"), str)):
            raise ValueError("agent '%s': each tool is a Tool or an {id, version} ref, got %r"
                             % (agent.id, ref))
        tools.append({"id": ref["id"], "version": ref["version"]})
    output = agent.output
    if output is not None and not (isinstance(output, Mapping) and "schema" in output):
        output = {"schema": wire_schema(output, "validation")}
    elif isinstance(output, Mapping):
        output = dict(output)
        output["schema"] = wire_schema(output["schema"], "validation")
    instructions = agent.instructions
    return _compact({
        "id": agent.id,
        "version": agent.version,
        "name": agent.name,
        "instructions": instructions if isinstance(instructions, str) else dict(instructions),
        "capabilities": [dict(c) for c in agent.capabilities],
        "tools": tools,
        "retrieval": [dict(r) for r in agent.retrieval],
        "guardrails": [g.id if isinstance(g, kindgi.Guardrail) else g for g in agent.guardrails],
        "parameters": [dict(p) for p in agent.parameters],
        "budget": _dict(agent.budget),
        "preferredProvider": agent.preferred_provider,
        "preferredModel": agent.preferred_model,
        "description": agent.description,
        "tags": None if agent.tags is None else list(agent.tags),
        "conversationPolicy": _dict(agent.conversation_policy),
        "output": output,
        "toolErrors": _dict(agent.tool_errors),
        "memory": _dict(agent.memory),
        "settings": [dict(s) for s in agent.settings],
        "modelSettings": _dict(agent.model_settings),
        "modulePath": rel_path,
    })


def flow_entry(flow, rel_path, kindgi):
    """(entry, None), or (None, problem) when the flow does not match ``flow.schema.json``."""
    refs = (kindgi.Tool, kindgi.Agent, kindgi.Flow)
    declared = _compact({
        "id": flow.id,
        "version": flow.version,
        "name": flow.name,
        "description": flow.description,
        "nodes": [_node(node, refs) for node in flow.nodes],
        "edges": [dict(edge) for edge in flow.edges],
        "maxParallelism": flow.max_parallelism,
        "metadata": _dict(flow.metadata),
        "output": _dict(flow.output),
    })
    issue = kindgi_schema("flow").explain(declared)
    if issue is not None:
        unexpected = issue["params"].get("additionalProperty")
        return None, "flow '%s' is invalid at %s: %s%s" % (
            flow.id, issue["instancePath"] or "/", issue["message"],
            "" if unexpected is None else " ('%s')" % unexpected)
    entry = dict(declared)
    entry["kernelPayloadVersion"] = KERNEL_PAYLOAD_VERSION
    entry["modulePath"] = rel_path
    return entry, None


def _node(node, refs):
    """A flow node as data: a Tool, Agent or Flow given as a ref becomes its id, in loop
    bodies and fanout branches too."""
    out = dict(node)
    if "ref" in out:
        out["ref"] = _ref_id(out["ref"], refs)
    body = out.get("body")
    if isinstance(body, Mapping):
        out["body"] = dict(body)
        out["body"]["nodes"] = [_node(n, refs) for n in body.get("nodes", [])]
    branches = out.get("branches")
    if isinstance(branches, list):
        out["branches"] = [_branch(branch, refs) for branch in branches]
    return out


def _branch(branch, refs):
    out = dict(branch)
    if "handler" in out:
        out["handler"] = _ref_id(out["handler"], refs)
    return out


def _ref_id(ref, refs):
    return ref.id if isinstance(ref, refs) else ref


# ---------------------------------------------------------------------------
# Configuration: [tool.kindgi] in pyproject.toml
# ---------------------------------------------------------------------------

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RESERVED_ENV_PREFIX = "KINDGI_"   # the names that configure Kindgi itself, never a pack's


class ConfigError(Exception):
    """The configuration can't be used; ``code`` is the outcome's error code."""

    def __init__(self, code, message, path=None, field=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.field = field


class PackConfig(object):
    """What the indexer reads from ``[tool.kindgi]``.

    ``env`` is None when ``[tool.kindgi.env]`` declares no name, else (required,
    optional), each sorted in UTF-16 order.
    """

    def __init__(self, path, id, version, description, discovery, env):
        self.path = path
        self.id = id
        self.version = version
        self.description = description
        self.discovery = discovery
        self.env = env


def load_config(pack_dir, config_path=None):
    """Read and check ``[tool.kindgi]`` from ``config_path`` or DIR/pyproject.toml; raise ConfigError."""
    path = resolved(config_path or pack_dir / CONFIG_FILENAME)
    if not _is_file(path):
        raise ConfigError("config-not-found", "No %s found at pack root %s" % (CONFIG_FILENAME, pack_dir))
    try:
        with open(str(path), encoding="utf-8") as f:   # universal newlines, as tomllib is given text
            document = read_toml(f.read())
    except (OSError, UnicodeDecodeError, TomlError) as cause:
        raise ConfigError("config-parse-failed", "Failed to read %s: %s" % (path, cause), path)
    tool_table = document.get("tool")
    kindgi = tool_table.get("kindgi") if isinstance(tool_table, dict) else None
    if not isinstance(kindgi, dict):
        raise ConfigError("config-not-found", "%s has no [tool.kindgi] table" % path, path)

    def unusable(what):
        return ConfigError("config-parse-failed", "Config file %s: %s" % (path, what), path)

    pack = kindgi.get("pack")
    if not isinstance(pack, dict):
        raise unusable("'pack' field is missing or not an object")
    for key in ("id", "version"):
        if not isinstance(pack.get(key), str) or pack[key] == "":
            raise unusable("'pack.%s' is missing or not a non-empty string" % key)
    discovery = kindgi.get("discovery", {})
    if not isinstance(discovery, dict) or not all(isinstance(v, str) for v in discovery.values()):
        raise unusable("'discovery' must map kinds to glob strings")
    globs = dict(DEFAULT_DISCOVERY)
    globs.update(discovery)
    description = pack.get("description")
    return PackConfig(path, pack["id"], pack["version"],
                      description if isinstance(description, str) else None, globs,
                      _env(kindgi.get("env"), path))


def _is_file(path):
    """Whether the config is a file, as ``Path.is_file()`` tells on Python 3.8+ (a link loop is
    none; before 3.8 it raises).  A path that can't be looked at for another reason (a folder
    on the way that can't be searched) counts as one, so that reading it says why, where
    ``is_file()`` raises."""
    try:
        return stat.S_ISREG(os.stat(str(path)).st_mode)
    except OSError as error:
        return error.errno not in (errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP)


def _env(table, path):
    """``[tool.kindgi.env]`` checked: None, or (required, optional) sorted; raise ConfigError."""
    if table is None:
        return None

    def invalid(message):
        return ConfigError("config-invalid", "Config file %s: %s" % (path, message), path, field="env")

    if not isinstance(table, dict):
        raise invalid("`env` must be a table: required = [...], optional = [...]")
    unknown = [key for key in table if key not in ("required", "optional")]
    if unknown:
        raise invalid("`env` takes only `required` and `optional`, not %s"
                      % ", ".join("`%s`" % key for key in unknown))
    problems = []
    seen = {}
    lists = {"required": [], "optional": []}
    for key in ("required", "optional"):
        names = table.get(key)
        if names is None:
            continue
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            problems.append("`env.%s` must be a list of names" % key)
            continue
        for name in names:
            quoted = json.dumps(name)
            if not ENV_NAME.fullmatch(name):
                problems.append("%s in `env.%s` isn't an environment variable name" % (quoted, key))
            elif name.startswith(RESERVED_ENV_PREFIX):
                problems.append("%s in `env.%s`: `%s*` names configure Kindgi, not the pack"
                                % (quoted, key, RESERVED_ENV_PREFIX))
            elif name in seen:
                problems.append("%s is listed twice in `env.%s`" % (quoted, key) if seen[name] == key
                                else "%s is in both `env.required` and `env.optional`" % quoted)
            else:
                seen[name] = key
                lists[key].append(name)
    if problems:
        raise invalid("; ".join(problems))
    if not seen:
        return None
    return (tuple(sorted(lists["required"], key=code_units)),
            tuple(sorted(lists["optional"], key=code_units)))


# ---------------------------------------------------------------------------
# TOML: tomllib, or a reader for the part of TOML the kindgi tables use
#
# Before Python 3.11 there is no TOML parser in the standard library.  The reader
# below takes tables ([a.b]), keys (bare, quoted, dotted), basic and literal strings,
# integers, booleans, arrays (over several lines too) and comments, with TOML's rules
# for each; anything else (floats, dates, multi-line strings, inline tables, arrays of
# tables) is refused with the line it is on, so a file is read right or not at all.
# ---------------------------------------------------------------------------

class TomlError(ValueError):
    """The TOML text can't be read; the message names the line."""


def read_toml(text):
    """The TOML document in ``text`` as dicts and lists (tomllib.loads where there is one).

    Both readers recurse into arrays and inline tables: nested past Python's recursion
    limit, the text is refused like any other it can't read, not with a traceback.
    """
    try:
        if tomllib is not None:
            try:
                return tomllib.loads(text)
            except tomllib.TOMLDecodeError as exc:
                raise TomlError(str(exc))
        return _TomlReader(text).document()
    except RecursionError:
        raise TomlError("arrays or inline tables nested too deeply to read")


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_INTEGER = re.compile(r"[+-]?(0|[1-9](?:_?[0-9])*)(?![0-9A-Za-z_.:+-])")
_BOOLEAN = re.compile(r"(true|false)(?![0-9A-Za-z_.:+-])")
_DIGITS = r"[0-9](?:_?[0-9])*"
_UNREAD_VALUE = re.compile(   # TOML's floats, dates and times, and non-decimal integers
    r"(?:[+-]?(?:inf|nan|(?:0|[1-9](?:_?[0-9])*)(?:\.%(d)s(?:[eE][+-]?%(d)s)?|[eE][+-]?%(d)s))"
    r"|0x[0-9A-Fa-f](?:_?[0-9A-Fa-f])*|0o[0-7](?:_?[0-7])*|0b[01](?:_?[01])*"
    r"|[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})?)?"
    r"|[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)(?![0-9A-Za-z_.:+-])" % {"d": _DIGITS})
_WORD = re.compile(r"[^\s,\]#]+")
_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f]")
_UNREAD = "; this reader takes tables, strings, integers, booleans, arrays and comments " \
          "(Python 3.11+ reads all of TOML)"


class _TomlReader(object):
    """A strict reader for a subset of TOML 1.0; see the section's comment."""

    def __init__(self, text):
        self.text = text
        self.pos = 0
        self.root = {}
        self.headers = set()   # tables opened by a [header]
        self.dotted = set()    # tables made by dotted keys
        self.table = ()

    def fail(self, problem, pos=None):
        line = self.text.count("\n", 0, self.pos if pos is None else pos) + 1
        raise TomlError("line %d: %s" % (line, problem))

    def unread(self, what):
        self.fail(what + _UNREAD)

    def document(self):
        while True:
            self.skip_blank_lines()
            if self.pos >= len(self.text):
                return self.root
            if self.text.startswith("[[", self.pos):
                self.unread("arrays of tables ([[...]]) are not read")
            if self.text[self.pos] == "[":
                self.header()
            else:
                self.key_value()
            self.end_of_line()

    # -- lines, whitespace, comments ------------------------------------------------

    def skip_space(self):
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def skip_comment(self):
        if self.text.startswith("#", self.pos):
            end = self.text.find("\n", self.pos)
            end = len(self.text) if end < 0 else end
            bad = _CONTROL.search(self.text, self.pos, end)
            if bad:
                self.fail("a control character in a comment", bad.start())
            self.pos = end

    def skip_blank_lines(self):
        while True:
            self.skip_space()
            self.skip_comment()
            if not self.text.startswith("\n", self.pos):
                return
            self.pos += 1

    def end_of_line(self):
        self.skip_space()
        self.skip_comment()
        if self.pos < len(self.text):
            if self.text[self.pos] != "\n":
                self.fail("expected the end of the line, found %r" % self.text[self.pos])
            self.pos += 1

    def expect(self, char):
        if not self.text.startswith(char, self.pos):
            found = self.text[self.pos:self.pos + 1] or "the end of the file"
            self.fail("expected %r, found %r" % (char, found))
        self.pos += 1

    # -- tables and keys ------------------------------------------------------------

    def header(self):
        """``[a.b]``: opens a table, once, and not one that dotted keys made (a table
        inside one, ``[a.b.c]`` after ``b.x = 1`` under ``[a]``, is TOML's and is opened)."""
        self.pos += 1
        self.skip_space()
        path = self.key()
        self.skip_space()
        self.expect("]")
        if path in self.headers or path in self.dotted:
            self.fail("table [%s] is defined twice" % ".".join(path))
        self.descend(path)
        self.headers.add(path)
        self.table = path

    def key_value(self):
        """``key = value`` in the open table; a dotted key makes the tables it names, which
        then can't be opened by a header, and can't add to a table a header opened."""
        start = self.pos
        path = self.key()
        self.skip_space()
        self.expect("=")
        self.skip_space()
        value = self.value()
        full = self.table + path
        for depth in range(len(self.table) + 1, len(full)):
            if full[:depth] in self.headers:
                self.fail("dotted key %s adds to table [%s]" % (".".join(path), ".".join(full[:depth])), start)
            self.dotted.add(full[:depth])
        parent = self.descend(full[:-1])
        if full[-1] in parent:
            self.fail("key %s is defined twice" % ".".join(full), start)
        parent[full[-1]] = value

    def descend(self, path):
        """The table at path, making the missing ones."""
        table = self.root
        for depth in range(1, len(path) + 1):
            table = table.setdefault(path[depth - 1], {})
            if not isinstance(table, dict):
                self.fail("%s is a value, not a table" % ".".join(path[:depth]))
        return table

    def key(self):
        parts = [self.simple_key()]
        while True:
            self.skip_space()
            if not self.text.startswith(".", self.pos):
                return tuple(parts)
            self.pos += 1
            self.skip_space()
            parts.append(self.simple_key())

    def simple_key(self):
        char = self.text[self.pos:self.pos + 1]
        if char in ('"', "'"):
            if self.text.startswith(char * 3, self.pos):
                self.fail("a multi-line string can't be a key")
            return self.string()
        match = _BARE_KEY.match(self.text, self.pos)
        if match is None:
            self.fail("expected a key, found %r" % (char or "the end of the file"))
        self.pos = match.end()
        return match.group()

    # -- values ---------------------------------------------------------------------

    def value(self):
        char = self.text[self.pos:self.pos + 1]
        if char in ('"', "'"):
            if self.text.startswith(char * 3, self.pos):
                self.unread("multi-line strings are not read")
            return self.string()
        if char == "[":
            return self.array()
        if char == "{":
            self.unread("inline tables ({...}) are not read; write the table as a [section]")
        integer = _INTEGER.match(self.text, self.pos)
        if integer is not None:
            self.pos = integer.end()
            return int(integer.group().replace("_", ""))
        boolean = _BOOLEAN.match(self.text, self.pos)
        if boolean is not None:
            self.pos = boolean.end()
            return boolean.group() == "true"
        unread = _UNREAD_VALUE.match(self.text, self.pos)
        if unread is not None:
            self.unread("the value %s is not read (floats, dates and non-decimal integers are not)"
                        % unread.group())
        word = _WORD.match(self.text, self.pos)
        self.fail("expected a value, found %r" % (word.group() if word else char or "the end of the file"))

    def string(self):
        quote = self.text[self.pos]
        start = self.pos
        self.pos += 1
        out = []
        while True:
            if self.pos >= len(self.text) or self.text[self.pos] == "\n":
                self.fail("a string is not closed on its line", start)
            char = self.text[self.pos]
            self.pos += 1
            if char == quote:
                return "".join(out)
            if _CONTROL.match(char):
                self.fail("a control character in a string", self.pos - 1)
            if char == "\\" and quote == '"':
                char = self.escape()
            out.append(char)

    def escape(self):
        code = self.text[self.pos:self.pos + 1]
        self.pos += 1
        if code in _ESCAPES:
            return _ESCAPES[code]
        width = {"u": 4, "U": 8}.get(code)
        digits = self.text[self.pos:self.pos + width] if width else ""
        if width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
            value = int(digits, 16)
            if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF:
                self.pos += width
                return chr(value)
        self.fail("an invalid escape \\%s in a string" % (code + digits))

    def array(self):
        self.pos += 1
        items = []
        while True:
            self.skip_blank_lines()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return items
            items.append(self.value())
            self.skip_blank_lines()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                self.expect("]")


# ---------------------------------------------------------------------------
# Discovery: which files under the pack root hold primitives
#
# Glob syntax: ``**`` (any depth, none included), ``*`` (within one segment), ``?``
# (one character), ``{a,b}`` (either).  A pattern is walked from its static prefix
# only, so a pack inside a large repository is never crawled whole.
# ---------------------------------------------------------------------------

TEST_FILE = re.compile(r"(?:^|/)(?:test_[^/]*|[^/]*_test|conftest)\.py$")   # never primitives
SKIPPED_DIRS = frozenset(("node_modules", "__pycache__", "venv", "site-packages"))
_GLOB_CHARS = re.compile(r"[*?{\[]")


def glob_to_regex(pattern):
    """The compiled regular expression a discovery glob stands for."""
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        close = pattern.find("}", i) if char == "{" else -1
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif close != -1:
            out.append("(?:%s)" % "|".join(re.escape(option) for option in pattern[i + 1:close].split(",")))
            i = close + 1
        else:
            out.append({"*": "[^/]*", "?": "[^/]"}.get(char) or re.escape(char))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def glob_static_prefix(pattern):
    """The folders before a glob's first wildcard segment (the file name excluded)."""
    segments = pattern.split("/")
    wild = [i for i, segment in enumerate(segments) if _GLOB_CHARS.search(segment)]
    folders = segments[:wild[0]] if wild else segments[:-1]
    return "/".join(s for s in folders if s not in ("", "."))


def discover(root, pattern):
    """The ``/``-separated paths under root (a Path) that match pattern, test files left out."""
    regex = glob_to_regex(pattern)
    prefix = glob_static_prefix(pattern)
    return [rel for rel in _walk(root, root / prefix if prefix else root)
            if regex.match(rel) and not TEST_FILE.search(rel)]


def _walk(root, start):
    """Every file under start, as a path relative to root, in sorted order; hidden and
    vendored folders are not entered."""
    if not os.path.isdir(str(start)):   # Path.is_dir() raises for a link loop (before 3.8) or a folder
        return                          # on the way that can't be searched; os.walk skips those too
    for folder, folders, files in os.walk(str(start)):
        folders[:] = sorted(d for d in folders if not d.startswith(".") and d not in SKIPPED_DIRS)
        base = Path(folder).relative_to(root).as_posix()
        for name in sorted(files):
            if not name.startswith("."):
                yield name if base == "." else "%s/%s" % (base, name)


def discover_pack(pack_dir, globs):
    """[(relative path, the kind of its default folder or None)], sorted by path.

    A file matched by several kinds' globs is listed once, under the first kind; its kind
    is checked only when it sits in that kind's default folder.
    """
    seen = {}
    for folder, kind in FOLDERS:
        for rel in discover(pack_dir, globs.get(folder, "")):
            if rel not in seen:
                seen[rel] = kind if rel.split("/")[0] == folder else None
    return sorted(seen.items())


# ---------------------------------------------------------------------------
# Canonical JSON: the bytes of an index
#
# What the SDK's (and the TypeScript) indexer writes for the same value: keys sorted at
# every level in UTF-16 code-unit order (JavaScript's), two-space indentation, non-ASCII
# text as itself, numbers as JavaScript's Number.prototype.toString writes them.
# ---------------------------------------------------------------------------

_JSON_STRING = json.JSONEncoder(ensure_ascii=False).encode


def code_units(text):
    """The sort key of JavaScript's default sort: big-endian UTF-16 code units."""
    return text.encode("utf-16-be", "surrogatepass")


def stable_dumps(value):
    """The canonical JSON text of value (no trailing newline); TypeError for a non-JSON value."""
    out = []
    _write(value, 0, out)
    return "".join(out)


def _write(value, depth, out):
    """Append value's canonical text to out.  One call per level of nesting, as the SDK's
    writer: a value nested as deep as the SDK's writes is written here too."""
    if value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(_JSON_STRING(value))
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        out.append(js_number(value))
    else:
        if isinstance(value, Mapping):
            keys = sorted((_key(k) for k in value), key=code_units)
            items = [("%s: " % _JSON_STRING(k), value[k]) for k in keys]
            brackets = "{}"
        elif isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
            items = [("", item) for item in value]
            brackets = "[]"
        else:
            raise TypeError("%s is not JSON-serializable" % type(value).__name__)
        if not items:
            out.append(brackets)
            return
        inner = "\n" + "  " * (depth + 1)
        out.append(brackets[0])
        for i, (label, item) in enumerate(items):
            out.append(("," if i else "") + inner + label)
            _write(item, depth + 1, out)
        out.append("\n" + "  " * depth + brackets[1])


def _key(key):
    if not isinstance(key, str):
        raise TypeError("JSON object keys must be strings, got %s" % type(key).__name__)
    return key


def js_number(value):
    """A float as ECMAScript's Number.prototype.toString writes it (1.0 -> 1, 1e-07 -> 1e-7)."""
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("%r is not valid JSON" % value)
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr has the shortest digits that read back as the same double: the digits JavaScript picks.
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    scale = int(exponent or "0") - len(fraction)      # value = int(digits) * 10**scale
    significant = digits.rstrip("0")
    scale += len(digits) - len(significant)
    k = len(significant)
    n = scale + k                                     # value = 0.significant * 10**n
    if k <= n <= 21:
        return sign + significant + "0" * (n - k)
    if 0 < n <= 21:
        return sign + significant[:n] + "." + significant[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + significant
    e = n - 1
    head = significant if k == 1 else significant[0] + "." + significant[1:]
    return "%s%se%s%d" % (sign, head, "+" if e >= 0 else "-", abs(e))


# ---------------------------------------------------------------------------
# Checking a value against a kindgi schema, as the SDK does
#
# The SDK checks with the jsonschema package, reports issues in Ajv's shape, and picks
# the first one in the order jsonschema finds them: the schema's keywords in the order
# the schema file lists them, properties in the schema's order, items in the value's.
# For flows it explains the first failure further: through a oneOf it follows the one
# alternative whose discriminator (a const or enum property such as "kind") the value
# matches, or names the discriminator's allowed values.  _misses walks a schema that
# way and yields each failure (a _Miss); the keywords are those the three kindgi schemas
# use, with jsonschema's meaning (a tuple is not an array, patterns are Python's).
# ---------------------------------------------------------------------------

class _Miss(object):
    """One failure: the keyword, its value in the schema, the schema holding it, the
    instance and its path; a failed oneOf keeps each alternative's failures."""

    __slots__ = ("keyword", "value", "schema", "instance", "path", "spath", "branches")

    def __init__(self, keyword, value, schema, instance, path, spath, branches=None):
        self.keyword = keyword
        self.value = value
        self.schema = schema
        self.instance = instance
        self.path = path
        self.spath = spath
        self.branches = branches


def _misses(schema, x, path, spath, root):
    """The failures of x against schema, in the order the SDK's validator finds them."""
    for keyword, value in schema.items():
        check = _CHECKS.get(keyword)
        if check is not None:
            for miss in check(value, schema, x, path, spath + (keyword,), root):
                yield miss


def _valid(schema, x, root):
    return next(_misses(schema, x, (), (), root), None) is None


def _is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


_TYPES = {
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "string": lambda x: isinstance(x, str),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "number": _is_number,
    "integer": lambda x: (isinstance(x, int) and not isinstance(x, bool))
    or (isinstance(x, float) and x.is_integer()),
}

_TRUE, _FALSE = object(), object()


def _unbool(x):
    return _TRUE if x is True else _FALSE if x is False else x


def _equal(a, b):
    """JSON equality with Python's numbers: 1 == 1.0, but true is not 1."""
    if a is b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        return len(a) == len(b) and all(_equal(i, j) for i, j in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(key in b and _equal(v, b[key]) for key, v in a.items())
    return _unbool(a) == _unbool(b)


def _is_date(text):
    match = re.match(r"^(\d{4})-(\d{2})-(\d{2})$", text)
    try:
        return match is not None and bool(date(int(match.group(1)), int(match.group(2)), int(match.group(3))))
    except ValueError:
        return False


def _is_time(text):
    match = re.match(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?([zZ]|[+-]\d{2}:\d{2})$", text)
    if match is None:
        return False
    second = int(match.group(3))
    try:
        clock_time(int(match.group(1)), int(match.group(2)), min(second, 59))   # 60: a leap second
    except ValueError:
        return False
    return second <= 60


def _is_date_time(x):
    """The SDK's date-time format: a date, T (or t, or a space), a time with its zone."""
    if not isinstance(x, str):
        return True
    parts = re.split(r"[tT\s]", x, maxsplit=1)
    return len(parts) == 2 and _is_date(parts[0]) and _is_time(parts[1])


_FORMATS = {"date-time": _is_date_time}


def _leaf(fails):
    """A keyword that tests the instance alone: fails(keyword value, instance) -> bool."""
    def check(value, schema, x, path, spath, root):
        if fails(value, x):
            yield _Miss(spath[-1], value, schema, x, path, spath)
    return check


def _check_required(value, schema, x, path, spath, root):
    if isinstance(x, dict):
        for name in value:
            if name not in x:
                yield _Miss("required", value, schema, x, path, spath)


def _extras(schema, x):
    """The instance's properties that neither properties nor patternProperties name."""
    declared = schema.get("properties", {})
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return [name for name in x if name not in declared and not any(p.search(name) for p in patterns)]


def _check_additional(value, schema, x, path, spath, root):
    if not isinstance(x, dict):
        return
    extras = _extras(schema, x)
    if isinstance(value, dict):
        for name in extras:
            for miss in _misses(value, x[name], path + (name,), spath, root):
                yield miss
    elif not value and extras:
        yield _Miss("additionalProperties", value, schema, x, path, spath)


def _check_properties(value, schema, x, path, spath, root):
    if isinstance(x, dict):
        for name, sub in value.items():
            if name in x:
                for miss in _misses(sub, x[name], path + (name,), spath + (name,), root):
                    yield miss


def _check_items(value, schema, x, path, spath, root):
    if isinstance(x, list):
        for i, item in enumerate(x):
            for miss in _misses(value, item, path + (i,), spath, root):
                yield miss


def _check_property_names(value, schema, x, path, spath, root):
    if isinstance(x, dict):
        for name in x:
            for miss in _misses(value, name, path, spath, root):
                yield miss


def _check_ref(value, schema, x, path, spath, root):
    target = root
    for part in value.lstrip("#").split("/")[1:]:
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return _misses(target, x, path, spath, root)


def _check_one_of(value, schema, x, path, spath, root):
    branches = []
    for i, sub in enumerate(value):
        misses = list(_misses(sub, x, path, spath + (i,), root))
        if not misses:
            if any(_valid(other, x, root) for other in value[i + 1:]):
                yield _Miss("oneOf", value, schema, x, path, spath)
            return
        branches.append(misses)
    yield _Miss("oneOf", value, schema, x, path, spath, branches)


def _check_not(value, schema, x, path, spath, root):
    if _valid(value, x, root):
        yield _Miss("not", value, schema, x, path, spath)


_CHECKS = {
    "$ref": _check_ref,
    "type": _leaf(lambda names, x: not any(_TYPES[name](x) for name in
                                           (names if isinstance(names, list) else [names]))),
    "const": _leaf(lambda value, x: not _equal(x, value)),
    "enum": _leaf(lambda values, x: not any(_equal(each, x) for each in values)),
    "required": _check_required,
    "additionalProperties": _check_additional,
    "properties": _check_properties,
    "propertyNames": _check_property_names,
    "items": _check_items,
    "minItems": _leaf(lambda n, x: isinstance(x, list) and len(x) < n),
    "uniqueItems": _leaf(lambda unique, x: unique and isinstance(x, list) and any(
        _equal(a, b) for i, a in enumerate(x) for b in x[:i])),
    "minLength": _leaf(lambda n, x: isinstance(x, str) and len(x) < n),
    "maxLength": _leaf(lambda n, x: isinstance(x, str) and len(x) > n),
    "pattern": _leaf(lambda pattern, x: isinstance(x, str) and re.search(pattern, x) is None),
    "format": _leaf(lambda name, x: name in _FORMATS and not _FORMATS[name](x)),
    "minimum": _leaf(lambda n, x: _is_number(x) and x < n),
    "maximum": _leaf(lambda n, x: _is_number(x) and x > n),
    "oneOf": _check_one_of,
    "not": _check_not,
}

# Keywords that never fail: annotations, and $defs (reached through $ref).
ANNOTATIONS = frozenset(("$schema", "$id", "$comment", "$defs", "title", "description", "default"))

_LIMITS = {"minLength": ("fewer", "characters"), "maxLength": ("more", "characters"),
           "minItems": ("fewer", "items")}
_COMPARISONS = {"minimum": ">=", "maximum": "<="}


def _pointer(parts):
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def _issue(miss, params, message):
    return {"instancePath": _pointer(miss.path), "keyword": miss.keyword, "params": params,
            "message": message}


def _issues_of(miss):
    """The Ajv-shaped issues of one failure, worded as the SDK words them."""
    keyword, value, x = miss.keyword, miss.value, miss.instance
    if keyword == "required":
        return [_issue(miss, {"missingProperty": name}, "must have required property '%s'" % name)
                for name in value if name not in x]
    if keyword == "additionalProperties":
        return [_issue(miss, {"additionalProperty": name}, "must NOT have additional properties")
                for name in _extras(miss.schema, x)]
    if keyword == "type":
        names = ",".join(value) if isinstance(value, list) else str(value)
        return [_issue(miss, {"type": names}, "must be %s" % names)]
    if keyword in _LIMITS:
        word, unit = _LIMITS[keyword]
        return [_issue(miss, {"limit": value}, "must NOT have %s than %s %s" % (word, value, unit))]
    if keyword in _COMPARISONS:
        op = _COMPARISONS[keyword]
        return [_issue(miss, {"comparison": op, "limit": value}, "must be %s %s" % (op, value))]
    params, message = {
        "enum": ({"allowedValues": value}, "must be equal to one of the allowed values"),
        "const": ({"allowedValue": value}, "must be equal to constant"),
        "pattern": ({"pattern": value}, 'must match pattern "%s"' % (value,)),
        "format": ({"format": value}, 'must match format "%s"' % (value,)),
        "uniqueItems": ({}, "must NOT have duplicate items"),
        "oneOf": ({"passingSchemas": None}, "must match exactly one schema in oneOf"),
        "not": ({}, "must NOT be valid"),
    }[keyword]
    return [_issue(miss, params, message)]


class KindgiSchema(object):
    """A kindgi JSON Schema (a dict), checked as the SDK checks it."""

    def __init__(self, schema):
        self.schema = schema

    def issues(self, instance):
        """Every issue, in the SDK's order, each once."""
        out = []
        seen = set()
        for miss in _misses(self.schema, instance, (), (), self.schema):
            for issue in _issues_of(miss):
                key = (issue["instancePath"], miss.spath, repr(sorted(issue["params"].items())))
                if key not in seen:
                    seen.add(key)
                    out.append(issue)
        return out

    def explain(self, instance):
        """The issue that best says what is wrong with instance, or None when it is valid.

        Through a oneOf it follows the one alternative whose discriminator the value
        matches; when none does, it names the discriminator's allowed values.
        """
        miss = next(_misses(self.schema, instance, (), (), self.schema), None)
        if miss is None:
            return None
        while miss.keyword == "oneOf" and miss.branches:
            depth = len(miss.path)
            branches = miss.branches
            matching = [b for b in branches if not _missed_props(b, depth)]
            if len(matching) == 1:
                miss = matching[0][0]
                continue
            if matching:
                break
            # Every alternative misses.  The property they discriminate on is the one most
            # of them check directly; an alternative that misses only on another one is
            # where the value belongs.
            props = [str(m.path[-1]) for b in branches for m in b if _is_discriminator(m, depth)]
            if not props:
                break
            prop = max(props, key=props.count)
            elsewhere = [b for b in branches if prop not in _missed_props(b, depth)]
            if len(elsewhere) == 1:
                miss = next((m for m in elsewhere[0] if m.keyword == "oneOf"), elsewhere[0][0])
                continue
            values = _allowed(branches, depth, prop)
            return {"instancePath": _pointer(miss.path + (prop,)), "keyword": "enum",
                    "params": {"allowedValues": values},
                    "message": "must be one of " + ", ".join(json.dumps(v) for v in values)}
        return _issues_of(miss)[0]


def _is_discriminator(miss, depth):
    """A const or enum failure on a property of the object at depth."""
    return miss.keyword in ("const", "enum") and len(miss.path) == depth + 1


def _missed_props(misses, depth):
    """The discriminating properties an alternative fails on: directly, or in every
    alternative of a oneOf nested on the same object."""
    missed = set()
    for miss in misses:
        if _is_discriminator(miss, depth):
            missed.add(str(miss.path[-1]))
        elif miss.keyword == "oneOf" and len(miss.path) == depth:
            nested = [_missed_props(b, depth) for b in miss.branches or ()]
            if nested and all(nested):
                missed |= set.intersection(*nested) or set.union(*nested)
    return missed


def _allowed(branches, depth, prop):
    """The values the alternatives allow for prop, in schema order, each once."""
    values = []

    def collect(misses):
        for miss in misses:
            if _is_discriminator(miss, depth) and str(miss.path[-1]) == prop:
                for value in miss.value if miss.keyword == "enum" else [miss.value]:
                    if value not in values:
                        values.append(value)
            elif miss.keyword == "oneOf" and miss.branches:
                for branch in miss.branches:
                    collect(branch)

    for branch in branches:
        collect(branch)
    return values


@lru_cache(maxsize=None)
def kindgi_schema(name):
    """The embedded schema ``name`` ("pack-index", "flow", "tool" or "http-tool-spec")."""
    if name == "http-tool-spec":   # as the SDK checks an http_tool's spec
        return KindgiSchema({"$defs": kindgi_schema("tool").schema["$defs"], "$ref": "#/$defs/HttpToolSpec"})
    return KindgiSchema(json.loads(SCHEMA_TEXTS[name]))


def http_spec_problem(spec):
    """None, or what is wrong with an http_tool's spec, as the SDK says it."""
    issues = kindgi_schema("http-tool-spec").issues(spec)
    if not issues:
        return None
    return "; ".join("%s %s" % (issue["instancePath"] or "/", issue["message"]) for issue in issues)


# ---------------------------------------------------------------------------
# Appendix: the kindgi schemas
#
# pack-index.schema.json, flow.schema.json and tool.schema.json from the kindgi 0.1.10
# wheel (kindgi/_specs/), copied unchanged.  Licence: Apache-2.0, Copyright (C) 2026
# Kindgi Inc., the licence of this project too.  tests/test_index_schemas.py checks the
# copies against the wheel; to update, paste a file's text between its quotes.
# ---------------------------------------------------------------------------

SCHEMA_TEXTS = {}

SCHEMA_TEXTS['pack-index'] = r'''{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://kindgi.com/schemas/v1/pack-index.schema.json",
  "$comment": "schema-version: 1.4.0",
  "title": "Pack index",
  "description": "The `index.json` a pack build emits: the pack's tools, guardrails, agents and flows as data, plus where each tool handler and guardrail check lives. A runtime registers the pack's primitives from it, and a pack service loads the modules it names and resolves every call by id. Any indexer (the TypeScript `kindgi-index`, the Python `python -m kindgi.pack index`) emits this shape. Determinism: every list is sorted by `id` (code-unit order), keys are sorted at every level, the file is UTF-8 JSON indented by two spaces with a trailing newline, and integral numbers carry no fraction, so the same source indexes to the same bytes. Consumers refuse an envelope `v` they don't recognize.",
  "type": "object",
  "required": [
    "v",
    "packId",
    "packVersion",
    "artifactVersion",
    "publishedAt",
    "tools",
    "guardrails",
    "agents",
    "flows"
  ],
  "additionalProperties": false,
  "properties": {
    "v": {
      "const": 1,
      "description": "Envelope version. Additive fields on an existing entry shape don't bump it."
    },
    "packId": {
      "type": "string",
      "minLength": 1,
      "description": "The pack's id (`pack.id` in the pack config)."
    },
    "packVersion": {
      "type": "string",
      "minLength": 1,
      "description": "The pack's version (`pack.version` in the pack config)."
    },
    "artifactVersion": {
      "type": "string",
      "minLength": 1,
      "description": "This build of the pack. A pack build pins it; a local indexer defaults to `YYYYMMDD.N` (UTC date, N counting up from the previous index of the same day)."
    },
    "publishedAt": {
      "type": "string",
      "format": "date-time",
      "description": "When the index was built — ISO 8601 UTC with milliseconds (`2026-09-20T14:32:07.104Z`). A pack build pins it for reproducible output."
    },
    "tools": {
      "type": "array",
      "items": { "$ref": "#/$defs/tool" },
      "description": "Tools with handler code, sorted by `id`."
    },
    "guardrails": {
      "type": "array",
      "items": { "$ref": "#/$defs/guardrail" },
      "description": "Guardrails whose check is pack code, sorted by `id`."
    },
    "agents": {
      "type": "array",
      "items": { "$ref": "#/$defs/agent" },
      "description": "Agents, sorted by `id`."
    },
    "flows": {
      "type": "array",
      "items": { "$ref": "#/$defs/flow" },
      "description": "Flows, sorted by `id`."
    },
    "env": {
      "type": "object",
      "required": ["required", "optional"],
      "additionalProperties": false,
      "description": "The process environment the pack's code reads (`env` in `kindgi.config`; `[tool.kindgi.env]` in `pyproject.toml`). Absent when the pack declares none. A deployment injects exactly these names. With a `required` name unset or empty, the pack service isn't ready (unless its env check is `warn`); `/readyz` and `/v1/info` name it. Not `needsSpec.env`: that is per-call context.",
      "properties": {
        "required": {
          "type": "array",
          "items": { "$ref": "#/$defs/envName" },
          "uniqueItems": true,
          "description": "Names the pack service needs, set and non-empty, to be ready. Sorted."
        },
        "optional": {
          "type": "array",
          "items": { "$ref": "#/$defs/envName" },
          "uniqueItems": true,
          "description": "Names the pack reads when present. Sorted. Never also in `required`."
        }
      }
    }
  },
  "$defs": {
    "envName": {
      "type": "string",
      "pattern": "^(?!KINDGI_)[A-Za-z_][A-Za-z0-9_]*$",
      "description": "A process environment variable name. `KINDGI_*` names configure Kindgi and are never a pack's."
    },
    "modulePath": {
      "type": "string",
      "minLength": 1,
      "description": "The source file the primitive was declared in, relative to the pack root: forward slashes, no leading `./` (`tools/echo/index.ts`, `tools/ledger.py`). A pack service resolves it against its module root; a build may point it at a bundle instead. Several entries may share one module (a Python module can declare several tools)."
    },
    "jsonSchema": {
      "type": "object",
      "description": "A JSON Schema (Draft 2020-12) in wire form. Open: any JSON Schema keyword is allowed, so this node carries no `additionalProperties` restriction."
    },
    "openObject": {
      "type": "object",
      "description": "An object whose shape is defined by the primitive's own schema (`tool.schema.json`, `guardrail.schema.json`, `agent.schema.json`, `flow.schema.json`); the index carries it as declared."
    },
    "tool": {
      "type": "object",
      "required": ["id", "input", "output", "modulePath"],
      "additionalProperties": false,
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Tool id — what a pack service resolves an `invoke` by."
        },
        "description": {
          "type": "string",
          "description": "What the tool does — the model reads it."
        },
        "version": {
          "type": "string",
          "description": "The tool's version. A caller that names a version gets `tool-version-mismatch` when it differs."
        },
        "input": {
          "$ref": "#/$defs/jsonSchema",
          "description": "JSON Schema the input must satisfy; the pack service validates before running the handler."
        },
        "output": {
          "$ref": "#/$defs/jsonSchema",
          "description": "JSON Schema the handler's return value must satisfy; the pack service validates it."
        },
        "effects": {
          "type": "array",
          "items": { "$ref": "#/$defs/openObject" },
          "description": "Declared side effects (`tool.schema.json` `effects`)."
        },
        "needs": {
          "type": "array",
          "items": { "$ref": "#/$defs/openObject" },
          "description": "Declared needs (`tool.schema.json` `needs`)."
        },
        "needsSpec": {
          "$ref": "#/$defs/openObject",
          "description": "Typed needs (`tool.schema.json` `needsSpec`)."
        },
        "sandbox": {
          "type": "string",
          "description": "Isolation posture (`tool.schema.json` `sandbox`)."
        },
        "limits": {
          "$ref": "#/$defs/openObject",
          "description": "Resource limits (`tool.schema.json` `limits`)."
        },
        "network": {
          "$ref": "#/$defs/openObject",
          "description": "Network policy (`tool.schema.json` `network`)."
        },
        "mutating": {
          "type": "boolean",
          "description": "Whether the tool may change something (`tool.schema.json` `mutating`). `false` makes it read-only: it runs in a dry run, and per-tool approval gates don't ask before it by default. Absent means it may."
        },
        "needsApprovalWhenUnattended": {
          "type": "boolean",
          "description": "Whether a person must say yes to every call of the tool in a run no person started (`tool.schema.json` `needsApprovalWhenUnattended`). Absent means `false`."
        },
        "spec": {
          "$ref": "#/$defs/openObject",
          "description": "A declarative tool's spec (`tool.schema.json` `spec`, e.g. `kind: 'http'`). A runtime runs a tool that has one itself, resolving its `secretRef`s, rather than calling the pack service."
        },
        "modulePath": { "$ref": "#/$defs/modulePath" }
      }
    },
    "guardrail": {
      "type": "object",
      "required": ["id", "kind", "action", "checkModulePath"],
      "additionalProperties": false,
      "properties": {
        "id": { "type": "string", "minLength": 1, "description": "Guardrail id." },
        "name": { "type": "string", "description": "Human-readable name." },
        "kind": {
          "type": "string",
          "minLength": 1,
          "description": "How the guardrail is checked (`guardrail.schema.json` `kind`)."
        },
        "action": {
          "$ref": "#/$defs/openObject",
          "description": "What a violation does (`guardrail.schema.json` `action`, with `on-violation`)."
        },
        "severity": {
          "type": "string",
          "description": "Severity (`guardrail.schema.json` `severity`)."
        },
        "scope": {
          "$ref": "#/$defs/openObject",
          "description": "When the guardrail applies (`guardrail.schema.json` `scope`)."
        },
        "checkModulePath": { "$ref": "#/$defs/modulePath" },
        "checkId": {
          "type": "string",
          "minLength": 1,
          "description": "The check's id — what a pack service resolves a `check-invoke` by. Absent: the guardrail's `id`."
        },
        "checkBuiltIn": {
          "type": "boolean",
          "const": true,
          "description": "The guardrail names a built-in check (`checkId`) without shipping a check of its own: `checkModulePath` is only the file it's declared in. The CLI sets it; a runtime warns about a guardrail naming a built-in without it."
        },
        "configSchema": {
          "$ref": "#/$defs/jsonSchema",
          "description": "JSON Schema of the check's config."
        },
        "config": {
          "$ref": "#/$defs/openObject",
          "description": "What the check is configured with (`guardrail.schema.json` `config`)."
        },
        "sandbox": { "type": "string", "description": "Isolation posture." },
        "limits": { "$ref": "#/$defs/openObject", "description": "Resource limits." },
        "network": { "$ref": "#/$defs/openObject", "description": "Network policy." }
      }
    },
    "agent": {
      "type": "object",
      "required": ["id", "version", "name", "instructions", "capabilities", "tools", "modulePath"],
      "additionalProperties": false,
      "description": "An agent as declared (`agent.schema.json`). A TypeScript pack's `defineAgent` checks it in full at build; a deploy checks only its shape, its instructions' template and its output schema.",
      "properties": {
        "id": { "type": "string", "minLength": 1 },
        "version": { "type": "string", "minLength": 1 },
        "name": { "type": "string" },
        "instructions": {
          "oneOf": [
            { "type": "string" },
            {
              "type": "object",
              "additionalProperties": false,
              "required": ["prompt", "version"],
              "properties": { "prompt": { "type": "string" }, "version": { "type": "string" } }
            }
          ]
        },
        "settings": { "type": "array" },
        "modelSettings": { "type": "object" },
        "capabilities": { "type": "array" },
        "tools": {
          "type": "array",
          "items": {
            "type": "object",
            "required": ["id", "version"],
            "additionalProperties": false,
            "properties": {
              "id": { "type": "string", "minLength": 1 },
              "version": { "type": "string", "description": "Semver range." }
            }
          }
        },
        "retrieval": { "type": "array" },
        "memory": { "$ref": "#/$defs/openObject" },
        "guardrails": { "type": "array", "items": { "type": "string" } },
        "budget": { "$ref": "#/$defs/openObject" },
        "parameters": { "type": "array" },
        "preferredProvider": { "type": "string" },
        "preferredModel": { "type": "string" },
        "description": { "type": "string" },
        "tags": { "type": "array", "items": { "type": "string" } },
        "conversationPolicy": {
          "type": "object",
          "description": "As declared (`agent.schema.json` `ConversationPolicy`), except `autoCloseAfterInactiveSeconds`, which is refused: a conversation never closes by itself, only when someone closes it.",
          "properties": { "autoCloseAfterInactiveSeconds": { "not": {} } }
        },
        "output": {
          "$ref": "#/$defs/openObject",
          "description": "Typed output (`{ schema, name?, maxRepairs? }`), its schema already JSON Schema."
        },
        "toolErrors": {
          "$ref": "#/$defs/openObject",
          "description": "How the agent's turns retry failed tool calls (`{ maxRetries?, retryOn? }`, `agent.schema.json` `toolErrors`)."
        },
        "modulePath": { "$ref": "#/$defs/modulePath" }
      }
    },
    "flow": {
      "type": "object",
      "required": ["id", "version", "nodes", "edges", "kernelPayloadVersion", "modulePath"],
      "additionalProperties": false,
      "description": "A flow as declared (`flow.schema.json`), plus the kernel payload version.",
      "properties": {
        "id": { "type": "string", "minLength": 1 },
        "version": { "type": "string", "minLength": 1 },
        "name": { "type": "string" },
        "description": { "type": "string" },
        "nodes": { "type": "array" },
        "edges": { "type": "array" },
        "maxParallelism": { "type": "integer", "minimum": 1 },
        "metadata": { "$ref": "#/$defs/openObject" },
        "output": { "$ref": "#/$defs/openObject" },
        "kernelPayloadVersion": {
          "const": 1,
          "description": "Version of the flow payload inside the index, independent of the envelope `v`."
        },
        "modulePath": { "$ref": "#/$defs/modulePath" }
      }
    }
  }
}
'''

SCHEMA_TEXTS['flow'] = r'''{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://kindgi.com/schemas/v1/flow.schema.json",
  "$comment": "schema-version: 1.9.0",
  "title": "Flow",
  "description": "A durable, versioned task flow. Nodes are tools, agents, sub-flows, loops, or fanouts; edges are directed with optional deterministic `when` predicates expressed in a serializable DSL. Runs pin to a specific version so mid-flight jobs survive deploys. LLM-routed edges are intentionally NOT expressible via `when` (they would need capability selection). Schema-version 1.9.0 removes the top-level `triggers` array, which no code read: a flow does not declare how its runs start — schedules, event triggers and webhooks are registered through their own APIs and name the flow they start. Schema-version 1.8.0 adds declarative data flow between nodes: an optional `inputMapping` on leaf (tool / agent) nodes — the same `Mapping` shape a subgraph node uses, resolved when the node dispatches — so a node can combine the run input, state and the outputs of any earlier nodes; an optional flow-level `output` (`mapping` plus an optional `schema`) that declares the run's output; and `maxParallelism`, previously accepted by the TypeScript type only. A mapped path that does not resolve omits its key. A conditional branch that rejoins no longer stalls: a node whose every incoming edge is not taken, or comes from such a skipped node, is itself skipped. Additive over 1.7.0. Schema-version 1.7.0 promotes the `subgraph` node kind from a reserved leaf placeholder to a first-class kernel primitive — a subgraph node references another registered flow by exact `(flowId, version)`, maps parent state into the sub-run's input via a declarative `inputMapping`, validates the sub-run's terminal output against a per-node `outputSchema` (typed escape contract), and merges the sub-run's outcome into the parent node's output per a declared `convergence` (`success-only` fails the parent node on any child failure; `settle-all` — the default — always emits a `{ status, output? | error? }` envelope). Sub-runs are full kernel runs (independent journal, replay, lease semantics, cancel), so the primitive inherits durability without re-invention. Parent-run cancellation cascades to any in-flight child sub-run; a fixed depth limit (default 10, kernel-configurable) prevents runaway recursion. Cross-tenant sub-flow invocation is rejected — the resolver only sees the parent's `tenantId`. Complementary to the loop + fanout primitives: `loop.foreach` = same body × N iterations, `fanout` = different bodies in parallel, `subgraph` = another flow inlined as a node. Additive over 1.6.0. Schema-version 1.6.0 introduces the `fanout` node kind — a first-class kernel primitive for running N DIFFERENT node bodies in parallel with declared convergence semantics (all-succeed / any-succeed / settle-all). Complementary to the loop primitive: `foreach` runs N iterations of the SAME body, `fanout` runs N DIFFERENT bodies concurrently. Each branch declares its own required `outputSchema`; the fan-in shape at the downstream consumer is determined by the convergence mode. Additive over 1.5.0. Schema-version 1.5.0 adds per-edge `policy.priority` — an integer scheduling hint (-100..100, default 0) that orders the ready set: higher priority dispatches first, ties broken by ascending lexical node id (deterministic + replay-safe). Applies only when the destination has EXACTLY ONE incoming edge; fan-in nodes inherit the default. With 1.5.0 the `EdgePolicy` series is complete: retry / timeoutMs / concurrencyKey / priority are the honored fields. There is no `suspend` field — declarative suspension uses `ctx.waitForToken` at handler level. Schema-version 1.4.0 adds per-edge `policy.concurrencyKey` — a printable-ASCII coordination handle (max 256 chars) that serializes dispatch across every node sharing the same key within a tenant. Enforced by the kernel with a lease; suspending handlers release, resumed handlers re-acquire. Schema-version 1.3.0 adds per-edge `policy.retry` — declarative retry (maxAttempts, delayMs, backoff shape, maxDelayMs) applied to a destination node's handler when it has exactly one incoming edge. 1.3.0 also adds (additively) optional `ForeachLoopNode.concurrency` — a bounded worker-pool count (1 ≤ N ≤ min(maxIterations, 32); default 1) for parallel iteration dispatch. `outputs[]` stays sorted by iteration index (canonical order); journal reflects wall-clock settle order. Not applicable to `WhileLoopNode`. Schema-version 1.2.0 introduced the `loop` node kind — a first-class kernel primitive for iterative execution (agent turn loops, retrieval refinement, batch ingest, retry loops). Loops come in two variants: `while` (condition-driven, with optional `evaluationTiming` for do-while vs while semantics) and `foreach` (array-driven, iterating over a resolved operand). Every loop declares a required `outputSchema` — the typed contract for what escapes the loop. State inside the loop is always loop-internal. Body is a sub-DAG; iterations are journaled individually. Version 1.1.0 replaced the 1.0.0 string-typed `when` with the structural Expr DSL and added the $start / $end sentinel endpoints.",
  "type": "object",
  "required": ["id", "version", "nodes", "edges"],
  "additionalProperties": false,
  "properties": {
    "$schema": {
      "type": "string",
      "description": "Optional pointer to this meta-schema for editor IntelliSense. Not interpreted by the loader."
    },
    "id": {
      "type": "string",
      "minLength": 1,
      "description": "Unique flow identifier within a tenant. Convention: kebab-case, namespaced by pack (e.g. 'acme.contract-review')."
    },
    "version": {
      "type": "string",
      "pattern": "^\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?$",
      "description": "Semver version. Runs pin to a specific version; flow edits produce a new version."
    },
    "name": {
      "type": "string",
      "description": "Human-readable name displayed in UIs."
    },
    "description": {
      "type": "string",
      "description": "What this flow does, in one paragraph. Used by AI codegen and self-serve users."
    },
    "nodes": {
      "type": "array",
      "minItems": 1,
      "items": { "$ref": "#/$defs/Node" }
    },
    "edges": {
      "type": "array",
      "items": { "$ref": "#/$defs/Edge" }
    },
    "metadata": {
      "type": "object",
      "description": "Free-form annotations. Not interpreted by the kernel.",
      "additionalProperties": true
    },
    "maxParallelism": {
      "type": "integer",
      "minimum": 1,
      "description": "Flow-level default for how many nodes the kernel dispatches concurrently. Per-invocation `options.maxParallelism` wins; absent → the kernel default."
    },
    "output": { "$ref": "#/$defs/FlowOutput" }
  },
  "$defs": {
    "Node": {
      "description": "A flow node. Either a leaf (tool / agent), a loop node (contains a body sub-flow and an exit condition), a fanout node (runs N different bodies in parallel with declared convergence), or a subgraph node (invokes another registered flow as a full kernel sub-run with its own journal). Discriminated by `kind`.",
      "oneOf": [
        { "$ref": "#/$defs/LeafNode" },
        { "$ref": "#/$defs/LoopNode" },
        { "$ref": "#/$defs/FanoutNode" },
        { "$ref": "#/$defs/SubflowNode" }
      ]
    },
    "LeafNode": {
      "type": "object",
      "required": ["id", "kind", "ref"],
      "additionalProperties": false,
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Node identifier, unique across the entire flow (including loop bodies at any nesting level). May not equal a sentinel ($start, $end, $loop-start, $loop-end)."
        },
        "kind": {
          "type": "string",
          "enum": ["tool", "agent"],
          "description": "What this node executes: a tool or an agent. Since schema-version 1.7.0, invoking another flow is its own node kind (`SubflowNode`)."
        },
        "ref": {
          "type": "string",
          "minLength": 1,
          "description": "Reference to the concrete tool/agent implementation. Interpretation depends on kind and is opaque to the flow loader."
        },
        "config": {
          "type": "object",
          "description": "Node-specific configuration. Interpreted by the referenced implementation.",
          "additionalProperties": true
        },
        "inputMapping": {
          "$ref": "#/$defs/Mapping",
          "description": "What this node's handler receives (schema-version 1.8.0+): each key resolved when the node dispatches. Absent → the output of the node's single upstream node, or the run input for a `$start` edge."
        }
      }
    },
    "SubflowNode": {
      "type": "object",
      "required": ["id", "kind", "flowRef", "inputMapping", "outputSchema", "convergence"],
      "additionalProperties": false,
      "description": "A first-class sub-flow invocation primitive (schema-version 1.7.0+). Dispatches a full kernel run of another registered flow as a single outer-node step. Complementary to the loop + fanout primitives: `foreach` runs N iterations of the SAME body, `fanout` runs N DIFFERENT bodies concurrently, `subgraph` runs a whole other flow inline as a node — with its own independent journal, replay semantics, and lease/cancel machinery inherited from the kernel run substrate. Convergence (`success-only` / `settle-all`, default `settle-all`) decides whether a child-run failure fails the parent node or is projected into a `{ status, output? | error? }` envelope. Cross-tenant invocation is rejected (the resolver only sees the parent's tenantId). A kernel-enforced max depth (default 10; configurable via `RunOptions.maxSubflowDepth`) prevents runaway recursion.",
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Node identifier, unique across the entire flow. May not equal a sentinel."
        },
        "kind": { "type": "string", "const": "subgraph" },
        "flowRef": {
          "type": "object",
          "required": ["flowId", "version"],
          "additionalProperties": false,
          "description": "Reference to another registered flow. Both fields are required; `version` must be an EXACT semver (no ranges) so deterministic replay resolves the same child flow forever.",
          "properties": {
            "flowId": {
              "type": "string",
              "minLength": 1,
              "description": "Registered flow id. Resolved against the PARENT run's tenantId — cross-tenant lookup is rejected."
            },
            "version": {
              "type": "string",
              "pattern": "^\\d+\\.\\d+\\.\\d+(?:-[0-9A-Za-z-]+(?:\\.[0-9A-Za-z-]+)*)?$",
              "description": "Exact semver — no ranges. Deterministic replay requires exact resolution."
            }
          }
        },
        "inputMapping": {
          "$ref": "#/$defs/Mapping",
          "description": "Declarative mapping from the parent's run environment to the sub-run's input. Each entry maps a top-level key of the sub-flow's `runInput` to an Operand (`{ path }` into `runInput` / `state` / `nodeOutputs.<id>`, or a `{ literal }`). The sub-run's input is the object produced by resolving every mapping. Loader statically verifies every value is a valid Operand; runtime resolution follows the same rules as edge predicates."
        },
        "outputSchema": {
          "$ref": "#/$defs/OutputSchema",
          "description": "REQUIRED. JSON Schema (draft 2020-12) describing the shape the SUB-RUN's terminal output must satisfy — the typed escape contract. Decoupled from the sub-flow's own internal shape: parents declare what they can consume. Loader validates well-formedness at load time via `InvalidSubflowNodeError`; kernel validates the sub-run's output at settle time."
        },
        "convergence": {
          "type": "string",
          "enum": ["success-only", "settle-all"],
          "description": "How the sub-run's outcome is projected to the parent node. `success-only`: child failure fails the parent node (parent gets no output; journal records `subgraph.failed`). `settle-all` (default): parent node's output is `{ status: 'succeeded' | 'failed', output? | error? }` regardless of sub-run outcome — the sub-run's failure is data, not a fault, at the parent boundary. Closed enum, extensible additively."
        }
      }
    },
    "LoopNode": {
      "description": "A first-class iteration primitive (schema-version 1.2.0+). Two variants: `while` (condition-driven) and `foreach` (array-driven). Every loop declares an `outputSchema` — the typed contract for what escapes the loop. State inside the loop is always loop-internal (no stateScope knob). Every iteration produces distinct journal entries via `iteration.started` / `iteration.completed`; body-node journal entries carry a `loopContext` field attributing them to the enclosing iteration. Iterations run one at a time unless a foreach loop sets `concurrency` (schema-version 1.3.0+).",
      "oneOf": [{ "$ref": "#/$defs/WhileLoopNode" }, { "$ref": "#/$defs/ForeachLoopNode" }]
    },
    "WhileLoopNode": {
      "type": "object",
      "required": [
        "id",
        "kind",
        "loopKind",
        "body",
        "exitCondition",
        "maxIterations",
        "outputSchema"
      ],
      "additionalProperties": false,
      "description": "Condition-driven loop. Runs body until `exitCondition` is true (or `maxIterations` hits). `evaluationTiming` controls do-while vs while semantics.",
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Node identifier, unique across the entire flow. May not equal a sentinel."
        },
        "kind": { "type": "string", "const": "loop" },
        "loopKind": { "type": "string", "const": "while" },
        "body": { "$ref": "#/$defs/LoopBody" },
        "exitCondition": {
          "$ref": "#/$defs/Expr",
          "description": "Declarative predicate evaluated per iteration. When true → exit the loop. Operand paths may reference `state`, `iterationIndex`, `iterationOutput`, and `nodeOutputs.<bodyNodeId>`."
        },
        "evaluationTiming": {
          "type": "string",
          "enum": ["before", "after"],
          "default": "after",
          "description": "When the exit condition is evaluated. `after` (default; do-while): body runs first, then condition checked. Loop runs at least once. `before` (while): condition checked first, against previous iteration's output (null on iter 0). Body may run zero times."
        },
        "maxIterations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 10000,
          "description": "Hard cap on iteration count. The loop exits with stopReason='max-iterations' if `exitCondition` never becomes true within this many iterations. Required — no unbounded loops."
        },
        "outputSchema": {
          "$ref": "#/$defs/OutputSchema",
          "description": "REQUIRED. JSON Schema (draft 2020-12) describing the shape every iteration's `$loop-end` output must satisfy. Also constrains `finalOutput` and elements of `outputs[]`. Loader validates well-formedness at load time."
        },
        "collectAllIterations": {
          "type": "boolean",
          "default": false,
          "description": "When true, the loop node's output includes an `outputs` array with every iteration's `$loop-end` output. When false (default), only the last iteration's output is exposed."
        }
      }
    },
    "ForeachLoopNode": {
      "type": "object",
      "required": [
        "id",
        "kind",
        "loopKind",
        "body",
        "iterateOver",
        "maxIterations",
        "outputSchema"
      ],
      "additionalProperties": false,
      "description": "Array-driven loop. Runs body once per element of `iterateOver` (up to `maxIterations`). No exit condition — iteration is bounded by array length. `iterateOver` is resolved once at loop-enter time; the array is pinned for the duration.",
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Node identifier, unique across the entire flow. May not equal a sentinel."
        },
        "kind": { "type": "string", "const": "loop" },
        "loopKind": { "type": "string", "const": "foreach" },
        "body": { "$ref": "#/$defs/LoopBody" },
        "iterateOver": {
          "$ref": "#/$defs/Operand",
          "description": "Operand that must resolve to an array at loop-enter time. Typical shape: { path: 'runInput.items' } or { path: 'nodeOutputs.list.records' }. Each iteration receives one element as its `$loop-start` input."
        },
        "maxIterations": {
          "type": "integer",
          "minimum": 1,
          "maximum": 10000,
          "description": "Hard cap on iterations even when the array is bounded. Loop exits with stopReason='max-iterations' if the array is longer than the cap; otherwise stopReason='array-exhausted' when the array is consumed."
        },
        "outputSchema": {
          "$ref": "#/$defs/OutputSchema",
          "description": "REQUIRED. JSON Schema (draft 2020-12) describing the shape every iteration's `$loop-end` output must satisfy."
        },
        "collectAllIterations": {
          "type": "boolean",
          "default": false,
          "description": "When true, the loop node's output includes an `outputs` array with every iteration's `$loop-end` output."
        },
        "concurrency": {
          "type": "integer",
          "minimum": 1,
          "maximum": 32,
          "description": "Optional. Parallel-worker count for iteration dispatch (schema-version 1.3.0+ additive). Default 1 (strictly sequential). When N > 1, the kernel spins up N workers that pull iteration indices from a shared counter in array order. `outputs[]` remains sorted by iteration index (not settle order); journal iteration.* entries reflect wall-clock settle order and consumers sort by iteration for canonical projection. Handler failure in one iteration cancels all in-flight siblings cleanly. Bounded 1 ≤ concurrency ≤ min(maxIterations, 32); the loader rejects out-of-band values via LoopConcurrencyError. Not applicable to WhileLoopNode (each iteration depends on the previous)."
        }
      }
    },
    "Mapping": {
      "type": "object",
      "propertyNames": { "minLength": 1 },
      "additionalProperties": { "$ref": "#/$defs/Operand" },
      "description": "A declarative object: each key maps to an Operand — a `{ literal }`, or a `{ path }` rooted at `runInput`, `state` or `nodeOutputs.<nodeId>`. Resolved against the run environment; a path that does not resolve omits its key."
    },
    "FlowOutput": {
      "type": "object",
      "required": ["mapping"],
      "additionalProperties": false,
      "description": "The run's declared output (schema-version 1.8.0+), resolved when the run completes. Absent → the output of the node feeding the run's `$end` edge.",
      "properties": {
        "mapping": { "$ref": "#/$defs/Mapping" },
        "schema": {
          "$ref": "#/$defs/OutputSchema",
          "description": "Optional JSON Schema (draft 2020-12) the resolved output must satisfy; a violation fails the run."
        }
      }
    },
    "OutputSchema": {
      "description": "A JSON Schema (draft 2020-12) describing a loop's iteration output shape. Stored opaquely at the flow layer; the loader validates well-formedness against the draft-2020-12 meta-schema and rejects malformed schemas via LoopOutputSchemaError. The kernel validates iteration outputs against this schema at each iteration boundary.",
      "type": "object"
    },
    "LoopBody": {
      "type": "object",
      "required": ["nodes", "edges"],
      "additionalProperties": false,
      "description": "The sub-flow a loop iterates. Same structure as the outer flow but uses `$loop-start` / `$loop-end` sentinels for entry/exit. Must be a DAG (own cycle check). Node ids must be globally unique across the entire flow including any nesting.",
      "properties": {
        "nodes": {
          "type": "array",
          "minItems": 1,
          "items": { "$ref": "#/$defs/Node" }
        },
        "edges": {
          "type": "array",
          "items": { "$ref": "#/$defs/LoopEdge" }
        }
      }
    },
    "FanoutNode": {
      "type": "object",
      "required": ["id", "kind", "branches", "convergence"],
      "additionalProperties": false,
      "description": "A first-class fanout primitive (schema-version 1.6.0+). Runs N DIFFERENT handler bodies in parallel from a single dispatch and converges by a declared mode. Complementary to `foreach` (N iterations of the SAME body): `fanout` invokes N distinct handlers concurrently. Convergence modes: `all-succeed` fails on first branch failure (siblings cancel), emits an object mapping every branchId to its output when every branch succeeds; `any-succeed` emits the first branch to succeed (siblings cancel), fails if every branch fails; `settle-all` waits for every branch to reach terminal state, emits per-branch outcomes with `{ status, output? | error? }`. Every branch declares its own required `outputSchema` — the typed escape contract per branch. Journal entries per branch (`fanout.dispatched` / `fanout.branch-completed` / `fanout.branch-failed`) plus a converged / cancelled-siblings summary make fanout state fully replayable. Fan-in shape depends on `convergence` and is decidable at flow-load time.",
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Node identifier, unique across the entire flow. May not equal a sentinel."
        },
        "kind": { "type": "string", "const": "fanout" },
        "branches": {
          "type": "array",
          "minItems": 2,
          "description": "The set of concurrent branches. Must be at least 2 (a 1-branch fanout is just a leaf node). `branchId` must be unique within the fanout. `handler` is looked up in the kernel's HandlerRegistry keyed by that string (same lookup mechanism as leaf nodes). `outputSchema` is REQUIRED per branch — the typed escape contract.",
          "items": { "$ref": "#/$defs/FanoutBranch" }
        },
        "concurrency": {
          "type": "integer",
          "minimum": 1,
          "description": "Optional. Bounded worker-pool count for branch dispatch. Default: `branches.length` (all branches run in parallel). Loader rejects `concurrency > branches.length`. Under `concurrency < branches.length` branches dispatch in declaration order (deterministic + replay-safe)."
        },
        "convergence": {
          "type": "string",
          "enum": ["all-succeed", "any-succeed", "settle-all"],
          "description": "Convergence mode. `all-succeed`: fanout fails on first branch failure, cancels in-flight siblings; on full success, output is `{ [branchId]: output }`. `any-succeed`: fanout succeeds on first branch success, cancels in-flight siblings; output is `{ winnerBranchId, output }`; fails only if every branch fails. `settle-all`: fanout waits for every branch to reach terminal state (no sibling cancellation on failure); output is `{ [branchId]: { status: 'succeeded' | 'failed', output? | error? } }`."
        }
      }
    },
    "FanoutBranch": {
      "type": "object",
      "required": ["branchId", "handler", "outputSchema"],
      "additionalProperties": false,
      "description": "One branch of a `fanout` node. `branchId` is a stable identifier used in the fan-in output object (`all-succeed` / `settle-all`) and in the journal; must be unique within a single fanout. `handler` names a NodeHandler in the kernel's HandlerRegistry — same lookup mechanism as leaf-node handlers. `outputSchema` is the required typed contract for this branch's output; the kernel validates each branch's output against its declared schema at settle time.",
      "properties": {
        "branchId": {
          "type": "string",
          "minLength": 1,
          "description": "Stable identifier, unique within the enclosing fanout node."
        },
        "handler": {
          "type": "string",
          "minLength": 1,
          "description": "Handler reference — looked up in the kernel's HandlerRegistry by this string, same as a leaf node's `ref`. Distinct branches may reuse the same handler ref (handler is stateless from the kernel's POV)."
        },
        "outputSchema": {
          "$ref": "#/$defs/OutputSchema",
          "description": "REQUIRED per branch. JSON Schema (draft 2020-12) describing the shape this branch's handler output must satisfy. Loader validates well-formedness at load time."
        }
      }
    },
    "Edge": {
      "type": "object",
      "required": ["id", "from", "to"],
      "additionalProperties": false,
      "properties": {
        "id": {
          "type": "string",
          "minLength": 1,
          "description": "Edge identifier, unique within this flow."
        },
        "from": {
          "type": "string",
          "minLength": 1,
          "description": "Source node id, or the sentinel '$start' for the flow entry."
        },
        "to": {
          "type": "string",
          "minLength": 1,
          "description": "Destination node id, or the sentinel '$end' for the flow exit."
        },
        "when": {
          "$ref": "#/$defs/Expr",
          "description": "Optional predicate. When absent, the edge fires unconditionally as soon as its `from` node completes. When present, evaluated at edge-dispatch time against the current run environment (runInput, nodeOutputs.<id>, state)."
        },
        "policy": {
          "$ref": "#/$defs/EdgePolicy",
          "description": "Optional per-edge runtime policy. `retry`, `timeoutMs`, `concurrencyKey`, and `priority` are the complete honored surface. There is no `suspend` field — declarative suspension uses `ctx.waitForToken` at handler level."
        }
      }
    },
    "EdgePolicy": {
      "type": "object",
      "additionalProperties": false,
      "description": "Per-edge runtime policy. Every field is optional. `retry`, `timeoutMs`, `concurrencyKey`, and `priority` are the complete set of honored fields. `additionalProperties: false` — unknown keys are rejected at load time. There is no `suspend` field — declarative suspension uses `ctx.waitForToken` at handler level.",
      "properties": {
        "retry": { "$ref": "#/$defs/RetryPolicy" },
        "timeoutMs": {
          "type": "integer",
          "minimum": 1,
          "maximum": 3600000,
          "description": "Per-edge handler-invocation timeout in milliseconds. When set on the sole incoming edge of a destination node, the kernel aborts the handler's `ctx.abortSignal` after `timeoutMs` and journals `step.failed` with `payload.reason: 'timeout'`, `limitMs`, and `elapsedMs`. Fan-in nodes (2+ incoming) ignore the timeout — same rule as retry. Bounded 1..3_600_000 (1 hour cap; longer work belongs behind `ctx.waitForToken` or a foreach with `concurrency`). Interacts with retry: a timed-out attempt counts as one failed attempt. Interacts with cancel: first-fired abort wins in the journal."
        },
        "concurrencyKey": {
          "type": "string",
          "minLength": 1,
          "maxLength": 256,
          "pattern": "^[\\x20-\\x7E]+$",
          "description": "Per-key kernel semaphore. When set on the sole incoming edge of a destination node, the kernel serializes dispatch across every node (across every run, across every flow, within a single tenant) that shares the same key: at most one such node runs at a time. Unable-to-acquire journals `step.concurrency-deferred`; release — when the holding node completes, fails or is cancelled — unblocks a waiter on the next tick. Constraint: 1..256 printable ASCII (0x20..0x7E). Fan-in nodes (2+ incoming) ignore the key — same rule as retry + timeoutMs. Suspending handler (waitForToken) releases the lease; resumed handler re-acquires. Retry attempts re-acquire fresh on each retry."
        },
        "priority": {
          "type": "integer",
          "minimum": -100,
          "maximum": 100,
          "description": "Declarative scheduler priority. When the ready set has more than one node, higher-priority nodes dispatch first; ties are broken by ascending lexical node id (deterministic + replay-safe). Applied to the destination node when it has EXACTLY ONE incoming edge — fan-in nodes (2+ incoming) inherit the default (0). Same fan-in rule as retry / timeoutMs / concurrencyKey. Integer, -100..100. Default 0. Integer-only avoids IEEE-754 comparison ambiguity in a sort key that must round-trip identically across every replay. Orders WHICH nodes dispatch first, not HOW MANY dispatch at once — maxParallelism still caps the concurrent count. Interacts with concurrencyKey: within a single tick, priority-ordered dispatch means the higher-priority node attempts and wins the lease first; the lower-priority sibling journals step.concurrency-deferred. Priority does not order nodes already waiting on the same concurrencyKey across runs or processes. No JournalKind emitted — priority is a scheduling hint, not a durable state transition."
        }
      }
    },
    "RetryPolicy": {
      "type": "object",
      "required": ["maxAttempts"],
      "additionalProperties": false,
      "description": "Retry policy for the destination node's handler when a handler failure occurs. Applied only when the destination has exactly one incoming edge — fan-in nodes ignore retry, since there is no rule for whose policy would win.",
      "properties": {
        "maxAttempts": {
          "type": "integer",
          "minimum": 1,
          "maximum": 10,
          "description": "Total handler attempts, including the first. 1 = no retry (equivalent to omitting the policy). Values above 10 are a design smell and rejected — retry-heavy control flow belongs in a supervising flow, not on an edge."
        },
        "delayMs": {
          "type": "integer",
          "minimum": 0,
          "description": "Base delay between retry attempts, in milliseconds. Default 0. Combined with `backoff` to produce the actual per-retry delay."
        },
        "backoff": {
          "type": "string",
          "enum": ["fixed", "linear", "exponential"],
          "default": "fixed",
          "description": "Backoff shape. `fixed`: `delayMs` every retry. `linear`: `delayMs * attempt`. `exponential`: `delayMs * 2^(attempt-1)`, capped at `maxDelayMs`. `exponential` REQUIRES `maxDelayMs` so the delay never grows unbounded."
        },
        "maxDelayMs": {
          "type": "integer",
          "minimum": 0,
          "description": "Ceiling on the computed per-retry delay. Applies to `linear` and `exponential` backoff. Required when `backoff = 'exponential'`. Defaults to 60000ms when `linear` is chosen without an explicit value."
        }
      }
    },
    "LoopEdge": {
      "type": "object",
      "required": ["id", "from", "to"],
      "additionalProperties": false,
      "description": "An edge inside a loop body. Same shape as outer Edge but the sentinels for source/destination are `$loop-start` / `$loop-end` rather than `$start` / `$end`.",
      "properties": {
        "id": { "type": "string", "minLength": 1 },
        "from": { "type": "string", "minLength": 1 },
        "to": { "type": "string", "minLength": 1 },
        "when": { "$ref": "#/$defs/Expr" }
      }
    },
    "Expr": {
      "description": "A predicate expression. Closed operator set, JSON-serializable. Evaluated to a boolean.",
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["op", "left", "right"],
          "properties": {
            "op": { "enum": ["eq", "ne", "lt", "lte", "gt", "gte"] },
            "left": { "$ref": "#/$defs/Operand" },
            "right": { "$ref": "#/$defs/Operand" }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["op", "value", "set"],
          "properties": {
            "op": { "enum": ["in", "notIn"] },
            "value": { "$ref": "#/$defs/Operand" },
            "set": { "$ref": "#/$defs/Operand" }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["op", "value"],
          "properties": {
            "op": { "enum": ["exists", "notExists", "truthy", "falsy"] },
            "value": { "$ref": "#/$defs/Operand" }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["op", "children"],
          "properties": {
            "op": { "enum": ["and", "or"] },
            "children": {
              "type": "array",
              "minItems": 1,
              "items": { "$ref": "#/$defs/Expr" }
            }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["op", "child"],
          "properties": {
            "op": { "const": "not" },
            "child": { "$ref": "#/$defs/Expr" }
          }
        }
      ]
    },
    "Operand": {
      "description": "One side of a comparison. Either a literal JSON value or a dot-path reference into the run environment. Paths rooted at `iterationIndex` / `iterationOutput` are only meaningful inside a loop node's `exitCondition`; outside that context, the path does not resolve (it counts as missing).",
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["literal"],
          "properties": {
            "literal": {
              "description": "A concrete JSON-serializable value. May be null, boolean, number, string, array, or object."
            }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["path"],
          "properties": {
            "path": {
              "type": "string",
              "pattern": "^(runInput|state|nodeOutputs\\.[A-Za-z0-9_.-]+|iterationIndex|iterationOutput)(\\.[A-Za-z0-9_-]+)*$",
              "description": "Dot-path rooted at 'runInput', 'state', 'nodeOutputs.<nodeId>', 'iterationIndex' (loop exit context only), or 'iterationOutput' (loop exit context only)."
            }
          }
        }
      ]
    }
  }
}
'''

SCHEMA_TEXTS['tool'] = r'''{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://kindgi.com/schemas/v1/tool.schema.json",
  "$comment": "schema-version: 1.1.0",
  "title": "Tool",
  "description": "A tool definition. Authored once; the runtime picks transport (native in-process for tools built into the runtime, MCP over the wire for cross-process / cross-org / third-party tools). Every tool declares its typed I/O, its context needs (typed DI), and its side-effects — enabling policy enforcement and parallel scheduling by the kernel.",
  "type": "object",
  "required": ["id", "description", "version", "input", "output"],
  "additionalProperties": false,
  "properties": {
    "id": {
      "type": "string",
      "minLength": 1,
      "description": "Unique tool identifier. Convention: '<pack>.<tool>' (e.g. 'acme.verify-citation') or a bare id for tools built into Kindgi."
    },
    "description": {
      "type": "string",
      "minLength": 1,
      "description": "Human- and LLM-readable description of what this tool does. Load-bearing: this is what the LLM sees when deciding to call the tool."
    },
    "version": {
      "type": "string",
      "pattern": "^\\d+\\.\\d+\\.\\d+$"
    },
    "input": {
      "type": "object",
      "description": "JSON Schema for the tool input. MUST validate under Draft 2020-12, except on an MCP server's tool (`transport: \"mcp\"`), whose schemas are in the dialect their `$schema` declares: draft-06, draft-07, 2019-09 or 2020-12."
    },
    "output": {
      "type": "object",
      "description": "JSON Schema for the tool output. MUST validate under Draft 2020-12, except on an MCP server's tool (`transport: \"mcp\"`), whose schemas are in the dialect their `$schema` declares: draft-06, draft-07, 2019-09 or 2020-12."
    },
    "needs": {
      "type": "array",
      "items": {
        "$ref": "#/$defs/Need"
      },
      "description": "Typed context requirements — named slots (e.g. `tenant`, `run`, `blob`, `memory:facts`) the runtime injects via `ToolContext`. Declarative: not checked when a flow is loaded. `needsSpec` is the typed, discriminated form."
    },
    "effects": {
      "type": "array",
      "items": {
        "$ref": "#/$defs/Effect"
      },
      "description": "Declared side-effects. Enables policy enforcement (can this tool run in this tenant?), safe parallelization (are two calls conflicting?), and causal provenance."
    },
    "transport": {
      "type": "string",
      "enum": ["auto", "native", "mcp"],
      "default": "auto",
      "description": "Transport hint. 'auto' (default) lets the runtime pick native when possible, MCP otherwise. 'native' requires in-process execution. 'mcp' requires MCP execution. Deployment-time concern; authoring is unchanged."
    },
    "mcpEndpoint": {
      "type": "string",
      "description": "If transport = 'mcp' (or resolved to MCP by 'auto'), the MCP endpoint URI. Format: 'mcp+stdio://<command>', 'mcp+http://<url>', 'mcp+sse://<url>'."
    },
    "metadata": {
      "type": "object",
      "additionalProperties": true,
      "description": "Free-form annotations (author, docs URL, tags). Not interpreted by the kernel."
    },
    "sandbox": {
      "type": "string",
      "enum": ["none", "context-isolated", "strict"],
      "description": "Isolation posture the runtime enforces around the handler. Optional additive field."
    },
    "mutating": {
      "type": "boolean",
      "description": "Semantic marker: `true` when this tool causes observable side effects (writes state, calls external APIs with mutations, sends messages). Read-only tools set `false`. Absent defaults to `true`. Consumed by the HITL default classifier — a read-only tool passes straight through, a mutating tool asks on first use."
    },
    "needsApprovalWhenUnattended": {
      "type": "boolean",
      "description": "`true` when a person must say yes to every call of this tool in a run no person started (a schedule, a webhook, an event or a service account's key started it). In such a run an agent's call waits for a person's yes whatever the agent's approval rules say, and a flow's tool step that calls it is refused. Absent means `false`. Optional additive field."
    },
    "limits": {
      "type": "object",
      "additionalProperties": false,
      "description": "Sandbox-enforced resource caps at dispatch. Optional additive field.",
      "properties": {
        "memMB": { "type": "integer", "minimum": 1 },
        "cpuMs": { "type": "integer", "minimum": 1 }
      },
      "required": ["memMB", "cpuMs"]
    },
    "network": {
      "type": "object",
      "description": "Network egress policy. Optional additive field. Discriminated on `kind`.",
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "properties": { "kind": { "type": "string", "enum": ["none", "unrestricted"] } },
          "required": ["kind"]
        },
        {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "kind": { "type": "string", "const": "allowlist" },
            "hosts": { "type": "array", "items": { "type": "string", "minLength": 1 } }
          },
          "required": ["kind", "hosts"]
        }
      ]
    },
    "needsSpec": {
      "type": "object",
      "additionalProperties": false,
      "description": "Typed discriminated needs (env / secrets / config / capabilities / bindings). Optional additive field.",
      "properties": {
        "env": { "type": "object", "additionalProperties": { "type": "object" } },
        "secrets": { "type": "object", "additionalProperties": { "type": "object" } },
        "config": { "type": "object", "additionalProperties": { "type": "object" } },
        "capabilities": { "type": "array", "items": { "type": "string", "minLength": 1 } },
        "bindings": { "type": "array", "items": { "type": "string", "minLength": 1 } }
      }
    },
    "codeArtifactRef": {
      "description": "Handler-artifact pointer. Discriminated on `kind`: `oci` is the deploy-pipeline shape (image + module path + artifactVersion); `filesystem` is the local-development shape — absolute host path at the pack's on-disk handler file. Production servers SHOULD reject `filesystem`.",
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "kind": { "const": "oci" },
            "imageRef": { "type": "string", "minLength": 1 },
            "modulePath": { "type": "string", "minLength": 1 },
            "artifactVersion": { "type": "string", "minLength": 1 }
          },
          "required": ["kind", "imageRef", "modulePath", "artifactVersion"]
        },
        {
          "type": "object",
          "additionalProperties": false,
          "properties": {
            "kind": { "const": "filesystem" },
            "modulePath": { "type": "string", "minLength": 1 }
          },
          "required": ["kind", "modulePath"]
        }
      ]
    },
    "spec": {
      "description": "Declarative handler spec. Discriminated on `kind`; the framework's synthesizer registry maps kind → runtime handler. Mutually exclusive with an imperative handler at author time.",
      "oneOf": [{ "$ref": "#/$defs/HttpToolSpec" }]
    }
  },
  "$defs": {
    "Need": {
      "type": "object",
      "required": ["name"],
      "additionalProperties": false,
      "properties": {
        "name": {
          "type": "string",
          "minLength": 1,
          "description": "The named context slot (e.g. 'tenant', 'db', 'run', 'provenance', 'memory:facts', 'blob')."
        },
        "optional": {
          "type": "boolean",
          "default": false
        }
      }
    },
    "Effect": {
      "type": "object",
      "required": ["kind"],
      "additionalProperties": false,
      "properties": {
        "kind": {
          "type": "string",
          "enum": [
            "reads",
            "writes",
            "deletes",
            "network",
            "spawns-run",
            "emits-event",
            "external-side-effect",
            "sensitive-data-egress"
          ]
        },
        "resource": {
          "type": "string",
          "description": "Resource identifier (e.g. 'memory:facts', 'blob:*', 'external:api.example.com'). Used by the policy engine to authorize the effect."
        },
        "notes": {
          "type": "string"
        }
      }
    },
    "ToolSecretRef": {
      "type": "object",
      "additionalProperties": false,
      "required": ["envName", "name"],
      "properties": {
        "envName": { "type": "string", "minLength": 1 },
        "name": { "type": "string", "minLength": 1 }
      }
    },
    "HttpHeaderSpec": {
      "type": "object",
      "additionalProperties": false,
      "required": ["name", "value"],
      "properties": {
        "name": { "type": "string", "minLength": 1 },
        "value": { "type": "string" }
      }
    },
    "HttpAuthSpec": {
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["kind", "secretRef"],
          "properties": {
            "kind": { "const": "bearer" },
            "secretRef": { "$ref": "#/$defs/ToolSecretRef" }
          }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["kind", "headerName", "secretRef"],
          "properties": {
            "kind": { "const": "header" },
            "headerName": { "type": "string", "minLength": 1 },
            "secretRef": { "$ref": "#/$defs/ToolSecretRef" }
          }
        }
      ]
    },
    "HttpRequestBodySpec": {
      "oneOf": [
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["kind"],
          "properties": { "kind": { "const": "json-input" } }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["kind"],
          "properties": { "kind": { "const": "input-passthrough" } }
        },
        {
          "type": "object",
          "additionalProperties": false,
          "required": ["kind", "template"],
          "properties": {
            "kind": { "const": "text" },
            "template": { "type": "string" }
          }
        }
      ]
    },
    "HttpToolSpec": {
      "type": "object",
      "description": "Declarative HTTP-invocation spec. Attached to `ToolManifest.spec` under the discriminant `kind: 'http'`. The runtime `Tool.handler` is synthesized by the 'http' spec synthesizer to perform URL-template substitution, secret-ref resolution via `ToolContext.resolveSecret`, and the outbound fetch. All fields serialize cleanly to JSON.",
      "additionalProperties": false,
      "required": ["kind", "method", "urlTemplate"],
      "properties": {
        "kind": { "const": "http" },
        "method": {
          "type": "string",
          "enum": ["GET", "POST", "PUT", "PATCH", "DELETE"]
        },
        "urlTemplate": {
          "type": "string",
          "minLength": 1,
          "description": "URL template with `{param}` placeholders substituted from the tool's input at invoke time."
        },
        "headers": {
          "type": "array",
          "items": { "$ref": "#/$defs/HttpHeaderSpec" }
        },
        "authorization": { "$ref": "#/$defs/HttpAuthSpec" },
        "requestBody": { "$ref": "#/$defs/HttpRequestBodySpec" },
        "timeoutMs": {
          "type": "integer",
          "minimum": 1,
          "description": "Wall-clock timeout in ms. Default 30000."
        },
        "parseJson": {
          "type": "boolean",
          "description": "When true (default), the response body is parsed as JSON before returning to the invoker."
        },
        "successStatus": {
          "type": "object",
          "additionalProperties": false,
          "required": ["min", "max"],
          "properties": {
            "min": { "type": "integer", "minimum": 100, "maximum": 599 },
            "max": { "type": "integer", "minimum": 100, "maximum": 599 }
          }
        }
      }
    }
  }
}
'''
