"""benchmarks.cb_before_after: its BBH workload (27 tasks, each with its own few-shot prompt,
through the bridge with docs/real-model.md's recipe) runs both sides and compares their
samples; a smoke run on stories260k, one question of each task, the same checkout twice."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from benchmarks import cb_before_after
from benchmarks.driver_common import SHARED_DATA
from tests.helpers import installed


@pytest.mark.slow  # two `mill` processes through lm-eval's bridge, about a minute
@pytest.mark.skipif(not installed("lm_eval"), reason="lm-eval is not installed")
@pytest.mark.skipif(
    not (SHARED_DATA / "bbh").is_dir(), reason=f"no BBH data at {SHARED_DATA / 'bbh'}"
)
def test_the_bbh_workload_times_both_sides_and_finds_the_same_samples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--before", sys.executable, "--workloads", "bbh", "--rounds", "1"]
    argv += ["--bbh-questions", "1", "--bbh-model", "stories260k"]
    assert cb_before_after.main(argv) == 0
    out = capsys.readouterr().out
    assert "stories260k BBH 3-shot, 1 per task before round 0:" in out
    assert "stories260k BBH 3-shot, 1 per task after round 0:" in out
    (row,) = [line for line in out.splitlines() if line.startswith("| stories260k BBH")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert float(cells[1]) > 0 and float(cells[2]) > 0
    assert cells[-1] == "yes"


def test_a_workload_without_its_data_is_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(cb_before_after, "DATA", tmp_path)
    with pytest.raises(SystemExit, match=r"^workload bbh: no BBH data at "):
        cb_before_after.main(["--before", sys.executable, "--workloads", "bbh"])
