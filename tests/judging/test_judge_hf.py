"""Judging with a real model: stories260k as candidate and judge through the HF backend,
in real ``mill`` processes. Its replies are nonsense, so these runs raise
``judge.max_invalid`` to 1.0 and prove the invalid-reply path, the judge's response cache,
and a judging phase killed by SIGKILL that resumes without repeating a judge call."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from tests.helpers import run_mill

pytestmark = pytest.mark.slow

# the bundled example: 3 questions, 2 + 2 + 1 turns -> 5 answers, then 5 judge calls
ARGS = (
    "task=judged",
    "model=stories260k",
    "judge=stories260k",
    "task.generation.max_gen_toks=12",
    "judge.generation.max_gen_toks=12",
    "report.progress=never",
)
ANSWERS = JUDGMENTS = 5


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def test_stories260k_judge_invalid_replies_cache_and_resume_after_sigkill(tmp_path) -> None:
    # killed after the 5 answers and 2 of the 5 judgments were delivered (and committed)
    folder = tmp_path / "run"
    other_cache = f"runner.cache={tmp_path / 'cache2'}"
    killed = run_mill(
        *ARGS, other_cache, "judge.max_invalid=1.0", f"hydra.run.dir={folder}",
        env={"MILL_FAULT": f"response:{ANSWERS + 2}"},
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = run_mill(
        *ARGS, other_cache, "judge.max_invalid=1.0", "runner.resume=true", f"hydra.run.dir={folder}"
    )
    assert resumed.returncode == 0, resumed.stderr
    manifest = _manifest(folder)
    assert manifest["status"] == "succeeded" and manifest["attempts"] == 2
    assert manifest["cache"]["hits"] == ANSWERS and manifest["cache"]["computed"] == 0
    judge = manifest["judge"]
    assert (judge["cache"]["hits"], judge["cache"]["computed"]) == (2, JUDGMENTS - 2)
    assert judge["judgments"]["judgments"] == JUDGMENTS
    assert judge["conversation_format"] == "plain_text"
    assert judge["identity"]["weights_fingerprint"]
    results = json.loads((folder / "results.json").read_text())
    row = results["tasks"]["judged"]["metrics"]["judge_score"]
    assert row["details"]["n_invalid"] == judge["judgments"]["invalid"]
    assert row["n"] == 3

    # the same judging again, in a new folder on the same cache: every call is a hit
    again = run_mill(*ARGS, other_cache, "judge.max_invalid=1.0", f"hydra.run.dir={tmp_path / 'b'}")
    assert again.returncode == 0, again.stderr
    second = _manifest(tmp_path / "b")["judge"]["cache"]
    assert (second["hits"], second["computed"]) == (JUDGMENTS, 0)
    b = json.loads((tmp_path / "b" / "results.json").read_text())
    assert b["tasks"] == results["tasks"]
    # the default judge.max_invalid (0.1): one line, exit 2
    strict = run_mill(*ARGS, other_cache, f"hydra.run.dir={tmp_path / 'strict'}")
    assert strict.returncode == 2, strict.stderr
    error = [x for x in strict.stderr.splitlines() if x.startswith("mill: error")]
    assert (
        len(error) == 1 and "judgments did not parse (more than judge.max_invalid=0.1)" in error[0]
    )
    assert re.search(r"the first: judged/\d judge_score t\d: ", error[0])

    # the candidate's weights are released before the judge loads
    log = (folder / "mill.log").read_text()
    assert log.rindex("released the candidate model") < log.rindex("loading judge stories260k")
    # the phase clock: the judge's load and the judging are phases of their own
    phases = [x for x in log.splitlines() if "phases:" in x]
    assert "judge model" in phases[-1] and "judging" in phases[-1]
