from kindgi import tool

INPUT = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}


@tool(id="acme.versions.convert", version="1.0.0", description="Convert, as version 1.0.0 does.",
      input=INPUT, output={"type": "object"})
def convert(input):
    return {"version": "1.0.0", "value": input["value"]}
