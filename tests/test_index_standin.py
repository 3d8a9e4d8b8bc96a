"""The stand-in ``kindgi``'s declarations, in process: what they carry for the indexer and what
they refuse, in the SDK's words.

Whole packs are compared with the SDK's indexer in tests/e2e/test_index_sdk.py (the
file-errors pack holds every refusal); here each rule is checked on its own, quickly.
"""

import copy
import functools
import inspect
import json
import subprocess
import sys
import typing

import pytest

import kindgi_pack_min as service
from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "e2e"))
from indexing import require_sdk  # noqa: E402


@pytest.fixture
def kindgi():
    module = service.install_standin()
    try:
        yield module
    finally:
        service.remove_standin()


def refusal(action):
    with pytest.raises(service.DefinitionError) as refused:
        action()
    return str(refused.value)


OBJECT = {"type": "object"}


@pytest.mark.skipif(sys.version_info < (3, 8), reason="Python 3.6 and 3.7 name a function by its code object")
@pytest.mark.parametrize("name, call, message", [
    ("tool", lambda kindgi: kindgi.tool(description="x"), "tool() missing 1 required keyword-only argument: 'id'"),
    ("guardrail", lambda kindgi: kindgi.guardrail(on_violation="block"),
     "guardrail() missing 1 required keyword-only argument: 'id'"),
    ("http_tool", lambda kindgi: kindgi.http_tool("h"), "http_tool() takes 0 positional arguments but 1 was given"),
    ("tool", lambda kindgi: kindgi.tool(id="x", bogus=1), "tool() got an unexpected keyword argument 'bogus'"),
])
def test_called_wrongly_the_decorators_raise_the_sdks_type_error(kindgi, name, call, message):
    """A boot problem, and the indexer's file error, say ``tool()`` as the SDK's do."""
    with pytest.raises(TypeError) as raised:
        call(kindgi)
    assert str(raised.value) == message
    assert getattr(kindgi, name).__name__ == name


def test_a_tool_carries_what_the_index_lists(kindgi):
    @kindgi.tool(id="t", version="1.2.3", input=OBJECT, output={}, effects=[{"kind": "reads"}], mutating=False,
                 needs_approval_when_unattended=True, needs=[{"kind": "secret"}], needs_spec={"a": 1},
                 sandbox="strict", limits={"timeoutMs": 1}, network={"allow": []})
    async def t(input, ctx):
        """Doc."""
    assert (t.id, t.version, t.description, t.input_schema, t.output_schema) == ("t", "1.2.3", "Doc.", OBJECT, {})
    assert (t.effects, t.mutating, t.needs_approval_when_unattended, t.needs, t.needs_spec) == (
        ({"kind": "reads"},), False, True, [{"kind": "secret"}], {"a": 1})
    assert (t.sandbox, t.limits, t.network, t.spec, t.module) == ("strict", {"timeoutMs": 1}, {"allow": []},
                                                                 None, __name__)
    assert t.takes_context and t.is_async


def test_types_from_annotations(kindgi):
    @kindgi.tool(id="t", description="d")
    def t(input: dict) -> typing.Mapping:
        return input
    assert t.input_schema == t.output_schema == {"additionalProperties": True, "type": "object"}
    assert t.input_type is dict and t._input_adapter is None


def test_string_annotations_are_evaluated_in_the_module_and_the_callers_locals(kindgi):
    Local = dict   # noqa: N806  (a type only the caller's locals know)

    @kindgi.tool(id="t", description="d")
    def t(input: "Local", ctx: "kindgi.ToolContext") -> "None":
        return None
    assert t.input_type is dict
    assert t.output_type is type(None) and t.output_schema == {"type": "null"}


def test_a_quoted_annotation_under_postponed_evaluation_is_evaluated_to_its_type(kindgi):
    """Under ``from __future__ import annotations``, ``input: "In"`` is kept as the text of a
    text, ``"'In'"``, which typing.get_type_hints evaluates again: the SDK indexed such a tool,
    where the stand-in found the string "In" and refused it."""
    Local = dict   # noqa: N806  (a type only the caller's locals know)

    @kindgi.tool(id="t", description="d")
    def t(input: "'Local'", ctx) -> "'None'":
        return None
    assert t.input_type is dict and t.output_type is type(None)


def test_when_one_annotation_cant_be_evaluated_all_stay_as_written():
    def f(input: "dict", ctx: "Undefined") -> "dict":  # noqa: F821
        pass
    assert service._standin_hints(f, {}) == {"input": "dict", "ctx": "Undefined", "return": "dict"}


@pytest.mark.skipif(sys.version_info < (3, 7), reason="Python 3.6 has no __class_getitem__")
def test_tool_subscripts_as_the_sdks_generic_tool_does(kindgi):
    """A module-level annotation runs at import: ``Tool[..., Any]`` there must not fail the boot."""
    namespace = {}
    exec("from typing import Any, Dict\nfrom kindgi import Tool\n"
         "REGISTRY: Dict[str, Tool[..., Any]] = {}\n", namespace)
    assert kindgi.Tool[[dict], dict] is kindgi.Tool


@pytest.mark.parametrize("module, names", [
    ("kindgi", ["Agent", "CallCancelled", "Cancellation", "CheckResult", "DefinitionError", "Flow", "Guardrail",
                "ModelCallRecord", "RunTrace", "Tool", "ToolCallRecord", "ToolContext", "ToolResultRecord",
                "__version__", "guardrail", "http_tool", "tool"]),
    ("kindgi.pack.define", ["Agent", "Flow", "Guardrail", "Primitive", "Tool", "guardrail", "http_tool", "tool"]),
    ("kindgi.pack.context", ["CallCancelled", "CancelReason", "Cancellation", "ToolContext"]),
    ("kindgi.pack.trace", ["CheckResult", "ModelCallRecord", "RunTrace", "ToolCallRecord", "ToolResultRecord"]),
])
def test_import_star_brings_the_names_the_sdks_all_lists(kindgi, module, names):
    """``from kindgi import *`` gives ``__version__``, and no ``log`` to hide a pack's own logger."""
    namespace = {}
    exec("from %s import *" % module, namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == names


@pytest.mark.parametrize("define, message", [
    (lambda k: k.tool(id="t", version="1.0", description="d", input=OBJECT, output={})(lambda i: i),
     'Tool "t": version must be an exact semver (e.g. 1.2.3), got \'1.0\''),
    (lambda k: k.tool(id="", description="d", input=OBJECT, output={})(lambda i: i),
     'Tool "": id must be a non-empty string'),
    (lambda k: k.tool(id="t", input=OBJECT, output={})(lambda i: i),
     'Tool "t" needs a description (description= or a docstring)'),
    (lambda k: k.tool(id="t", description="d", input=OBJECT, output={})(lambda: 1),
     'Tool "t": the handler takes (input) or (input, ctx), got 0 parameters'),
    (lambda k: k.tool(id="t", description="d", output={})(lambda i: i),
     'Tool "t": annotate the handler\'s input parameter or pass input='),
    (lambda k: k.tool(id="t", description="d", input=OBJECT)(lambda i: i),
     'Tool "t": annotate the handler\'s return type or pass output='),
    (lambda k: k.tool(id="t", description="d", input=typing.Any, output={})(lambda i: i),
     'Tool "t": the input must be an object type (a model, TypedDict, or object schema)'),
    (lambda k: k.tool(id="t", description="d", input=OBJECT, output={})(5),
     'Tool "t": cannot read the function\'s signature'),
    (lambda k: k.guardrail(id="must-cite", on_violation="halt")(lambda c, t: True),
     'Guardrail "must-cite": its check id "must-cite" is a built-in check\'s, and a pack can\'t replace a '
     'built-in. Rename your check (check_id="<pack>.checks.must-cite"), or rename the guardrail.'),
    (lambda k: k.guardrail(id="g")(lambda c, t: True), 'Guardrail "g": pass exactly one of on_violation= or action='),
    (lambda k: k.guardrail(id="g", action={})(lambda c, t: True), 'Guardrail "g": action needs a string "on-violation"'),
    (lambda k: k.guardrail(id="g", on_violation="halt")(lambda c: True),
     'Guardrail "g": the check takes (config, trace), got 1 parameters'),
    (lambda k: k.Agent(id="a", version="1", name="n", instructions="i"),
     'Agent "a": version must be an exact semver, got \'1\''),
    (lambda k: k.Agent(id="a", version="1.0.0", name="n", instructions={"prompt": 1}),
     'Agent "a": instructions must be a string, or a prompt block {"prompt", "version"}'),
    (lambda k: k.Flow(id=" ", version="1", nodes=[], edges=[]), 'Flow " ": id must be a non-empty string'),
    (lambda k: k.http_tool(id="h", description=" ", input=OBJECT, output={}, method="GET", url_template="u"),
     'Tool "h" needs a description'),
    (lambda k: k.http_tool(id="h", description="d", input=OBJECT, output={}, method="GET", url_template="/{x}"),
     'Tool "h": {x} not a field of the input, which fills placeholders'),
    (lambda k: k.http_tool(id="h", description="d", input=OBJECT, output={}, method="PUT", url_template="u",
                           success_status=(0, 200)),
     'Tool "h": not a valid HTTP tool spec: /successStatus/min must be >= 100'),
])
def test_refused_where_declared_in_the_sdks_words(kindgi, define, message):
    assert refusal(lambda: define(kindgi)) == message


def test_definition_error_is_a_value_error(kindgi):
    assert issubclass(kindgi.DefinitionError, ValueError)


def test_a_guardrail_carries_what_the_index_lists(kindgi):
    @kindgi.guardrail(id="g", kind="llm", name="G", severity="high", scope={"a": 1}, check_id="p.checks.g",
                      action={"on-violation": "retry", "retry": {"maxAttempts": 2}}, config={"limit": 1},
                      sandbox="s", limits={"l": 1}, network={"n": 1})
    def g(config: dict, trace: "RunTrace"):  # noqa: F821
        return True
    assert (g.id, g.kind, g.name, g.severity, g.scope, g.check_id) == ("g", "llm", "G", "high", {"a": 1}, "p.checks.g")
    assert (g.action, g.config, g.config_schema, g.sandbox, g.limits, g.network) == (
        {"on-violation": "retry", "retry": {"maxAttempts": 2}}, {"limit": 1}, None, "s", {"l": 1}, {"n": 1})
    assert g.trace_is_model is False   # "RunTrace" is not defined here: annotations stay as written


def test_http_tool_spec(kindgi):
    h = kindgi.http_tool(id="h", description="d", input={"type": "object", "properties": {"city": {}}}, output={},
                         method="GET", url_template="https://x.test/{city}", headers={"a": "b"}, timeout_ms=5,
                         request_body={"kind": "json-input"}, success_status=(200, 204), parse_json=False)
    assert h.spec == {"kind": "http", "method": "GET", "urlTemplate": "https://x.test/{city}",
                      "headers": [{"name": "a", "value": "b"}], "requestBody": {"kind": "json-input"},
                      "timeoutMs": 5, "parseJson": False, "successStatus": {"min": 200, "max": 204}}
    assert h.module == __name__ and not h.takes_context
    with pytest.raises(RuntimeError, match='Tool "h" is an HTTP tool: the Kindgi runtime makes its request'):
        h.handler({"city": "x"})


def test_agents_and_flows_are_equal_only_to_themselves(kindgi):
    one = kindgi.Agent(id="a", version="1.0.0", name="n", instructions="i")
    two = kindgi.Agent(id="a", version="1.0.0", name="n", instructions="i")
    assert one != two and one == one and len({one, two}) == 2
    assert one.module == __name__


def test_tools_and_guardrails_are_frozen_as_the_sdks_are(kindgi):
    """The SDK's Tool and Guardrail are frozen dataclasses: a module that assigns to one fails at
    import (a file error) with either kindgi, instead of being indexed with what it assigned."""
    made = [kindgi.tool(id="t", description="d", input=OBJECT, output={})(lambda input: input),
            kindgi.guardrail(id="g", on_violation="block")(lambda config, trace: True)]
    frozen = AttributeError if sys.version_info < (3, 7) else __import__("dataclasses").FrozenInstanceError
    for primitive in made:
        with pytest.raises(frozen) as assigned:
            primitive.version = "2.0.0"
        assert str(assigned.value) == "cannot assign to field 'version'"
        with pytest.raises(frozen) as deleted:
            del primitive.id
        assert str(deleted.value) == "cannot delete field 'id'"
        assert primitive.id in ("t", "g") and getattr(primitive, "version", None) is None
    agent = kindgi.Agent(id="a", version="1.0.0", name="n", instructions="i")
    agent.version = "2.0.0"   # an Agent (and a Flow) is not frozen, in the SDK either
    assert agent.version == "2.0.0"


@pytest.mark.parametrize("make, message", [
    (lambda k: k.Agent(), "Agent.__init__() missing 4 required positional arguments: 'id', 'version', 'name', "
                          "and 'instructions'"),
    (lambda k: k.Agent("a", "1.0.0", "n"), "Agent.__init__() missing 1 required positional argument: "
                                           "'instructions'"),
    (lambda k: k.Flow(id="f", version="1.0.0"), "Flow.__init__() missing 2 required positional arguments: "
                                                "'nodes' and 'edges'"),
    (lambda k: k.Flow(*range(12)), "Flow.__init__() takes from 5 to 11 positional arguments but 13 were given"),
    (lambda k: k.Agent("a", id="b"), "Agent.__init__() got multiple values for argument 'id'"),
    (lambda k: k.Agent(*range(30), colour=1), "Agent.__init__() got an unexpected keyword argument 'colour'"),
    (lambda k: k.Tool(x=1), "Tool.__init__() got an unexpected keyword argument 'x'"),
])
def test_a_wrong_call_is_refused_in_pythons_words_for_the_sdks_dataclasses(kindgi, make, message):
    """The SDK's Agent, Flow, Tool and Guardrail are dataclasses: a wrong call is a TypeError in
    Python 3.10+'s words, which a file error carries; the stand-in's are the same on 3.6 too."""
    with pytest.raises(TypeError) as refused:
        make(kindgi)
    assert str(refused.value) == message


def test_get_logger_takes_the_subsystem_positionally(kindgi):
    get_logger = sys.modules["kindgi.log"].get_logger
    assert get_logger() is get_logger("pack.x", bindings=1)
    with pytest.raises(TypeError, match="at most 1 positional argument"):
        get_logger("a", "b")


# -- docstrings as inspect.getdoc gives them ------------------------------------------------------

class Base:
    def method(self, input):
        """Inherited docstring."""


class Child(Base):
    def method(self, input):
        pass


def one_line(input):
    """   Spaces before and after.   """


def many_lines(input):
    """First line.

        Indented more.
    \tA tab.

    """


def no_doc(input):
    pass


@functools.wraps(one_line)
def wrapped(input):
    pass


@pytest.mark.parametrize("fn", [one_line, many_lines, no_doc, wrapped, Child().method, Child.method,
                                functools.partial(one_line), lambda input: input])
def test_docstrings_are_read_as_inspect_reads_them(fn):
    assert service._standin_doc(fn) == inspect.getdoc(fn)


# -- schemas of types ------------------------------------------------------------------------------

def test_without_pydantic_only_fixed_schemas_are_known():
    code = ("import sys; sys.path.insert(0, %r)\nimport typing, collections.abc as abc, kindgi_pack_min as s\n"
            "print([s.wire_schema(t) for t in (dict, abc.MutableMapping, typing.Dict, typing.Any, object, "
            "type(None), {'type': 'string'})])\n"
            "class Model: pass\n"
            "try:\n    s.wire_schema(Model)\nexcept TypeError as e:\n    print(e)\n"
            "print('pydantic' in sys.modules)" % str(ROOT))
    done = subprocess.run([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60)
    assert done.returncode == 0, done.stderr
    schemas, refused, imported = done.stdout.splitlines()
    obj = {"additionalProperties": True, "type": "object"}
    assert schemas == repr([obj, obj, obj, {}, {}, {"type": "null"}, {"type": "string"}])
    assert refused == ("the type Model needs pydantic 2, which is not installed: pass a JSON Schema dict "
                       "instead, or install pydantic")
    assert imported == "False"


REF_CASES = [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}},
    {"properties": {"a": {"$ref": "#/$defs/A", "description": "sibling wins"}},
     "$defs": {"A": {"type": "string", "description": "def"}}},
    {"$ref": "#/$defs/T", "$defs": {"T": {"properties": {"kids": {"items": {"$ref": "#/$defs/T"}}}}}},
    {"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {
        "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
        "B": {"properties": {"a": {"$ref": "#/$defs/A"}, "c": {"$ref": "#/$defs/C"}}},
        "C": {"type": "integer"}}},
    {"anyOf": [{"$ref": "#/$defs/Missing"}, {"$ref": "#/$defs/C"}], "$defs": {"C": {"type": "null"}}},
    {"items": [{"$ref": "#/$defs/L"}], "$defs": {"L": {"items": {"$ref": "#/$defs/L"}}}},
    # C is recursive only as seen from A, which B reaches: found while A's definition is kept.
    {"properties": {"top": {"$ref": "#/$defs/B"}}, "$defs": {
        "A": {"properties": {"c": {"$ref": "#/$defs/C"}, "a": {"$ref": "#/$defs/A"}}},
        "B": {"properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}, "c": {"$ref": "#/$defs/C"}}},
        "C": {"properties": {"b": {"$ref": "#/$defs/B"}}}}},
]


def test_refs_are_inlined_except_recursive_ones():
    tree = service._standin_inline_refs(json.loads(json.dumps(REF_CASES[2])))
    assert tree["$defs"] == {"T": {"properties": {"kids": {"items": {"$ref": "#/$defs/T"}}}}}
    assert tree["properties"]["kids"]["items"] == {"$ref": "#/$defs/T"}
    assert service._standin_inline_refs(json.loads(json.dumps(REF_CASES[1])))["properties"]["a"] == {
        "type": "string", "description": "sibling wins"}


def test_every_ref_left_names_a_definition_kept():
    for case in REF_CASES:
        tree = service._standin_inline_refs(json.loads(json.dumps(case)))
        left = {ref[len("#/$defs/"):] for ref in refs_in(tree)}
        assert left - set(tree.get("$defs", {})) <= {"Missing"}, case   # Missing: never defined


def refs_in(node):
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        node = list(node.values())
    if isinstance(node, list):
        for item in node:
            yield from refs_in(item)


def test_refs_are_inlined_as_the_sdk_inlines_them():
    python = require_sdk()
    done = subprocess.run([python, "-c", "import json, sys\nfrom kindgi._schema import _inline_refs\n"
                           "print(json.dumps([_inline_refs(c) for c in json.load(sys.stdin)]))"],
                          input=json.dumps(REF_CASES).encode(), stdout=subprocess.PIPE, check=True, timeout=60)
    assert json.loads(done.stdout) == [service._standin_inline_refs(json.loads(json.dumps(c))) for c in REF_CASES]


def test_pydantic_models_without_made_up_titles():
    pydantic = pytest.importorskip("pydantic", reason="the pydantic route needs pydantic")

    class Inner(pydantic.BaseModel):
        text_value: str = pydantic.Field(alias="textValue")

    class Outer(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(title="Chosen")
        inner: Inner

    schema = service.wire_schema(Outer)
    assert schema == {"title": "Chosen", "type": "object", "required": ["inner"], "properties": {"inner": {
        "type": "object", "required": ["textValue"], "properties": {"textValue": {"type": "string"}}}}}


def test_names_quoted_inside_a_generic_are_evaluated_as_the_sdk_evaluates_them(kindgi):
    """``List["Out"]``: typing.get_type_hints, which the SDK uses, evaluates the quoted name; left
    as written, pydantic can't describe the type and the module fails to load."""
    pydantic = pytest.importorskip("pydantic", reason="a quoted model needs pydantic")

    class Out(pydantic.BaseModel):
        mode: typing.Literal["a", "b"] = "a"

    def handler(input: dict) -> typing.Dict[str, typing.List[typing.Optional["Out"]]]:
        return {"all": [Out(), None]}

    tool = kindgi.tool(id="quoted", description="x", input=OBJECT)(handler)
    assert tool.output_type == typing.Dict[str, typing.List[typing.Optional[Out]]]
    assert tool.dump_output(handler({})) == {"all": [{"mode": "a"}, None]}


def test_a_copied_record_has_extra_fields_of_its_own(kindgi):
    """``copy.copy`` of a check result, as of pydantic's model: an extra set on the copy stays off the original."""
    result = kindgi.CheckResult(passed=True, verdict="fine")
    copied = copy.copy(result)
    copied.score = 2
    copied.verdict = "changed"
    assert result.to_wire() == {"passed": True, "verdict": "fine"}
    assert copied.to_wire() == {"passed": True, "verdict": "changed", "score": 2}


def test_a_context_equals_its_copy_as_the_sdks_dataclass_does(kindgi):
    """Equal field by field but for the logger; a context with another cancellation is another call's."""
    ctx = kindgi.ToolContext.for_test(env={"A": "1"})
    assert ctx == copy.copy(ctx) and not ctx != copy.copy(ctx)
    assert ctx == kindgi.ToolContext("tenant-test", "run-test", env={"A": "1"}, cancellation=ctx.cancellation,
                                     log=object())
    assert ctx != kindgi.ToolContext.for_test(env={"A": "1"}) and ctx != "ctx"
    with pytest.raises(TypeError):
        hash(ctx)


def test_a_check_results_subclass_declares_its_annotated_fields_as_pydantics_would(kindgi):
    """``to_wire`` carries their defaults; str, int, float and bool are converted; a ClassVar is no field."""
    class Scored(kindgi.CheckResult):
        score: float = 0.0
        matched_terms: typing.List[str] = []
        label: typing.ClassVar[str] = "scored"
        needed: int

    assert Scored(passed=True, needed="3").to_wire() == {"passed": True, "score": 0.0, "matchedTerms": [], "needed": 3}
    assert Scored(passed=False, score="1.5", matchedTerms=["a"], needed=1).to_wire() == {
        "passed": False, "score": 1.5, "matchedTerms": ["a"], "needed": 1}
    with pytest.raises(ValueError) as refused:
        Scored(passed=True, score="high")
    assert [issue["instancePath"] for issue in refused.value.issues] == ["/score", "/needed"]


def test_a_check_results_subclass_converts_fields_whose_annotations_are_text(kindgi):
    """Under ``from __future__ import annotations`` each annotation is its text ("float"):
    those fields were kept as given, where pydantic converts them ("2.5" to 2.5) or refuses them."""
    class Scored(kindgi.CheckResult):
        score: "float" = 0.0
        flag: "bool" = False

    assert Scored(passed=True, score="2.5", flag="yes").to_wire() == {"passed": True, "score": 2.5, "flag": True}
    assert Scored(passed=True, score=1).to_wire()["score"] == 1.0
    with pytest.raises(ValueError) as refused:
        Scored(passed=True, score="high")
    assert [issue["instancePath"] for issue in refused.value.issues] == ["/score"]


def test_a_records_text_is_pydantics(kindgi):
    """``str()`` of a record, as in a check's ``reason=f"saw {call}"``, reads as the SDK's pydantic model's."""
    call = kindgi.ToolCallRecord(tool_id="a", tool_name="A", at="now", extra=1)
    assert str(call) == "tool_id='a' tool_name='A' arguments={} at='now' extra=1"
    assert "%s" % kindgi.CheckResult(passed=True, attributes={"calls": [call]}) == (
        "passed=True reason=None judge_response=None attributes={'calls': [ToolCallRecord(tool_id='a', "
        "tool_name='A', arguments={}, at='now', extra=1)]}")
