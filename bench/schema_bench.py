"""Benchmark: schema_lite against python-jsonschema on a realistic tool input.

    python3 bench/schema_bench.py [--seconds N] [--scaling | --scaling-only]
    VENV/bin/python bench/schema_bench.py     # a venv where jsonschema imports (kindgi==0.1.10 brings it)

Validates an order (customer, address, 20 line items with enums, patterns,
uuid/email/date/date-time formats, bounds, uniqueItems and a default) and prints
calls per second for: compiling the schema (each time a schema not seen before),
checking it for a lazy validator (its $ref inlined: a lazy validator compiles a
schema with references at once), compiling a schema equal to one compiled before
with the same ``shared`` dict, is_valid and issues() on the valid order, issues() on an order with a
dozen mistakes, and apply_defaults.  When
jsonschema's Draft202012Validator is importable it is measured the same way (with
its FormatChecker, so formats are checked by both) and the ratios are printed; its
"compile" is check_schema plus the constructor, which is what the official Python
service does for each schema (the constructor alone defers all work to validation).
Then, with ``--scaling`` (or alone with ``--scaling-only``), how validating grows
with the input: the bench pack's ``order`` tool input (bench/pack/index.json,
its ``maxItems`` lifted so that larger orders are valid) with 20, 200 and 2,000
distinct line items, for is_valid, issues, issues with one duplicate item
(``uniqueItems`` failing) and apply_defaults, and the exponent k of time ~ n^k
from 20 to 2,000 items and from 200 to 2,000 (1 is linear).

A benchmark prints figures; it asserts nothing.
"""

import copy
import itertools
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import schema_lite  # noqa: E402

ORDER_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {
                "street": {"type": "string", "minLength": 1, "maxLength": 200},
                "city": {"type": "string", "minLength": 1},
                "zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
                "country": {"type": "string", "enum": ["US", "CA", "MX", "DE", "FR"], "default": "US"},
            },
            "required": ["street", "city", "zip"],
            "additionalProperties": False,
        },
    },
    "properties": {
        "orderId": {"type": "string", "format": "uuid"},
        "placedAt": {"type": "string", "format": "date-time"},
        "deliverBy": {"type": "string", "format": "date"},
        "customer": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "pattern": "^C[0-9]{6}$"},
                "name": {"type": "string", "minLength": 1, "maxLength": 100},
                "email": {"type": "string", "format": "email"},
                "tier": {"type": "string", "enum": ["basic", "silver", "gold"], "default": "basic"},
            },
            "required": ["id", "name", "email"],
            "additionalProperties": False,
        },
        "shipping": {"$ref": "#/$defs/address"},
        "items": {
            "type": "array",
            "minItems": 1,
            "maxItems": 100,
            "uniqueItems": True,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 999},
                    "unitPrice": {"type": "number", "exclusiveMinimum": 0, "multipleOf": 0.01},
                    "category": {"type": "string", "enum": ["book", "music", "video", "toy", "food"]},
                    "gift": {"type": "boolean", "default": False},
                    "note": {"type": ["string", "null"], "maxLength": 200},
                },
                "required": ["sku", "qty", "unitPrice", "category"],
                "additionalProperties": False,
            },
        },
        "coupon": {"type": "string", "pattern": "^[A-Z0-9]{4,12}$"},
        "priority": {"type": "string", "enum": ["standard", "express", "overnight"], "default": "standard"},
    },
    "required": ["orderId", "placedAt", "customer", "shipping", "items"],
    "additionalProperties": False,
}

CATEGORIES = ["book", "music", "video", "toy", "food"]
VALID_ORDER = {
    "orderId": "123e4567-e89b-12d3-a456-426614174000",
    "placedAt": "2024-05-01T10:20:30Z",
    "deliverBy": "2024-05-07",
    "customer": {"id": "C123456", "name": "Ada Lovelace", "email": "ada@example.com", "tier": "gold"},
    "shipping": {"street": "1 Main St", "city": "Springfield", "zip": "12345", "country": "US"},
    "items": [
        {"sku": "ABC-%04d" % i, "qty": 1 + i % 5, "unitPrice": round(0.5 + i * 1.5, 2), "category": CATEGORIES[i % 5],
         "gift": i % 2 == 0, "note": None if i % 3 else "wrap it"}
        for i in range(20)
    ],
    "coupon": "SPRING24",
    "priority": "express",
}


def invalid_order():
    order = copy.deepcopy(VALID_ORDER)
    order["orderId"] = "not-a-uuid"
    order["customer"]["email"] = "nobody"
    order["customer"]["extra"] = 1
    order["shipping"]["zip"] = "ABCDE"
    order["items"][3]["qty"] = 0
    order["items"][4]["category"] = "garden"
    order["items"][5]["sku"] = "bad"
    order["items"][6]["unitPrice"] = -1
    order["items"][7] = dict(order["items"][8])
    order["items"][9]["qty"] = 1.5
    order["priority"] = "asap"
    del order["placedAt"]
    return order


def without_refs(schema):
    """The order schema with its one $ref replaced by the address it names: a lazy
    validator compiles a schema with references at once, so the lazy row needs none."""
    schema = copy.deepcopy(schema)
    schema["properties"]["shipping"] = schema.pop("$defs")["address"]
    return schema


def jsonschema_version():
    try:
        from importlib.metadata import version
        return version("jsonschema")
    except Exception:
        return "?"


def compile_jsonschema(jsonschema, checker):
    """What the official Python service does per schema: check it, then build a validator."""
    jsonschema.Draft202012Validator.check_schema(ORDER_SCHEMA)
    return jsonschema.Draft202012Validator(ORDER_SCHEMA, format_checker=checker)


def rate(fn, seconds):
    """Calls per second of fn() over about ``seconds`` of wall time."""
    fn()
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(20):
            fn()
        n += 20
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = (20, 200, 2000)


def pack_order_schema():
    """The bench pack's order tool input, with room for any number of line items."""
    with open(os.path.join(HERE, "pack", "index.json"), encoding="utf-8") as f:
        tools = json.load(f)["tools"]
    schema = copy.deepcopy([t for t in tools if t["id"] == "order"][0]["input"])
    del schema["properties"]["items"]["maxItems"]
    return schema


def order_of(n):
    """A valid order with n distinct line items."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    categories = ["books", "garden", "kitchen", "office", "toys", "tools"]
    return {
        "orderId": "7d444840-9dc0-11d1-b245-5ffdce74fad2",
        "placedAt": "2026-11-30T14:05:09.250Z",
        "currency": "USD",
        "customer": {"id": "0b8e8a52-0d0c-4a6e-9f61-3b0b6b1f2c11", "name": "Ada Lovelace",
                     "email": "ada.lovelace@example.com", "tier": "gold"},
        "shippingAddress": {"line1": "12 Analytical Row", "city": "London", "postalCode": "20500",
                            "country": "GB"},
        "items": [{"sku": "%s%s%s-%04d" % (letters[i % 26], letters[i // 26 % 26], letters[i // 676 % 26],
                                           i % 10000),
                   "name": "Catalogue item %d" % i, "category": categories[i % 6],
                   "quantity": 1 + i % 5, "unitPriceCents": 199 + i} for i in range(n)],
    }


def scaling(seconds, rounds=7):
    """Print how validating the order input grows with its line items.

    The sizes take turns within each round and the best round counts, so that
    the machine's drift does not land on one size.
    """
    validator = schema_lite.SchemaValidator(pack_order_schema())
    calls = {}
    for n in SIZES:
        order = order_of(n)
        duplicated = copy.deepcopy(order)
        duplicated["items"].append(dict(duplicated["items"][0]))
        calls[n] = [lambda o=order: validator.is_valid(o), lambda o=order: validator.issues(o),
                    lambda o=duplicated: validator.issues(o), lambda o=order: validator.apply_defaults(o)]
    reps = {n: max(1, int(seconds / rounds / len(SIZES) / 4 / (n * 4e-6))) for n in SIZES}
    best = {n: [float("inf")] * 4 for n in SIZES}
    for _ in range(rounds):
        for n in SIZES:
            for i, fn in enumerate(calls[n]):
                start = time.perf_counter()
                for _ in range(reps[n]):
                    fn()
                best[n][i] = min(best[n][i], (time.perf_counter() - start) / reps[n])
    names = ("is_valid", "issues", "issues, 1 duplicate", "apply_defaults")
    print("\norder input by line items (us per call)   %s   exponent 20-2000  200-2000"
          % "  ".join("%9d" % n for n in SIZES))
    for i, name in enumerate(names):
        low, mid, high = (best[n][i] for n in SIZES)
        print("  %-38s %s   %8.2f %9.2f" % (name, "  ".join("%9.1f" % (best[n][i] * 1e6) for n in SIZES),
                                            math.log(high / low) / math.log(100), math.log(high / mid) / math.log(10)))


def main(argv):
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 1.0
    if "--scaling-only" in argv:
        scaling(seconds)
        return 0
    bad = invalid_order()
    lite = schema_lite.SchemaValidator(ORDER_SCHEMA)
    fresh = (dict(ORDER_SCHEMA, title="order %d" % n) for n in itertools.count())
    inlined = (dict(without_refs(ORDER_SCHEMA), title="order %d" % n) for n in itertools.count())
    shared = {}
    rows = [
        ("compile", rate(lambda: schema_lite.SchemaValidator(next(fresh)), seconds)),
        ("compile, lazy (check only)", rate(lambda: schema_lite.SchemaValidator(next(inlined), lazy=True),
                                            seconds)),
        ("compile, an equal schema", rate(lambda: schema_lite.SchemaValidator(dict(ORDER_SCHEMA), shared=shared),
                                          seconds)),
        ("is_valid (valid order)", rate(lambda: lite.is_valid(VALID_ORDER), seconds)),
        ("issues (valid order)", rate(lambda: lite.issues(VALID_ORDER), seconds)),
        ("issues (12 mistakes)", rate(lambda: lite.issues(bad), seconds)),
        ("apply_defaults", rate(lambda: lite.apply_defaults(VALID_ORDER), seconds)),
    ]
    print("schema_lite: %d issues on the bad order" % len(lite.issues(bad)))
    try:
        import jsonschema
    except ImportError:
        jsonschema = None
    theirs = {}
    if jsonschema is not None:
        checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
        js = jsonschema.Draft202012Validator(ORDER_SCHEMA, format_checker=checker)
        theirs = {
            "compile": rate(lambda: compile_jsonschema(jsonschema, checker), seconds),
            "is_valid (valid order)": rate(lambda: js.is_valid(VALID_ORDER), seconds),
            "issues (valid order)": rate(lambda: list(js.iter_errors(VALID_ORDER)), seconds),
            "issues (12 mistakes)": rate(lambda: list(js.iter_errors(bad)), seconds),
        }
        print("jsonschema %s: %d errors on the bad order" % (jsonschema_version(), len(list(js.iter_errors(bad)))))
    print("\n%-24s %14s %14s %8s" % ("calls/second", "schema_lite", "jsonschema", "ratio"))
    for name, ours in rows:
        other = theirs.get(name)
        if other:
            print("%-24s %14.0f %14.0f %7.1fx" % (name, ours, other, ours / other))
        else:
            print("%-24s %14.0f %14s %8s" % (name, ours, "-", "-"))
    if theirs:
        print("\ntargets: validation >= 3x, compile >= 5x")
    if "--scaling" in argv:
        scaling(seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
