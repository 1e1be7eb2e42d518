"""The ``runner`` config group, validated: processes, launcher, device, seeds, resume, cache.

The defaults live in one place, ``conf/runner/local.yaml``: :meth:`RunnerSettings.parse` fills
what a node leaves out from it, and :meth:`RunnerSettings.default` is that preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError

LAUNCHERS = ("auto", "accelerate", "torchrun")


@cache
def _preset() -> dict[str, Any]:
    """``conf/runner/local.yaml``: every setting with its default."""
    from omegaconf import OmegaConf

    text = resources.files("mill.conf").joinpath("runner/local.yaml").read_text()
    loaded = OmegaConf.to_container(OmegaConf.create(text))
    assert isinstance(loaded, dict)
    return {str(k): v for k, v in loaded.items()}


def _flag(value: Any, key: str, allow_auto: bool = False) -> bool | None:
    if isinstance(value, bool):
        return value
    if allow_auto and (value is None or str(value).lower() == "auto"):
        return None
    text = str(value).lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    choices = "true, false or auto" if allow_auto else "true or false"
    raise ConfigError(f"runner.{key}={value!r} is not {choices}")


@dataclass(frozen=True)
class Number:
    """What a numeric setting accepts: at least ``minimum`` (above it when ``above``), a
    whole number when ``whole``, null when ``optional``, and the ``words`` listed."""

    minimum: float
    whole: bool = True
    optional: bool = False
    words: tuple[str, ...] = ()
    above: bool = False


# Numeric settings outside the runner group, checked before any data or model loads (a
# backend without the key is not affected). runner.* is checked by RunnerSettings.parse.
NUMBERS: dict[str, Number] = {
    "model.max_length": Number(1, optional=True),
    "model.max_gen_toks": Number(1),
    "model.batch_size": Number(1, words=("auto",)),
    "model.token_budget": Number(1, optional=True),
    "model.cache_budget": Number(1, optional=True),
    "model.num_concurrent": Number(1),
    "model.batch_prompts": Number(1),
    "model.max_retries": Number(0),
    "model.backoff_s": Number(0, whole=False),
    "model.timeout_s": Number(0, whole=False, above=True),
    "report.every_s": Number(0, whole=False, above=True),
}


def check_number(setting: str, value: Any, rule: Number) -> Any:
    """``value`` when ``rule`` accepts it, else ConfigError naming ``setting``."""
    if value is None and rule.optional:
        return value
    if isinstance(value, str) and value.lower() in rule.words:
        return value.lower()
    kind = "a whole number" if rule.whole else "a number"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number and rule.whole and not isinstance(value, int):
        number = float(value).is_integer()
    if number:
        number = value > rule.minimum if rule.above else value >= rule.minimum
    if not number:
        bound = f"{'>' if rule.above else '>='} {rule.minimum:g}"
        also = [*rule.words, *(["null"] if rule.optional else [])]
        alternatives = f" (or {' or '.join(also)})" if also else ""
        raise ConfigError(f"{setting}={value!r} is not allowed: give {kind} {bound}{alternatives}")
    return int(value) if rule.whole else value


def check_settings(resolved: dict[str, Any]) -> RunnerSettings:
    """Every setting a run's numbers depend on, checked on the resolved config before any
    data or model loads: :data:`NUMBERS` and the runner group (returned parsed)."""
    for setting, rule in NUMBERS.items():
        group, key = setting.split(".")
        node = resolved.get(group)
        if isinstance(node, dict) and key in node:
            check_number(setting, node[key], rule)
    return RunnerSettings.parse(resolved.get("runner"))


def refuse_device_map(model: Any, processes: int) -> None:
    """A model spread over GPUs (``model.device_map``) runs as one process: refuse it under
    ``processes`` > 1 data-parallel workers."""
    if processes > 1 and model and model.get("device_map"):
        raise ConfigError(
            "model.device_map spreads one model over all GPUs; run it as one process "
            "(runner.num_processes=1), not under data parallelism"
        )


@dataclass(frozen=True)
class RunnerSettings:
    """How one experiment runs (``conf/runner/*.yaml``; defaults in ``local.yaml``)."""

    num_processes: int | None
    """Data-parallel workers; None means ``auto``: one per visible GPU (1 without GPUs)."""
    launcher: str
    """How workers start: ``accelerate`` launch (GPUs), ``torchrun`` (CPU), or ``auto``."""
    cpu: bool | None
    """Force CPU workers (gloo); None = CPU only when no GPU is visible."""
    seed: int
    bootstrap_iters: int
    resume: bool
    """Continue an interrupted run in the same folder (hydra.run.dir=<folder>)."""
    cache: str | None
    """``run``: responses cached in ``<run folder>/cache``; a path: a shared cache folder;
    None: no cache."""
    timeout_s: int
    """Seconds a collective may wait for the slowest worker before failing."""

    @classmethod
    def default(cls) -> RunnerSettings:
        """The ``local`` preset: one process, the run folder's cache."""
        return cls.parse(None)

    @classmethod
    def parse(cls, node: dict[str, Any] | None) -> RunnerSettings:
        """Validate a ``runner`` node; settings it leaves out take the preset's values."""
        node = dict(node or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(node) - known)
        if unknown:
            raise ConfigError(f"runner has no setting {unknown[0]!r}; known: {sorted(known)}")
        node = {**_preset(), **node}
        procs = node["num_processes"]
        if procs is None or str(procs).lower() == "auto":
            num_processes = None
        else:
            try:
                num_processes = int(procs)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"runner.num_processes={procs!r} is not a number or auto"
                ) from None
            if num_processes < 1:
                raise ConfigError(f"runner.num_processes={procs!r} must be >= 1")
        launcher = str(node["launcher"])
        if launcher not in LAUNCHERS:
            raise ConfigError(f"runner.launcher={launcher!r} is unknown; choose one of {LAUNCHERS}")
        cache = node["cache"]
        if cache is False or cache is None or str(cache).lower() in ("false", "none", "null"):
            cache = None
        elif cache is True or str(cache).lower() in ("true", "run"):
            cache = "run"
        else:
            cache = str(Path(str(cache)).expanduser())
        return cls(
            num_processes=num_processes,
            launcher=launcher,
            cpu=_flag(node["cpu"], "cpu", allow_auto=True),
            seed=check_number("runner.seed", node["seed"], Number(0)),
            bootstrap_iters=check_number(
                "runner.bootstrap_iters", node["bootstrap_iters"], Number(0)
            ),
            resume=bool(_flag(node["resume"], "resume")),
            cache=cache,
            timeout_s=check_number("runner.timeout_s", node["timeout_s"], Number(1)),
        )

    def use_cpu(self) -> bool:
        """Whether workers run on CPU (imports torch only when it has to look for GPUs)."""
        if self.cpu is not None:
            return self.cpu
        import torch

        return not torch.cuda.is_available()

    def processes(self) -> int:
        """The number of data-parallel workers to start."""
        if self.num_processes is not None:
            return self.num_processes
        if self.use_cpu():
            return 1
        import torch

        return max(1, torch.cuda.device_count())

    def cache_dir(self, run_folder: Path) -> Path | None:
        if self.cache is None:
            return None
        return run_folder / "cache" if self.cache == "run" else Path(self.cache)
