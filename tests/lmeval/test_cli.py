"""The bridge through the real CLI (``mill task=lm_eval``), lm-eval's CLI with Mill's engine
(``python -m mill.lm_eval``), and their one-line errors. Real processes, tiny models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.lmeval.conftest import needs_lm_eval, needs_shared

pytestmark = [pytest.mark.slow, needs_lm_eval, needs_shared]


def _bridge(local_tasks: Path, run_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_mill(
        "task=lm_eval",
        f"task.include_path={local_tasks}",
        "task.include_defaults=false",
        f"hydra.run.dir={run_dir}",
        *extra,
        timeout=900,
    )


def _samples(run_dir: Path, task: str) -> list[dict]:
    lines = (run_dir / "samples" / f"{task}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_group_and_rolling_run_report_and_compare(local_tasks: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    proc = _bridge(
        local_tasks, a, "task.tasks=[mill_arc_group,mill_wikitext]", "task.limit=4",
        "model=stories260k",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads((a / "results.json").read_text())
    tasks = results["tasks"]
    assert set(tasks) == {"mill_arc_easy", "mill_arc_challenge", "mill_wikitext"}
    for body in tasks.values():
        for key, row in body["metrics"].items():
            assert row["n"] == 4 and row["stderr"] is not None, key
    assert set(tasks["mill_wikitext"]["metrics"]) == {
        "word_perplexity,none",
        "byte_perplexity,none",
        "bits_per_byte,none",
    }
    assert tasks["mill_wikitext"]["settings"]["output_type"] == "perplexity"
    group = results["groups"]["mill_arc_group"]["metrics"]
    easy, challenge = (tasks[t]["metrics"] for t in ("mill_arc_easy", "mill_arc_challenge"))
    # acc size-weighted (micro), acc_norm unweighted (macro), as the group YAML says
    assert group["acc,none"]["micro"]["value"] == pytest.approx(
        (easy["acc,none"]["value"] + challenge["acc,none"]["value"]) / 2
    )
    assert group["acc_norm,none"]["macro"]["value"] == pytest.approx(
        (easy["acc_norm,none"]["value"] + challenge["acc_norm,none"]["value"]) / 2
    )
    assert "macro" not in group["acc,none"] and "micro" not in group["acc_norm,none"]
    rows = _samples(a, "mill_arc_easy")
    assert [r["doc_id"] for r in rows] == [0, 1, 2, 3]
    lm = rows[0]["extra"]["lm_eval"]
    assert lm["doc"]["answerKey"] in lm["doc"]["choices"]["label"]
    assert len(lm["resps"]) == len(rows[0]["choices"]) == len(rows[0]["response"]["logprobs"])
    assert set(lm["filtered_resps"]) == {"none"}
    assert (a / "report.html").is_file() and "mill_arc_group" in (a / "report.txt").read_text()

    proc = _bridge(
        local_tasks, b, "task.tasks=[mill_arc_group]", "task.limit=4", "model=gpt2_random"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = tmp_path / "cmp"
    proc = run_mill("-cn", "compare", f"a={a}", f"b={b}", "iters=200", f"out={out}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = json.loads((out / "compare.json").read_text())["rows"]
    compared = {(r["task"], r["metric"]) for r in rows}
    assert ("mill_arc_easy", "acc,none") in compared


def test_errors_are_one_line(local_tasks: Path, tmp_path: Path) -> None:
    proc = _bridge(local_tasks, tmp_path / "x", "task.tasks=[mill_arc_esy]")
    assert proc.returncode == 2
    assert "did you mean mill_arc_easy" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not (tmp_path / "x" / "results.json").exists()

    blocked = tmp_path / "blocked" / "lm_eval"  # an lm_eval that cannot be imported
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text("raise ImportError('not installed (test)')\n")
    proc = run_mill(
        "task=lm_eval",
        "task.tasks=[hellaswag]",
        f"hydra.run.dir={tmp_path / 'y'}",
        env={"PYTHONPATH": str(blocked.parent)},
    )
    assert proc.returncode == 2
    assert 'pip install "mill-eval[lm-eval]"' in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_lm_eval_cli_with_mill_engine(local_tasks: Path, tmp_path: Path) -> None:
    from mill.lm_eval import INSTALL_HINT  # noqa: F401 - the package imports without lm_eval

    model = Path(__file__).resolve().parents[2] / "mill" / "resources" / "models" / "stories260k"
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mill.lm_eval", "--model", "mill",
            "--model_args", f"pretrained={model},dtype=float32",
            "--tasks", "mill_arc_easy", "--include_path", str(local_tasks),
            "--limit", "3", "--output_path", str(out), "--device", "cpu",
        ],
        capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (file,) = out.rglob("results_*.json")
    results = json.loads(file.read_text())
    row = results["results"]["mill_arc_easy"]
    assert 0.0 <= row["acc,none"] <= 1.0 and results["config"]["model"] == "mill"
    assert results["config"]["mill_model"]["pretrained"] == str(model)
    # lm-eval's default batch size (1) would cap Mill's forward passes: auto unless given
    assert results["config"]["batch_size"] == "auto"
