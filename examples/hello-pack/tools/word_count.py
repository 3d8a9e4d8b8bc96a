"""The ``word-count`` tool: counts the words of a text."""

from kindgi import tool

from ..lib import text

INPUT = {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
    "additionalProperties": False,
}

OUTPUT = {
    "type": "object",
    "properties": {
        "words": {"type": "integer", "minimum": 0},
        "shouted": {"type": "integer", "minimum": 0},
    },
    "required": ["words", "shouted"],
    "additionalProperties": False,
}


@tool(id="word-count", version="0.1.0", description="Count the words of a text.",
      input=INPUT, output=OUTPUT)
def word_count(input):
    """Count all words and the words written in capitals."""
    body = input["text"]
    return {"words": len(text.words(body)), "shouted": len(text.shouted_words(body))}
