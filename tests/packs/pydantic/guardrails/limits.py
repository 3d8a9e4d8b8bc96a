from pydantic import BaseModel, Field

from kindgi import CheckResult, RunTrace, guardrail


class Limit(BaseModel):
    max_chars: int = Field(default=10, alias="maxChars", gt=0)


@guardrail(id="acme.typed.limit", on_violation="halt", config={"maxChars": 5})
def limit(config: Limit, trace: RunTrace) -> CheckResult:
    return CheckResult(passed=len(trace.output or "") <= config.max_chars)


@guardrail(id="acme.typed.by-type", on_violation="halt", config_type=Limit)
def by_type(config, trace):
    return True
