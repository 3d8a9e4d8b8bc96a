from kindgi import tool


@tool(id="acme.versions.convert", description="Convert, at the pack's version.",
      input={"type": "object"}, output={"type": "object"})
def convert(input):
    return {"version": "pack"}
