"""IFEval's accuracy per instruction type, from the samples of a run: each sample's gold is
its prompt's instruction ids, its ``inst_level_strict_acc`` / ``inst_level_loose_acc``
values the verdicts (:func:`mill.metrics.ifeval.accuracy_by_type` counts them)."""

from __future__ import annotations

from mill.metrics.ifeval import TypeAccuracy, accuracy_by_type
from mill.report.load import RunFolder

STRICT, LOOSE = "inst_level_strict_acc", "inst_level_loose_acc"


def instruction_types(run: RunFolder) -> list[tuple[str, list[TypeAccuracy]]]:
    """(task, accuracy per instruction type) of every task of ``run`` scored with both
    instruction-level metrics."""
    found = []
    for task in run.task_names:
        if not run.samples_path(task).is_file():
            continue
        samples = [
            (list(r.gold or []), r.metrics[STRICT], r.metrics[LOOSE])
            for r in run.samples(task)
            if isinstance(r.metrics.get(STRICT), list) and isinstance(r.metrics.get(LOOSE), list)
        ]
        if samples:
            found.append((task, accuracy_by_type(samples)))
    return found
