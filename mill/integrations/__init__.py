"""Evaluation during training: Mill inside a training loop.

* :class:`mill.integrations.hf.MillCallback`: a ``transformers`` ``TrainerCallback``;
* :class:`mill.integrations.lightning.MillCallback`: a Lightning ``Callback``
  (``pip install mill-eval[lightning]``);
* :func:`mill.integrations.accelerate.evaluate_during_training`: for hand-written loops.

The three share :class:`mill.integrations.core.TrainingEvaluator` and its settings
(``tasks``, ``every_n_steps``, ``at_epoch_end``, ``at_train_end``, ``limit``, ``overrides``,
``metrics``, ``cache``). Importing this package imports neither torch nor a trainer.
"""

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
