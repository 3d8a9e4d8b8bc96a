"""Version 1.4.0 given explicitly: the pack's version, which tools/convert_default.py took first."""

from kindgi import tool


@tool(id="acme.versions.convert", version="1.4.0", description="Convert again.",
      input={"type": "object"}, output={"type": "object"})
def convert(input):
    return {"version": "1.4.0"}
