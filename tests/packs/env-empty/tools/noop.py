from kindgi import tool


@tool(id="acme.env-empty.noop", description="Nothing.", input={"type": "object"}, output={})
def noop(input):
    return {}
