"""lm-evaluation-harness as an optional extra: the version Mill is tested with, and the one
line that names the extra when it is missing or another version is installed."""

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
