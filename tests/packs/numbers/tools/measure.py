"""Floats in a schema are written as JavaScript writes them; keys sort by UTF-16 code units."""

from kindgi import tool

INPUT = {
    "type": "object",
    "properties": {
        "10": {"type": "number", "minimum": 0.5, "maximum": 1e21},
        "2": {"type": "integer", "multipleOf": 1.0},
        "b": {"type": "number", "exclusiveMaximum": 100.0},
        "B": {"type": "number", "minimum": -0.0},
        "a10": {"type": "string"},
        "a9": {"type": "string"},
        "\u00e9": {"type": "string"},
        "\uff21": {"type": "string"},
        "\U0001f600": {"type": "string"},
        "z": {"type": "boolean"},
    },
    "x-floats": [1.0, -0.0, 0.1, 1e-7, 1.5e-7, 2.5e-6, 0.000001, 123456789012345680000.0, 1e21,
                 5e-324, 1.7976931348623157e308, 100.0, 1e16, 123.456, -2.5, 0.30000000000000004],
    "x-ints": [0, -1, 10 ** 20, 9007199254740993],
    "x-nested": {"9": [True, False, None], "10": {"1e3": 1e3, "01": "01"}},
}


@tool(id="acme.numbers.measure", description="Measure.", input=INPUT, output={"type": "object"})
def measure(input):
    return {"keys": sorted(input)}
