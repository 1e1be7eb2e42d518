"""IFEval's metrics: the instruction-level aggregate and stderr over instructions (lm-eval's
agg_inst_level_acc), and the count per instruction type the report draws."""

from __future__ import annotations

import math

from mill.metrics.ifeval import InstructionLevelAccuracy, accuracy_by_type


def test_instruction_level_is_over_every_instruction_not_every_prompt() -> None:
    metric = InstructionLevelAccuracy(mode="strict")
    values = [[1, 1, 1], [0]]  # 3 of 4 instructions, 1 of 2 prompts fully followed
    assert metric.aggregate(values) == 0.75
    assert math.isclose(metric.stderr(values, iters=0, seed=0), math.sqrt(0.25 / 4))
    (low, high), method = metric.interval(values, 0.75, 0.25, iters=0, seed=0)
    assert method == "wilson" and 0 < low < 0.75 < high <= 1


def test_accuracy_by_type_counts_and_sorts() -> None:
    rows = accuracy_by_type(
        [
            (["a:x", "b:y"], [1, 0], [1, 1]),
            (["b:y"], [1], [1]),
            (["c:z"], [0], [0]),
        ]
    )
    assert [(r.instruction, r.count, r.strict, r.loose) for r in rows] == [
        ("a:x", 1, 1, 1),
        ("b:y", 2, 1, 2),
        ("c:z", 1, 0, 0),
    ]
