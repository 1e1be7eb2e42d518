"""The checks of a run's whole config before any data or model loads (:func:`check_settings`:
the declared rules, settings that mean nothing, the judge's cache folder), and the ``runner``
group's typed object, :class:`RunnerSettings` (declared with its rules in
:mod:`mill.schema.groups`: processes, launcher, device, seeds, resume, cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from mill.errors import ConfigError
from mill.schema import RunnerSettings, check_config

__all__ = ["RunnerSettings", "check_settings", "refuse_device_map"]


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
