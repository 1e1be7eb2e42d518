"""lighteval 0.13 custom tasks: its MATH-500, AIME24, AIME25 tasks (and AMC23 scored as AIME24)
on the shared data folders instead of the Hub, for running lighteval itself offline
(``--custom-tasks``). Everything but the data source and the row mapping is lighteval's own
config (prompt function, metrics, generation size)::

    PYTHONPATH=. HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 MILL_SHARED_DATA=/work/shared/data \\
    .venv-lighteval/bin/lighteval accelerate \\
        "model_name=<hf folder>,dtype=float32,batch_size=1" "mill_aime24|0" \\
        --custom-tasks benchmarks/lighteval_math_tasks.py --max-samples 2

Task names: ``mill_math500``, ``mill_aime24``, ``mill_aime25``, ``mill_amc23``. Each loads
``<shared data>/<task>/`` with ``datasets.load_dataset`` (its ``test.jsonl`` is the split
``test``); rows go through :func:`benchmarks.lighteval_math.lighteval_line` (the same mapping the
reference verdicts use) and then lighteval's prompt function.

``$MILL_LIGHTEVAL_GENERATION_SIZE`` (unset: lighteval's own, 32768 for MATH-500 and none, i.e. up
to the model's length, for AIME) replaces the tasks' ``generation_size``, for smoke runs on a CPU:
lighteval's default (padded) transformers path takes its token budget from the task alone and
ignores ``generation_parameters={max_new_tokens:...}``. ``$MILL_LIGHTEVAL_SAMPLES`` (unset: 1)
above 1 adds lighteval's ``avg_at_n_math`` with that n to each task's metrics, which makes
lighteval draw that many samples per problem (the most any metric asks for); sampling itself
takes ``generation_parameters={temperature:...,top_p:...}`` in the model arguments.
"""

from __future__ import annotations

import copy
import dataclasses
import os
from pathlib import Path
from typing import Any

from benchmarks.lighteval_math import TASKS, lighteval_line, task_config

DATA = Path(
    os.environ.get("MILL_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def _prompt_function(task: str) -> Any:  # noqa: ANN401
    prompt = task_config(task).prompt_function

    def build(line: dict[str, Any], task_name: str | None = None) -> Any:  # noqa: ANN401
        mapped = lighteval_line(task, {k: v for k, v in line.items() if not k.startswith("__")})
        return prompt(mapped, task_name)

    return build


GENERATION_SIZE = os.environ.get("MILL_LIGHTEVAL_GENERATION_SIZE")
SAMPLES = int(os.environ.get("MILL_LIGHTEVAL_SAMPLES") or 1)


def _metrics(task: str) -> list[Any]:
    """The task's own metrics (copies: amc23's are aime24's), and avg@n for n samples."""
    metrics = list(copy.deepcopy(task_config(task).metrics))
    if SAMPLES > 1:
        from lighteval.metrics.metrics import Metrics

        metrics.append(Metrics.avg_at_n_math(sample_params={"n": SAMPLES}))
    return metrics


TASKS_TABLE = [
    dataclasses.replace(
        task_config(task),
        name=f"mill_{task}",
        prompt_function=_prompt_function(task),
        metrics=_metrics(task),
        hf_repo=str(DATA / task),
        hf_subset="default",
        hf_revision=None,
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        **({"generation_size": int(GENERATION_SIZE)} if GENERATION_SIZE else {}),
    )
    for task in TASKS
]
