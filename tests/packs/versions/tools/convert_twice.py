"""Version 2.0.0 again: a duplicate of tools/convert_2_0_0.py."""

from kindgi import tool


@tool(id="acme.versions.convert", version="2.0.0", description="Convert, a second 2.0.0.",
      input={"type": "object"}, output={"type": "object"})
def convert(input):
    return {"version": "2.0.0 again"}


@tool(id="acme.versions.round", version="0.1.0", description="Round a number.",
      input={"type": "object"}, output={"type": "object"})
def round_value(input):
    return {"value": round(input.get("value", 0))}
