from kindgi import tool

INPUT = {"type": "object", "properties": {"value": {"type": "number"}}, "required": ["value"]}


@tool(id="acme.versions.convert", version="2.0.0-beta.1+build.7", description="Convert, as version 2.0.0-beta.1+build.7 does.",
      input=INPUT, output={"type": "object"})
def convert(input):
    return {"version": "2.0.0-beta.1+build.7", "value": input["value"]}
