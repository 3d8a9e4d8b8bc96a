"""The tools package: no primitives, and its name starts with _, so it is skipped."""
