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
        tasks: task config names (``["arc_easy", "hellaswag"]``), evaluated together.
        every_n_steps: evaluate when ``global_step`` is a multiple of it (None: never).
        at_epoch_end: evaluate at the end of every epoch.
        at_train_end: evaluate when training ends (a step already evaluated is not redone).
        limit: docs per task.
        overrides: Hydra overrides as for :func:`mill.evaluate` (``["data=hub"]``).
        metrics: metric names to compute and log (default: the tasks' own).
        cache: keep a response cache under ``<output_dir>/mill/cache`` keyed by the weights'
            fingerprint (off by default: weights in memory change every step).
        tokenizer: the model's tokenizer (default: the trainer's ``processing_class``).
        trainer: the Trainer, whose ``log`` the metrics go through (default: the one that
            calls this callback, found when training begins).
    """

    def __init__(
        self,
        tasks: str | Sequence[str],
        *,
        every_n_steps: int | None = None,
        at_epoch_end: bool = False,
        at_train_end: bool = True,
        limit: int | None = None,
        overrides: Sequence[str] = (),
        metrics: Sequence[str] | None = None,
        cache: bool = False,
        tokenizer: Any = None,
        trainer: Trainer | None = None,
    ) -> None:
        self.evaluator = TrainingEvaluator(
            tasks,
            every_n_steps=every_n_steps,
            at_epoch_end=at_epoch_end,
            at_train_end=at_train_end,
            limit=limit,
            overrides=overrides,
            metrics=metrics,
            cache=cache,
        )
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
