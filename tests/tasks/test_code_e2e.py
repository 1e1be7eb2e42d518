"""End to end on real programs: ``mill task=humaneval model=replay`` in a subprocess, the
programs run in the bubblewrap sandbox. The canonical solutions of ../shared/data/humaneval
all pass; mutants of them fail with the failing test's message; a repeated run executes
nothing (verdict cache); bad input stops at start-up with one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mill.report.rebuild import report_command
from tests.helpers import SHARED, run_mill

pytestmark = pytest.mark.slow
HUMANEVAL = SHARED / "data" / "humaneval" / "HumanEval.jsonl"
ROWS = (
    [json.loads(line) for line in HUMANEVAL.read_text().splitlines()] if HUMANEVAL.exists() else []
)
needs_data = pytest.mark.skipif(not ROWS, reason="needs ../shared/data/humaneval")


def _samples(path: Path, completions: list[tuple[str, str]]) -> Path:
    path.write_text(
        "".join(json.dumps({"task_id": t, "completion": c}) + "\n" for t, c in completions)
    )
    return path


def _mill(tmp_path: Path, run: str, *args: str) -> tuple[int, str, Path]:
    folder = tmp_path / run
    proc = run_mill(
        "task=humaneval", "model=replay", "data=local", f"data.dir={SHARED / 'data'}",
        f"runner.cache={tmp_path / 'cache'}", f"hydra.run.dir={folder}", *args,
        timeout=600,
    )  # fmt: skip
    return proc.returncode, proc.stdout + proc.stderr, folder


def _records(folder: Path) -> list[dict]:
    lines = (folder / "samples" / "humaneval.jsonl").read_text().splitlines()
    return sorted((json.loads(line) for line in lines), key=lambda r: r["doc_id"])


@needs_data
def test_canonical_solutions_pass_and_mutants_fail(tmp_path: Path) -> None:
    canonical = _samples(
        tmp_path / "canonical.jsonl", [(r["task_id"], r["canonical_solution"]) for r in ROWS]
    )
    code, out, folder = _mill(tmp_path, "canonical", f"model.path={canonical}")
    assert code == 0, out[-3000:]
    results = json.loads((folder / "results.json").read_text())
    row = results["tasks"]["humaneval"]["metrics"]["pass_at_k"]
    assert row["value"] == 1.0 and row["n"] == 164
    records = _records(folder)
    assert all(r["execution"][0]["status"] == "passed" for r in records)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["execution"]["sandbox"] == "bwrap" and not manifest["execution"]["unsafe"]

    # mutants of the first 20: wrong value, an exception, a syntax error, an infinite loop
    mutants = {
        0: "    return not True\n",
        1: "    raise ValueError('mutant raised')\n",
        2: "    return (\n",
        3: "    while True:\n        pass\n",
    }
    completions = [
        (r["task_id"], mutants.get(i, r["canonical_solution"])) for i, r in enumerate(ROWS[:20])
    ]
    path = _samples(tmp_path / "mutants.jsonl", completions)
    code, out, folder = _mill(
        tmp_path, "mutants", f"model.path={path}", "task.limit=20", "execution.timeout_s=3"
    )
    assert code == 0, out[-3000:]
    records = _records(folder)
    statuses = [r["execution"][0]["status"] for r in records]
    assert statuses[:4] == ["failed", "failed", "failed", "timed_out"]
    assert statuses[4:] == ["passed"] * 16
    assert records[1]["execution"][0]["message"].startswith("ValueError: mutant raised")
    assert records[2]["execution"][0]["message"].startswith("SyntaxError")
    results = json.loads((folder / "results.json").read_text())
    assert results["tasks"]["humaneval"]["metrics"]["pass_at_k"]["value"] == pytest.approx(0.8)
    report = (folder / "report.html").read_text()
    assert "ValueError: mutant raised" in report and "HumanEval/1" in report

    # the same run again: every verdict from the cache, none slower than the first's
    code, out, again = _mill(
        tmp_path, "again", f"model.path={path}", "task.limit=20", "execution.timeout_s=3"
    )
    assert code == 0, out[-3000:]
    assert [r["execution"] for r in _records(again)] == [r["execution"] for r in records]


@needs_data
def test_bad_input_stops_at_start_up(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not JSON\n")
    code, out, folder = _mill(tmp_path, "bad", f"model.path={bad}")
    assert code == 2 and "line 1 is not JSON" in out and "Traceback" not in out
    short = _samples(tmp_path / "short.jsonl", [(r["task_id"], "    pass\n") for r in ROWS])
    code, out, _ = _mill(
        tmp_path, "k", f"model.path={short}", "task.repeats=2",
        "task.generation.do_sample=true", "task.generation.temperature=0.8",
        "+metrics=[pass_at_k]", "metrics.pass_at_k.k=[1,5]",
    )  # fmt: skip
    assert code == 2 and "task.repeats >= 5" in out and "loading model" not in out, out[-2000:]
    missing = _samples(tmp_path / "missing.jsonl", [("HumanEval/0", "    pass\n")])
    code, out, _ = _mill(tmp_path, "missing", f"model.path={missing}", "task.limit=3")
    assert code == 2 and "id 'HumanEval/1'" in out, out[-2000:]


@needs_data
def test_unsafe_execution_is_said_in_manifest_and_reports(tmp_path: Path) -> None:
    path = _samples(tmp_path / "c.jsonl", [(r["task_id"], r["canonical_solution"]) for r in ROWS])
    code, out, _ = _mill(
        tmp_path, "refused", f"model.path={path}", "task.limit=2", "execution=none"
    )
    assert code == 2 and "allow_unsafe" in out and "loading model" not in out, out[-2000:]
    code, out, folder = _mill(
        tmp_path, "unsafe", f"model.path={path}", "task.limit=2", "execution=none",
        "execution.allow_unsafe=true",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["execution"]["unsafe"] is True
    assert "WITHOUT a sandbox" in (folder / "report.txt").read_text()
    assert "WITHOUT a sandbox" in (folder / "report.html").read_text()
    # mill -cn report rebuilds the same report.txt, the warning included
    rebuilt = tmp_path / "rebuilt"
    report_command(
        OmegaConf.create({"runs": [str(folder)], "out": str(rebuilt), "progress": "never"})
    )
    assert (rebuilt / "report.txt").read_text() == (folder / "report.txt").read_text()
    results = json.loads((folder / "results.json").read_text())
    assert results["tasks"]["humaneval"]["metrics"]["pass_at_k"]["value"] == 1.0


@needs_data
def test_a_replayed_files_repeats_are_its_own(tmp_path: Path) -> None:
    """task.repeats=5 of saved completions needs no sampling settings: the file's five
    completions per problem are the repeats (two right, three wrong: pass@1 = 0.4)."""
    rows = ROWS[:3]
    lines = [
        (r["task_id"], r["canonical_solution"] if i < 2 else "    return None\n")
        for i in range(5)
        for r in rows
    ]
    path = _samples(tmp_path / "five.jsonl", lines)
    code, out, folder = _mill(
        tmp_path, "five", f"model.path={path}", "task.limit=3", "task.repeats=5",
        "+metrics=[pass_at_k]", "metrics.pass_at_k.k=[1,5]",
    )  # fmt: skip
    assert code == 0, out[-3000:]
    metrics = json.loads((folder / "results.json").read_text())["tasks"]["humaneval"]["metrics"]
    assert metrics["pass_at_k@1"]["value"] == pytest.approx(0.4)
    assert metrics["pass_at_k@5"]["value"] == 1.0
    assert [len(r["execution"]) for r in _records(folder)] == [5, 5, 5]
