"""The ``no-shouting`` guardrail (check ``hello-pack.checks.no-shouting``): a run's output may hold only so many words in capitals."""

from kindgi import CheckResult, RunTrace, guardrail

from ..lib import text

DEFAULT_MAX_UPPER = 10


@guardrail(id="no-shouting", check_id="hello-pack.checks.no-shouting", name="No shouting",
           on_violation="block")
def no_shouting(config: dict, trace: RunTrace):
    """Fail when the run's output has more than config["maxUpper"] words in capitals.

    *config* is a plain dict (a config typed with a pydantic model would get a
    configSchema in the index, checked and filled by the service), so the
    default is applied here.
    """
    limit = config.get("maxUpper", DEFAULT_MAX_UPPER)
    output = trace.output if isinstance(trace.output, str) else ""
    shouted = text.shouted_words(output)
    if len(shouted) > limit:
        return CheckResult(
            passed=False,
            reason="%d words in capitals, at most %d allowed" % (len(shouted), limit),
            attributes={"shouted": shouted[:20]},
        )
    return CheckResult(passed=True)
