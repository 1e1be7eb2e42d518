"""Evaluation during training in a hand-written Accelerate loop:
:func:`evaluate_during_training`.

    evaluate_during_training(model, tokenizer, accelerator, step=0, **settings)  # checks
    for step, batch in enumerate(loader, start=1):
        ...  # forward, accelerator.backward, optimizer step
        evaluate_during_training(model, tokenizer, accelerator, step=step, **settings)
    evaluate_during_training(model, tokenizer, accelerator, step=step, event="train_end",
                             **settings)

Call it on every rank at the same points. See docs/training-accelerate.md.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.integrations.core import TrainingEvaluator

EVENTS = ("step", "epoch_end", "train_end")
_evaluators: dict[str, TrainingEvaluator] = {}


def evaluate_during_training(
    model: Any,
    tokenizer: Any,
    accelerator: Any,
    *,
    step: int,
    tasks: str | Sequence[str],
    output_dir: str | Path,
    event: str = "step",
    **settings: Any,
) -> dict[str, float]:
    """Evaluate the model being trained when the settings say so at this point of the loop.

    ``tasks`` and ``settings``: those of every integration
    (:class:`~mill.integrations.core.TrainingEvaluator`). ``event``: ``step`` after an
    optimizer step (evaluates when ``step`` is a multiple of ``every_n_steps``),
    ``epoch_end`` (when ``at_epoch_end``) or ``train_end`` (when ``at_train_end``; then
    ``<output_dir>/mill/curves.html`` is written). The first call with given settings
    checks them and the model and says what will be evaluated: make it with ``step=0``
    before the loop, so bad input stops the job before it trains. ``model``: as
    ``accelerator.prepare`` returned it. Metrics go to ``accelerator.log(..., step=step)``
    and are returned (the same dict on every rank; empty when nothing was evaluated).
    """
    if event not in EVENTS:
        raise ConfigError(f"event={event!r} is not one of {', '.join(EVENTS)}")
    key = repr((tasks, str(output_dir), sorted(settings.items())))
    evaluator = _evaluators.get(key)
    if evaluator is None:
        evaluator = TrainingEvaluator(tasks, **settings)
        evaluator.check(model, tokenizer)
        if accelerator.is_main_process:
            print(evaluator.banner(), file=sys.stderr)
        _evaluators[key] = evaluator
    due = {
        "step": evaluator.due(step),
        "epoch_end": evaluator.at_epoch_end,
        "train_end": evaluator.at_train_end,
    }[event]
    logged = evaluator.evaluate(model, tokenizer, step, output_dir) if due else {}
    if logged:
        accelerator.log(logged, step=step)
    if event == "train_end" and accelerator.is_main_process:
        evaluator.finish(output_dir)
    return logged
