"""The library end to end on the demo model: PMI requests, IDK checks, MMLU aggregates,
chat templates."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import jsonlines
import pytest

from mill.errors import ConfigError
from mill.model.hf import HFCausalLM
from mill.runner.job import run_job
from mill.types import OutputType, Request
from tests.helpers import make_chat_tokenizer

DEMO = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))


def _samples(folder: Path, task: str) -> list[dict]:
    with jsonlines.open(folder / "samples" / f"{task}.jsonl") as reader:
        return list(reader)


@pytest.mark.slow  # real model, seconds of compute
def test_unconditioned_requests_only_for_pmi(compose, tmp_path: Path) -> None:
    base = ("task=arc_easy", "task.limit=3", "report.progress=never")
    run_job(compose(*base, "+metrics=[acc]"), tmp_path / "acc")
    assert all(
        s["response"]["unconditioned_logprobs"] is None
        for s in _samples(tmp_path / "acc", "arc_easy")
    )
    results = run_job(compose(*base, "+metrics=[acc,acc_mutual_info]"), tmp_path / "pmi")
    samples = _samples(tmp_path / "pmi", "arc_easy")
    model = HFCausalLM(str(DEMO), device="cpu")
    for sample in samples:
        uncond = sample["response"]["unconditioned_logprobs"]
        assert len(uncond) == len(sample["choices"])
        direct = model.loglikelihood(
            [
                Request(OutputType.LOGPROBS, "t", 0, i, context="", continuation=" " + c)
                for i, c in enumerate(sample["choices"])
            ]
        )
        assert uncond == pytest.approx([r.logprob for r in direct], abs=1e-4)
        pmi = [c - u for c, u in zip(sample["response"]["logprobs"], uncond, strict=True)]
        gold = sample["gold"]
        assert sample["metrics"]["acc_mutual_info"] == float(
            max(range(len(pmi)), key=pmi.__getitem__) == gold
        )
    row = results.metric("arc_easy", "acc_mutual_info")
    assert row.n == 3 and row.value == pytest.approx(
        sum(s["metrics"]["acc_mutual_info"] for s in samples) / 3
    )


@pytest.mark.slow  # real model, seconds of compute
def test_abstention_metrics_need_an_idk_task(compose, tmp_path: Path) -> None:
    cfg = compose("task=arc_easy", "task.limit=2", "+metrics=[ternary]", "report.progress=never")
    with pytest.raises(ConfigError, match="I don't know"):
        run_job(cfg, tmp_path / "no")
    assert not (tmp_path / "no" / "results.json").exists()
    results = run_job(
        compose("task=arc_easy_idk", "task.limit=4", "report.progress=never"), tmp_path / "idk"
    )
    metrics = results.tasks["arc_easy_idk"].metrics
    assert set(metrics) == {"acc", "acc_norm", "confidence_weighted_acc", "ternary", "dcs"}
    samples = _samples(tmp_path / "idk", "arc_easy_idk")
    assert all(s["choices"][-1] == "I don't know." for s in samples)
    assert all(-1.0 <= s["metrics"]["dcs"] <= 1.0 for s in samples)


@pytest.mark.slow  # real model, seconds of compute
def test_mmlu_subject_category_and_overall_aggregates(compose, tmp_path: Path) -> None:
    cfg = compose(
        "task=mmlu", "task.subjects=[anatomy,astronomy,virology]", "report.progress=never"
    )
    results = run_job(cfg, tmp_path)
    subjects = results.tasks["mmlu"].subjects
    assert list(subjects) == ["anatomy", "astronomy", "virology"]
    groups = results.groups
    assert groups["mmlu_stem"].subjects == ["anatomy", "astronomy"]
    assert groups["mmlu_other"].subjects == ["virology"]
    overall = groups["mmlu"].metrics["acc"]
    samples = _samples(tmp_path, "mmlu")
    assert len(samples) == 9 and [s["fewshot_ids"] for s in samples] == [[0, 1, 2, 3, 4]] * 9
    assert overall.micro.value == pytest.approx(sum(s["metrics"]["acc"] for s in samples) / 9)
    assert overall.micro.value == results.metric("mmlu", "acc").value
    values = [subjects[s]["acc"].value for s in subjects]
    ses = [subjects[s]["acc"].stderr for s in subjects]
    assert overall.macro.value == pytest.approx(sum(values) / 3)
    assert overall.macro.stderr == pytest.approx(math.sqrt(sum(s * s for s in ses)) / 3)
    # equal sizes: micro stderr sqrt(sum (1/3)^2 se_i^2) equals the macro one
    assert overall.micro.stderr == pytest.approx(overall.macro.stderr)


def test_chat_template_end_to_end(compose, tmp_path: Path) -> None:
    folder = tmp_path / "chat-model"
    folder.mkdir()
    for item in DEMO.iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    make_chat_tokenizer(folder)
    cfg = compose(
        "model=hf", f"model.pretrained={folder}", "model.name=chat260k", "task=arc_easy",
        "task.limit=2", "task.chat_template=true", "task.system_prompt=Answer.",
        "report.progress=never", "runner.sample_tokens=true",
    )  # fmt: skip
    results = run_job(cfg, tmp_path / "run")
    assert results.tasks["arc_easy"].settings["chat_template"] is True
    sample = _samples(tmp_path / "run", "arc_easy")[0]
    assert sample["response"]["input"].startswith("<s><|system|>\nAnswer.<|end|>\n<|user|>\n")
    # the BOS in the rendered text is not doubled by the tokenizer
    assert sample["response"]["input_tokens"][:2] != [1, 1]
