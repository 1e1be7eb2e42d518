"""The ``runner`` config group, typed: processes, launcher, device, seeds, resume, cache.

The defaults live in one place, ``conf/runner/local.yaml``: :meth:`RunnerSettings.parse` fills
what a node leaves out from it, and :meth:`RunnerSettings.default` is that preset. The values
are checked and typed by their declarations in :data:`mill.schema.SETTINGS`
(:func:`mill.schema.typed`); this module only says what they mean (auto, the cache's forms).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.schema import check_config, typed

__all__ = ["RunnerSettings", "check_settings", "refuse_device_map"]


@cache
def _preset() -> dict[str, Any]:
    """``conf/runner/local.yaml``: every setting with its default."""
    from omegaconf import OmegaConf

    text = resources.files("mill.conf").joinpath("runner/local.yaml").read_text()
    loaded = OmegaConf.to_container(OmegaConf.create(text))
    assert isinstance(loaded, dict)
    return {str(k): v for k, v in loaded.items()}


def check_settings(resolved: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting a run's numbers depend on, checked on the resolved config before any
    data or model loads: the declared rules of :data:`mill.schema.SETTINGS`, no setting
    that means nothing in this config (:func:`check_meaningful`) and the judge's cache
    folder. Returns the config with each declared setting typed
    (:func:`mill.schema.check_config`): :class:`mill.runner.run_config.RunConfig`'s values."""
    values = check_config(resolved)
    check_meaningful(values)
    judge = values.get("judge")
    if isinstance(judge, dict):  # a file where its cache folder goes: named before the run
        from mill.judging import judge_cache_setting

        judge_cache_setting(judge.get("cache", "shared"))
    return values


@cache
def root_keys() -> frozenset[str]:
    """The keys a run's config may have at its root: every config group of ``conf/`` (a
    folder: data, task, model, judge, ...; a new group is known as soon as its folder
    exists) and the primary config's own keys (``allow_targets``, ``hydra``)."""
    from omegaconf import OmegaConf

    conf = resources.files("mill.conf")
    groups = {f.name for f in conf.iterdir() if f.is_dir() and not f.name.startswith(("_", "."))}
    primary = OmegaConf.to_container(OmegaConf.create(conf.joinpath("mill.yaml").read_text()))
    assert isinstance(primary, dict)
    return frozenset(groups | {str(k) for k in primary if k != "defaults"})


def check_meaningful(resolved: Mapping[str, Any]) -> None:
    """A setting that is set but means nothing in this config is a ConfigError with a hint,
    never silently ignored: a root-level key no group reads (``+limit=5``: a task's
    ``limit``), a data folder under a ``data=`` option that reads none (``data.dir`` without
    ``data=local``). Commands (``mill report``, ...) have their own keys: not checked."""
    if "command" in resolved:
        return
    for key in resolved:
        if key in root_keys():
            continue
        owners = [g for g, node in resolved.items() if isinstance(node, dict) and key in node]
        hint = (
            f"did you mean {owners[0]}.{key}={resolved[key]!r}?"
            if owners
            else f"the root keys are {', '.join(sorted(root_keys() - {'hydra'}))}"
        )
        raise ConfigError(
            f"{key}={resolved[key]!r} is set at the root, where Mill reads no {key!r}: {hint}"
        )
    data = resolved.get("data")
    if isinstance(data, dict) and data.get("dir") is not None and data.get("source") != "local":
        raise ConfigError(
            f"data.dir={data['dir']!r} is set, but data={data.get('source')} reads no folder "
            f"(the folder would be ignored): add data=local to read {data['dir']}, or drop "
            "data.dir"
        )


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
    sample_tokens: bool = False
    """Samples (and the run's response cache) keep each prompt's and answer's token ids."""

    @classmethod
    def default(cls) -> RunnerSettings:
        """The ``local`` preset: one process, the run folder's cache."""
        return cls.parse(None)

    @classmethod
    def parse(cls, node: Mapping[str, Any] | None) -> RunnerSettings:
        """The settings of a ``runner`` node that no run config typed (a test's, a
        caller's), typed by the schema here; settings it leaves out take the preset's
        values. A run's own come typed (:meth:`of_typed`)."""
        return cls.of_typed(typed("runner", cls._filled(node)))

    @classmethod
    def of_typed(cls, node: Mapping[str, Any] | None) -> RunnerSettings:
        """The settings of a ``runner`` node whose settings are already typed by their rules
        (:class:`mill.runner.run_config.RunConfig`'s), read without checking them again;
        settings it leaves out take the preset's values (Mill's own file, typed as written)."""
        values = cls._filled(node)
        cache = values["cache"]
        if cache is False or cache is None or str(cache).lower() in ("false", "none", "null"):
            cache = None
        elif cache is True or str(cache).lower() in ("true", "run"):
            cache = "run"
        else:
            cache = str(Path(str(cache)).expanduser())
        return cls(
            num_processes=None if values["num_processes"] == "auto" else values["num_processes"],
            launcher=values["launcher"],
            cpu=None if values["cpu"] in (None, "auto") else values["cpu"],
            seed=values["seed"],
            bootstrap_iters=values["bootstrap_iters"],
            resume=values["resume"],
            cache=cache,
            timeout_s=values["timeout_s"],
            sample_tokens=values["sample_tokens"],
        )

    @classmethod
    def _filled(cls, node: Mapping[str, Any] | None) -> dict[str, Any]:
        """``node`` with the preset's value of each setting it leaves out (unknown keys
        refused); ``num_processes`` null is ``auto``."""
        given = dict(node or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(f"runner has no setting {unknown[0]!r}; known: {sorted(known)}")
        filled = {**_preset(), **given}
        if filled["num_processes"] is None:
            filled["num_processes"] = "auto"
        return filled

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
        if self.cache == "run":  # the run folder's: checked like every name it writes
            from mill.files import inside

            return inside(run_folder, run_folder / "cache")
        return Path(self.cache)
