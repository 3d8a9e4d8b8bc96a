from kindgi import tool


@tool(id="acme.af.search", version="1.2.0", description="Search.", input={"type": "object"}, output={})
def search(input):
    return {"hits": []}


@tool(id="acme.af.summarise", description="Summarise (the pack's version).", input={"type": "object"},
      output={})
def summarise(input):
    return {"summary": ""}
