"""A run's judgments in FastChat's ``model_judgment`` format
(``model_judgment/<task>_<metric>.jsonl`` beside the samples), for its ``show_result.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mill.judging.rubrics import PairwiseWinRate, is_judged
from mill.metrics.base import Metric
from mill.record import read_sample_rows
from mill.results import ResultsError


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


def fastchat_files(
    samples: Path, metrics: dict[str, list[Metric]], model: str, judge: str
) -> dict[str, str]:
    """``model_judgment/<task>_<metric>.jsonl`` -> its text, from each judged task's samples
    file in the folder ``samples`` (the runner writes them beside the samples)."""
    files = {}
    for task, task_metrics in metrics.items():
        path = samples / f"{task}.jsonl"
        if not path.is_file() or not any(is_judged(m) for m in task_metrics):
            continue
        rows = read_sample_rows(path, "samples", ResultsError)
        for name, lines in fastchat_judgments(rows, task_metrics, model, judge).items():
            text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
            files[f"model_judgment/{task}_{name}.jsonl"] = text
    return files
