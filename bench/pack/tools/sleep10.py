"""Bench tool `sleep10`: blocks its thread for 10 ms, like a call to a database.

At concurrency 64 a service whose handlers really run side by side answers
close to 64 / 0.010 s = 6400 calls a second.
"""

import time

from kindgi import tool

SCHEMA = {"type": "object", "properties": {"tag": {"type": "string"}}}


@tool(id="sleep10", version="1.0.0", input=SCHEMA, output=SCHEMA)
def sleep10(input, ctx):
    """Sleep 10 ms, then answer the tag."""
    time.sleep(0.010)
    return {"tag": input.get("tag", "")}
