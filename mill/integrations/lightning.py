"""Evaluation during training with Lightning: :class:`MillCallback` (``pip install
mill-eval[lightning]``).

    trainer = L.Trainer(max_steps=1000, callbacks=[
        MillCallback(tasks=["arc_easy"], tokenizer=tokenizer, every_n_steps=50, limit=200)])

The LightningModule holds the transformers causal LM in an attribute (``model`` unless
``model_attr=`` says otherwise). Every rank evaluates its share of the docs with the
job's process group; the metrics go to every logger of the trainer (``trainer.loggers``)
at the global step; folders under ``<default_root_dir>/mill/step-<N>/``, and
``curves.html`` when training ends. See docs/training-lightning.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import lightning as L

from mill.errors import ConfigError
from mill.integrations.core import TrainingEvaluator

SHARDING_STRATEGIES = ("FSDPStrategy", "DeepSpeedStrategy", "ModelParallelStrategy")
"""Lightning strategies that shard the LightningModule itself: refused (see
:func:`strategy_refusal`)."""


def strategy_refusal(strategy: Any) -> str | None:
    """Why the callback cannot evaluate under this Lightning strategy (one line), or None.

    Lightning's FSDP, DeepSpeed and model-parallel strategies wrap the whole
    LightningModule, so the model attribute the callback sees is an inner part of a sharded
    module, which Mill does not gather (the Trainer and Accelerate integrations gather an
    FSDP or ZeRO-3 model they are given whole); Lightning runs these strategies only on
    GPUs, where this project has no test."""
    name = type(strategy).__name__
    if any(cls.__name__ in SHARDING_STRATEGIES for cls in type(strategy).__mro__):
        return (
            f"Lightning's {name} shards the LightningModule, and Mill gathers only a model "
            "it is given whole (the Trainer and Accelerate integrations); train with "
            "strategy='ddp', or evaluate the saved checkpoints with "
            "`mill model=hf model.pretrained=<checkpoint>`"
        )
    return None


class MillCallback(L.Callback):
    """Evaluate the model being trained with Mill.

    ``tasks`` and ``settings``: those of every integration
    (:class:`~mill.integrations.core.TrainingEvaluator`); ``tokenizer``: the model's;
    ``model_attr``: the LightningModule's attribute that holds the transformers model
    (None: the LightningModule itself); ``output_dir``: default the trainer's
    ``default_root_dir``."""

    def __init__(
        self,
        tasks: str | Sequence[str],
        *,
        tokenizer: Any,
        model_attr: str | None = "model",
        output_dir: str | Path | None = None,
        **settings: Any,
    ) -> None:
        self.evaluator = TrainingEvaluator(tasks, **settings)
        self.tokenizer = tokenizer
        self.model_attr = model_attr
        self.output_dir = output_dir

    def _model(self, pl_module: L.LightningModule) -> Any:
        if self.model_attr is None:
            return pl_module
        return getattr(pl_module, self.model_attr, None)

    def _root(self, trainer: L.Trainer) -> Path:
        return Path(self.output_dir or trainer.default_root_dir)

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        if stage != "fit":
            return
        why = strategy_refusal(trainer.strategy)
        if why is not None:
            raise ConfigError(f"mill cannot evaluate this model during training: {why}")
        self.evaluator.check(self._model(pl_module), self.tokenizer)
        if trainer.is_global_zero:
            print(self.evaluator.banner(), file=sys.stderr)

    def _evaluate(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        step = int(trainer.global_step)
        metrics = self.evaluator.evaluate(
            self._model(pl_module), self.tokenizer, step, self._root(trainer)
        )
        for logger in trainer.loggers if metrics else ():
            logger.log_metrics(metrics, step=step)

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: L.LightningModule, *args: Any, **kwargs: Any
    ) -> None:
        if self.evaluator.due(int(trainer.global_step)):
            self._evaluate(trainer, pl_module)

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.evaluator.at_epoch_end:
            self._evaluate(trainer, pl_module)

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self.evaluator.at_train_end:
            self._evaluate(trainer, pl_module)
        if trainer.is_global_zero:
            self.evaluator.finish(self._root(trainer))
