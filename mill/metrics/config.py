"""A metric from its config: the built-in ``conf/metrics/<name>.yaml`` or a user's node.

Used by the runner (the ``metrics`` selection, a task's default metrics) and by the report
(``compare`` rebuilds each run's own metric from its ``resolved.yaml``).
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.files import register_resource_resolver
from mill.instantiate import instantiate, resolve_target
from mill.metrics.base import Metric


def metric_config(name: str) -> DictConfig:
    """The built-in config ``conf/metrics/<name>.yaml`` (its body under key ``name``)."""
    path = resources.files("mill.conf").joinpath("metrics").joinpath(f"{name}.yaml")
    if not path.is_file():
        raise ConfigError(f"no built-in metric config named {name!r}")
    register_resource_resolver()  # ${mill_resource:...} in a worker process too
    loaded = OmegaConf.create(path.read_text())
    assert isinstance(loaded, DictConfig)
    return loaded[name]


def named_metric(name: str, node: Any, allow: list[str]) -> Any:
    """``node`` with ``name`` added when it builds a metric whose constructor takes it
    (:attr:`Metric.named_by_config`: the judged metrics), so that a bad rubric's one line
    names the metric as the config does (``metrics.<name>``)."""
    target = node.get("_target_") if isinstance(node, (dict, DictConfig)) else None
    if not target or "name" in node:
        return node
    try:
        cls = resolve_target(str(target), allow)
    except (ValueError, ImportError):
        return node  # instantiate says why, in one line
    if not (isinstance(cls, type) and issubclass(cls, Metric) and cls.named_by_config):
        return node
    return (
        OmegaConf.merge(node, {"name": name})
        if isinstance(node, DictConfig)
        else {**node, "name": name}
    )


def build_metric(name: str, node: Any, allow: list[str]) -> Metric:
    """Instantiate ``node`` (targets limited to ``allow``) as the metric called ``name``."""
    metric = instantiate(named_metric(name, node, allow), allow)
    if not isinstance(metric, Metric):
        raise ConfigError(f"metrics.{name} builds a {type(metric).__name__}, not a mill Metric")
    metric.name = name
    return metric
