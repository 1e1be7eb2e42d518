"""A run's judgments in FastChat's ``model_judgment`` format
(``model_judgment/<task>_<metric>.jsonl`` beside the samples), for its ``show_result.py``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from mill.experiment.folder import ExperimentFolder
from mill.metrics.base import Metric
from mill.metrics.judge import PairwiseWinRate, is_judged
from mill.record import read_sample_rows
from mill.results import ResultsError
from mill.task.base import Task


def fastchat_judgments(
    samples: list[dict[str, Any]], metrics: list[Metric], model: str, judge: str
) -> dict[str, list[dict[str, Any]]]:
    """A task's judgments in FastChat's ``model_judgment`` JSON-lines format (what its
    ``show_result.py`` reads), per judged metric: single grades as ``gen_judgment.py``'s
    ``play_a_match_single`` writes them (``score`` -1 for an invalid judgment), pairwise
    verdicts as ``play_a_match_pair`` writes them (``g1_winner`` with the candidate as
    model_1 first, ``g2_winner`` after the swap; ``error`` for an invalid one)."""
    out: dict[str, list[dict[str, Any]]] = {}
    winner = {"A": "model_1", "B": "model_2", "C": "tie", None: "error"}
    swapped = {"A": "model_2", "B": "model_1", "C": "tie", None: "error"}
    for metric in metrics:
        if not is_judged(metric):
            continue
        lines = out.setdefault(metric.name, [])
        for sample in sorted(samples, key=lambda s: s["doc_id"]):
            extra = sample.get("extra") or {}
            qid = extra.get("id", sample["doc_id"])
            qid = int(qid) if str(qid).isdigit() else qid
            records = (extra.get("judgments") or {}).get(metric.name) or []
            if isinstance(metric, PairwiseWinRate):
                for first, second in zip(records[0::2], records[1::2], strict=True):
                    lines.append(
                        {
                            "question_id": qid,
                            "model_1": model,
                            "model_2": "baseline",
                            "g1_winner": winner[first["judgment"]],
                            "g2_winner": swapped[second["judgment"]],
                            "judge": [judge, first["template"]],
                            "g1_judgment": first["reply"],
                            "g2_judgment": second["reply"],
                            "turn": int(first["key"].split("/")[0][1:]),
                        }
                    )
                continue
            for record in records:
                grade = record["judgment"]
                lines.append(
                    {
                        "question_id": qid,
                        "model": model,
                        "judge": [judge, record["template"]],
                        "judgment": record["reply"],
                        "score": -1 if grade is None else grade,
                        "turn": int(record["key"][1:]),
                    }
                )
    return out


def write_fastchat_judgments(
    folder: ExperimentFolder,
    tasks: Sequence[Task],
    metrics: dict[str, list[Metric]],
    model: str,
    judge: str,
) -> None:
    """``model_judgment/<task>_<metric>.jsonl`` beside the samples, from the samples."""
    for task in tasks:
        path = folder.path / "samples" / f"{task.name}.jsonl"
        if not path.is_file() or not any(is_judged(m) for m in metrics[task.name]):
            continue
        samples = read_sample_rows(path, "samples", ResultsError)
        by_metric = fastchat_judgments(samples, metrics[task.name], model, judge)
        folder.inside(folder.path / "model_judgment").mkdir(exist_ok=True)
        for name, lines in by_metric.items():
            text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            folder.write_text(f"model_judgment/{task.name}_{name}.jsonl", text)
