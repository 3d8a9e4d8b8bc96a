"""JSON Schema draft 2020-12 validation whose issues are shaped exactly like Ajv's.

The pack service validates every tool input and output and every check config.  The
runtime that receives the issues was built against the TypeScript service, which uses
Ajv (``allErrors: true``, ``allowUnionTypes: true``, ajv-formats in full mode, and
``useDefaults`` on the input side).  This module gives the same answers with the
standard library only, on CPython 3.6 and later:

    v = SchemaValidator(schema)            # compiles once; SchemaError if unusable
    v = SchemaValidator(schema, lazy=True) # the same SchemaError now; compiled when first used
    v = SchemaValidator(schema, shared=d)  # equal schemas made with the dict d compile once
    v.issues(instance)                     # every issue, in Ajv's order
    v.first_issues(instance, limit)        # (the first `limit` of them, how many more there are)
    v.is_valid(instance)                   # stops at the first failure
    v.apply_defaults(instance)             # a new value, defaults filled like Ajv
    apply_defaults(schema, instance)       # the same, compiling (and caching) first
    v.apply_defaults(instance, in_place=True)  # the instance itself filled, as Ajv does
    check_schema(schema)                   # raises SchemaError or returns None

Schemas and instances are JSON values as ``json.loads`` makes them: dict (with str
keys), list, str, int, float, bool and None, those types exactly.  A value of any
other type (a tuple, an OrderedDict, a subclass of str or int) has no JSON type:
``type`` never accepts it, the keywords of a type (``maxItems``, ``required``...)
don't apply to it, as they don't apply to a value of another type, and it equals
nothing but itself (``enum``, ``const``, ``uniqueItems``).

A schema is compiled into closures: each keyword has a small compile function in a
table (``_KEYWORDS``) that returns a checker ``check(instance, path, errors, ann)``;
a schema object becomes one closure that runs its checkers in the order Ajv runs
them (untyped keywords first, then the number, string, array and object groups).
``errors`` is a list to append issues to (or an _Issues that stops keeping them at
a limit), or None when only validity matters; ``path`` is the instance location as
a linked tuple ``(parent, key)`` rendered only when an issue is made; ``ann``
collects the properties and items a schema evaluated, for
``unevaluatedProperties``/``unevaluatedItems``, and is None when nobody asks.
A checker that only tests its instance also carries the test as ``check.passes``
(instance -> bool): a valid instance is tested whole, and checkers run to write issues.

Compiling has two steps.  Indexing walks the schema once, checking every keyword's
value and compiling every pattern; then the closures are built, resolving references
on the way.  A lazy validator of a schema without references (not strict, not deeply
nested) stops after indexing, where nothing is left that could fail, and builds its
closures on first use.  Validators made with the same ``shared`` dict share the
compiled form (_Compiled) of equal schemas, so a pack that repeats a shape compiles
it once.

Where Ajv departs from the specification in ways a Python service should not copy
(JavaScript prototype property names, stack overflows on relative ``$id`` refs,
``$dynamicRef`` limited to the function root, ``contains`` marking every item as
evaluated) this module follows the specification; docs/schema_lite.md lists them.
"""

import marshal
import re
import sys
import threading
from functools import partial
from itertools import groupby, islice

__all__ = ["SchemaError", "SchemaValidator", "apply_defaults", "check_schema"]


class SchemaError(Exception):
    """A schema that cannot be used; the message names the keyword and its location."""

    def __init__(self, message, keyword=None, schema_path=None):
        super().__init__(message)
        self.keyword = keyword
        self.schema_path = schema_path


def _schema_error(keyword, spath, detail):
    """Build a SchemaError whose text says which keyword, where, and why."""
    return SchemaError('"%s" at %s: %s' % (keyword, spath, detail), keyword, spath)


# ---------------------------------------------------------------------------
# JSON values as JavaScript sees them
# ---------------------------------------------------------------------------

_MAXF = sys.float_info.max
_INF = float("inf")
_HASH_MODULUS = sys.hash_info.modulus   # Python hashes a number by its value modulo this (_canon)
_INDEX_KEY = re.compile(r"(?:0|[1-9][0-9]{0,9})\Z")


def _is_index_key(key):
    """True for keys JavaScript enumerates first, as array indices."""
    return _INDEX_KEY.match(key) is not None and int(key) < 4294967295


def _js_keys(obj):
    """The keys of a dict in JavaScript for-in order: integer-like keys first, ascending."""
    keys = list(obj)
    for key in keys:
        if key[:1].isdigit():
            break
    else:
        return keys
    index = sorted((k for k in keys if _is_index_key(k)), key=int)
    if not index:
        return keys
    taken = set(index)
    return index + [k for k in keys if k not in taken]


def _is_number(x):
    """A finite JSON number (JavaScript has no room for larger integers)."""
    t = type(x)
    if t is int:
        return -_MAXF <= x <= _MAXF
    return t is float and x - x == 0


def _is_integer(x):
    t = type(x)
    if t is int:
        return -_MAXF <= x <= _MAXF
    return t is float and x - x == 0 and x.is_integer()


def _kind(x):
    """The JSON type name of x, "integer" for integral numbers, None for anything else
    (a value of no JSON type: a tuple, an OrderedDict, any subclass)."""
    t = type(x)
    if t is str:
        return "string"
    if t is dict:
        return "object"
    if t is list:
        return "array"
    if t is bool:
        return "boolean"
    if x is None:
        return "null"
    if t is int or t is float:
        if not _is_number(x):
            return None
        return "integer" if t is int or x.is_integer() else "number"
    return None


def _json_equal(a, b):
    """Equality as JSON sees it: 1 == 1.0, true != 1, objects ignore key order."""
    ta = type(a)
    tb = type(b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if ta is dict:
        if tb is not dict or len(a) != len(b):
            return False
        for key, value in a.items():
            if key not in b or not _json_equal(value, b[key]):
                return False
        return True
    if ta is list:
        if tb is not list or len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if not _json_equal(x, y):
                return False
        return True
    if ta in (int, float):
        return tb in (int, float) and a == b
    if ta is str or a is None:
        return ta is tb and a == b
    return a is b   # a value of no JSON type equals nothing but itself


def _canon(x):
    """A hashable key such that equal keys mean JSON-equal values (_json_equal).

    Its hash must not be the sender's to choose.  Python hashes a number by its
    value modulo _HASH_MODULUS (2 ** 61 - 1 on 64 bits), so the integers
    k * (2 ** 61 - 1) + 7 all hash alike, and 4,000 of them made uniqueItems
    take seconds (quadratic).  An integral number past the modulus keys as its
    hexadecimal digits: their hash is randomized as every str's is, and unlike
    decimal digits they have no length limit and cost linear time.  (Any other
    double shares its hash with at most about 200 others, which costs little:
    it keys as itself.)
    """
    t = type(x)
    if t is str:
        return x
    if t is bool:
        return (bool, x)
    if t is int or t is float:
        if -_HASH_MODULUS < x < _HASH_MODULUS or t is float and not x.is_integer():
            return (float, x)
        return (float, "%x" % int(x))
    if t is list:
        return (list, tuple([_canon(v) for v in x]))
    if t is dict:
        return (dict, frozenset([(k, _canon(v)) for k, v in x.items()]))
    if x is None:
        return None
    return (id, id(x))   # a value of no JSON type: equal to nothing but itself


def _surely_distinct(items):
    """True when no two items can be JSON-equal, told cheaply: JSON-equal values are
    equal in Python too, so items whose Python hashes below all differ are distinct.
    False means "maybe" (1 and true hash alike; nested arrays and objects have none).
    Only the hashes are kept: a set of thousands of frozensets costs twice as much
    per item as a set of their hashes."""
    try:
        keys = {hash(frozenset(x.items())) if type(x) is dict else hash(tuple(x)) if type(x) is list else hash(x)
                for x in items}
    except TypeError:
        return False
    return len(keys) == len(items)


def _js_number_text(x):
    """Number.prototype.toString(): how a number reads in an Ajv message."""
    if type(x) is int:
        if -2 ** 53 <= x <= 2 ** 53:
            return str(x)
        try:
            x = float(x)
        except OverflowError:
            return "Infinity" if x > 0 else "-Infinity"
    if x != x:
        return "NaN"
    if x in (_INF, -_INF):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "0"
    from decimal import Decimal  # imported here: only messages need it, and it slows the import
    sign, digits, exp = Decimal(repr(x)).as_tuple()
    digits = "".join(map(str, digits))
    stripped = digits.rstrip("0")
    exp += len(digits) - len(stripped)
    digits = stripped.lstrip("0")
    k = len(digits)
    point = k + exp
    if k <= point <= 21:
        text = digits + "0" * (point - k)
    elif 0 < point <= 21:
        text = digits[:point] + "." + digits[point:]
    elif -6 < point <= 0:
        text = "0." + "0" * (-point) + digits
    else:
        e = point - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return ("-" if sign else "") + text


def _js_value(x):
    """A schema value as JavaScript would print it back: 2.0 is 2, huge numbers are doubles."""
    t = type(x)
    if t is float:
        if x.is_integer() and abs(x) < 2 ** 53:
            return int(x)
        return x if x - x == 0 else None
    if t is int:
        if -2 ** 53 <= x <= 2 ** 53:
            return x
        try:
            return float(x)
        except OverflowError:
            return None
    if t is list:
        return [_js_value(v) for v in x]
    if t is dict:
        return {k: _js_value(v) for k, v in x.items()}
    return x


def _copy(value):
    """A deep copy of a JSON value (lists and dicts rebuilt, scalars shared)."""
    try:
        return _copy_rec(value)
    except RecursionError:
        return _copy_iter(value)


def _copy_rec(v):
    """The recursive copy; it calls itself only for members that are lists or dicts."""
    if type(v) is dict:
        return {k: _copy_rec(x) if type(x) is dict or type(x) is list else x for k, x in v.items()}
    if type(v) is list:
        return [_copy_rec(x) if type(x) is dict or type(x) is list else x for x in v]
    return v


def _copy_iter(value):
    """The same copy without recursion, for values nested deeper than the stack."""
    def fresh(v):
        return {} if type(v) is dict else [] if type(v) is list else v

    top = fresh(value)
    stack = [(value, top)] if top is not value else []
    while stack:
        src, dst = stack.pop()
        items = src.items() if type(src) is dict else enumerate(src)
        for key, v in items:
            new = fresh(v)
            if type(dst) is dict:
                dst[key] = new
            else:
                dst.append(new)
            if new is not v:
                stack.append((v, new))
    return top


# ---------------------------------------------------------------------------
# Locations: instance paths, schema paths and URIs
# ---------------------------------------------------------------------------


def _escape(key):
    """A JSON-pointer token (RFC 6901): "~" written "~0", "/" written "~1"."""
    return key.replace("~", "~0").replace("/", "~1")


def _unlink(path):
    """A linked path ``(parent, key)`` as (what the root end holds, the keys from the root)."""
    keys = []
    while type(path) is tuple:
        path, key = path
        keys.append(key)
    keys.reverse()
    return path, keys


def _render_path(path):
    """Turn a linked (parent, key) path into a JSON pointer, like Ajv's instancePath."""
    if path is None:
        return ""
    return "".join("/" + (_escape(k) if type(k) is str else str(k)) for k in _unlink(path)[1])


def _schema_path(path):
    """A schema path from its linked form: ``(parent, key)`` pairs down from the root's name."""
    root, keys = _unlink(path)
    return root + "".join("/" + _fragment(k) for k in keys)


_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9\-_.!*'()]*\Z")


def _fragment(key):
    """A schema-path segment: JSON-pointer escaped, then encodeURIComponent'ed.

    A lone surrogate in a key (JSON can write "\\ud800") has no UTF-8 form: it is
    written as its three bytes (%ED%A0%80), where a strict encoding raised and
    the schema could not be compiled at all.
    """
    if type(key) is int:
        return str(key)
    if _PLAIN_SEGMENT.match(key):
        return key
    from urllib.parse import quote   # here: it costs the service's boot 3 ms and most keys never need it
    return quote(_escape(key), safe="-_.!~*'()", errors="surrogatepass")


_URI_PARTS = re.compile(r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\Z", re.S)


def _remove_dots(path):
    out = []
    for seg in path.split("/"):
        if seg == "..":
            if len(out) > 1:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if path.split("/")[-1] in (".", ".."):
        out.append("")
    return "/".join(out)


def _resolve_uri(base, ref):
    """RFC 3986 reference resolution (section 5.2.2)."""
    scheme, auth, path, query, frag = _URI_PARTS.match(ref).groups()
    if scheme is None:
        bscheme, bauth, bpath, bquery, _ = _URI_PARTS.match(base).groups()
        scheme = bscheme
        if auth is None:
            auth = bauth
            if path == "":
                path = bpath
                if query is None:
                    query = bquery
            else:
                if not path.startswith("/"):
                    if bauth is not None and bpath == "":
                        path = "/" + path
                    else:
                        path = bpath[: bpath.rfind("/") + 1] + path
                path = _remove_dots(path)
        else:
            path = _remove_dots(path)
    else:
        path = _remove_dots(path)
    out = (scheme + ":" if scheme is not None else "") + ("//" + auth if auth is not None else "") + path
    if query is not None:
        out += "?" + query
    if frag is not None:
        out += "#" + frag
    return out


def _normalize_id(uri):
    """Ajv's normalizeId: drop an empty fragment ("#" or "#/")."""
    if uri.endswith("#/"):
        return uri[:-2]
    if uri.endswith("#"):
        return uri[:-1]
    return uri


def _split_fragment(uri):
    doc, _, frag = uri.partition("#")
    return doc, frag


# ---------------------------------------------------------------------------
# ECMAScript regular expressions translated to Python's re
# ---------------------------------------------------------------------------

_JS_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
             (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF)]
# \p{White_Space}: the Unicode property (\s without U+FEFF, with U+0085).
_WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]
_CLASS_ESCAPES = {
    "d": [(0x30, 0x39)],
    "w": [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)],
    "s": _JS_SPACE,
}
_LINE_ENDS = [(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)]
_SYNTAX_CHARS = "^$\\.*+?()[]{}|/"
_SIMPLE_ESCAPES = {"t": 0x09, "n": 0x0A, "v": 0x0B, "f": 0x0C, "r": 0x0D}
_ASCII_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_QUANTIFIER = re.compile(r"\{([0-9]+)(,([0-9]*))?\}")
_DIGITS = "0123456789"   # ECMAScript's decimal digits: ASCII only, where str.isdigit() takes "\u0661" and "\u00b2"
_GROUP_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_GENERAL_CATEGORIES = {
    "L": "L", "Letter": "L", "LC": "LC", "Cased_Letter": "LC", "Lu": "Lu", "Uppercase_Letter": "Lu",
    "Ll": "Ll", "Lowercase_Letter": "Ll", "Lt": "Lt", "Titlecase_Letter": "Lt", "Lm": "Lm",
    "Modifier_Letter": "Lm", "Lo": "Lo", "Other_Letter": "Lo", "M": "M", "Mark": "M",
    "Combining_Mark": "M", "Mn": "Mn", "Nonspacing_Mark": "Mn", "Mc": "Mc", "Spacing_Mark": "Mc",
    "Me": "Me", "Enclosing_Mark": "Me", "N": "N", "Number": "N", "Nd": "Nd", "Decimal_Number": "Nd",
    "digit": "Nd", "Nl": "Nl", "Letter_Number": "Nl", "No": "No", "Other_Number": "No",
    "P": "P", "Punctuation": "P", "punct": "P", "Pc": "Pc", "Connector_Punctuation": "Pc",
    "Pd": "Pd", "Dash_Punctuation": "Pd", "Ps": "Ps", "Open_Punctuation": "Ps", "Pe": "Pe",
    "Close_Punctuation": "Pe", "Pi": "Pi", "Initial_Punctuation": "Pi", "Pf": "Pf",
    "Final_Punctuation": "Pf", "Po": "Po", "Other_Punctuation": "Po", "S": "S", "Symbol": "S",
    "Sm": "Sm", "Math_Symbol": "Sm", "Sc": "Sc", "Currency_Symbol": "Sc", "Sk": "Sk",
    "Modifier_Symbol": "Sk", "So": "So", "Other_Symbol": "So", "Z": "Z", "Separator": "Z",
    "Zs": "Zs", "Space_Separator": "Zs", "Zl": "Zl", "Line_Separator": "Zl", "Zp": "Zp",
    "Paragraph_Separator": "Zp", "C": "C", "Other": "C", "Cc": "Cc", "Control": "Cc", "cntrl": "Cc",
    "Cf": "Cf", "Format": "Cf", "Cs": "Cs", "Surrogate": "Cs", "Co": "Co", "Private_Use": "Co",
    "Cn": "Cn", "Unassigned": "Cn",
}
_category_ranges = {}
_category_lock = threading.Lock()


def _category_table():
    """Code point ranges per Unicode general category, built once on first use."""
    import unicodedata   # here: only \p{...} patterns need it
    with _category_lock:
        if not _category_ranges:
            table = {}
            start, current = 0, unicodedata.category("\0")
            for cp in range(1, 0x110001):
                cat = unicodedata.category(chr(cp)) if cp < 0x110000 else None
                if cat != current:
                    table.setdefault(current, []).append((start, cp - 1))
                    start, current = cp, cat
            _category_ranges.update(table)
    return _category_ranges


def _property_ranges(name):
    """Ranges for \\p{name}; a ValueError for properties Python's unicodedata cannot tell."""
    if name.startswith(("General_Category=", "gc=")):
        name = name.split("=", 1)[1]
    if name == "Any":
        return [(0, 0x10FFFF)]
    if name == "ASCII":
        return [(0, 0x7F)]
    if name in ("White_Space", "space", "WSpace"):
        return list(_WHITE_SPACE)
    if name in ("Assigned",):
        return _complement(_category_table().get("Cn", []))
    cat = _GENERAL_CATEGORIES.get(name)
    if cat is None:
        raise ValueError("Invalid property name (unsupported here: %s)" % name)
    table = _category_table()
    if cat == "LC":
        wanted = ("Lu", "Ll", "Lt")
    elif len(cat) == 1:
        wanted = [c for c in table if c.startswith(cat)]
    else:
        wanted = (cat,)
    ranges = []
    for c in wanted:
        ranges.extend(table.get(c, []))
    return _merge_ranges(ranges)


def _merge_ranges(ranges):
    out = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def _complement(ranges):
    out, nxt = [], 0
    for lo, hi in _merge_ranges(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = hi + 1
    if nxt <= 0x10FFFF:
        out.append((nxt, 0x10FFFF))
    return out


def _class_text(ranges):
    """A Python character class body for code point ranges."""
    parts = []
    for lo, hi in ranges:
        parts.append("\\U%08x" % lo if lo == hi else "\\U%08x-\\U%08x" % (lo, hi))
    return "".join(parts)


def _class_of(ranges, negate=False):
    if not ranges:
        return "(?s:.)" if negate else "(?!)"
    return "[" + ("^" if negate else "") + _class_text(ranges) + "]"


def _repeat_count(digits):
    """A quantifier's number (digits without leading zeros) for Python's re: past ten digits,
    4294967295, which re refuses as it refuses any larger one ("the repetition number is too
    large"), where 5,000 digits got Python 3.7.14+'s int() limit instead."""
    return digits if len(digits) <= 10 else "4294967295"


def _greater(a, b):
    """``a`` > ``b`` for numbers written as digits without leading zeros."""
    return (len(a), a) > (len(b), b)


def _count_groups(source):
    """How many capturing groups an ECMAScript pattern has: a "(" not escaped, outside a class,
    and not followed by "?" unless it opens a named group."""
    count, i, in_class, n = 0, 0, False, len(source)
    while i < n:
        ch = source[i]
        if ch == "\\":
            i += 1
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(" and (not source.startswith("?", i + 1)
                            or (source.startswith("?<", i + 1) and not source.startswith(("?<=", "?<!"), i + 1))):
            count += 1
        i += 1
    return count


class _RegexTranslator:
    """Translate one ECMAScript pattern (flag "u" or not) into Python re syntax.

    Python's re differs where it matters for schemas: ``$`` also matches before a
    final newline, ``\\d``/``\\w``/``\\s`` are Unicode-aware, ``.`` matches ``\\r``,
    and ``[^]``/``[]``/``{`` parse differently.  Everything is rewritten into explicit
    classes; what cannot be expressed raises ValueError with ECMAScript's wording.
    """

    def __init__(self, source, unicode):
        self.src = source
        self.u = unicode
        self.i = 0
        self.names = set(re.findall(r"\(\?<([A-Za-z_$][A-Za-z0-9_$]*)>", source))   # the group names
        self.named = set()   # the group names met so far
        self.groups = _count_groups(source)
        self.deepest = 0     # the most groups open at once

    def translate(self):
        """The pattern as Python re text.  A quantifier must follow something it can repeat,
        as in ECMAScript: Python takes "a++" as possessive (3.11+) and repeats a lookaround,
        where ECMAScript refuses both ("Nothing to repeat", "Invalid quantifier")."""
        out = []
        groups = []     # each open group, as it will be once closed: "atom", or "lookaround" (not repeatable)
        last = None     # "atom" (may be repeated), "quantifier" (may be made lazy), "lookaround" or None
        src, n = self.src, len(self.src)
        while self.i < n:
            ch = src[self.i]
            self.i += 1
            quantifier = None
            if ch == "\\":
                last = None if src[self.i:self.i + 1] in ("b", "B") else "atom"
                out.append(self.escape())
            elif ch == "[":
                out.append(self.char_class())
                last = "atom"
            elif ch == "(":
                text = self.group_open()
                lookahead, lookbehind = text in ("(?=", "(?!"), text in ("(?<=", "(?<!")
                groups.append("lookaround" if lookbehind or (lookahead and self.u) else "atom")
                self.deepest = max(self.deepest, len(groups))
                out.append(text)
                last = None
            elif ch == ")":
                if not groups:
                    raise ValueError("Unmatched ')'")
                last = groups.pop()
                out.append(")")
            elif ch == ".":
                out.append(_class_of(_LINE_ENDS, negate=True))
                last = "atom"
            elif ch == "$":
                out.append("\\Z")
                last = None
            elif ch == "^":
                out.append("\\A")
                last = None
            elif ch == "|":
                out.append("|")
                last = None
            elif ch in "*+?":
                quantifier = ch
            elif ch == "{":
                m = _QUANTIFIER.match(src, self.i - 1)
                if m:
                    low = m.group(1).lstrip("0") or "0"
                    high = (m.group(3).lstrip("0") or "0") if m.group(3) else None
                    if high is not None and _greater(low, high):
                        raise ValueError("numbers out of order in {} quantifier")
                    quantifier = "{%s%s}" % (_repeat_count(low), "" if m.group(2) is None else
                                             "," + ("" if high is None else _repeat_count(high)))
                    self.i = m.end()
                elif self.u:
                    raise ValueError("Incomplete quantifier")
                else:
                    out.append("\\{")
                    last = "atom"
            elif ch in "}]":
                if self.u:
                    raise ValueError("Lone quantifier brackets")
                out.append("\\" + ch)
                last = "atom"
            else:
                out.append(re.escape(ch))
                last = "atom"
            if quantifier is not None:
                if quantifier == "?" and last == "quantifier":
                    last = None     # lazy: nothing more may follow
                elif last != "atom":
                    raise ValueError("Invalid quantifier" if last == "lookaround" else "Nothing to repeat")
                else:
                    last = "quantifier"
                out.append(quantifier)
        if groups:
            raise ValueError("Unterminated group")
        return "".join(out)

    def group_open(self):
        src = self.src
        for lead in ("?:", "?=", "?!", "?<=", "?<!"):
            if src.startswith(lead, self.i):
                self.i += len(lead)
                return "(" + lead
        if src.startswith("?<", self.i):
            m = _GROUP_NAME.match(src, self.i + 2)
            if not m or not src.startswith(">", m.end()):
                raise ValueError("Invalid capture group name")
            if m.group(0) in self.named:
                raise ValueError("Duplicate capture group name")
            self.named.add(m.group(0))
            self.i = m.end() + 1
            return "(?P<%s>" % m.group(0).replace("$", "_S_")
        if src.startswith("?", self.i):
            raise ValueError("Invalid group")
        return "("

    def code_point_escape(self, c):
        """\\x, \\u, \\c, \\0 and the simple escapes: a code point, or None when not one."""
        src = self.src
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c == "0" and not (src[self.i:self.i + 1] and src[self.i] in _DIGITS):
            return 0
        if c == "c":
            nxt = src[self.i:self.i + 1]
            if nxt in _ASCII_LETTERS:
                self.i += 1
                return ord(nxt) % 32
            if self.u:
                raise ValueError("Invalid unicode escape")
            self.i -= 1
            return ord("\\")
        if c == "x":
            h = src[self.i:self.i + 2]
            if len(h) == 2 and all(ch in "0123456789abcdefABCDEF" for ch in h):
                self.i += 2
                return int(h, 16)
            if self.u:
                raise ValueError("Invalid escape")
            return ord("x")
        if c == "u":
            return self.unicode_escape()
        return None

    def unicode_escape(self):
        src = self.src
        if self.u and src.startswith("{", self.i):
            end = src.find("}", self.i)
            h = src[self.i + 1:end] if end > 0 else ""
            if not h or any(ch not in "0123456789abcdefABCDEF" for ch in h) or int(h, 16) > 0x10FFFF:
                raise ValueError("Invalid Unicode escape")
            self.i = end + 1
            return int(h, 16)
        h = src[self.i:self.i + 4]
        if len(h) == 4 and all(ch in "0123456789abcdefABCDEF" for ch in h):
            self.i += 4
            cp = int(h, 16)
            if self.u and 0xD800 <= cp <= 0xDBFF and src.startswith("\\u", self.i):
                low = src[self.i + 2:self.i + 6]
                if len(low) == 4 and all(ch in "0123456789abcdefABCDEF" for ch in low):
                    lo = int(low, 16)
                    if 0xDC00 <= lo <= 0xDFFF:
                        self.i += 6
                        return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
            return cp
        if self.u:
            raise ValueError("Invalid Unicode escape")
        return ord("u")

    def property_escape(self, c):
        src = self.src
        if not src.startswith("{", self.i):
            raise ValueError("Invalid property name")
        end = src.find("}", self.i)
        if end < 0:
            raise ValueError("Invalid property name")
        ranges = _property_ranges(src[self.i + 1:end])
        self.i = end + 1
        return _complement(ranges) if c == "P" else ranges

    def escape(self):
        """An escape outside a class, as Python pattern text."""
        src = self.src
        if self.i >= len(src):
            raise ValueError("\\ at end of pattern")
        c = src[self.i]
        self.i += 1
        if c.lower() in _CLASS_ESCAPES:
            return _class_of(_CLASS_ESCAPES[c.lower()], negate=c.isupper())
        if c == "b":
            return "\\b"
        if c == "B":   # Python's \B never matches in an empty string, where ECMAScript's does
            return "(?:\\B|\\A\\Z)"
        # A reference to a group that took no part in the match matches the empty string
        # in ECMAScript, and fails in Python: hence the conditional, (?(1)\1).
        if c in "123456789":
            digits = c
            while src[self.i:self.i + 1] and src[self.i] in _DIGITS:
                digits += src[self.i]
                self.i += 1
            if self.u and (len(digits) > 9 or int(digits) > self.groups):   # (no int() of 5,000 digits)
                raise ValueError("Invalid escape")
            return "(?(%s)\\%s)" % (digits, digits)
        if c == "k" and (self.u or self.names):
            m = _GROUP_NAME.match(src, self.i + 1)
            if not src.startswith("<", self.i) or not m or not src.startswith(">", m.end()):
                raise ValueError("Invalid named reference")
            if m.group(0) not in self.names:
                raise ValueError("Invalid named capture referenced")
            self.i = m.end() + 1
            name = m.group(0).replace("$", "_S_")
            return "(?(%s)(?P=%s))" % (name, name)
        if self.u and c in "pP":
            return _class_of(self.property_escape(c))
        cp = self.code_point_escape(c)
        if cp is not None:
            return "\\U%08x" % cp
        if self.u and c not in _SYNTAX_CHARS:
            raise ValueError("Invalid escape")
        return re.escape(c)

    def class_atom(self):
        """One class member: ("c", code point) or ("set", ranges)."""
        src = self.src
        ch = src[self.i]
        self.i += 1
        if ch != "\\":
            return "c", ord(ch)
        if self.i >= len(src):
            raise ValueError("\\ at end of pattern")
        c = src[self.i]
        self.i += 1
        if c.lower() in _CLASS_ESCAPES:
            ranges = _CLASS_ESCAPES[c.lower()]
            return "set", (_complement(ranges) if c.isupper() else ranges)
        if c == "b":
            return "c", 8
        if c == "-":
            return "c", ord("-")
        if self.u and c in "pP":
            return "set", self.property_escape(c)
        cp = self.code_point_escape(c)
        if cp is not None:
            return "c", cp
        if self.u and c not in _SYNTAX_CHARS:
            raise ValueError("Invalid class escape")
        if not self.u and c.isdigit():
            return "c", int(c, 8) if c in "01234567" else ord(c)
        return "c", ord(c)

    def char_class(self):
        src, n = self.src, len(self.src)
        negate = src.startswith("^", self.i)
        if negate:
            self.i += 1
        ranges = []
        while True:
            if self.i >= n:
                raise ValueError("Unterminated character class")
            if src[self.i] == "]":
                self.i += 1
                break
            kind, first = self.class_atom()
            if src.startswith("-", self.i) and self.i + 1 < n and src[self.i + 1] != "]":
                self.i += 1
                kind2, second = self.class_atom()
                if kind == "set" or kind2 == "set":
                    if self.u:
                        raise ValueError("Invalid character class")
                    for k, v in ((kind, first), (kind2, second)):
                        ranges.extend(v if k == "set" else [(v, v)])
                    ranges.append((0x2D, 0x2D))
                    continue
                if first > second:
                    raise ValueError("Range out of order in character class")
                ranges.append((first, second))
            else:
                ranges.extend(first if kind == "set" else [(first, first)])
        return _class_of(_merge_ranges(ranges), negate)


_regex_cache = {}
# Python's re compiles nested groups recursively, two frames a level: about 490 levels fit in
# the recursion limit, a few more or fewer by version and by how deep the caller is.  A limit
# well under that gives every Python, and every caller, the same answer.
_MAX_GROUP_NESTING = 256


def _js_regex(source, unicode=True):
    """Compile an ECMAScript pattern; ValueError with the reason when it cannot be."""
    key = (source, unicode)
    rx = _regex_cache.get(key)
    if rx is None:
        translator = _RegexTranslator(source, unicode)
        text = translator.translate()
        if translator.deepest > _MAX_GROUP_NESTING:
            raise ValueError("cannot be translated to Python: groups nested more than %d deep" % _MAX_GROUP_NESTING)
        try:
            rx = re.compile(text, re.ASCII)
        except re.error as exc:   # its message without the position: that is in the translated text
            raise ValueError("cannot be translated to Python: %s" % exc.msg)
        except RecursionError:    # (its text differs from one Python to the next)
            raise ValueError("cannot be translated to Python: groups nested too deeply")
        except OverflowError as exc:
            raise ValueError("cannot be translated to Python: %s" % exc)
        if len(_regex_cache) > 2048:
            _regex_cache.clear()
        _regex_cache[key] = rx
    return rx


# ---------------------------------------------------------------------------
# Formats: the ones ajv-formats 3.0.1 adds in full mode (its MIT-licensed rules)
# ---------------------------------------------------------------------------

_DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def _date_test():
    """date: YYYY-MM-DD with the day in range for its month (leap years counted)."""
    match = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})\Z").match

    def date(s):
        m = match(s)
        if not m:
            return False
        year, month, day = map(int, m.groups())
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])
    return date


def _time_test(strict_zone):
    """time (the zone required) or iso-time; a leap second only at 23:59:60 UTC."""
    match = re.compile(r"([0-9]{2}):([0-9]{2}):([0-9]{2}(?:\.[0-9]+)?)(z|([+-])([0-9]{2})(?::?([0-9]{2}))?)?\Z",
                       re.I).match

    def time(s):
        m = match(s)
        if not m:
            return False
        hr, mn, sec, zone, sign, tzh, tzm = m.groups()
        hr, mn, sec = int(hr), int(mn), float(sec)
        sign = -1 if sign == "-" else 1
        tzh, tzm = int(tzh or 0), int(tzm or 0)
        if tzh > 23 or tzm > 59 or (strict_zone and not zone):
            return False
        if hr <= 23 and mn <= 59 and sec < 60:
            return True
        utc_min = mn - tzm * sign
        utc_hr = hr - tzh * sign - (1 if utc_min < 0 else 0)
        return utc_hr in (23, -1) and utc_min in (59, -1) and sec < 61
    return time


def _date_time_test(strict_zone):
    """date-time (the zone required) or iso-date-time: a date and a time around one separator."""
    date, time = _date_test(), _time_test(strict_zone)
    split = re.compile(r"[tT\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]").split

    def date_time(s):
        parts = split(s)
        return len(parts) == 2 and date(parts[0]) and time(parts[1])
    return date_time


_H16 = r"[0-9a-f]{1,4}"
_V4 = r"(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)"
_IP_LITERAL = (
    r"\[(?:(?:(?:(?:H:){6}|::(?:H:){5}|(?:H)?::(?:H:){4}|(?:(?:H:){0,1}H)?::(?:H:){3}"
    r"|(?:(?:H:){0,2}H)?::(?:H:){2}|(?:(?:H:){0,3}H)?::H:|(?:(?:H:){0,4}H)?::)(?:H:H|V4)"
    r"|(?:(?:H:){0,5}H)?::H|(?:(?:H:){0,6}H)?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]"
).replace("H", _H16).replace("V4", _V4)


def _uri_pattern(reference, quotes):
    """The RFC 3986 URI (or URI-reference) rule as ajv-formats writes it.  Case is ignored as
    JavaScript ignores it without the u flag: in ASCII only (Python's Unicode folding took the
    Kelvin sign for k, long s for s, dotless i and dotted I for i)."""
    q = "\"" if quotes else ""
    pchar = r"(?:[a-z0-9\-._~!$&'%s()*+,;=:@]|%%[0-9a-f]{2})" % q
    hier = (
        r"(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:" + _IP_LITERAL + "|" + _V4
        + r"|(?:[a-z0-9\-._~!$&'" + q + r"()*+,;=]|%[0-9a-f]{2})*)(?::[0-9]*)?(?:\/" + pchar + r"*)*"
        + r"|\/(?:" + pchar + r"+(?:\/" + pchar + r"*)*)?|" + pchar + r"+(?:\/" + pchar + r"*)*)"
    )
    tail = r"(?:\?(?:[a-z0-9\-._~!$&'" + q + r"()*+,;=:@/?]|%[0-9a-f]{2})*)?(?:#(?:[a-z0-9\-._~!$&'" + q + r"()*+,;=:@/?]|%[0-9a-f]{2})*)?\Z"
    scheme = r"(?:[a-z][a-z0-9+\-.]*:)"
    if reference:
        return re.compile(scheme + "?" + hier + "?" + tail, re.I | re.ASCII)
    return re.compile(scheme + hier + tail, re.I | re.ASCII)


def _uri_test():
    """uri: an absolute URI; ajv-formats first asks for a "/" or ":" (not a bare fragment)."""
    not_fragment = re.compile(r"[/:]").search
    match = _uri_pattern(False, False).match
    return lambda s: not_fragment(s) is not None and match(s) is not None


def _byte_test():
    """byte: base64; ajv-formats tests it line by line, so one well-formed line is enough."""
    line_ok = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\Z").match
    split_lines = re.compile("[\n\r\u2028\u2029]").split
    return lambda s: any(line_ok(line) for line in split_lines(s))


def _regex_test():
    """regex: a pattern ECMAScript compiles; like ajv-formats, one with "\\Z" in it is refused."""
    z_anchor = re.compile(r"[^\\]\\Z").search

    def regex(s):
        if z_anchor(s):
            return False
        try:
            _RegexTranslator(s, False).translate()
        except ValueError:   # not RecursionError: the translator doesn't recurse, the instance is too deep
            return False
        return True
    return regex


def _matching(pattern, flags=re.I):
    """The test of a format whose rule is one regular expression (a match is true)."""
    return re.compile(pattern, flags | re.ASCII).match


def _int32(x):
    """int32: an integer that fits a signed 32-bit word."""
    return _is_integer(x) and -2 ** 31 <= x <= 2 ** 31 - 1


# Each format: the JSON type it applies to, and a function that builds its test (None
# for the formats Ajv knows but never fails).  _format_test builds a test on first use:
# compiling every format's regular expressions at import would take ~40 ms (url alone
# ~27 ms), paid by every process whether its schemas use formats or not.
_FORMATS = {
    "date": ("string", _date_test),
    "time": ("string", partial(_time_test, True)),
    "date-time": ("string", partial(_date_time_test, True)),
    "iso-time": ("string", partial(_time_test, False)),
    "iso-date-time": ("string", partial(_date_time_test, False)),
    "duration": ("string", partial(_matching,
        r"P(?!\Z)(([0-9]+Y)?([0-9]+M)?([0-9]+D)?(T(?=[0-9])([0-9]+H)?([0-9]+M)?([0-9]+S)?)?|([0-9]+W)?)\Z", 0)),
    "uri": ("string", _uri_test),
    "uri-reference": ("string", lambda: _uri_pattern(True, True).match),
    "uri-template": ("string", partial(_matching,
        r"(?:(?:[^\x00-\x20\"'<>%\\^`{|}]|%[0-9a-f]{2})|\{[+#./;?&=,!@|]?(?:[a-z0-9_]|%[0-9a-f]{2})+"
        r"(?::[1-9][0-9]{0,3}|\*)?(?:,(?:[a-z0-9_]|%[0-9a-f]{2})+(?::[1-9][0-9]{0,3}|\*)?)*\})*\Z")),
    "url": ("string", partial(_matching,
        r"(?:https?|ftp):\/\/(?:[^\s:@]+(?::[^\s@]*)?@)?(?:(?!(?:10|127)(?:\.[0-9]{1,3}){3})"
        r"(?!(?:169\.254|192\.168)(?:\.[0-9]{1,3}){2})(?!172\.(?:1[6-9]|2[0-9]|3[0-1])(?:\.[0-9]{1,3}){2})"
        r"(?:[1-9][0-9]?|1[0-9][0-9]|2[01][0-9]|22[0-3])(?:\.(?:1?[0-9]{1,2}|2[0-4][0-9]|25[0-5])){2}"
        r"(?:\.(?:[1-9][0-9]?|1[0-9][0-9]|2[0-4][0-9]|25[0-4]))|(?:(?:[a-z0-9\u00a1-\uffff]+-)*"
        r"[a-z0-9\u00a1-\uffff]+)(?:\.(?:[a-z0-9\u00a1-\uffff]+-)*[a-z0-9\u00a1-\uffff]+)*"
        r"(?:\.(?:[a-z\u00a1-\uffff]{2,})))(?::[0-9]{2,5})?(?:\/[^\s]*)?\Z")),
    "email": ("string", partial(_matching,
        r"[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*@"
        r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\Z")),
    "hostname": ("string", partial(_matching,
        r"(?=.{1,253}\.?\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[-0-9a-z]{0,61}[0-9a-z])?)*\.?\Z",
        re.I | re.S)),
    "ipv4": ("string", partial(_matching,
        r"(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\Z", 0)),
    "ipv6": ("string", partial(_matching,
        (r"((([0-9a-f]{1,4}:){7}([0-9a-f]{1,4}|:))|(([0-9a-f]{1,4}:){6}(:[0-9a-f]{1,4}|(B)|:))"
         r"|(([0-9a-f]{1,4}:){5}(((:[0-9a-f]{1,4}){1,2})|:(B)|:))|(([0-9a-f]{1,4}:){4}(((:[0-9a-f]{1,4}){1,3})"
         r"|((:[0-9a-f]{1,4})?:(B))|:))|(([0-9a-f]{1,4}:){3}(((:[0-9a-f]{1,4}){1,4})|((:[0-9a-f]{1,4}){0,2}:(B))|:))"
         r"|(([0-9a-f]{1,4}:){2}(((:[0-9a-f]{1,4}){1,5})|((:[0-9a-f]{1,4}){0,3}:(B))|:))"
         r"|(([0-9a-f]{1,4}:){1}(((:[0-9a-f]{1,4}){1,6})|((:[0-9a-f]{1,4}){0,4}:(B))|:))"
         r"|(:(((:[0-9a-f]{1,4}){1,7})|((:[0-9a-f]{1,4}){0,5}:(B))|:)))\Z").replace(
            "B", r"(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"))),
    "regex": ("string", _regex_test),
    "uuid": ("string", partial(_matching, r"(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}\Z")),
    "json-pointer": ("string", partial(_matching, r"(?:\/(?:[^~/]|~0|~1)*)*\Z", re.S)),
    "json-pointer-uri-fragment": ("string", partial(_matching,
        r"#(?:\/(?:[a-z0-9_\-.!$&'()*+,;:=@]|%[0-9a-f]{2}|~0|~1)*)*\Z")),
    "relative-json-pointer": ("string", partial(_matching,
        r"(?:0|[1-9][0-9]*)(?:#|(?:\/(?:[^~/]|~0|~1)*)*)\Z", re.S)),
    "byte": ("string", _byte_test),
    "int32": ("number", lambda: _int32),
    "int64": ("number", lambda: _is_integer),
    "float": ("number", None),
    "double": ("number", None),
    "password": ("string", None),
    "binary": ("string", None),
}

_format_tests = {}  # format name -> its test, once built
_format_lock = threading.Lock()


def _format_test(name):
    """The test of a known format, built once, on first use, whichever thread gets there first."""
    test = _format_tests.get(name)
    if test is None:
        with _format_lock:
            test = _format_tests.get(name)
            if test is None:
                test = _format_tests[name] = _FORMATS[name][1]()
    return test


# ---------------------------------------------------------------------------
# Keyword vocabulary: what Ajv knows, in the order it runs keywords
# ---------------------------------------------------------------------------

# Keywords with code in Ajv ("rules"); a schema with none of them is always valid.
_GROUP_ORDER = {
    None: ("$dynamicAnchor", "$dynamicRef", "$recursiveAnchor", "$recursiveRef", "$ref", "$comment",
           "type", "nullable", "const", "enum", "not", "anyOf", "oneOf", "allOf", "if", "then", "else"),
    "number": ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "format"),
    "string": ("maxLength", "minLength", "pattern", "format"),
    "array": ("maxItems", "minItems", "prefixItems", "items", "contains", "uniqueItems",
              "maxContains", "minContains", "unevaluatedItems"),
    "object": ("maxProperties", "minProperties", "required", "propertyNames", "additionalProperties",
               "dependencies", "properties", "patternProperties", "dependentRequired", "dependentSchemas",
               "unevaluatedProperties"),
}
_GROUPS = ("number", "string", "array", "object")
_RULE_SLOTS = {}
for _group, _keys in _GROUP_ORDER.items():
    for _rank, _key in enumerate(_keys):
        _RULE_SLOTS.setdefault(_key, []).append((_group, _rank))
# The Python type of the instances each typed group applies to (numbers: _is_number).
_GROUP_TYPE = {"number": None, "string": str, "array": list, "object": dict}
_RULES = frozenset(k for ks in _GROUP_ORDER.values() for k in ks) | {"id"}
# Keywords Ajv 2020 accepts in strict mode ("$anchor" is not one of them in Ajv 8.20).
_KNOWN = _RULES | {"$schema", "$id", "$defs", "$vocabulary", "definitions", "title", "description",
                   "default", "deprecated", "readOnly", "writeOnly", "examples", "contentMediaType",
                   "contentEncoding", "contentSchema"}
_TYPE_NAMES = frozenset(["string", "number", "integer", "boolean", "null", "array", "object"])
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_ONE = ("items", "contains", "not", "if", "then", "else", "additionalProperties",
               "propertyNames", "unevaluatedItems", "unevaluatedProperties")
# The kind of value each keyword takes, as _Compiler.index checks it (others: anything).
_VALUE_KINDS = {"type": "type", "multipleOf": "positive", "required": "names", "enum": "array",
                "uniqueItems": "boolean", "pattern": "pattern", "format": "format",
                "$ref": "ref", "$dynamicRef": "dynamic ref", "$anchor": "anchor", "$dynamicAnchor": "anchor",
                "$id": "string", "dependentRequired": "names map", "dependencies": "dependencies",
                "patternProperties": "pattern map", "unevaluatedItems": "unevaluated",
                "unevaluatedProperties": "unevaluated"}
for _key in ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum"):
    _VALUE_KINDS[_key] = "number"
for _key in ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties",
             "maxContains", "minContains"):
    _VALUE_KINDS[_key] = "count"
# Annotations: Ajv's meta-schema refuses a value of another kind; here only strict mode does.  So
# for nullable (Ajv's OpenAPI keyword, unknown to draft 2020-12): only true means anything.
for _keys, _value_kind in ((("title", "description", "$comment", "contentMediaType", "contentEncoding"), "text"),
                           (("deprecated", "readOnly", "writeOnly", "nullable"), "flag"), (("examples",), "list")):
    for _key in _keys:
        _VALUE_KINDS[_key] = _value_kind
for _keys, _value_kind in ((_SCHEMA_ONE, "schema"), (_SCHEMA_LISTS, "schemas"), (_SCHEMA_MAPS, "schema map")):
    for _key in _keys:
        _VALUE_KINDS.setdefault(_key, _value_kind)
# The kinds _Compiler.index does more with than check: subschemas, references, anchors, formats.
_ANNOTATION_TYPES = {"text": (str, "a string"), "flag": (bool, "a boolean"), "list": (list, "an array")}
_NOTED_KINDS = frozenset(["schema", "unevaluated", "schemas", "schema map", "pattern map", "dependencies",
                          "ref", "dynamic ref", "anchor", "format"])
_REF_KEYWORDS = ("$ref", "$dynamicRef", "$dynamicAnchor", "$recursiveRef", "$recursiveAnchor")
_DRAFT_2020 = ("https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#")


# The draft 2020-12 meta-schema and its vocabularies (json-schema.org; "title",
# "description" and "$comment" left out), for "$ref"s to them, as Ajv 2020 has them.
_META_SCHEMAS_TEXT = r'''
[{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://json-schema.org/draft/2020-12/schema
","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/core":true,"https://json-schema.org/draft/2020-1
2/vocab/applicator":true,"https://json-schema.org/draft/2020-12/vocab/unevaluated":true,"https://json-schema.o
rg/draft/2020-12/vocab/validation":true,"https://json-schema.org/draft/2020-12/vocab/meta-data":true,"https://
json-schema.org/draft/2020-12/vocab/format-annotation":true,"https://json-schema.org/draft/2020-12/vocab/conte
nt":true},"$dynamicAnchor":"meta","allOf":[{"$ref":"meta/core"},{"$ref":"meta/applicator"},{"$ref":"meta/uneva
luated"},{"$ref":"meta/validation"},{"$ref":"meta/meta-data"},{"$ref":"meta/format-annotation"},{"$ref":"meta/
content"}],"type":["object","boolean"],"properties":{"definitions":{"type":"object","additionalProperties":{"$
dynamicRef":"#meta"},"deprecated":true,"default":{}},"dependencies":{"type":"object","additionalProperties":{"
anyOf":[{"$dynamicRef":"#meta"},{"$ref":"meta/validation#/$defs/stringArray"}]},"deprecated":true,"default":{}
},"$recursiveAnchor":{"$ref":"meta/core#/$defs/anchorString","deprecated":true},"$recursiveRef":{"$ref":"meta/
core#/$defs/uriReferenceString","deprecated":true}}},{"$schema":"https://json-schema.org/draft/2020-12/schema"
,"$id":"https://json-schema.org/draft/2020-12/meta/core","$vocabulary":{"https://json-schema.org/draft/2020-12
/vocab/core":true},"$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"$id":{"$ref":"#/$defs/ur
iReferenceString","pattern":"^[^#]*#?$"},"$schema":{"$ref":"#/$defs/uriString"},"$ref":{"$ref":"#/$defs/uriRef
erenceString"},"$anchor":{"$ref":"#/$defs/anchorString"},"$dynamicRef":{"$ref":"#/$defs/uriReferenceString"},"
$dynamicAnchor":{"$ref":"#/$defs/anchorString"},"$vocabulary":{"type":"object","propertyNames":{"$ref":"#/$def
s/uriString"},"additionalProperties":{"type":"boolean"}},"$comment":{"type":"string"},"$defs":{"type":"object"
,"additionalProperties":{"$dynamicRef":"#meta"}}},"$defs":{"anchorString":{"type":"string","pattern":"^[A-Za-z
_][-A-Za-z0-9._]*$"},"uriString":{"type":"string","format":"uri"},"uriReferenceString":{"type":"string","forma
t":"uri-reference"}}},{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://json-schema.org
/draft/2020-12/meta/applicator","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/applicator":true},
"$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"prefixItems":{"$ref":"#/$defs/schemaArray"}
,"items":{"$dynamicRef":"#meta"},"contains":{"$dynamicRef":"#meta"},"additionalProperties":{"$dynamicRef":"#me
ta"},"properties":{"type":"object","additionalProperties":{"$dynamicRef":"#meta"},"default":{}},"patternProper
ties":{"type":"object","additionalProperties":{"$dynamicRef":"#meta"},"propertyNames":{"format":"regex"},"defa
ult":{}},"dependentSchemas":{"type":"object","additionalProperties":{"$dynamicRef":"#meta"},"default":{}},"pro
pertyNames":{"$dynamicRef":"#meta"},"if":{"$dynamicRef":"#meta"},"then":{"$dynamicRef":"#meta"},"else":{"$dyna
micRef":"#meta"},"allOf":{"$ref":"#/$defs/schemaArray"},"anyOf":{"$ref":"#/$defs/schemaArray"},"oneOf":{"$ref"
:"#/$defs/schemaArray"},"not":{"$dynamicRef":"#meta"}},"$defs":{"schemaArray":{"type":"array","minItems":1,"it
ems":{"$dynamicRef":"#meta"}}}},{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://json-
schema.org/draft/2020-12/meta/unevaluated","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/unevalu
ated":true},"$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"unevaluatedItems":{"$dynamicRef
":"#meta"},"unevaluatedProperties":{"$dynamicRef":"#meta"}}},{"$schema":"https://json-schema.org/draft/2020-12
/schema","$id":"https://json-schema.org/draft/2020-12/meta/validation","$vocabulary":{"https://json-schema.org
/draft/2020-12/vocab/validation":true},"$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"type
":{"anyOf":[{"$ref":"#/$defs/simpleTypes"},{"type":"array","items":{"$ref":"#/$defs/simpleTypes"},"minItems":1
,"uniqueItems":true}]},"const":true,"enum":{"type":"array","items":true},"multipleOf":{"type":"number","exclus
iveMinimum":0},"maximum":{"type":"number"},"exclusiveMaximum":{"type":"number"},"minimum":{"type":"number"},"e
xclusiveMinimum":{"type":"number"},"maxLength":{"$ref":"#/$defs/nonNegativeInteger"},"minLength":{"$ref":"#/$d
efs/nonNegativeIntegerDefault0"},"pattern":{"type":"string","format":"regex"},"maxItems":{"$ref":"#/$defs/nonN
egativeInteger"},"minItems":{"$ref":"#/$defs/nonNegativeIntegerDefault0"},"uniqueItems":{"type":"boolean","def
ault":false},"maxContains":{"$ref":"#/$defs/nonNegativeInteger"},"minContains":{"$ref":"#/$defs/nonNegativeInt
eger","default":1},"maxProperties":{"$ref":"#/$defs/nonNegativeInteger"},"minProperties":{"$ref":"#/$defs/nonN
egativeIntegerDefault0"},"required":{"$ref":"#/$defs/stringArray"},"dependentRequired":{"type":"object","addit
ionalProperties":{"$ref":"#/$defs/stringArray"}}},"$defs":{"nonNegativeInteger":{"type":"integer","minimum":0}
,"nonNegativeIntegerDefault0":{"$ref":"#/$defs/nonNegativeInteger","default":0},"simpleTypes":{"enum":["array"
,"boolean","integer","null","number","object","string"]},"stringArray":{"type":"array","items":{"type":"string
"},"uniqueItems":true,"default":[]}}},{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https:/
/json-schema.org/draft/2020-12/meta/meta-data","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/met
a-data":true},"$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"title":{"type":"string"},"des
cription":{"type":"string"},"default":true,"deprecated":{"type":"boolean","default":false},"readOnly":{"type":
"boolean","default":false},"writeOnly":{"type":"boolean","default":false},"examples":{"type":"array","items":t
rue}}},{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://json-schema.org/draft/2020-12/
meta/format-annotation","$vocabulary":{"https://json-schema.org/draft/2020-12/vocab/format-annotation":true},"
$dynamicAnchor":"meta","type":["object","boolean"],"properties":{"format":{"type":"string"}}},{"$schema":"http
s://json-schema.org/draft/2020-12/schema","$id":"https://json-schema.org/draft/2020-12/meta/content","$vocabul
ary":{"https://json-schema.org/draft/2020-12/vocab/content":true},"$dynamicAnchor":"meta","type":["object","bo
olean"],"properties":{"contentEncoding":{"type":"string"},"contentMediaType":{"type":"string"},"contentSchema"
:{"$dynamicRef":"#meta"}}}]
'''
_META_PREFIX = "https://json-schema.org/draft/2020-12/"


def _meta_schemas():
    """Fresh copies of the bundled meta-schema documents."""
    import json
    return json.loads("".join(_META_SCHEMAS_TEXT.split("\n")))


def _has_rules(schema, ignore_ref=False):
    """Ajv's schemaHasRules / schemaHasRulesButRef."""
    if schema is True:
        return False
    if schema is False:
        return True
    for key in schema:
        if key in _RULES and not (ignore_ref and key == "$ref"):
            return True
    return False


def _always_valid(schema):
    return schema is True or (type(schema) is dict and not _has_rules(schema))


def _has_ref(schema):
    """Ajv's hasRef: any reference keyword anywhere inside (decides inline or call)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            for key, value in node.items():
                if key in _REF_KEYWORDS:
                    return True
                if type(value) in (dict, list):
                    stack.append(value)
        elif type(node) is list:
            stack.extend(v for v in node if type(v) in (dict, list))
    return False


def _schema_types(schema):
    """Ajv's getSchemaTypes (type as a list, plus "null" for nullable: true)."""
    t = schema.get("type")
    types = [t] if type(t) is str else list(t) if type(t) is list else []
    if schema.get("nullable") is True and types and "null" not in types:
        types.append("null")
    return types


_TYPE_TESTS = {
    "string": lambda x: type(x) is str,
    "object": lambda x: type(x) is dict,
    "array": lambda x: type(x) is list,
    "boolean": lambda x: type(x) is bool,
    "null": lambda x: x is None,
    "integer": _is_integer,
    "number": _is_number,
}


def _type_check(types):
    """A predicate for "instance is one of these JSON types"."""
    if len(types) == 1:
        return _TYPE_TESTS[types[0]]
    wanted = set(types)
    if "number" in wanted:
        wanted.add("integer")

    def check(x):
        return _kind(x) in wanted
    return check


# ---------------------------------------------------------------------------
# Evaluation annotations (for unevaluatedProperties / unevaluatedItems)
# ---------------------------------------------------------------------------


class _Ann(object):
    """What a schema evaluated: property names (or all) and items (a prefix, indices, or all)."""

    __slots__ = ("props", "items", "idx")

    def __init__(self):
        self.props = set()
        self.items = 0
        self.idx = set()

    def merge(self, other):
        if self.props is not True:
            if other.props is True:
                self.props = True
            else:
                self.props |= other.props
        if self.items is not True:
            if other.items is True:
                self.items = True
            else:
                self.items = max(self.items, other.items)
                self.idx |= other.idx

    def add_props(self, keys):
        if self.props is not True:
            self.props.update(keys)


# ---------------------------------------------------------------------------
# The compiler
# ---------------------------------------------------------------------------


class _Context(object):
    """Compile-time facts about where a subschema sits."""

    __slots__ = ("base", "types")

    def __init__(self, base, types=()):
        self.base = base
        self.types = types

    def but(self, base=None, types=()):
        """The context of a subschema: same base unless given; the JSON types known there."""
        return _Context(self.base if base is None else base, types)


def _valid(inst, path, errors, ann):
    return True


def _never(inst):
    """The test of a checker that has none: run the checker."""
    return False


def _always(inst):
    """The test of a group without keywords, or without a type to report."""
    return True


def _report(errors, path, spath, keyword, params, message):
    """Add an issue to ``errors``: a list, or an _Issues past its limit, which only counts it."""
    if type(errors) is not list and errors.full():
        errors.left_out += 1
        return
    errors.append({"instancePath": _render_path(path), "schemaPath": spath, "keyword": keyword,
                   "params": params, "message": message})


class _Issues(list):
    """The issues collected up to ``limit``; those past it are counted in ``left_out``, not made.

    To the checkers it is the whole list: its length counts the ones left out,
    and cutting it back (``del errors[start:]``, where anyOf, oneOf and contains
    drop a passing branch's issues) forgets the ones left out first.
    """

    __slots__ = ("limit", "left_out")

    def __init__(self, limit):
        list.__init__(self)
        self.limit = limit
        self.left_out = 0

    def full(self):
        return list.__len__(self) >= self.limit

    def __len__(self):
        return list.__len__(self) + self.left_out

    def __delitem__(self, cut):
        kept = list.__len__(self)
        if cut.start >= kept:
            self.left_out = cut.start - kept
        else:
            list.__delitem__(self, slice(cut.start, None))
            self.left_out = 0

    def extend(self, issues):
        for issue in issues:
            if self.full():
                self.left_out += 1
            else:
                self.append(issue)


_tls = threading.local()
_lock = threading.Lock()  # guards what is compiled lazily, and the apply_defaults cache


class _Compiler(object):
    """Compiles one schema (and the documents it refers to) into checker closures."""

    def __init__(self, schema, strict, remotes, patterns=None):
        self.strict = strict
        self.docs = {}            # document URI -> its root schema
        self.anchors = {}         # "uri#name" -> schema ($anchor, $dynamicAnchor, $id with a fragment)
        self.dynamic = {}         # "uri#name" -> schema, $dynamicAnchor only
        self.bases = {}           # id(schema) -> its base URI
        self.envs = {}            # id(schema) -> (caller, cell) of a separately compiled schema
        self.inline = {}          # (id(schema), $ref text) -> checker of an inlined $ref target
        self.compiled = {}        # id(schema) -> (schema, base, schema path), for check_cycles
        self.refs = []            # ($ref, base) pairs seen while indexing
        self.pointers = []        # the same, $dynamicRef's too: index_ref_targets follows them
        self.patterns = dict(patterns or ())  # pattern source -> its compiled regex
        self.formats = set()      # the format names the schemas name
        self.depth = 0            # how deeply subschemas nest (the root is 1)
        self.track = False        # some schema uses unevaluatedProperties/Items
        self.uses_dynamic = False  # some schema uses $dynamicRef
        self.root = schema
        self.root_base = ""
        if type(schema) is dict and type(schema.get("$id")) is str:
            self.root_base = _normalize_id(_resolve_uri("", schema["$id"]))
        for uri, doc in (remotes or {}).items():
            self.docs[_normalize_id(uri)] = doc
            self.index(doc, _normalize_id(uri), "remote %s" % uri)
        self.index(schema, "", "#")
        if any(_resolve_uri(base, ref).startswith(_META_PREFIX) for ref, base in self.refs):
            for doc in _meta_schemas():
                if doc["$id"] not in self.docs:
                    self.index(doc, doc["$id"], doc["$id"])
        self.index_ref_targets()

    # -- indexing: $id, $anchor, $dynamicAnchor; keyword kinds ----------------

    def index(self, schema, base, where):
        """Record every schema resource and anchor; check keyword values are of the right kind.

        Schema paths are kept as linked ``(parent, key)`` pairs and written out
        only for an error (_schema_path): most schemas have none.
        """
        self.docs.setdefault(_split_fragment(base)[0], schema)
        stack = [(schema, base, where, 1)]
        while stack:
            node, base, spath, depth = stack.pop()
            if type(node) is not dict:
                if type(node) is bool:
                    continue
                raise _schema_error("schema", _schema_path(spath), "a schema must be an object or a boolean")
            if depth > self.depth:
                self.depth = depth
            sid = node.get("$id")
            if type(sid) is str:
                base = _normalize_id(_resolve_uri(base, sid))
                doc, frag = _split_fragment(base)
                if frag:
                    self.anchors[base] = node
                else:
                    self.docs.setdefault(doc, node)
            self.bases[id(node)] = base
            if self.strict:
                self.refuse_unknown(node, spath)
            depth += 1
            for key, value in node.items():
                kind = _VALUE_KINDS.get(key)
                if kind is None:
                    continue
                self.check_kind(kind, key, value, spath)
                if kind in _NOTED_KINDS:
                    self.note(kind, node, key, value, base, (spath, key), depth, stack)

    def refuse_unknown(self, node, spath):
        """Strict mode: Ajv refuses an unknown keyword in every subschema it applies, also in
        one compiling skips as always valid ({"allOf": [{"foo": 1}]}).  Not in $defs, nor
        in another document: those are checked where a $ref compiles them."""
        root, keys = _unlink(spath)
        if root == "#" and "$defs" not in keys and "definitions" not in keys:
            message = _unknown_keyword(node)
            if message is not None:
                raise SchemaError(message[1], message[0], _schema_path(spath))

    def index_ref_targets(self):
        """Index what a $ref or $dynamicRef points to where no keyword puts a schema
        (a "default", an "enum" member, an unknown keyword's value), so that its
        keyword values are checked as every subschema's are: compiling takes them
        as checked, and one of the wrong kind (``"minLength": "x"``) raised a
        TypeError or worse there."""
        for ref, base in self.pointers:   # the list grows while it runs, as targets are indexed
            try:
                target, target_base = self.resolve(ref, base, "#")
            except SchemaError:
                continue   # refused where it is compiled, if it is
            if type(target) is dict and id(target) not in self.bases:
                self.index(target, target_base, _resolve_uri(base, ref))

    def note(self, kind, node, key, value, base, spath, depth, stack):
        """Follow a keyword's subschemas (onto ``stack``); record references, anchors, formats."""
        if kind == "schema" or kind == "unevaluated":
            stack.append((value, base, spath, depth))
            if kind == "unevaluated":
                self.track = True
        elif kind == "schemas":
            for i, item in enumerate(value):
                stack.append((item, base, (spath, i), depth))
        elif kind == "schema map" or kind == "pattern map" or kind == "dependencies":
            for name, item in value.items():
                if kind != "dependencies" or type(item) is not list:
                    stack.append((item, base, (spath, name), depth))
        elif kind == "ref":
            self.refs.append((value, base))
            self.pointers.append((value, base))
        elif kind == "dynamic ref":
            self.uses_dynamic = True
            self.pointers.append((value, base))
        elif kind == "anchor":
            name = _split_fragment(base)[0] + "#" + value
            self.anchors.setdefault(name, node)
            if key == "$dynamicAnchor":
                self.dynamic.setdefault(name, node)
        else:
            self.formats.add(value)

    def check_kind(self, kind, key, value, spath):
        """The part of the meta-schema Ajv enforces in every mode: keyword values of the
        right kind (``kind``, from _VALUE_KINDS)."""
        t = type(value)
        if kind in _ANNOTATION_TYPES:
            ok = t is _ANNOTATION_TYPES[kind][0] or not self.strict
            detail = "must be " + _ANNOTATION_TYPES[kind][1]
        elif kind == "type":
            if t is str and value in _TYPE_NAMES:
                return
            names = [value] if t is str else value if t is list else None
            ok, detail = bool(names) and all(type(n) is str for n in names), \
                "must be a type name or a non-empty array of them"
            if ok:
                for n in names:
                    if n not in _TYPE_NAMES:
                        raise _schema_error(key, _schema_path((spath, key)), 'unknown type "%s"' % n)
                ok, detail = len(set(names)) == len(names), "type names must be unique"
        elif kind == "schema" or kind == "unevaluated":
            ok, detail = t is dict or t is bool, "must be a schema (an object or a boolean)"
        elif kind == "count":   # of any size: a limit past the doubles' range is one nothing reaches
            ok, detail = (t is int or t is float and _is_integer(value)) and value >= 0, \
                "must be a non-negative integer"
        elif kind == "number":
            ok, detail = t is int or t is float, "must be a number"
        elif kind == "schemas":
            ok, detail = t is list and len(value) > 0, "must be a non-empty array of schemas"
        elif kind in ("schema map", "pattern map", "names map", "dependencies"):
            ok, detail = t is dict, "must be an object"
            if ok and kind == "names map":
                ok = all(type(v) is list and all(type(n) is str for n in v) and len(set(v)) == len(v)
                         for v in value.values())
                detail = "must map names to arrays of unique strings"
            elif ok and kind == "dependencies":   # its schemas are checked as subschemas
                ok = all(all(type(n) is str for n in v) and len(set(v)) == len(v)
                         for v in value.values() if type(v) is list)
                detail = "must map names to schemas or arrays of unique strings"
            elif ok and kind == "pattern map":
                for pattern in value:
                    self.regex(pattern, key, _schema_path((spath, key)))
        elif kind == "positive":
            ok, detail = (t is int or t is float) and value > 0, "must be a number > 0"
        elif kind == "names":
            ok, detail = t is list and all(type(v) is str for v in value) and len(set(value)) == len(value), \
                "must be an array of unique strings"
        elif kind == "array":
            ok, detail = t is list, "must be an array"
            if ok and not value and self.strict:
                ok, detail = False, "enum must have non-empty array"
        elif kind == "boolean":
            ok, detail = t is bool, "must be a boolean"
        else:   # pattern, format, references, anchors, $id
            ok, detail = t is str, "must be a string"
            if ok and kind == "pattern":
                self.regex(value, key, _schema_path((spath, key)))
        if not ok:
            raise _schema_error(key, _schema_path((spath, key)), detail)

    def regex(self, pattern, keyword, spath):
        """A pattern compiled (once per compiler: a lazy compile reuses the check's)."""
        rx = self.patterns.get(pattern)
        if rx is not None:
            return rx
        try:
            rx = self.patterns[pattern] = _js_regex(pattern)
        except ValueError as exc:
            raise _schema_error(keyword, spath, "Invalid regular expression: /%s/u: %s" % (pattern, exc))
        except RecursionError:
            raise _schema_error(keyword, spath, "pattern is nested too deeply")
        return rx

    # -- references ---------------------------------------------------------

    def resolve(self, ref, base, spath, keyword="$ref"):
        """The schema a reference points to, and that schema's base URI."""
        uri = _resolve_uri(base, ref)
        doc, frag = _split_fragment(uri)
        node = self.docs.get(doc)
        if node is not None and frag.startswith("/"):
            from urllib.parse import unquote
            for part in unquote(frag).split("/")[1:]:
                part = part.replace("~1", "/").replace("~0", "~")
                if type(node) is dict and part in node:
                    node = node[part]
                elif type(node) is list and _INDEX_KEY.match(part) and int(part) < len(node):   # not "00", "²"
                    node = node[int(part)]
                else:
                    node = None
                    break
        elif node is not None and frag:
            node = self.anchors.get(doc + "#" + frag)
        elif node is None:
            node = self.anchors.get(uri)
        if node is None or type(node) not in (dict, bool):
            raise _schema_error(keyword, spath, "can't resolve reference %s from id %s" % (ref, base or "#"))
        return node, self.bases.get(id(node), doc)

    def resolve_chain(self, ref, base, spath):
        """Resolve a $ref; like Ajv, a pointer target that is only a pointer $ref is followed on."""
        target, base = self.resolve(ref, base, spath)
        seen = set()
        while (_split_fragment(ref)[1].startswith("/") and type(target) is dict and "$ref" in target
               and "$id" not in target and not _has_rules(target, ignore_ref=True) and id(target) not in seen
               and _split_fragment(target["$ref"])[1].startswith("/")):
            seen.add(id(target))
            nxt, nbase = self.resolve(target["$ref"], base, spath)
            if _split_fragment(nbase)[0] != _split_fragment(base)[0]:
                break
            ref, target, base = target["$ref"], nxt, nbase
        return target, base

    def dynamic_targets(self, ref, base, spath):
        """Where a $dynamicRef leads: ``((schema, base), candidates)``.  ``candidates`` is
        None unless the reference is bookended (its static target has the
        $dynamicAnchor it names); then it maps each document to its schema with that
        anchor, and the outermost document in the dynamic scope that has one wins."""
        target, tbase = self.resolve(ref, base, spath, "$dynamicRef")
        name = _split_fragment(ref)[1]
        if not name or name.startswith("/") or type(target) is not dict or target.get("$dynamicAnchor") != name:
            return (target, tbase), None
        candidates = {}
        for uri, node in self.dynamic.items():
            doc, anchor = _split_fragment(uri)
            if anchor == name:
                candidates[doc] = (node, self.bases.get(id(node), doc))
        return (target, tbase), candidates

    def check_cycles(self, root):
        """Refuse a schema that reaches itself without moving into the instance
        ({"$ref": "#"}, allOf loops...): validating with it could never end."""
        def same_instance(schema, base):
            out = []
            for key in ("$ref", "$dynamicRef"):
                if type(schema.get(key)) is str:
                    out.append(self.resolve_chain(schema[key], base, key))
            for key in ("allOf", "anyOf", "oneOf"):
                out.extend((sub, base) for sub in schema.get(key) or ())
            for key in ("not", "if", "then", "else"):
                if key in schema:
                    out.append((schema[key], base))
            if type(schema.get("dependentSchemas")) is dict:
                out.extend((sub, base) for sub in schema["dependentSchemas"].values())
            return [self.compiled[id(sub)] for sub, _ in out if id(sub) in self.compiled]

        state = {}
        for start in list(self.compiled.values()):
            if id(start[0]) in state:
                continue
            stack = [(start, iter(same_instance(*start[:2])))]
            state[id(start[0])] = "open"
            while stack:
                (node, _, _), children = stack[-1]
                for child in children:
                    mark = state.get(id(child[0]))
                    if mark == "open":
                        raise _schema_error("$ref", child[2],
                                            "the schema refers to itself without consuming the instance")
                    if mark is None:
                        state[id(child[0])] = "open"
                        stack.append((child, iter(same_instance(*child[:2]))))
                        break
                else:
                    state[id(node)] = "done"
                    stack.pop()

    def env(self, schema, base):
        """A separately compiled function for a schema reached by reference (Ajv's SchemaEnv)."""
        key = id(schema)
        entry = self.envs.get(key)
        if entry is None:
            cell = []

            def call(inst, path, errors, ann):
                return cell[0](inst, path, errors, ann)
            entry = self.envs[key] = (call, cell)
            cx = _Context(base)
            fn = self.compile(schema, "#", cx)
            if self.uses_dynamic:
                fn = self.scoped(fn, base)
            cell.append(fn)
        return entry[0]

    def scoped(self, fn, base):
        """Enter a schema resource: push its URI on the dynamic scope while it runs."""
        doc = _split_fragment(base)[0]

        def enter(inst, path, errors, ann):
            scope = _tls.scope
            scope.append(doc)
            try:
                return fn(inst, path, errors, ann)
            finally:
                scope.pop()
        return enter

    # -- schemas ------------------------------------------------------------

    def compile(self, schema, spath, cx):
        """Compile one schema into a checker ``(instance, path, errors, ann) -> bool``."""
        if schema is True:
            return _valid
        if schema is False:
            return _false_schema(spath)
        if not _has_rules(schema):
            if self.strict:
                self.strict_checks(schema, spath, cx, [])
            return _valid
        base = self.bases.get(id(schema), cx.base)
        self.compiled.setdefault(id(schema), (schema, base, spath))
        if base != cx.base:
            cx = cx.but(base=base, types=cx.types)
        if "$ref" in schema and not _has_rules(schema, ignore_ref=True):
            if self.strict:
                self.strict_checks(schema, spath, cx, [])
            fn = _KEYWORDS["$ref"](self, schema, schema["$ref"], spath + "/$ref", spath, cx) or _valid
        else:
            fn = self.compile_object(schema, spath, cx)
        if self.uses_dynamic and "$id" in schema:
            fn = self.scoped(fn, base)
        return fn

    def compile_object(self, schema, spath, cx):
        types = _schema_types(schema)
        if self.strict:
            self.strict_checks(schema, spath, cx, types)
        cx_same = cx.but(types=tuple(types) or cx.types)
        by_group = {}
        for key in schema:
            for group, rank in _RULE_SLOTS.get(key, ()):
                by_group.setdefault(group, []).append((rank, key))
        for group in by_group:
            by_group[group].sort()
        untyped = self.checks(schema, spath, cx_same, None, by_group.pop(None, ()))
        typed = []
        for group in _GROUPS:
            if group in by_group:
                typed.append((group, self.checks(schema, spath, cx_same, group, by_group[group])))
        steps = []
        type_step = None
        if types:
            # Ajv adds nullable's "null" to a type array in place, so its issues name it too
            type_value = _js_value(schema["type"] if type(schema.get("type")) is str else types)
            type_message = "must be " + (type_value if type(type_value) is str else ",".join(type_value))
            type_step = _check_that("type", spath + "/type", {"type": type_value}, type_message, _type_check(types))
        if types and not (len(types) == 1 and types[0] in by_group):
            steps.append(type_step)
            type_step = None
        steps.extend(untyped)
        for group, checks in typed:
            steps.append(_group_step(_GROUP_TYPE[group], checks, type_step if types[:1] == [group] else None))
        return _node(steps, "unevaluatedProperties" in schema or "unevaluatedItems" in schema)

    def checks(self, schema, spath, cx, group, ranked):
        """Compile the keywords of one group, in Ajv's order, dropping those that never fail."""
        out = []
        for _, key in ranked:
            compile_keyword = _KEYWORDS.get(key)
            if compile_keyword is None:
                continue
            if key == "format" and _FORMATS.get(schema[key], (group,))[0] != group:
                continue
            fn = compile_keyword(self, schema, schema[key], spath + "/" + key, spath, cx)
            if fn is not None:
                out.append(fn)
        return out

    # -- strict mode (what Ajv's strict: true refuses) -------------------------

    def strict_checks(self, schema, spath, cx, types):
        def refuse(keyword, message):
            raise SchemaError(message, keyword, spath)

        message = _unknown_keyword(schema)
        if message is not None:
            refuse(*message)
        if "id" in schema:
            refuse("id", 'NOT SUPPORTED: keyword "id", use "$id" for schema ID')
        if "nullable" in schema and not types:
            refuse("nullable", '"nullable" cannot be used without "type"')
        if schema.get("nullable") is False and "null" in types:
            refuse("nullable", "type: null contradicts nullable: false")
        if "$schema" in schema and schema["$schema"] not in _DRAFT_2020:
            refuse("$schema", 'no schema with key or ref "%s"' % schema["$schema"])
        fmt = schema.get("format")
        if type(fmt) is str and fmt not in _FORMATS:
            refuse("format", 'unknown format "%s" ignored in schema at path "%s"' % (fmt, spath))
        if cx.types and types:
            for t in types:
                if t not in cx.types and not (t == "integer" and "number" in cx.types):
                    refuse("type", 'strict mode: type "%s" not allowed by context "%s" at "%s" (strictTypes)'
                           % (t, ",".join(cx.types), spath))
        have = set(types or cx.types)
        if "format" in schema and not have & {"number", "integer", "string"}:
            refuse("format", 'strict mode: missing type "number,string" for keyword "format" at "%s" (strictTypes)'
                   % spath)
        for group in _GROUPS:
            for key in _GROUP_ORDER[group]:
                if key in schema and key != "format" and group not in have and not (group == "number" and "integer" in have):
                    refuse(key, 'strict mode: missing type "%s" for keyword "%s" at "%s" (strictTypes)'
                           % (group, key, spath))
        if type(schema.get("required")) is list:
            props = schema.get("properties") if type(schema.get("properties")) is dict else {}
            for name in schema["required"]:
                if name not in props:
                    refuse("required", 'strict mode: required property "%s" is not defined at "%s" (strictRequired)'
                           % (name, spath))
        if type(schema.get("prefixItems")) is list:
            n = len(schema["prefixItems"])
            if not (schema.get("minItems") == n and (schema.get("maxItems") == n or schema.get("items") is False)):
                refuse("prefixItems", 'strict mode: "prefixItems" is %d-tuple, but minItems or maxItems/items are '
                       'not specified or different at path "%s"' % (n, spath))
        if "if" in schema and "then" not in schema and "else" not in schema:
            refuse("if", 'strict mode: "if" without "then" and "else" is ignored')
        for key in ("then", "else"):
            if key in schema and "if" not in schema:
                refuse(key, 'strict mode: "%s" without "if" is ignored' % key)
        for key in ("maxContains", "minContains"):
            if key in schema and "contains" not in schema:
                refuse(key, 'strict mode: "%s" without "contains" is ignored' % key)
        if "contains" in schema:
            low, high = schema.get("minContains", 1), schema.get("maxContains")
            if high is None and low == 0:
                refuse("minContains",
                       'strict mode: "minContains" == 0 without "maxContains": "contains" keyword ignored')
            if high is not None and low > high:
                refuse("minContains", 'strict mode: "minContains" > "maxContains" is always invalid')
        if type(schema.get("patternProperties")) is dict and type(schema.get("properties")) is dict:
            for pattern in schema["patternProperties"]:
                rx = _js_regex(pattern)
                for name in schema["properties"]:
                    if rx.search(name):
                        refuse("patternProperties", "strict mode: property %s matches pattern %s "
                               "(use allowMatchingProperties)" % (name, pattern))


def _unknown_keyword(schema):
    """(keyword, message) for the first keyword Ajv's strict mode does not know, or None."""
    for key in schema:
        if key not in _KNOWN:
            return key, 'strict mode: unknown keyword: "%s"' % key
    return None


def _false_schema(spath):
    spath = spath + "/false schema"

    def check(inst, path, errors, ann):
        if errors is not None:
            _report(errors, path, spath, "false schema", {}, "boolean schema is false")
        return False
    return check


def _run_all(fns, inst, path, errors, ann):
    """Run checkers in order: all of them when collecting issues, else up to the first failure."""
    valid = True
    for fn in fns:
        if not fn(inst, path, errors, ann):
            if errors is None:
                return False
            valid = False
    return valid


def _in_order(fns):
    """One checker that runs ``fns`` as _run_all does.  Neighbours that only test the
    instance (checkers with a ``passes`` test) are joined first (_joined)."""
    if len(fns) == 1:
        return fns[0]
    steps = []
    for tests_only, run in groupby(fns, lambda fn: hasattr(fn, "passes")):
        run = list(run)
        steps.extend([_joined(run)] if tests_only and len(run) > 1 else run)
    return steps[0] if len(steps) == 1 else partial(_run_all, steps)


def _all_pass(tests):
    """One test that passes when every one of ``tests`` does, tried in order: a chain of
    two-test steps (a call costs less than a loop over a few tests)."""
    passes = tests[-1]
    for test in reversed(tests[:-1]):
        passes = _both(test, passes)
    return passes


def _both(first, second):
    return lambda inst: first(inst) and second(inst)


def _joined(checks):
    """Keywords that only test the instance, as one checker: their tests in a row, so
    a passing instance costs one call; once a test fails, the keywords' own checkers
    run to write Ajv's issues, in Ajv's order."""
    passes = _all_pass([fn.passes for fn in checks])

    def check(inst, path, errors, ann):
        if passes(inst):
            return True
        if errors is not None:
            _run_all(checks, inst, path, errors, ann)
        return False
    check.passes = passes
    return check


def _group_step(kind, checks, type_step):
    """One of Ajv's typed groups: its keywords when the instance has that type (``kind``,
    from _GROUP_TYPE), else the type issue when this group is where Ajv reports it."""
    run = _in_order(checks) if checks else _valid

    def check(inst, path, errors, ann):
        if type(inst) is kind or (kind is None and _is_number(inst)):
            return run(inst, path, errors, ann)
        return type_step is None or type_step(inst, path, errors, ann)
    if all(hasattr(fn, "passes") for fn in checks) and (type_step is None or hasattr(type_step, "passes")):
        check.passes = _group_test(kind, [fn.passes for fn in checks], type_step and type_step.passes)
    return check


def _group_test(kind, tests, type_test):
    """A typed group's keywords as one test, when each of them only tests the instance."""
    run = _all_pass(tests) if tests else _always
    type_test = type_test or _always
    if kind is None:
        return lambda inst: run(inst) if _is_number(inst) else type_test(inst)
    return lambda inst: run(inst) if type(inst) is kind else type_test(inst)


def _node(steps, own_ann):
    """The checker for one schema object; it keeps its own annotations for unevaluated*."""
    run = _in_order(steps)
    if not own_ann:
        return run

    def check(inst, path, errors, ann):
        mine = _Ann()
        valid = run(inst, path, errors, mine)
        if ann is not None:
            ann.merge(mine)
        return valid
    return check


# ---------------------------------------------------------------------------
# Keywords: compile functions (compiler, schema, value, keyword path, schema path,
# context) returning a checker, or None when the keyword never fails
# ---------------------------------------------------------------------------

_KEYWORDS = {}


def _keyword(*names):
    def register(fn):
        for name in names:
            _KEYWORDS[name] = fn
        return fn
    return register


def _check_that(keyword, kpath, params, message, passes):
    """The checker of a keyword that tests the instance itself: one issue when it fails.
    The test stays reachable as ``check.passes``, for _joined."""
    def check(inst, path, errors, ann):
        if passes(inst):
            return True
        if errors is not None:
            _report(errors, path, kpath, keyword, dict(params), message)
        return False
    check.passes = passes
    return check


_COMPARE = {"maximum": ("<=", lambda lim: lambda x: x <= lim),
            "minimum": (">=", lambda lim: lambda x: x >= lim),
            "exclusiveMaximum": ("<", lambda lim: lambda x: x < lim),
            "exclusiveMinimum": (">", lambda lim: lambda x: x > lim)}


@_keyword("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum")
def _k_number_limit(c, schema, value, kpath, spath, cx):
    if value != value:   # NaN (Python's JSON reads it): no number compares with it, so none fails
        return None
    keyword = kpath.rsplit("/", 1)[1]
    op, passes = _COMPARE[keyword]
    return _check_that(keyword, kpath, {"comparison": op, "limit": _js_value(value)},
                       "must be %s %s" % (op, _js_number_text(value)), passes(value))


@_keyword("multipleOf")
def _k_multiple_of(c, schema, value, kpath, spath, cx):
    def passes(x):
        """JavaScript's test: x / m is an integer below 1e21 (parseInt of its text)."""
        try:
            q = x / value
        except OverflowError:
            return False
        return type(q) is not float or (q - q == 0 and q.is_integer() and abs(q) < 1e21)
    return _check_that("multipleOf", kpath, {"multipleOf": _js_value(value)},
                       "must be multiple of %s" % _js_number_text(value), passes)


def _count_limit(noun):
    def compile_limit(c, schema, value, kpath, spath, cx):
        keyword = kpath.rsplit("/", 1)[1]
        most = keyword.startswith("max")
        message = "must NOT have %s than %s %s" % ("more" if most else "fewer", _js_number_text(value), noun)
        passes = (lambda x: len(x) <= value) if most else (lambda x: len(x) >= value)
        return _check_that(keyword, kpath, {"limit": _js_value(value)}, message, passes)
    return compile_limit


_keyword("maxLength", "minLength")(_count_limit("characters"))
_keyword("maxItems", "minItems")(_count_limit("items"))
_keyword("maxProperties", "minProperties")(_count_limit("properties"))


@_keyword("pattern")
def _k_pattern(c, schema, value, kpath, spath, cx):
    return _check_that("pattern", kpath, {"pattern": value}, 'must match pattern "%s"' % value,
                       c.regex(value, "pattern", kpath).search)


@_keyword("format")
def _k_format(c, schema, value, kpath, spath, cx):
    entry = _FORMATS.get(value)
    if entry is None or entry[1] is None:
        return None
    return _check_that("format", kpath, {"format": value}, 'must match format "%s"' % value,
                       _format_test(value))


@_keyword("required")
def _k_required(c, schema, value, kpath, spath, cx):
    names = list(value)
    if not names:
        return None
    wanted = frozenset(names)

    def passes(inst):
        return inst.keys() >= wanted

    def check(inst, path, errors, ann):
        if errors is None:
            return passes(inst)
        valid = True
        for name in names:
            if name not in inst:
                _report(errors, path, kpath, "required", {"missingProperty": name},
                        "must have required property '%s'" % name)
                valid = False
        return valid
    check.passes = passes
    return check


def _property_deps(keyword, kpath, deps):
    """dependentRequired (and array-valued "dependencies"): names required by a present name."""
    deps = [(name, list(req)) for name, req in deps if req]
    if not deps:
        return None

    def check(inst, path, errors, ann):
        valid = True
        for name, req in deps:
            if name in inst:
                for dep in req:
                    if dep not in inst:
                        if errors is None:
                            return False
                        joined = ", ".join(req)
                        _report(errors, path, kpath, keyword,
                                {"property": name, "missingProperty": dep, "depsCount": len(req),
                                 "deps": joined},
                                "must have %s %s when property %s is present"
                                % ("property" if len(req) == 1 else "properties", joined, name))
                        valid = False
        return valid
    return check


def _schema_deps(c, keyword, kpath, deps, cx):
    """dependentSchemas (and schema-valued "dependencies"): a schema applied when a name is present."""
    subs = [(name, _counted(c.compile(sub, kpath + "/" + _fragment(name), cx))) for name, sub in deps
            if not _always_valid(sub)]
    if not subs:
        return None

    def check(inst, path, errors, ann):
        return _run_all([sub for name, sub in subs if name in inst], inst, path, errors, ann)
    return check


@_keyword("dependentRequired")
def _k_dependent_required(c, schema, value, kpath, spath, cx):
    return _property_deps("dependentRequired", kpath, [(k, value[k]) for k in _js_keys(value)])


@_keyword("dependentSchemas")
def _k_dependent_schemas(c, schema, value, kpath, spath, cx):
    return _schema_deps(c, "dependentSchemas", kpath, [(k, value[k]) for k in _js_keys(value)], cx)


@_keyword("dependencies")
def _k_dependencies(c, schema, value, kpath, spath, cx):
    keys = [k for k in _js_keys(value) if k != "__proto__"]
    props = _property_deps("dependencies", kpath, [(k, value[k]) for k in keys if type(value[k]) is list])
    subs = _schema_deps(c, "dependencies", kpath, [(k, value[k]) for k in keys if type(value[k]) is not list], cx)
    return _all_of_checks([fn for fn in (props, subs) if fn is not None])


def _all_of_checks(fns):
    """Run several checkers as one (all run when collecting issues)."""
    return _in_order(fns) if fns else None


@_keyword("const")
def _k_const(c, schema, value, kpath, spath, cx):
    if type(value) in (str, type(None)):
        same = (lambda x: x == value and type(x) is type(value))
    else:
        same = (lambda x: _json_equal(x, value))
    return _check_that("const", kpath, {"allowedValue": _js_value(value)}, "must be equal to constant", same)


@_keyword("enum")
def _k_enum(c, schema, value, kpath, spath, cx):
    strings = {v for v in value if type(v) is str}
    others = [v for v in value if type(v) is not str]

    def member(x):
        if type(x) is str:
            return x in strings
        for v in others:
            if _json_equal(x, v):
                return True
        return False
    return _check_that("enum", kpath, {"allowedValues": _js_value(value)},
                       "must be equal to one of the allowed values", member)


@_keyword("uniqueItems")
def _k_unique_items(c, schema, value, kpath, spath, cx):
    if value is not True:
        return None
    items = schema.get("items")
    item_types = _schema_types(items) if type(items) is dict else []
    fast = bool(item_types) and not any(t in ("object", "array") for t in item_types)
    wanted = _type_check(item_types) if fast else None

    def duplicate(inst):
        """Ajv's answer (i, j): which equal items it reports first, or None."""
        if fast:
            seen = {}
            for i in range(len(inst) - 1, -1, -1):
                item = inst[i]
                if not wanted(item):
                    continue
                key = _canon(item)
                if key in seen:
                    return i, seen[key]
                seen[key] = i
            return None
        # Items by the hash of their _canon key (only the hash kept: see _surely_distinct);
        # Ajv reports the last item equal to an earlier one, with the latest such one.
        last, found = {}, None
        for i, item in enumerate(inst):
            same = last.setdefault(hash(_canon(item)), [])
            for j in reversed(same):
                if _json_equal(inst[j], item):
                    found = (i, j)
                    break
            same.append(i)
        return found

    def check(inst, path, errors, ann):
        if len(inst) < 2 or _surely_distinct(inst):
            return True
        pair = duplicate(inst)
        if pair is None:
            return True
        if errors is not None:
            i, j = pair
            _report(errors, path, kpath, "uniqueItems", {"i": i, "j": j},
                    "must NOT have duplicate items (items ## %d and %d are identical)" % (j, i))
        return False
    check.passes = lambda inst: len(inst) < 2 or _surely_distinct(inst) or duplicate(inst) is None
    return check


# -- applicators on the same instance -------------------------------------------


@_keyword("$ref")
def _k_ref(c, schema, value, kpath, spath, cx):
    if value in ("#", "#/") and cx.base == c.root_base:
        target, base = c.root, c.root_base
    else:
        target, base = c.resolve_chain(value, cx.base, kpath)
    if _always_valid(target) and not c.track:
        return None
    if target is not c.root and (type(target) is bool or not _has_ref(target)):
        key = (id(target), value)
        if key not in c.inline:
            c.inline[key] = c.compile(target, value, _Context(base))
        return c.inline[key]
    return _counted(c.env(target, base))


@_keyword("$dynamicRef")
def _k_dynamic_ref(c, schema, value, kpath, spath, cx):
    (target, base), candidates = c.dynamic_targets(value, cx.base, kpath)
    static = c.env(target, base)
    if candidates is None:
        return _counted(static)

    def pick():
        for doc in _tls.scope:
            found = candidates.get(doc)
            if found is not None:
                return c.env(*found)
        return static

    def check(inst, path, errors, ann):
        return _counted(pick())(inst, path, errors, ann)
    return check


def _counted(call):
    """A checker whose evaluations count only when it passes (a called $ref, dependentSchemas)."""
    def check(inst, path, errors, ann):
        if ann is None:
            return call(inst, path, errors, None)
        part = _Ann()
        if call(inst, path, errors, part):
            ann.merge(part)
            return True
        return False
    return check


def _outcome(valid, errors, start, path, kpath, keyword, params, message):
    """How anyOf, oneOf and contains end: on success the subschemas' issues are dropped
    (Ajv's reset), on failure the keyword's own issue follows them."""
    if valid:
        if errors is not None:
            del errors[start:]
        return True
    if errors is not None:
        _report(errors, path, kpath, keyword, params, message)
    return False


@_keyword("not")
def _k_not(c, schema, value, kpath, spath, cx):
    sub = None if _always_valid(value) else c.compile(value, kpath, cx.but(types=cx.types))

    def check(inst, path, errors, ann):
        if sub is not None and not sub(inst, path, None, None):
            return True
        if errors is not None:
            _report(errors, path, kpath, "not", {}, "must NOT be valid")
        return False
    return check


@_keyword("anyOf")
def _k_any_of(c, schema, value, kpath, spath, cx):
    inner = cx.but(types=cx.types)
    subs = [c.compile(sub, "%s/%d" % (kpath, i), inner) for i, sub in enumerate(value)]

    def check(inst, path, errors, ann):
        if errors is None and ann is None:
            for sub in subs:
                if sub(inst, path, None, None):
                    return True
            return False
        start = len(errors) if errors is not None else 0
        valid = False
        for sub in subs:
            part = _Ann() if ann is not None else None
            if sub(inst, path, errors, part):
                valid = True
                if part is not None:
                    ann.merge(part)
        return _outcome(valid, errors, start, path, kpath, "anyOf", {}, "must match a schema in anyOf")
    return check


@_keyword("oneOf")
def _k_one_of(c, schema, value, kpath, spath, cx):
    inner = cx.but(types=cx.types)
    subs = [None if _always_valid(sub) else c.compile(sub, "%s/%d" % (kpath, i), inner)
            for i, sub in enumerate(value)]

    def check(inst, path, errors, ann):
        start = len(errors) if errors is not None else 0
        passing = None
        for i, sub in enumerate(subs):
            part = _Ann() if ann is not None else None
            ok = sub is None or sub(inst, path, errors, part)
            if ok:
                if passing is not None:
                    passing = [passing, i]
                    break
                passing = i
                if part is not None:
                    ann.merge(part)
        return _outcome(type(passing) is int, errors, start, path, kpath, "oneOf", {"passingSchemas": passing},
                        "must match exactly one schema in oneOf")
    return check


@_keyword("allOf")
def _k_all_of(c, schema, value, kpath, spath, cx):
    return _all_of_checks([c.compile(sub, "%s/%d" % (kpath, i), cx) for i, sub in enumerate(value)
                           if not _always_valid(sub) or c.track])


@_keyword("if")
def _k_if(c, schema, value, kpath, spath, cx):
    then, other = schema.get("then"), schema.get("else")
    has_then = then is not None and not _always_valid(then)
    has_else = other is not None and not _always_valid(other)
    if not has_then and not has_else and not c.track:
        return None
    cond = c.compile(value, kpath, cx.but(types=cx.types))
    clauses = {True: ("then", c.compile(then, spath + "/then", cx) if has_then else None),
               False: ("else", c.compile(other, spath + "/else", cx) if has_else else None)}

    def check(inst, path, errors, ann):
        part = _Ann() if ann is not None else None
        matched = cond(inst, path, None, part)
        if matched and part is not None:
            ann.merge(part)
        name, clause = clauses[bool(matched)]
        if clause is None:
            return True
        part = _Ann() if ann is not None else None
        if clause(inst, path, errors, part):
            if part is not None:
                ann.merge(part)
            return True
        if errors is not None:
            _report(errors, path, kpath, "if", {"failingKeyword": name}, 'must match "%s" schema' % name)
        return False
    return check


# -- applicators on object members ------------------------------------------------


def _apply(pairs, inst, path, errors, reject=None):
    """Check members: ``pairs`` of (checker, key) apply ``checker`` to ``inst[key]``; a
    None checker means the key itself is the issue ``reject(errors, path, key)`` reports."""
    valid = True
    for sub, key in pairs:
        if sub is None:
            if errors is None:
                return False
            reject(errors, path, key)
        elif sub(inst[key], (path, key), errors, None):
            continue
        elif errors is None:
            return False
        valid = False
    return valid


def _mark_all(attr):
    """A checker that only records "everything evaluated" (props or items)."""
    def mark(inst, path, errors, ann):
        if ann is not None:
            setattr(ann, attr, True)
        return True
    return mark


_mark_all_props = _mark_all("props")
_mark_all_items = _mark_all("items")


def _rejecting(kpath, keyword, param, message):
    """The issue for a member a ``false`` schema refuses (additional/unevaluated properties)."""
    def reject(errors, path, key):
        _report(errors, path, kpath, keyword, {param: key}, message)
    return reject


@_keyword("properties")
def _k_properties(c, schema, value, kpath, spath, cx):
    names = _js_keys(value)
    inner = cx.but()
    subs = [(name, c.compile(value[name], kpath + "/" + _fragment(name), inner)) for name in names
            if not _always_valid(value[name])]
    subs = [(name, sub, getattr(sub, "passes", _never)) for name, sub in subs]

    def check(inst, path, errors, ann):
        if ann is not None:
            ann.add_props(k for k in names if k in inst)
        valid = True
        for name, sub, passes in subs:
            # A member that passes its test needs no path and no checker: most members of a valid instance.
            if name in inst and not passes(inst[name]) and not sub(inst[name], (path, name), errors, None):
                if errors is None:
                    return False
                valid = False
        return valid
    # As one test when every member has one: an object a valid instance holds costs a
    # call per member.  Not where unevaluated* looks: it needs the checker's annotations.
    if not c.track and all(hasattr(sub, "passes") for _, sub, _ in subs):
        tests = [(name, passes) for name, _, passes in subs]

        def passes(inst):
            for name, test in tests:
                if name in inst and not test(inst[name]):
                    return False
            return True
        check.passes = passes
    return check


def _pattern_list(c, value, kpath):
    return [(p, c.regex(p, "patternProperties", kpath).search) for p in _js_keys(value)]


@_keyword("patternProperties")
def _k_pattern_properties(c, schema, value, kpath, spath, cx):
    inner = cx.but()
    subs = [(search, None if _always_valid(value[p]) else c.compile(value[p], kpath + "/" + _fragment(p), inner))
            for p, search in _pattern_list(c, value, kpath)]

    def check(inst, path, errors, ann):
        keys = _js_keys(inst)
        matched = [(sub, key) for search, sub in subs for key in keys if search(key) is not None]
        if ann is not None:
            ann.add_props(key for _, key in matched)
        return _apply([m for m in matched if m[0] is not None], inst, path, errors)
    return check


@_keyword("additionalProperties")
def _k_additional_properties(c, schema, value, kpath, spath, cx):
    props = schema.get("properties") if type(schema.get("properties")) is dict else {}
    patterns = [search for _, search in _pattern_list(c, schema.get("patternProperties") or {}, kpath)]
    if _always_valid(value):
        return _mark_all_props if c.track else None
    sub = None if value is False else c.compile(value, kpath, cx.but())
    reject = _rejecting(kpath, "additionalProperties", "additionalProperty", "must NOT have additional properties")

    def check(inst, path, errors, ann):
        if ann is not None:
            ann.props = True
        if inst.keys() <= props.keys():
            return True
        extra = ((sub, key) for key in _js_keys(inst)
                 if key not in props and not any(search(key) for search in patterns))
        return _apply(extra, inst, path, errors, reject)
    if value is False and not patterns and not c.track:
        check.passes = lambda inst: inst.keys() <= props.keys()
    return check


@_keyword("propertyNames")
def _k_property_names(c, schema, value, kpath, spath, cx):
    if _always_valid(value):
        return None
    sub = c.compile(value, kpath, cx.but(types=("string",)))

    def check(inst, path, errors, ann):
        valid = True
        for key in _js_keys(inst):
            found = [] if errors is not None else None
            if not sub(key, path, found, None):
                if errors is None:
                    return False
                for issue in found:
                    issue["propertyName"] = key
                errors.extend(found)
                _report(errors, path, kpath, "propertyNames", {"propertyName": key},
                        "property name must be valid")
                valid = False
        return valid
    return check


def _unevaluated_schema(c, value, kpath, cx):
    """The checker for unevaluated members: None for false, _valid when anything goes."""
    if value is False:
        return None
    return _valid if _always_valid(value) else c.compile(value, kpath, cx.but())


@_keyword("unevaluatedProperties")
def _k_unevaluated_properties(c, schema, value, kpath, spath, cx):
    sub = _unevaluated_schema(c, value, kpath, cx)
    if sub is _valid:
        return _mark_all_props
    reject = _rejecting(kpath, "unevaluatedProperties", "unevaluatedProperty", "must NOT have unevaluated properties")

    def check(inst, path, errors, ann):
        seen, ann.props = ann.props, True
        if seen is True:
            return True
        return _apply([(sub, key) for key in _js_keys(inst) if key not in seen], inst, path, errors, reject)
    return check


# -- applicators on array items -----------------------------------------------------


@_keyword("prefixItems")
def _k_prefix_items(c, schema, value, kpath, spath, cx):
    inner = cx.but()
    subs = [c.compile(sub, "%s/%d" % (kpath, i), inner) for i, sub in enumerate(value)]
    count = len(subs)

    def check(inst, path, errors, ann):
        if ann is not None and ann.items is not True:
            ann.items = max(ann.items, count)
        return _apply(zip(subs, range(len(inst))), inst, path, errors)
    return check


@_keyword("items")
def _k_items(c, schema, value, kpath, spath, cx):
    prefix = schema.get("prefixItems")
    start = len(prefix) if type(prefix) is list else 0
    if _always_valid(value):
        return _mark_all_items if c.track else None
    if value is False and start:
        message = "must NOT have more than %d items" % start

        def closed(inst, path, errors, ann):
            if ann is not None:
                ann.items = True
            if len(inst) <= start:
                return True
            if errors is not None:
                _report(errors, path, kpath, "items", {"limit": start}, message)
            return False
        return closed
    sub = c.compile(value, kpath, cx.but())

    def check(inst, path, errors, ann):
        if ann is not None:
            ann.items = True
        return _apply(((sub, i) for i in range(start, len(inst))), inst, path, errors)
    if hasattr(sub, "passes") and not c.track:
        test = sub.passes
        check.passes = lambda inst: all(map(test, islice(inst, start, None)))
    return check


@_keyword("contains")
def _k_contains(c, schema, value, kpath, spath, cx):
    low = schema.get("minContains", 1)
    high = schema.get("maxContains")
    if high is None:
        params, message = {"minContains": _js_value(low)}, "must contain at least %s valid item(s)" % _js_number_text(low)
    else:
        params = {"minContains": _js_value(low), "maxContains": _js_value(high)}
        message = "must contain at least %s and no more than %s valid item(s)" % (
            _js_number_text(low), _js_number_text(high))
    sub = None if _always_valid(value) else c.compile(value, kpath, cx.but())

    def fail(path, errors):
        if errors is not None:
            _report(errors, path, kpath, "contains", dict(params), message)
        return False

    def note(inst, ann):
        """Annotations: the indices the subschema accepts (the specification's rule)."""
        if ann is not None and ann.items is not True:
            ann.idx.update(i for i in range(len(inst)) if sub is None or sub(inst[i], None, None, None))

    def check(inst, path, errors, ann):
        note(inst, ann)
        if high is None and low == 0:
            return True
        if high is not None and low > high:
            return fail(path, errors)
        if sub is None:
            n = len(inst)
            return (n >= low and (high is None or n <= high)) or fail(path, errors)
        start = len(errors) if errors is not None else 0
        valid = low == 0
        count = 0
        for i, item in enumerate(inst):
            if sub(item, (path, i), errors, None):
                count += 1
                if high is None:
                    if count >= low:
                        valid = True
                        break
                elif count > high:
                    valid = False
                    break
                elif count >= low:
                    valid = True
        return _outcome(valid, errors, start, path, kpath, "contains", dict(params), message)
    return check


@_keyword("unevaluatedItems")
def _k_unevaluated_items(c, schema, value, kpath, spath, cx):
    sub = _unevaluated_schema(c, value, kpath, cx)
    if sub is _valid:
        return _mark_all_items

    def check(inst, path, errors, ann):
        upto, ann.items = ann.items, True
        if upto is True:
            return True
        left = [i for i in range(upto, len(inst)) if i not in ann.idx]
        if sub is not None:
            return _apply([(sub, i) for i in left], inst, path, errors)
        if left and errors is not None:
            _report(errors, path, kpath, "unevaluatedItems", {"limit": upto},
                    "must NOT have more than %d items" % upto)
        return not left
    return check


# ---------------------------------------------------------------------------
# Defaults: Ajv's useDefaults on the input side
# ---------------------------------------------------------------------------


class _Defaulter(object):
    """Compiles the walk that fills ``default``s the way Ajv's useDefaults does.

    Ajv fills a missing property from ``properties[name].default`` when it validates
    an object against a schema that is not under anyOf/oneOf/not/if/contains/
    propertyNames.  The walk follows the same order as validation: $dynamicRef, $ref,
    allOf and if/then/else first, then this object's defaults, then its members and
    items.  A $dynamicRef leads where validation's does: the walk keeps the same
    dynamic scope.
    Subschemas from which no default can be reached compile to None and cost nothing.
    """

    def __init__(self, compiler, root, base):
        self.c = compiler
        self.cache = {}
        self.needed = self.reaching(root, base)

    def edges(self, schema, base):
        """The (subschema, base) pairs the walk may enter from ``schema``."""
        out = []
        if "$dynamicRef" in schema:
            static, candidates = self.c.dynamic_targets(schema["$dynamicRef"], base, "$dynamicRef")
            out.append(static)
            out.extend((candidates or {}).values())
        if "$ref" in schema:
            out.append(self.c.resolve(schema["$ref"], base, "$ref"))
        for key in ("allOf", "prefixItems"):
            out.extend((sub, base) for sub in schema.get(key) or ())
        if "if" in schema:   # then and else without if are ignored, as Ajv ignores them
            out.extend((schema[key], base) for key in ("then", "else") if key in schema)
        for key in ("additionalProperties", "items"):
            if key in schema:
                out.append((schema[key], base))
        for key in ("properties", "patternProperties", "dependentSchemas"):
            if type(schema.get(key)) is dict:
                out.extend((sub, base) for sub in schema[key].values())
        return [(sub, self.c.bases.get(id(sub), b)) for sub, b in out if type(sub) is dict]

    def reaching(self, root, base):
        """Ids of the schemas from which some property default can be reached."""
        if type(root) is not dict:
            return set()
        graph, stack = {}, [(root, self.c.bases.get(id(root), base))]
        while stack:
            schema, b = stack.pop()
            if id(schema) in graph:
                continue
            graph[id(schema)] = children = self.edges(schema, b)
            stack.extend(children)
        needed = set()
        for schema, _ in [(root, base)] + [e for es in graph.values() for e in es]:
            p = schema.get("properties")
            if type(p) is dict and any(type(v) is dict and "default" in v for v in p.values()):
                needed.add(id(schema))
        changed = True
        while changed:
            changed = False
            for key, children in graph.items():
                if key not in needed and any(id(sub) in needed for sub, _ in children):
                    needed.add(key)
                    changed = True
        return needed

    def build(self, schema, base, spath):
        if type(schema) is not dict or id(schema) not in self.needed:
            return None
        key = id(schema)
        fn = self.cache.get(key)
        if fn is None:
            cell = []
            self.cache[key] = lambda inst: cell[0](inst)
            fill = self.build_object(schema, self.c.bases.get(key, base), spath)
            if "$id" in schema:
                fill = self.scoped(fill, self.c.bases.get(key, base))
            cell.append(fill)
            fn = self.cache[key] = cell[0]
        return fn

    def scoped(self, fill, base):
        """Enter a schema resource while filling, as validation enters it (see _Compiler.scoped)."""
        if fill is None or not self.c.uses_dynamic:
            return fill
        doc = _split_fragment(base)[0]

        def enter(inst):
            scope = _tls.scope
            scope.append(doc)
            try:
                fill(inst)
            finally:
                scope.pop()
        return enter

    def build_object(self, schema, base, spath):
        steps = []
        if "$dynamicRef" in schema:
            steps.append(self.dynamic(schema["$dynamicRef"], base, spath + "/$dynamicRef"))
        if "$ref" in schema:
            target, tbase = self.c.resolve(schema["$ref"], base, spath + "/$ref")
            steps.append(self.scoped(self.build(target, tbase, schema["$ref"]), tbase))
            if not _has_rules(schema, ignore_ref=True):
                return steps[-1] or _no_defaults
        for i, sub in enumerate(schema.get("allOf") or ()):
            steps.append(self.build(sub, base, "%s/allOf/%d" % (spath, i)))
        steps.append(self.conditional(schema, base, spath))
        steps = [s for s in steps if s is not None]
        own = self.object_step(schema, base, spath)
        items = self.array_step(schema, base, spath)

        def fill(inst):
            for step in steps:
                step(inst)
            t = type(inst)
            if t is dict and own is not None:
                own(inst)
            elif t is list and items is not None:
                items(inst)
        return fill

    def dynamic(self, ref, base, spath):
        """The fill step of a $dynamicRef: its target's, the one validation picks."""
        (target, tbase), candidates = self.c.dynamic_targets(ref, base, spath)
        static = self.scoped(self.build(target, tbase, ref), tbase)
        if candidates is None:
            return static
        steps = dict((doc, self.scoped(self.build(node, nbase, ref), nbase))
                     for doc, (node, nbase) in candidates.items())
        if static is None and not any(steps.values()):
            return None

        def fill(inst):
            step = static
            for doc in _tls.scope:
                if doc in steps:
                    step = steps[doc]
                    break
            if step is not None:
                step(inst)
        return fill

    def conditional(self, schema, base, spath):
        if "if" not in schema:
            return None
        then = self.build(schema.get("then"), base, spath + "/then")
        other = self.build(schema.get("else"), base, spath + "/else")
        if then is None and other is None:
            return None
        cond = self.c.compile(schema["if"], spath + "/if", _Context(base))

        def fill(inst):
            step = then if cond(inst, None, None, None) else other
            if step is not None:
                step(inst)
        return fill

    def object_step(self, schema, base, spath):
        props = schema.get("properties") if type(schema.get("properties")) is dict else {}
        names = _js_keys(props)
        defaults = [(n, props[n]["default"]) for n in names if type(props[n]) is dict and "default" in props[n]]
        subs = self.named(props, names, base, spath + "/properties")
        patterns = schema.get("patternProperties") if type(schema.get("patternProperties")) is dict else {}
        searches = [self.c.regex(p, "patternProperties", spath).search for p in _js_keys(patterns)]
        pattern_subs = [(search, step) for search, (_, step) in
                        zip(searches, [(p, self.build(patterns[p], base, spath)) for p in _js_keys(patterns)])
                        if step is not None]
        extra = self.build(schema.get("additionalProperties"), base, spath + "/additionalProperties")
        deps = schema.get("dependentSchemas") if type(schema.get("dependentSchemas")) is dict else {}
        dep_subs = self.named(deps, _js_keys(deps), base, spath + "/dependentSchemas")
        if not (defaults or subs or pattern_subs or extra or dep_subs):
            return None

        def fill(inst):
            for name, value in defaults:
                if name not in inst:
                    # Not _copy: its fallback would catch the RecursionError of a walk that
                    # recurses through its own defaults, and go on deeper: Python 3.6-3.8
                    # then abort the process ("Cannot recover from stack overflow").
                    inst[name] = _copy_iter(value)
            if extra is not None:
                for key in _js_keys(inst):
                    if key not in props and not any(s(key) for s in searches):
                        extra(inst[key])
            for name, step in subs:
                if name in inst:
                    step(inst[name])
            for search, step in pattern_subs:
                for key in _js_keys(inst):
                    if search(key):
                        step(inst[key])
            for name, step in dep_subs:
                if name in inst:
                    step(inst)
        return fill

    def named(self, schemas, names, base, spath):
        pairs = [(n, self.build(schemas[n], base, spath + "/" + _fragment(n))) for n in names]
        return [(n, step) for n, step in pairs if step is not None]

    def array_step(self, schema, base, spath):
        prefix = schema.get("prefixItems") if type(schema.get("prefixItems")) is list else []
        firsts = [self.build(sub, base, "%s/prefixItems/%d" % (spath, i)) for i, sub in enumerate(prefix)]
        rest = self.build(schema.get("items"), base, spath + "/items")
        if rest is None and not any(firsts):
            return None

        def fill(inst):
            for i, step in enumerate(firsts[:len(inst)]):
                if step is not None:
                    step(inst[i])
            if rest is not None:
                for item in inst[len(firsts):]:
                    rest(item)
        return fill


def _no_defaults(inst):
    return None


def _composite_defaults(schema):
    """Where Ajv's strict mode refuses a default it would ignore (under anyOf/oneOf/not/if)."""
    stack = [(schema, False, "data")]
    seen = set()
    while stack:
        node, composite, where = stack.pop()
        if type(node) is not dict or (id(node), composite) in seen:
            continue
        seen.add((id(node), composite))
        props = node.get("properties")
        if type(props) is dict:
            for name, sub in props.items():
                if composite and type(sub) is dict and "default" in sub:
                    return "%s.%s" % (where, name)
                stack.append((sub, composite, where + "." + name))
        for key in ("anyOf", "oneOf"):
            for sub in node.get(key) or ():
                stack.append((sub, True, where))
        for key in ("not", "if", "contains", "propertyNames"):
            stack.append((node.get(key), True, where))
        for sub in node.get("allOf") or ():
            stack.append((sub, composite, where))
        for key in ("then", "else", "items", "additionalProperties"):
            stack.append((node.get(key), composite, where))
    return None


# ---------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------

def _depth_issues():
    """The one issue of an instance nested deeper than validating can follow."""
    return [{"instancePath": "", "schemaPath": "#", "keyword": "depth", "params": {},
             "message": "instance is nested too deeply to validate"}]


# A schema whose subschemas nest deeper than this is compiled at once even when
# asked to compile lazily: compiling recurses once per level, and a lazy compile
# runs on a caller's stack, which may be deep already.
_LAZY_DEPTH = 32


class _Compiled(object):
    """A schema's checker and defaults, shared by the validators of equal schemas.

    ``check`` is None while a schema checked lazily waits for its first use;
    ``build`` then compiles it, and no SchemaError can come out of that: a lazy
    check is only taken for schemas where indexing has found every problem the
    compile can find (see ``__init__``).  Fields change only under ``_lock``.
    """

    __slots__ = ("schema", "strict", "remotes", "patterns", "check", "dynamic", "compiler",
                 "defaulter", "defaults_ready")

    def __init__(self, schema, strict, remotes, lazy):
        self.schema = schema
        self.strict = strict
        self.remotes = remotes
        self.patterns = None
        self.check = self.compiler = self.defaulter = None
        self.defaults_ready = False
        try:
            compiler = _Compiler(schema, strict, remotes)
        except RecursionError:
            raise SchemaError("the schema is nested too deeply to compile", "schema", "#")
        self.dynamic = compiler.uses_dynamic
        # Indexing checks every keyword's value (patterns compiled).  Besides, compiling
        # resolves references, refuses what strict mode refuses and recurses once per
        # level; without references, strict mode or deep nesting nothing is left to fail.
        if lazy and not (strict or compiler.refs or compiler.uses_dynamic or compiler.depth > _LAZY_DEPTH):
            self.patterns = compiler.patterns or None
            for name in compiler.formats:
                if _FORMATS.get(name, (None, None))[1] is not None:
                    _format_test(name)   # built now: some take milliseconds (url ~27 ms)
        else:
            self.compile(compiler)

    def compile(self, compiler):
        try:
            check = compiler.env(self.schema, compiler.root_base)
            if compiler.refs or compiler.uses_dynamic:   # a schema reaches itself only by reference
                compiler.check_cycles(self.schema)
        except RecursionError:
            raise SchemaError("the schema is nested too deeply to compile", "schema", "#")
        self.compiler = compiler
        self.check = check

    def build(self):
        """The checker, compiled now if the schema was checked lazily (call under _lock)."""
        if self.check is None:
            self.compile(_Compiler(self.schema, self.strict, self.remotes, self.patterns))
            self.patterns = None
        return self.check

    def prepare_defaults(self):
        """Compile the defaults walk (call under _lock); strict mode may refuse it."""
        self.build()
        schema = self.schema
        if self.strict and type(schema) is dict:
            if "default" in schema:
                raise SchemaError("strict mode: default is ignored in the schema root", "default", "#")
            where = _composite_defaults(schema)
            if where is not None:
                raise SchemaError("strict mode: default is ignored for: %s" % where, "default", "#")
        compiler = self.compiler
        compiler.strict = False
        try:
            builder = _Defaulter(compiler, schema, compiler.root_base)
            self.defaulter = builder.scoped(builder.build(schema, compiler.root_base, "#"), compiler.root_base)
        except RecursionError:
            raise SchemaError("the schema is nested too deeply to compile", "schema", "#")
        self.compiler = None   # nothing else needs it now
        self.defaults_ready = True


def _compiled(schema, strict, remotes, lazy, shared):
    """The compiled form of ``schema``: an equal schema's from ``shared`` when it has one.

    Equal means the same JSON value with the same types and the same key order (the
    order is in the issues' order).  The key is a hash of the schema's marshal bytes
    (version 2, which has no back-references, so equal values give equal bytes): a
    microsecond or two against the compile's tens to hundreds, where repr takes
    three times as long.  A hit is confirmed value by value (_same), so a key that
    collides only costs a compile.
    """
    key = None
    if shared is not None and remotes is None:
        try:
            key = (strict, hash(marshal.dumps(schema, 2)))
        except ValueError:
            pass                        # a value marshal refuses (no JSON type), or too deep: not shared
    found = shared.get(key) if key is not None else None
    if found is not None and _same(found.schema, schema):
        return found
    compiled = _Compiled(schema, strict, remotes, lazy)
    if key is not None:
        shared[key] = compiled
    return compiled


def _same(a, b):
    """True when ``a`` and ``b`` are the same JSON value: same types, same key order."""
    try:
        return _same_rec(a, b)
    except RecursionError:
        return False


def _same_rec(a, b):
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        if len(a) != len(b):
            return False
        for (ka, va), (kb, vb) in zip(a.items(), b.items()):
            if ka != kb or type(ka) is not type(kb) or not _same_rec(va, vb):
                return False
        return True
    if t is list:
        return len(a) == len(b) and all(_same_rec(x, y) for x, y in zip(a, b))
    return a == b


class SchemaValidator(object):
    """A compiled schema.  Thread-safe: compiled once, used from any number of threads."""

    __slots__ = ("schema", "strict", "_compiled", "_check", "_dynamic")

    def __init__(self, schema, strict=False, remotes=None, lazy=False, shared=None):
        """Compile ``schema``; raise SchemaError if it cannot be used.

        ``strict`` refuses what Ajv's ``strict: true`` refuses.  ``remotes`` maps URIs
        to schemas that ``$ref`` may point to (nothing is ever fetched).  ``lazy``
        checks the schema now, raising every SchemaError compiling would, and
        compiles it when first used; a schema with ``$ref``, ``$dynamicRef``,
        ``strict`` or more than 32 levels of nesting is compiled now all the same.
        ``shared`` is a dict the caller keeps for a set of schemas compiled
        together (a pack's): validators made with it share the compiled form of
        equal schemas, so a repeated shape is compiled once.  Its content is
        this module's; it holds what it shares for as long as the caller keeps it.
        """
        if type(schema) not in (dict, bool):
            raise SchemaError("a schema must be an object or a boolean, not %s" % type(schema).__name__,
                              "schema", "#")
        self.schema = schema
        self.strict = strict
        self._compiled = _compiled(schema, strict, remotes, lazy, shared)
        self._check = self._compiled.check
        self._dynamic = self._compiled.dynamic

    def _run(self, instance, errors):
        check = self._check
        if check is None:
            with _lock:
                check = self._check = self._compiled.build()
        if self._dynamic:
            _tls.scope = []
        return check(instance, None, errors, None)

    def issues(self, instance):
        """Every issue Ajv (allErrors) reports for ``instance``, in Ajv's order."""
        errors = []
        try:
            self._run(instance, errors)
        except RecursionError:
            return _depth_issues()
        return errors

    def first_issues(self, instance, limit):
        """``(issues, left_out)``: the first ``limit`` issues ``issues()`` lists, in Ajv's
        order, and how many more there are.  The ones left out are counted, never
        made, so memory stays bounded however many issues the instance has."""
        errors = _Issues(limit)
        try:
            self._run(instance, errors)
        except RecursionError:
            errors = _depth_issues()
            return errors[:limit], len(errors[limit:])
        return errors[:], errors.left_out

    def is_valid(self, instance):
        """True when ``instance`` has no issue (stops at the first one)."""
        try:
            return bool(self._run(instance, None))
        except RecursionError:
            return False

    def apply_defaults(self, instance, in_place=False):
        """A new value: a deep copy of ``instance`` with defaults filled as Ajv's useDefaults does.

        With ``in_place`` the instance itself is filled and returned, as Ajv
        does, without the copy (an instance too deep to fill is left partly
        filled).
        """
        compiled = self._compiled
        if not compiled.defaults_ready:
            with _lock:
                if not compiled.defaults_ready:
                    compiled.prepare_defaults()
        value = instance if in_place else _copy(instance)
        defaulter = compiled.defaulter
        if defaulter is not None:
            if self._dynamic:
                _tls.scope = []
            try:
                defaulter(value)
            except RecursionError:
                return value if in_place else _copy(instance)
        return value


def check_schema(schema, strict=False):
    """Raise SchemaError if ``schema`` cannot be compiled; return None otherwise."""
    SchemaValidator(schema, strict, lazy=True)


_cache = {}


def apply_defaults(schema, instance):
    """A new value with ``schema``'s defaults filled into a copy of ``instance``.

    Compiled validators are cached by the schema object's identity, so pass the same
    (unchanged) schema object each time to pay for compiling once.
    """
    key = id(schema)
    entry = _cache.get(key)
    if entry is None or entry[0] is not schema:
        validator = SchemaValidator(schema)
        with _lock:
            if len(_cache) >= 256:
                _cache.clear()
            _cache[key] = (schema, validator)
    else:
        validator = entry[1]
    return validator.apply_defaults(instance)
