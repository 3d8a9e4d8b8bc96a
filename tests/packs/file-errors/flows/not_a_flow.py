"""A tool in flows/: kind-mismatch."""

from kindgi import tool


@tool(id="acme.errors.in-flows", description="x", input={"type": "object"}, output={})
def in_flows(input):
    return {}
