from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports

if TYPE_CHECKING:
    from mill.integrations.accelerate import evaluate_during_training
    from mill.integrations.core import TrainingEvaluator

__all__ = ["TrainingEvaluator", "evaluate_during_training"]

__getattr__ = lazy_exports(
    __name__,
    {
        "mill.integrations.accelerate": ("evaluate_during_training",),
        "mill.integrations.core": ("TrainingEvaluator",),
    },
)
