import os

from kindgi import tool


@tool(id="acme.env.read", description="Which declared variables are set.",
      input={"type": "object"}, output={"type": "object"})
def read_env(input):
    return {name: os.environ.get(name) for name in ("ZED_URL", "alpha_key", "_UNDER", "Beta", "OPT_A")}
