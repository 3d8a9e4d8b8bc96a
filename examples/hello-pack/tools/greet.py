"""The ``greet`` tool: says hello to someone by name."""

from kindgi import ToolContext, tool

INPUT = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "excited": {"type": "boolean", "default": False},
    },
    "required": ["name"],
    "additionalProperties": False,
}

OUTPUT = {
    "type": "object",
    "properties": {"message": {"type": "string"}},
    "required": ["message"],
    "additionalProperties": False,
}


@tool(id="greet", version="0.1.0", description="Say hello to someone.",
      input=INPUT, output=OUTPUT)
def greet(input, ctx: ToolContext):
    """Greet input["name"]; ``excited`` (default false) ends with "!"."""
    name = input["name"].strip() or input["name"]
    ending = "!" if input["excited"] else "."
    ctx.log.info("greeting", {"tenant": ctx.tenant_id})
    return {"message": "Hello, " + name + ending}
