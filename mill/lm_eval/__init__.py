"""lm-evaluation-harness inside Mill, and Mill inside lm-evaluation-harness.

- :mod:`mill.lm_eval.bridge`: ``mill task=lm_eval task.tasks=[...]`` runs lm-eval's own task
  and group definitions (documents, prompts, few-shot samplers, filters, ``process_results``,
  aggregations) with Mill's runner and engine.
- :mod:`mill.lm_eval.leaderboard`: the Open LLM Leaderboard v2 normalised scores.
- :mod:`mill.lm_eval.model`: an lm-eval ``LM`` backed by Mill's HF engine;
  ``python -m mill.lm_eval`` is lm-eval's CLI with it registered as ``--model mill``.

lm-eval is the optional extra ``mill-eval[lm-eval]``; importing this package does not import it.
"""

from __future__ import annotations

from typing import Any

from mill.errors import ConfigError

LM_EVAL_VERSION = "0.4.13"
INSTALL_HINT = 'pip install "mill-eval[lm-eval]"'


def require_lm_eval() -> Any:
    """Import ``lm_eval`` or raise a one-line ConfigError naming the extra to install."""
    try:
        import lm_eval
    except ImportError as err:
        raise ConfigError(
            f"lm-eval tasks need lm-evaluation-harness {LM_EVAL_VERSION}, which is not "
            f"installed ({err}); install the extra: {INSTALL_HINT}"
        ) from None
    version = getattr(lm_eval, "__version__", "")
    if version and version != LM_EVAL_VERSION:
        raise ConfigError(
            f"lm-eval tasks need lm-evaluation-harness {LM_EVAL_VERSION} but {version} is "
            f"installed; install the extra: {INSTALL_HINT}"
        )
    return lm_eval
