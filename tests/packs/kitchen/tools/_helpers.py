"""A helper module: its name starts with _, so defining nothing is fine."""

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}
