"""Every numeric setting of every config group, declared once: its full key, what it
accepts (type, range, the words it also takes) and what it means.

:data:`SETTINGS` is the one declaration. :func:`check_config` checks a resolved config
against it when the run starts, before any data or model loads (``mill``, ``mill -m``'s
jobs, :func:`mill.evaluate`): a value that is not finite, out of range or of the wrong type
is one line naming the full key, the value and what is accepted, exit 2. The subsystems
that read these settings check them by the same rules (:func:`check_number` with the rule
of their key: :class:`mill.runner.settings.RunnerSettings`,
:class:`mill.execution.ExecutionSettings`, the metrics), so a value that reaches them by
another way (:func:`mill.evaluate`'s Python objects, a test) is held to the same range.
The configuration reference (docs/reference/config.md) shows each rule beside its key
(``mill.tools.config_reference``), so the page and the checks cannot drift.

Declaring a new setting: add ``"<group>.<key>": Number(minimum, ..., meaning="...")`` to
:data:`SETTINGS` (a metric's parameter: ``"metrics.<metric>.<param>"``). A group or key the
composed config does not have is not checked, so a backend without the key is not affected.

Nothing here imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mill.errors import ConfigError


@dataclass(frozen=True)
class Number:
    """What a numeric setting accepts: a finite number at least ``minimum`` (above it when
    ``above``), at most ``maximum``, a whole number when ``whole``, null when ``optional``,
    the ``words`` listed, and a non-empty list of such numbers when ``each``."""

    minimum: float
    whole: bool = True
    optional: bool = False
    words: tuple[str, ...] = ()
    above: bool = False
    maximum: float | None = None
    each: bool = False
    meaning: str = ""

    def accepted(self) -> str:
        """``a whole number >= 1 (or auto)``: the accepted range, as messages and the
        configuration reference say it."""
        kind = "a whole number" if self.whole else "a finite number"
        bound = f"{'>' if self.above else '>='} {_text(self.minimum)}"
        if self.maximum is not None:
            bound += f" and <= {_text(self.maximum)}"
        also = [*self.words, *(["null"] if self.optional else [])]
        alternatives = f" (or {' or '.join(also)})" if also else ""
        listed = " (or a non-empty list of them)" if self.each else ""
        return f"{kind} {bound}{alternatives}{listed}"


def _text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _one(value: Any, rule: Number) -> Any | None:
    """``value`` as the rule's number, or None when it does not accept it."""
    if isinstance(value, str) and value.lower() in rule.words:
        return value.lower()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    if rule.whole and not float(value).is_integer():
        return None
    if (value <= rule.minimum) if rule.above else (value < rule.minimum):
        return None
    if rule.maximum is not None and value > rule.maximum:
        return None
    return int(value) if rule.whole else value


def check_number(setting: str, value: Any, rule: Number) -> Any:
    """``value`` when ``rule`` accepts it (whole numbers as int), else ConfigError naming
    ``setting`` (the full key), the value and what is accepted."""
    if value is None and rule.optional:
        return value
    if rule.each and isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        found = [_one(v, rule) for v in value]
        if found and all(v is not None for v in found):
            return found
    else:
        found_one = _one(value, rule)
        if found_one is not None:
            return found_one
    raise ConfigError(f"{setting}={value!r} is not allowed: give {rule.accepted()}")


SETTINGS: dict[str, Number] = {
    # runner: how an experiment runs
    "runner.num_processes": Number(1, words=("auto",), meaning="data-parallel workers"),
    "runner.seed": Number(0, meaning="python/numpy/torch seeds and the bootstrap"),
    "runner.bootstrap_iters": Number(0, meaning="resamples for bootstrap stderrs (0: none)"),
    "runner.timeout_s": Number(1, meaning="seconds a worker waits for the slowest at a collective"),
    # execution: how code tasks run the model's programs
    "execution.timeout_s": Number(
        0, whole=False, above=True, maximum=86400, meaning="wall-clock seconds per program"
    ),
    "execution.workers": Number(1, optional=True, meaning="programs at once (null: 2 per core)"),
    "execution.memory_gb": Number(
        0, whole=False, above=True, maximum=1_000_000, meaning="address space per program, GB"
    ),
    "execution.max_output_bytes": Number(1, meaning="stdout+stderr read per program"),
    "execution.max_processes": Number(1, meaning="processes and threads per sandbox"),
    "execution.max_file_mb": Number(
        0, whole=False, above=True, maximum=1_000_000, meaning="file size limit and tmpfs size, MB"
    ),
    "execution.max_open_files": Number(1, meaning="open files per program (RLIMIT_NOFILE)"),
    # model: every backend's numbers (a backend without the key is not checked)
    "model.max_length": Number(1, optional=True, meaning="context window in tokens"),
    "model.max_gen_toks": Number(1, meaning="generation length when a task sets none"),
    "model.batch_size": Number(1, words=("auto",), meaning="requests per forward pass"),
    "model.token_budget": Number(1, optional=True, meaning="tokens per forward pass"),
    "model.cache_budget": Number(1, optional=True, meaning="KV-cache tokens"),
    "model.num_concurrent": Number(1, meaning="requests in flight at once"),
    "model.batch_prompts": Number(1, meaning="prompts per request"),
    "model.max_retries": Number(0, meaning="retries per request"),
    "model.backoff_s": Number(0, whole=False, maximum=3600, meaning="first retry delay, s"),
    "model.timeout_s": Number(
        0, whole=False, above=True, maximum=86400, meaning="seconds one whole answer may take"
    ),
    "model.max_response_mb": Number(
        0, whole=False, above=True, maximum=1_000_000, meaning="the largest answer read, MB"
    ),
    # report: the console report while a run goes
    "report.every_s": Number(
        0, whole=False, above=True, maximum=86400, meaning="seconds between progress lines"
    ),
    # metrics: their parameters
    "metrics.pass_at_k.k": Number(1, each=True, meaning="k of pass@k (a list: one row per k)"),
    "metrics.maj_at_k.k": Number(1, each=True, meaning="k of maj@k (a list: one row per k)"),
    "metrics.ece.bins": Number(1, meaning="equal-width confidence bins"),
}
"""Full key -> its rule: every numeric setting Mill checks."""


def _lookup(config: Mapping[str, Any], key: str) -> tuple[bool, Any]:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def check_config(config: Mapping[str, Any]) -> None:
    """Every setting of :data:`SETTINGS` that ``config`` (resolved, as plain containers)
    has, checked (ConfigError naming the first one refused)."""
    for key, rule in SETTINGS.items():
        present, value = _lookup(config, key)
        if present:
            check_number(key, value, rule)
