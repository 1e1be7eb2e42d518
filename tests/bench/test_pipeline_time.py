"""benchmarks.pipeline_time: both sides run MMLU 5-shot on the fake model as whole processes
and the table has their times, sizes and ratios (a smoke run: one question per subject, the
committed HEAD on both sides: a checkout with its links, as CI's clone has none)."""

from __future__ import annotations

import pytest

from benchmarks import pipeline_time
from benchmarks.driver_common import SHARED_DATA


@pytest.mark.slow  # two `mill` processes over MMLU's 57 subjects
@pytest.mark.skipif(not (SHARED_DATA / "mmlu").is_dir(), reason="no MMLU in ../shared/data")
def test_both_sides_run_and_the_table_has_their_ratios(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        pipeline_time.main(["--before", "HEAD", "--after", "HEAD", "--limit", "1", "--rounds", "1"])
        == 0
    )
    out = capsys.readouterr().out
    assert "before round 0:" in out and "after round 0:" in out
    rows = {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| ")}
    for side in ("before", "after"):
        cells = [float(c) for c in rows[side].strip().strip("|").split("|")[1:]]
        # wall, scoring (a few ms on one question a subject: may print 0.00), RSS, sizes
        assert len(cells) == 5 and all(c > 0 for i, c in enumerate(cells) if i != 1), rows[side]
        assert cells[1] >= 0, rows[side]
    assert rows["before / after"].count("x") + rows["before / after"].count("n/a") == 5
