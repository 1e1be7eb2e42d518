"""benchmarks.batch_invariant_cost: both settings run as whole processes and the table has
their times, the ratio and the samples' agreement (a smoke run on stories260K: two ARC-Easy
questions, one round)."""

from __future__ import annotations

import pytest

from benchmarks import batch_invariant_cost
from benchmarks.driver_common import SHARED_DATA


@pytest.mark.slow  # two `mill` processes
@pytest.mark.skipif(not (SHARED_DATA / "arc_easy").is_dir(), reason="no ARC-Easy in ../shared/data")
def test_both_settings_run_and_the_table_has_their_ratio(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--model", "stories260k", "--workloads", "arc_easy_0shot", "--limit", "2"]
    assert batch_invariant_cost.main([*argv, "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "invariant=True round 0" in out and "invariant=False round 0" in out
    (row,) = [line for line in out.splitlines() if line.startswith("| arc_easy_0shot")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and float(cells[2]) > 0 and cells[3].endswith("x")
    assert cells[5].startswith("equal verdicts, logp apart by at most"), row
