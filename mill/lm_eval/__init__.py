"""lm-evaluation-harness inside Mill, and Mill inside lm-evaluation-harness.

- :mod:`mill.lm_eval.bridge`: ``mill task=lm_eval task.tasks=[...]`` runs lm-eval's own task
  and group definitions (documents, prompts, few-shot samplers, filters, ``process_results``,
  aggregations) with Mill's runner and engine (:class:`LMEvalSuite`, :class:`LMEvalTask`);
  lm-eval's metrics and generation settings as Mill's in :mod:`mill.lm_eval.adapters`,
  ``task.dataset_overrides`` in :mod:`mill.lm_eval.overrides`, the one-line errors in
  :mod:`mill.lm_eval.errors`.
- :mod:`mill.lm_eval.leaderboard`: the Open LLM Leaderboard v2 normalised scores.
- :mod:`mill.lm_eval.model`: an lm-eval ``LM`` backed by Mill's HF engine;
  ``python -m mill.lm_eval`` is lm-eval's CLI with it registered as ``--model mill``.

lm-eval is the optional extra ``mill-eval[lm-eval]``; importing this package does not import
it: the names below are imported from their modules on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports
from mill.lm_eval.requirement import INSTALL_HINT, LM_EVAL_VERSION, require_lm_eval

if TYPE_CHECKING:
    from mill.lm_eval.adapters import LMEvalMetric, generation_args, rebuild_metric
    from mill.lm_eval.bridge import LMEvalSuite, LMEvalTask
    from mill.lm_eval.errors import unknown_task_error
    from mill.lm_eval.leaderboard import leaderboard_scores
    from mill.lm_eval.model import MillLM
    from mill.lm_eval.overrides import read_overrides, write_overrides

__all__ = [
    "INSTALL_HINT",
    "LM_EVAL_VERSION",
    "LMEvalMetric",
    "LMEvalSuite",
    "LMEvalTask",
    "MillLM",
    "generation_args",
    "leaderboard_scores",
    "read_overrides",
    "rebuild_metric",
    "require_lm_eval",
    "unknown_task_error",
    "write_overrides",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "mill.lm_eval.adapters": ("LMEvalMetric", "generation_args", "rebuild_metric"),
        "mill.lm_eval.bridge": ("LMEvalSuite", "LMEvalTask"),
        "mill.lm_eval.errors": ("unknown_task_error",),
        "mill.lm_eval.leaderboard": ("leaderboard_scores",),
        "mill.lm_eval.model": ("MillLM",),
        "mill.lm_eval.overrides": ("read_overrides", "write_overrides"),
    },
)
