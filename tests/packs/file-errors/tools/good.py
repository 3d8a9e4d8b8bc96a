from kindgi import tool


@tool(id="acme.errors.good", description="The one tool that indexes.", input={"type": "object"},
      output={})
def good(input):
    return {"good": True}
