"""Evaluation during training with the Hugging Face ``Trainer``: :class:`MillCallback`.

    trainer = Trainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                      callbacks=[MillCallback(tasks=["arc_easy"], every_n_steps=50, limit=200)])

Every rank evaluates its share of the docs with the job's process group; the metrics go
through ``Trainer.log`` (so to every reporter of ``report_to``) with the step; each
evaluation's experiment folder is ``<output_dir>/mill/step-<N>/``, and ``curves.html`` is
written when training ends. See docs/training-hf.md.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

from transformers import Trainer, TrainerCallback

from mill.errors import ConfigError
from mill.integrations.core import TrainingEvaluator


class MillCallback(TrainerCallback):
    """Evaluate the model being trained with Mill.

    Args:
        tasks: what to evaluate (config names, e.g. ``["arc_easy"]``); an unknown task
            fails here.
        **settings: when and how, the same in the three integrations
            (:class:`~mill.integrations.core.TrainingEvaluator`: ``every_n_steps``,
            ``at_epoch_end``, ``at_train_end``, ``limit``, ``overrides``, ``metrics``,
            ``cache``); an unknown setting fails here.
        tokenizer: the model's tokenizer (default: the trainer's ``processing_class``).
        trainer: the Trainer, whose ``log`` the metrics go through (default: the one that
            calls this callback, found when training begins).
    """

    def __init__(
        self,
        tasks: str | Sequence[str],
        *,
        tokenizer: Any = None,
        trainer: Trainer | None = None,
        **settings: Any,
    ) -> None:
        self.evaluator = TrainingEvaluator(tasks, **settings)
        self.tokenizer = tokenizer
        self.trainer = trainer

    def _tokenizer(self, kwargs: dict[str, Any]) -> Any:
        return self.tokenizer or kwargs.get("processing_class") or kwargs.get("tokenizer")

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.evaluator.check(kwargs.get("model"), self._tokenizer(kwargs))
        if self.trainer is None:
            self.trainer = _calling_trainer()
        if state.is_world_process_zero:
            print(self.evaluator.banner(), file=sys.stderr)

    def _evaluate(self, args: Any, state: Any, kwargs: dict[str, Any]) -> None:
        step = int(state.global_step)
        metrics = self.evaluator.evaluate(
            kwargs["model"], self._tokenizer(kwargs), step, args.output_dir
        )
        if metrics and self.trainer is not None:
            control = self.trainer.control
            should_log = control.should_log  # Trainer.log clears it: the loss is still due
            self.trainer.log(metrics)
            self.trainer.control.should_log = should_log

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.evaluator.due(int(state.global_step)):
            self._evaluate(args, state, kwargs)

    def on_epoch_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.evaluator.at_epoch_end:
            self._evaluate(args, state, kwargs)

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.evaluator.at_train_end:
            self._evaluate(args, state, kwargs)
        if state.is_world_process_zero:
            self.evaluator.finish(args.output_dir)


def _calling_trainer() -> Trainer:
    """The Trainer whose callback handler is calling us (a frame up the stack)."""
    frame = inspect.currentframe()
    while frame is not None:
        candidate = frame.f_locals.get("self")
        if isinstance(candidate, Trainer):
            return candidate
        frame = frame.f_back
    raise ConfigError(
        "MillCallback could not find the Trainer that runs it; pass it: "
        "MillCallback(..., trainer=trainer)"
    )
