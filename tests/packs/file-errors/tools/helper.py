"""Defines nothing and its name has no leading _: no-primitives."""

VALUE = 1
