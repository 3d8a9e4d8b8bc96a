"""End-to-end: a short seeded run of the fuzzer in tools/fuzz.py.

400 cases (half raw request bytes with mutations, half well-framed invokes
with random bodies and headers) from fixed seeds, at most 8 s each.  Zero
crashes, zero 5xx, zero answers lost, zero malformed answers, and no
``service-error`` record.  The longer campaign is ``python3 tools/fuzz.py``.
"""

from __future__ import annotations

import random
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import fuzz  # noqa: E402


@pytest.mark.parametrize("seed", [7, 2026])
def test_short_fuzz_campaign(launcher, tmp_path, seed):
    index = fuzz.write_pack(str(tmp_path))
    svc = launcher.start(index, token=fuzz.TOKEN, env={"KINDGI_LOG_LEVEL": "error"})
    figures = fuzz.Campaign(svc.port, seed, cases=200, seconds=8.0, workers=8,
                            alive=lambda: svc.proc.poll() is None).run()
    assert figures.counts["cases"] >= 50, figures.report()
    assert figures.failures == 0, figures.report()
    assert not svc.records_of("service-error"), svc.records_of("service-error")
    assert svc.request("GET", "/healthz", token=False).status == 200


def test_same_seed_same_cases():
    """A seed names a campaign: the same seed makes the same cases."""
    def cases(seed):
        rng = random.Random(seed)
        return [fuzz.byte_case(rng) for _ in range(20)] + [fuzz.message_case(rng) for _ in range(20)]

    assert cases(5) == cases(5) and cases(5) != cases(6)
