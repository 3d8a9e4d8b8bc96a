"""Benchmark: schema_lite against python-jsonschema on a realistic tool input.

    python3 bench/schema_bench.py [--seconds N]
    /tmp/kvenv/bin/python bench/schema_bench.py     # where jsonschema is importable

Validates an order (customer, address, 20 line items with enums, patterns,
uuid/email/date/date-time formats, bounds, uniqueItems and a default) and prints
calls per second for: compiling the schema, is_valid and issues() on the valid
order, issues() on an order with a dozen mistakes, and apply_defaults.  When
jsonschema's Draft202012Validator is importable it is measured the same way (with
its FormatChecker, so formats are checked by both) and the ratios are printed; its
"compile" is check_schema plus the constructor, which is what the official Python
service does for each schema (the constructor alone defers all work to validation).
A benchmark prints figures; it asserts nothing.
"""

import copy
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


def main(argv):
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 1.0
    bad = invalid_order()
    lite = schema_lite.SchemaValidator(ORDER_SCHEMA)
    rows = [
        ("compile", rate(lambda: schema_lite.SchemaValidator(ORDER_SCHEMA), seconds)),
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
