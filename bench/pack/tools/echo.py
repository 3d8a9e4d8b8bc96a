"""Bench tools `echo` and `aecho`: three properties in, the same three out.

The smallest realistic call: what is left is the service's own cost
(HTTP, envelope parsing, a tiny schema, logging, the answer).  `aecho` is
the same call from an `async def` handler, so it adds what running a
coroutine on the service's event loop costs.
"""

from kindgi import tool

INPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string", "maxLength": 1000},
        "count": {"type": "integer", "minimum": 0},
        "loud": {"type": "boolean"},
    },
    "required": ["text", "count", "loud"],
    "additionalProperties": False,
}

OUTPUT = {
    "type": "object",
    "properties": {
        "text": {"type": "string"},
        "count": {"type": "integer"},
        "loud": {"type": "boolean"},
    },
    "required": ["text", "count", "loud"],
}


def echoed(input):
    text = input["text"].upper() if input["loud"] else input["text"]
    return {"text": text, "count": input["count"], "loud": input["loud"]}


@tool(id="echo", version="1.0.0", input=INPUT, output=OUTPUT)
def echo(input, ctx):
    """Return the input as it came."""
    return echoed(input)


@tool(id="aecho", version="1.0.0", input=INPUT, output=OUTPUT)
async def aecho(input, ctx):
    """Return the input as it came, from a coroutine."""
    return echoed(input)
