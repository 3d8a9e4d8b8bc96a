"""config= that does not fit the config type: refused where it is declared."""

from pydantic import BaseModel

from kindgi import guardrail


class Strict(BaseModel):
    count: int


@guardrail(id="acme.typed.misfit", on_violation="halt", config={"count": "many"})
def misfit(config: Strict, trace):
    return True
