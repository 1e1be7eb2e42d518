"""IFEval's four accuracies (Zhou et al. 2023; lm-eval 0.4.13's ``ifeval``), from Mill's
checker (:mod:`mill.ifeval`).

A doc is one prompt with its instructions (``doc.item``: ``instruction_id_list``,
``kwargs``); its response is checked against each instruction, strict (as it is) and loose
(any of 8 variants). The response checked is the answer under the run's reasoning rule
(``reasoning.tags``: ``<think>`` blocks removed by default; :class:`mill.types.ReasoningRule`).

* ``prompt_level_*_acc`` = mean over prompts of 1[every instruction followed];
  stderr = std(ddof=1) / sqrt(prompts);
* ``inst_level_*_acc`` = mean over every instruction of every prompt of 1[followed]
  (lm-eval's ``agg_inst_level_acc``); a doc's value is its list of 0/1 verdicts, and the
  stderr is std(ddof=1) / sqrt(instructions) over the flattened list.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mill.ifeval import checks
from mill.metrics import stats
from mill.metrics.base import MeanMetric, Metric, SampleValue
from mill.metrics.stats import mean, mean_stderr
from mill.types import Doc, OutputType, Response

if TYPE_CHECKING:
    from mill.task.base import Task

MODES = ("strict", "loose")


@functools.lru_cache(maxsize=256)
def _verdicts(response: str, ids: tuple[str, ...], kwargs_json: str) -> checks.Verdicts:
    """One response's verdicts (cached: the four metrics score each doc once)."""
    return checks.verdicts(response, checks.checks(ids, json.loads(kwargs_json)))


def doc_verdicts(doc: Doc, response: str) -> checks.Verdicts:
    """The verdicts of ``response`` on ``doc``'s instructions."""
    item = doc.item
    return _verdicts(
        response, tuple(item["instruction_id_list"]), json.dumps(item["kwargs"], sort_keys=True)
    )


class _IFEvalMetric(Metric):
    output_types = frozenset({OutputType.GENERATIVE})
    mode = "strict"

    def __init__(self, name: str | None = None, mode: str = "strict") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.name = name or type(self).name
        self.mode = mode

    def check_task(self, task: Task) -> str | None:
        if not hasattr(task, "instruction_checks"):
            return f"metric {self.name!r} scores IFEval's instructions; use it with task=ifeval"
        return None

    def followed(self, doc: Doc, responses: Sequence[Response]) -> tuple[bool, ...]:
        text = responses[0].answer
        found = doc_verdicts(doc, text)
        return found.strict if self.mode == "strict" else found.loose


class PromptLevelAccuracy(_IFEvalMetric, MeanMetric):
    """1[the response follows every instruction of its prompt], averaged over prompts."""

    name = "prompt_level_strict_acc"

    def score(self, doc: Doc, responses: Sequence[Response]) -> float:
        return float(all(self.followed(doc, responses)))


class InstructionLevelAccuracy(_IFEvalMetric):
    """1[the response follows the instruction], averaged over every instruction."""

    name = "inst_level_strict_acc"

    def score(self, doc: Doc, responses: Sequence[Response]) -> list[int]:
        return [int(v) for v in self.followed(doc, responses)]

    @staticmethod
    def _flat(values: Sequence[SampleValue]) -> list[float]:
        return [float(v) for doc in values if doc is not None for v in doc]

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        return mean(self._flat(values))

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        return mean_stderr(self._flat(values))

    def interval(
        self,
        values: Sequence[SampleValue],
        value: float | None,
        stderr: float | None,
        *,
        iters: int,
        seed: int,
    ) -> tuple[tuple[float, float], str] | None:
        """Wilson's interval over the instructions (a mean of 0/1 values)."""
        flat: list[Any] = self._flat(values)
        return stats.interval(
            flat, value, stderr, is_mean=True, bounds=(0.0, 1.0), iters=iters, seed=seed
        )


@dataclass(frozen=True)
class TypeAccuracy:
    """How often one instruction type was followed: ``followed`` of ``count``, strict and
    loose."""

    instruction: str
    count: int
    strict: int
    loose: int


def accuracy_by_type(
    samples: Iterable[tuple[Sequence[str], Sequence[int], Sequence[int]]],
) -> list[TypeAccuracy]:
    """Per instruction type, from each doc's (instruction ids, strict verdicts, loose
    verdicts): sorted by strict accuracy, highest first (then by name)."""
    counts: dict[str, list[int]] = {}
    for ids, strict, loose in samples:
        for iid, s, lo in zip(ids, strict, loose, strict=True):
            row = counts.setdefault(str(iid), [0, 0, 0])
            row[0] += 1
            row[1] += int(s)
            row[2] += int(lo)
    rows = [TypeAccuracy(k, *v) for k, v in counts.items()]
    return sorted(rows, key=lambda r: (-r.strict / r.count, r.instruction))
