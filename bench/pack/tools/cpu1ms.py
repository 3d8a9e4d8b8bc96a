"""Bench tool `cpu1ms`: about 1 ms of pure-Python work (it holds the GIL).

The work is a fixed number of loop rounds, not a timed loop, so every
service is given exactly the same work.
"""

from kindgi import tool

ROUNDS = 14000
"""Loop rounds: about 1 ms on a 2020s x86 core with CPython 3.11."""

INPUT = {
    "type": "object",
    "properties": {"seed": {"type": "integer", "minimum": 0}},
    "required": ["seed"],
}

OUTPUT = {
    "type": "object",
    "properties": {"digest": {"type": "integer"}},
    "required": ["digest"],
}


@tool(id="cpu1ms", version="1.0.0", input=INPUT, output=OUTPUT)
def cpu1ms(input, ctx):
    """Mix the seed through ROUNDS rounds of integer arithmetic."""
    value = input["seed"]
    for i in range(ROUNDS):
        value = (value * 31 + i) % 1000003
    return {"digest": value}
