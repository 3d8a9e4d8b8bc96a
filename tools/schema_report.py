"""Print how schema_lite fares on the JSON Schema test suite and on the Ajv oracle.

    python3 tools/schema_report.py [--shared DIR] [--check] [--answers FILE]

Reads ../shared/jsonschema-suite (draft 2020-12) and ../shared/ajv-oracle/cases.json
(relative to the repository) and prints pass counts and percentages for the suite's
required, optional and format groups, every failing suite case with its reason, and
the oracle figures: exact issue lists (output side), defaults-filled values and
input-side issue lists, plus strict-mode refusals of the schemas Ajv refuses.

It needs nothing but the standard library, so it runs on every interpreter the
service supports (3.6 and up), without pytest: ``--check`` also checks the
thresholds tests/test_schema_suite.py asserts (``threshold_checks``) and exits 1
when one fails.  The last line is a digest of every answer (each issue list,
each filled value, each refusal's text): the same digest from two interpreters
means schema_lite gave them the same answers; ``--answers FILE`` writes the
answers themselves, to compare where digests differ.
"""

import argparse
import hashlib
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import schema_lite  # noqa: E402

DEFAULT_SHARED = os.path.join(os.path.dirname(REPO), "shared")
REMOTE_BASE = "http://localhost:1234/"

# Suite files whose failing cases are documented differences -> the reason.
KNOWN_REASONS = {
    "vocabulary.json": ("custom meta-schemas with $vocabulary are not honoured: validation keywords "
                        "always apply (as in Ajv)"),
    "format.json": ("Ajv (with ajv-formats) asserts this format; the suite treats format as an "
                    "annotation here. Ajv's answer wins."),
    "optional/format-assertion.json": ("format-assertion vocabulary via a custom meta-schema is not "
                                       "read; ajv-formats formats always assert, unknown ones never"),
    "optional/cross-draft.json": "documents of older drafts are read as draft 2020-12 (as Ajv2020 does)",
    "optional/float-overflow.json": ("1e308 / 0.5 overflows to Infinity, which is not an integer "
                                     "(JavaScript arithmetic, as in Ajv)"),
}
AJV_FORMATS_ANSWER = "same answer as Ajv: ajv-formats' rule for this format differs from the suite's"
UNKNOWN_FORMAT = "format not in ajv-formats: only an annotation (as in Ajv without strict mode)"


def expected_failure(result):
    """True when a failing suite case is one of the documented differences."""
    return result["file"] in KNOWN_REASONS


def load_remotes(shared):
    """The suite's remote documents, keyed by the URIs the tests use."""
    root = os.path.join(shared, "jsonschema-suite", "remotes")
    remotes = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".json"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, encoding="utf-8") as f:
                    remotes[REMOTE_BASE + rel] = json.load(f)
    return remotes


def suite_files(shared):
    root = os.path.join(shared, "jsonschema-suite", "tests", "draft2020-12")
    out = []
    for dirpath, _, files in os.walk(root):
        for name in files:
            if name.endswith(".json"):
                full = os.path.join(dirpath, name)
                out.append((os.path.relpath(full, root).replace(os.sep, "/"), full))
    return sorted(out)


def schemas_and_instances(shared):
    """[(schema, [instance, ...])] for every group of the suite and every oracle case."""
    out = []
    for _, full in suite_files(shared):
        with open(full, encoding="utf-8") as f:
            out.extend((g["schema"], [t["data"] for t in g["tests"]]) for g in json.load(f))
    with open(os.path.join(shared, "ajv-oracle", "cases.json"), encoding="utf-8") as f:
        out.extend((case["schema"], [case["instance"]]) for case in json.load(f)["cases"])
    return out


def validators_and_instances(shared):
    """[(schema, validator, [instance, ...])] for the schemas above that compile."""
    out = []
    for schema, instances in schemas_and_instances(shared):
        try:
            out.append((schema, schema_lite.SchemaValidator(schema), instances))
        except schema_lite.SchemaError:
            continue
    return out


def group_of(rel):
    if rel.startswith("optional/format/"):
        return "format"
    if rel.startswith("optional/"):
        return "optional"
    return "required"


def run_suite(shared):
    """Run every suite test; return a list of result dicts (one per test)."""
    remotes = load_remotes(shared)
    results = []
    for rel, full in suite_files(shared):
        with open(full, encoding="utf-8") as f:
            groups = json.load(f)
        for g in groups:
            try:
                validator = schema_lite.SchemaValidator(g["schema"], remotes=remotes)
                error = None
            except schema_lite.SchemaError as exc:
                validator, error = None, "schema refused: %s" % exc
            for t in g["tests"]:
                if validator is None:
                    ok, why, answer = False, error, error
                else:
                    valid = validator.is_valid(t["data"])
                    issues = answer = validator.issues(t["data"])
                    ok = valid == t["valid"] and (not issues) == valid
                    why = "expected %s, got %s" % ("valid" if t["valid"] else "invalid",
                                                   "valid" if valid else "invalid")
                    if (not issues) != valid:
                        why = "is_valid and issues() disagree"
                results.append({"file": rel, "group": group_of(rel), "schema": g["description"],
                                "test": t["description"], "ok": ok, "why": None if ok else why,
                                "answer": answer})
    return results


def reason(result):
    known = KNOWN_REASONS.get(result["file"])
    if known:
        return known
    if result["group"] == "format":
        name = result["file"].rsplit("/", 1)[1][:-len(".json")]
        return AJV_FORMATS_ANSWER if name in schema_lite._FORMATS or name == "ecmascript-regex" else UNKNOWN_FORMAT
    return result["why"]


def suite_figures(results):
    """{group: (passed, total)}."""
    figures = {}
    for r in results:
        passed, total = figures.get(r["group"], (0, 0))
        figures[r["group"]] = (passed + r["ok"], total + 1)
    return figures


def run_oracle(shared):
    """Compare with Ajv's recorded answers; return counts and the failures."""
    with open(os.path.join(shared, "ajv-oracle", "cases.json"), encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    out = {"compiled": 0, "issues": 0, "defaults": 0, "input": 0, "refused": 0, "refusable": 0,
           "defaulted": 0, "failures": [], "answers": []}
    answers = out["answers"]
    for case in cases:
        if case["ajvCompileError"]:
            out["refusable"] += 1
            try:
                schema_lite.SchemaValidator(case["schema"], strict=True)
                out["failures"].append((case["id"], case["name"], "strict mode accepts a schema Ajv refuses"))
            except schema_lite.SchemaError as exc:
                out["refused"] += 1
                answers.append(str(exc))
            continue
        out["compiled"] += 1
        validator = schema_lite.SchemaValidator(case["schema"], strict=True)
        issues = validator.issues(case["instance"])
        answers.append(issues)
        if issues == case["ajvErrors"]:
            out["issues"] += 1
        else:
            out["failures"].append((case["id"], case["name"], "issue list differs from Ajv's"))
        if case["defaultsCompileError"]:
            out["refusable"] += 1
            try:
                validator.apply_defaults(case["instance"])
                out["failures"].append((case["id"], case["name"], "strict defaults accept what Ajv refuses"))
            except schema_lite.SchemaError as exc:
                out["refused"] += 1
                answers.append(str(exc))
            continue
        out["defaulted"] += 1
        filled = validator.apply_defaults(case["instance"])
        answers.append(filled)
        if filled == case["defaultsApplied"]:
            out["defaults"] += 1
        else:
            out["failures"].append((case["id"], case["name"], "defaults differ from Ajv's"))
        issues = validator.issues(filled)
        answers.append(issues)
        if issues == case["inputErrors"]:
            out["input"] += 1
        else:
            out["failures"].append((case["id"], case["name"], "input-side issues differ from Ajv's"))
    return out


def threshold_checks(results, oracle):
    """[(what must hold, whether it does, the figures)]: the floors the project keeps."""
    figures = suite_figures(results)
    required, optional, formats = figures["required"], figures["optional"], figures["format"]
    unexplained = [r for r in results if r["group"] == "required" and not r["ok"] and not expected_failure(r)]
    n, d = oracle["compiled"], oracle["defaulted"]
    return [
        ("required suite cases >= 98%", required[1] > 1000 and required[0] >= 0.98 * required[1], required),
        ("every failing required case is documented", not unexplained,
         ["%s | %s | %s" % (r["file"], r["schema"], r["test"]) for r in unexplained]),
        ("optional suite cases >= 95%", optional[0] >= 0.95 * optional[1], optional),
        ("format suite cases >= 80%", formats[0] >= 0.80 * formats[1], formats),
        ("oracle exact issue lists >= 99%", n > 400 and oracle["issues"] >= 0.99 * n, (oracle["issues"], n)),
        ("oracle defaults all equal", d > 400 and oracle["defaults"] == d, (oracle["defaults"], d)),
        ("oracle input-side issues >= 99%", oracle["input"] >= 0.99 * d, (oracle["input"], d)),
        ("oracle strict refusals all", oracle["refused"] == oracle["refusable"],
         (oracle["refused"], oracle["refusable"])),
    ]


def answers_text(results, oracle):
    """Every answer, one JSON value a line: what the digest is taken of."""
    lines = [json.dumps(r["answer"], sort_keys=True) for r in results]
    lines.extend(json.dumps(a, sort_keys=True) for a in oracle["answers"])
    return "\n".join(lines) + "\n"


def answers_digest(results, oracle):
    return "sha256:" + hashlib.sha256(answers_text(results, oracle).encode("utf-8")).hexdigest()


def percent(part, whole):
    return 100.0 * part / whole if whole else 100.0


def parse_args(argv):
    """The command line; ``--help`` prints the usage and a flag without its value is a usage
    error (exit 2), before any case runs."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", metavar="DIR", default=DEFAULT_SHARED,
                        help="the folder holding jsonschema-suite/ and ajv-oracle/ (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="also check the thresholds the tests assert; exit 1 when one fails")
    parser.add_argument("--answers", metavar="FILE", help="also write every answer to FILE")
    return parser.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    shared = args.shared
    if not os.path.isdir(shared):
        print("no shared directory at %s: nothing to report" % shared)
        return 2
    results = run_suite(shared)
    print("JSON Schema test suite, draft 2020-12")
    for group, (passed, total) in sorted(suite_figures(results).items()):
        print("  %-9s %4d / %4d passed  (%.1f%%)" % (group, passed, total, percent(passed, total)))
    print("\nFailing suite cases:")
    for r in results:
        if not r["ok"]:
            print("  [%s] %s | %s | %s\n      reason: %s" % (r["group"], r["file"], r["schema"], r["test"], reason(r)))
    oracle = run_oracle(shared)
    n = oracle["compiled"]
    print("\nAjv oracle (%d cases Ajv compiles, %d it refuses)" % (n, oracle["refusable"]))
    print("  exact issue lists     %3d / %d  (%.1f%%)" % (oracle["issues"], n, percent(oracle["issues"], n)))
    d = oracle["defaulted"]
    print("  defaults-filled value %3d / %d  (%.1f%%)" % (oracle["defaults"], d, percent(oracle["defaults"], d)))
    print("  input-side issues     %3d / %d  (%.1f%%)" % (oracle["input"], d, percent(oracle["input"], d)))
    print("  strict refusals       %3d / %d" % (oracle["refused"], oracle["refusable"]))
    for case_id, name, why in oracle["failures"]:
        print("  case %s %s: %s" % (case_id, name, why))
    status = 0
    if args.check:
        print("\nChecks")
        for what, ok, detail in threshold_checks(results, oracle):
            print("  %-6s %s: %s" % ("ok" if ok else "FAILED", what, detail))
            status = status or (0 if ok else 1)
    if args.answers:
        with open(args.answers, "w", encoding="utf-8") as f:
            f.write(answers_text(results, oracle))
    print("\nanswers digest (Python %s): %s" % (sys.version.split()[0], answers_digest(results, oracle)))
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
