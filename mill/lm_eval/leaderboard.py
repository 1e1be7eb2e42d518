"""Open LLM Leaderboard v2 normalised scores, from the raw values of lm-eval's ``leaderboard``.

Source: Hugging Face, "Open LLM Leaderboard v2 -- Scores normalization"
(https://huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization) and the
leaderboard's blog post (https://huggingface.co/spaces/open-llm-leaderboard/blog). Per
subtask, the raw value ``x`` is rescaled so that random guessing scores 0 and a perfect
score 100: ``max(0, (x - b) / (1 - b)) * 100`` with ``b = 1/k`` for ``k`` answer choices
(Mill takes ``b`` as the mean of ``1/k`` over the subtask's documents, which is ``1/k`` when
every document has ``k`` choices); generative tasks (MATH level 5, IFEval) have ``b = 0``.
A task's score is the mean of its normalised subtasks, the overall score the mean of the six
tasks. The metric per task is the leaderboard's: acc_norm for BBH, GPQA and MuSR, acc for
MMLU-Pro, exact_match for MATH level 5, and for IFEval the mean of prompt-level and
instruction-level strict accuracy.

The stderr of a normalised subtask is the raw stderr times ``100 / (1 - b)`` (the clip at 0
is ignored); means combine independent stderrs as ``sqrt(sum se^2) / n``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mill.metrics.stats import interval

# leaderboard group -> (metric key, random-guess baseline from the choices?)
TASKS: dict[str, tuple[tuple[str, ...], bool]] = {
    "leaderboard_bbh": (("acc_norm,none",), True),
    "leaderboard_gpqa": (("acc_norm,none",), True),
    "leaderboard_math_hard": (("exact_match,none",), False),
    "leaderboard_ifeval": (("prompt_level_strict_acc,none", "inst_level_strict_acc,none"), False),
    "leaderboard_musr": (("acc_norm,none",), True),
    "leaderboard_mmlu_pro": (("acc,none",), True),
}
SOURCE = "https://huggingface.co/docs/leaderboards/open_llm_leaderboard/normalization"


def normalise(value: float, baseline: float) -> float:
    """``max(0, (value - baseline) / (1 - baseline)) * 100``."""
    if baseline >= 1:
        raise ValueError(f"baseline {baseline} leaves no range to normalise")
    return max(0.0, (value - baseline) / (1.0 - baseline)) * 100.0


def _combined(stderrs: list[float | None]) -> float | None:
    present = [float(s) for s in stderrs if s is not None]
    if not stderrs or len(present) < len(stderrs):
        return None
    return math.sqrt(sum(s**2 for s in present)) / len(stderrs)


def leaderboard_scores(
    subtasks: Mapping[str, list[str]],
    rows: Mapping[str, Mapping[str, Mapping[str, Any]]],
    baselines: Mapping[str, float],
) -> dict[str, Any]:
    """Normalised scores of the leaderboard tasks present.

    ``subtasks``: leaderboard task (a key of :data:`TASKS`) -> its leaf task names (a
    single-task entry such as MMLU-Pro lists itself); ``rows``: leaf task -> metric key ->
    {value, stderr}; ``baselines``: leaf task -> mean 1/k over its documents.
    Returns {"tasks": {task: {score, stderr, subtasks: {leaf: {raw, baseline, score}}}},
    "overall": {score, stderr, n} (only when all six are present), "source": url}.
    """
    out: dict[str, Any] = {"tasks": {}, "source": SOURCE}
    for task, (metrics, from_choices) in TASKS.items():
        leaves = subtasks.get(task)
        if not leaves:
            continue
        parts: dict[str, Any] = {}
        for leaf in leaves:
            metric_rows = [rows.get(leaf, {}).get(m) for m in metrics]
            found = [r for r in metric_rows if r is not None and r.get("value") is not None]
            if len(found) < len(metric_rows):
                continue
            baseline = float(baselines.get(leaf, 0.0)) if from_choices else 0.0
            raw = sum(float(r["value"]) for r in found) / len(found)
            raw_se = _combined([r.get("stderr") for r in found])
            parts[leaf] = {
                "metric": "+".join(metrics),
                "raw": raw,
                "baseline": baseline,
                "score": normalise(raw, baseline),
                "stderr": None if raw_se is None else raw_se * 100.0 / (1.0 - baseline),
            }
        if parts:
            out["tasks"][task] = {
                "score": sum(p["score"] for p in parts.values()) / len(parts),
                "stderr": _combined([p["stderr"] for p in parts.values()]),
                "subtasks": parts,
            }
    if len(out["tasks"]) == len(TASKS):
        scores = [t["score"] for t in out["tasks"].values()]
        out["overall"] = {
            "score": sum(scores) / len(scores),
            "stderr": _combined([t["stderr"] for t in out["tasks"].values()]),
            "n": len(scores),
        }
    return out


def _row(value: float, stderr: float | None, n: int) -> dict[str, Any]:
    """A normalised score's row; its 95% interval stays inside [0, 100]."""
    row: dict[str, Any] = {"value": value, "stderr": stderr, "n": n}
    found = interval([], value, stderr, is_mean=False, bounds=(0.0, 100.0), iters=0, seed=0)
    if found is not None:
        row["ci"], row["ci_method"] = list(found[0]), found[1]
    return row


def as_group_rows(scores: Mapping[str, Any]) -> dict[str, Any]:
    """The normalised scores as a Mill results group (``macro`` rows: means of parts), so
    the console table, report.html and compare show them."""
    metrics: dict[str, Any] = {}
    for task, body in scores["tasks"].items():
        metrics[f"{task} (normalised)"] = {
            "macro": _row(body["score"], body["stderr"], len(body["subtasks"])),
            "higher_is_better": True,
        }
    if "overall" in scores:
        overall = scores["overall"]
        metrics["overall (normalised)"] = {
            "macro": _row(overall["score"], overall["stderr"], overall["n"]),
            "higher_is_better": True,
        }
    return {"tasks": list(scores["tasks"]), "metrics": metrics, "source": scores["source"]}
