from kindgi import tool


@tool(id="acme.kitchen.deep", description="Found at any depth.", input={"type": "object"}, output={})
def deep(input):
    return {"deep": True}
