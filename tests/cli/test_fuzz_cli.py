"""The independent command-line fuzzer (tests/cli_fuzz.py) in the test suite: a few cases by
default, many under ``-m fuzz_long`` (``TRAINPLAN_CLI_FUZZ_CASES``, default 2,000; seed
``TRAINPLAN_CLI_FUZZ_SEED``), with the counts printed."""

from __future__ import annotations

import os
import time

import pytest
from cli_fuzz import run

#: Cases of the default run, and its seed (new seeds: none of tests/instance/test_fuzz.py's).
SHORT_CASES = 30
SEED = 260_226


def test_cli_fuzz_short() -> None:
    tally = run(SHORT_CASES, SEED)
    assert tally["cases"] == SHORT_CASES
    assert len({k.split(":")[0] for k in tally if ":" in k}) >= 6  # most commands drawn


@pytest.mark.fuzz_long
@pytest.mark.timeout(12 * 3600)
def test_cli_fuzz_long(capsys: pytest.CaptureFixture[str]) -> None:
    n = int(os.environ.get("TRAINPLAN_CLI_FUZZ_CASES", "2000"))
    seed = int(os.environ.get("TRAINPLAN_CLI_FUZZ_SEED", str(SEED + 1)))
    t0 = time.perf_counter()
    tally = run(n, seed)
    with capsys.disabled():
        counts = ", ".join(f"{k} {v}" for k, v in sorted(tally.items()))
        print(f"\ncli fuzz: {tally['cases']} cases in {time.perf_counter() - t0:.0f} s: {counts}")
    assert tally["cases"] == n
