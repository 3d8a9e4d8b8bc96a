"""Bench tool `document`: a large text in, the same text out.

What a call costs as its body grows: reading, decoding and parsing the
body, checking it for over-long integers, and writing the text back as
JSON.  The `doc-1mib` scenario sends 1 MiB of text.
"""

from kindgi import tool

INPUT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}

OUTPUT = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "length": {"type": "integer"}},
    "required": ["text", "length"],
}


@tool(id="document", version="1.0.0", input=INPUT, output=OUTPUT)
def document(input, ctx):
    """Return the text as it came, with its length."""
    return {"text": input["text"], "length": len(input["text"])}
