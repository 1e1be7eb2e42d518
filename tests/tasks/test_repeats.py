"""Repeats with seeded sampling on the real demo model: pass@k and maj@k end to end."""

from __future__ import annotations

from pathlib import Path

import jsonlines
import pytest
from mill.tasks.gsm8k import GSM8K

from mill.errors import ConfigError, TaskError
from mill.runner.job import run_job

SAMPLED = (
    "task=gsm8k",
    "model=stories260k",
    "task.limit=2",
    "task.num_fewshot=1",
    "task.repeats=3",
    "task.generation.max_gen_toks=12",
    "task.generation.do_sample=true",
    "task.generation.temperature=1.0",
    "+metrics=[pass_at_k,maj_at_k]",
    "metrics.pass_at_k.k=2",
    "metrics.maj_at_k.k=3",
    "report.progress=never",
)


def _texts(folder: Path) -> list[list[str]]:
    with jsonlines.open(folder / "samples" / "gsm8k.jsonl") as reader:
        return [row["response"]["text"] for row in reader]


@pytest.mark.slow  # real model, seconds of compute
def test_sampled_repeats_are_seeded_per_request(compose, tmp_path: Path) -> None:
    first = run_job(compose(*SAMPLED), tmp_path / "a")
    texts = _texts(tmp_path / "a")
    assert [len(t) for t in texts] == [3, 3]
    assert any(len(set(t)) > 1 for t in texts)  # repeats sample different answers
    # another run, one row per batch: the same samples (per-request generators)
    run_job(compose(*SAMPLED, "model.batch_size=1"), tmp_path / "b")
    assert _texts(tmp_path / "b") == texts
    row = first.tasks["gsm8k"].metrics
    assert set(row) == {"pass_at_k", "maj_at_k"} and row["pass_at_k"].n == 2
    assert 0.0 <= row["pass_at_k"].value <= 1.0


def test_repeats_need_sampling_and_enough_samples(compose, tmp_path: Path) -> None:
    assert "do_sample" in GSM8K(repeats=4).greedy_repeats()  # a model that generates
    greedy = compose("task=gsm8k", "task.repeats=4", "model=fake", "report.progress=never")
    with pytest.raises(TaskError, match="do_sample"):  # refused before the model runs
        run_job(greedy, tmp_path / "greedy")
    assert not (tmp_path / "greedy" / "results.json").exists()
    cfg = compose(*SAMPLED[:-1], "metrics.pass_at_k.k=5", "report.progress=never")
    with pytest.raises(ConfigError, match="repeats >= 5"):
        run_job(cfg, tmp_path / "c")
    assert not (tmp_path / "c" / "results.json").exists()


def test_sampling_needs_a_positive_temperature() -> None:
    with pytest.raises(TaskError, match=r"needs a temperature > 0"):
        GSM8K(repeats=4, generation={"do_sample": True, "temperature": 0.0})
    with pytest.raises(ConfigError, match=r"^task\.generation\.temperature=-1\.0 is not allowed"):
        GSM8K(repeats=4, generation={"do_sample": True, "temperature": -1.0})
