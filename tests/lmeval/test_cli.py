"""The bridge through the real CLI (``mill task=lm_eval``), lm-eval's CLI with Mill's engine
(``python -m mill.lm_eval``), and their one-line errors. Real processes, tiny models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_mill, run_process
from tests.lmeval.conftest import skip_without_lm_eval, skip_without_shared

pytestmark = [pytest.mark.slow, skip_without_lm_eval, skip_without_shared]


def _bridge(
    local_tasks: Path, run_dir: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return run_mill(
        "task=lm_eval",
        f"task.include_path={local_tasks}",
        "task.include_defaults=false",
        f"hydra.run.dir={run_dir}",
        *extra,
        env=env,
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


def test_progress_is_mills_alone(local_tasks: Path, tmp_path: Path) -> None:
    """A bridged run prints Mill's progress only: not lm-eval's tqdm bar per task while it
    builds contexts, nor ``datasets``' bars generating and mapping the splits (a fresh
    datasets cache, so the splits are generated in this run)."""
    proc = _bridge(
        local_tasks, tmp_path / "run", "task.tasks=[mill_arc_group]", "task.limit=2",
        "model=fake", env={"HF_DATASETS_CACHE": str(tmp_path / "datasets")},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "[mill] building requests: 2/2" in proc.stderr
    assert (tmp_path / "datasets").is_dir()  # the splits were generated in this run
    for bar in ("it/s]", "examples/s]", "Generating", "Map", "%|"):
        assert bar not in proc.stderr, proc.stderr[-2000:]


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


def _lm_eval_cli(
    module: str, model: str, model_args: str, local_tasks: Path, out: Path
) -> subprocess.CompletedProcess[str]:
    """lm-eval's CLI (``module``: ``lm_eval``, or ``mill.lm_eval`` with ``--model mill``) on
    the test tasks, with lm-eval's default device: no ``--device``."""
    return run_process(
        sys.executable, "-m", module, "--model", model, "--model_args", model_args,
        "--tasks", "mill_arc_easy,mill_wikitext", "--include_path", str(local_tasks),
        "--limit", "6", "--output_path", str(out), "--log_samples", timeout=900,
    )  # fmt: skip


def _lm_eval_out(out: Path) -> tuple[dict, dict[str, list[dict]]]:
    """lm-eval's results file and its samples per task, from ``--output_path``."""
    (file,) = out.rglob("results_*.json")
    samples = {
        task: [json.loads(line) for line in next(out.rglob(f"samples_{task}_*.jsonl")).open()]
        for task in ("mill_arc_easy", "mill_wikitext")
    }
    return json.loads(file.read_text()), samples


def test_lm_eval_cli_with_mill_engine_equals_hf_on_cpu(local_tasks: Path, tmp_path: Path) -> None:
    """The README's ``python -m mill.lm_eval --model mill`` without ``--device``: lm-eval
    passes its default (``cuda:0``); on a machine without CUDA Mill logs and runs on the CPU
    as lm-eval's ``hf`` does, with the same metrics."""
    import torch

    from mill.lm_eval import INSTALL_HINT  # noqa: F401 - the package imports without lm_eval

    model = Path(__file__).resolve().parents[2] / "mill" / "resources" / "models" / "stories260k"
    mill_out, hf_out = tmp_path / "mill", tmp_path / "hf"
    proc = _lm_eval_cli("mill.lm_eval", "mill", f"pretrained={model}", local_tasks, mill_out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if not torch.cuda.is_available():
        assert "Device 'cuda:0' not available (Cuda Available? False" in proc.stderr
        assert "using cpu" in proc.stderr
    results, samples = _lm_eval_out(mill_out)
    assert results["config"]["model"] == "mill"
    assert results["config"]["mill_model"]["pretrained"] == str(model)
    # lm-eval's default batch size (1) would cap Mill's forward passes: auto unless given
    assert results["config"]["batch_size"] == "auto"

    proc = _lm_eval_cli("lm_eval", "hf", f"pretrained={model},dtype=float32", local_tasks, hf_out)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Device not specified" in proc.stderr or torch.cuda.is_available()
    hf_results, hf_samples = _lm_eval_out(hf_out)
    for task in ("mill_arc_easy", "mill_wikitext"):
        mine, theirs = results["results"][task], hf_results["results"][task]
        metrics = [k for k in theirs if "," in k and "_stderr" not in k]
        assert metrics and {k: mine[k] for k in metrics} == pytest.approx(
            {k: theirs[k] for k in metrics}, rel=1e-6
        ), task
        # and per request: the same log-likelihoods (1e-4, Mill's parity bound), per doc
        # the same accuracies
        assert [s["doc_id"] for s in samples[task]] == [s["doc_id"] for s in hf_samples[task]]
        for a, b in zip(samples[task], hf_samples[task], strict=True):
            assert _lls(a) == pytest.approx(_lls(b), abs=1e-4, rel=1e-6), (task, a["doc_id"])
            assert [a.get(k) for k in ("acc", "acc_norm")] == [
                b.get(k) for k in ("acc", "acc_norm")
            ]


def _lls(sample: dict) -> list[float]:
    """The log-likelihoods of an lm-eval sample line (its ``resps``, stored as strings)."""
    return [float(r[0][0] if isinstance(r[0], list) else r[0]) for r in sample["resps"]]
