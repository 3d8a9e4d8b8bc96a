import asyncio
from collections.abc import Mapping  # noqa: F401  (in a string annotation)

from kindgi import ToolContext, tool  # noqa: F401

from ._helpers import SCHEMA


@tool(
    id="acme.kitchen.everything", version="1.0.0", input=SCHEMA, output={"type": "object"},
    effects=[{"kind": "writes", "resource": "db:ledger"}, {"kind": "reads", "resource": "db:users"}],
    mutating=True, needs_approval_when_unattended=True,
    needs=[{"kind": "secret", "name": "LEDGER_TOKEN"}],
    needs_spec={"network": ["ledger.example.test"]},
    sandbox="strict", limits={"timeoutMs": 5000, "memoryMb": 256},
    network={"allow": ["ledger.example.test:443"]})
async def everything(input, ctx):
    """Do everything, asynchronously.

    The description is this docstring, cleaned as inspect.getdoc cleans it.
    """
    await asyncio.sleep(0)
    return {"n": input.get("n"), "tenant": ctx.tenant_id}


@tool(id="acme.kitchen.read-only", description="Reads only.", mutating=False,
      needs_approval_when_unattended=False, input={"type": "object"}, output={"type": "object"})
def read_only(input):
    return {"read": True}


@tool(id="acme.kitchen.typed", description="Annotated with dict.")
def typed(input: dict) -> dict:
    return dict(input)


@tool(id="acme.kitchen.anything", description="Returns anything.", input={"type": "object"})
def anything(input, ctx: "ToolContext") -> "Mapping":   # string annotations, evaluated in the module
    return input


@tool(id="acme.kitchen.nothing", description="Returns None.", input={"type": "object"})
def nothing(input) -> None:
    return None
