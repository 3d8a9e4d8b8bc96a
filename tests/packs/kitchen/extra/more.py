"""Outside the default tools/ folder: matched by the configured glob, its kind not checked."""

from typing import Any, Dict

from kindgi import guardrail, tool


@tool(id="acme.kitchen.more", description="From extra/.")
def more(input: Dict, ctx) -> Any:
    return {"more": True}


@guardrail(id="acme.kitchen.extra-check", on_violation="halt")
def extra_check(config, trace):
    return True
