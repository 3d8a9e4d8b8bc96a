from typing import Any, Mapping

from kindgi import CheckResult, RunTrace, guardrail


@guardrail(id="acme.kitchen.full", kind="llm-judge", name="Full", severity="high",
           scope={"agents": ["acme.kitchen.agent"]}, check_id="acme.kitchen.checks.full",
           action={"on-violation": "retry", "retry": {"maxAttempts": 2}},
           config={"limit": 3, "words": ["a", "b"]}, sandbox="strict", limits={"timeoutMs": 100},
           network={"allow": []})
def full(config: Mapping, trace: RunTrace) -> CheckResult:
    return CheckResult(passed=len(trace.output or "") <= config.get("limit", 3))


@guardrail(id="acme.kitchen.untyped", on_violation="escalate")
def untyped(config: Any, trace) -> bool:
    return True


@guardrail(id="acme.kitchen.raw-trace", on_violation="halt")
def raw_trace(config: dict, trace: dict):
    return {"passed": isinstance(trace, dict)}
