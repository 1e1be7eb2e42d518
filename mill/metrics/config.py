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
from mill.instantiate import instantiate
from mill.metrics.base import Metric


def metric_config(name: str) -> DictConfig:
    """The built-in config ``conf/metrics/<name>.yaml`` (its body under key ``name``)."""
    path = resources.files("mill.conf").joinpath("metrics", f"{name}.yaml")
    if not path.is_file():
        raise ConfigError(f"no built-in metric config named {name!r}")
    register_resource_resolver()  # ${mill_resource:...} in a worker process too
    loaded = OmegaConf.create(path.read_text())
    assert isinstance(loaded, DictConfig)
    return loaded[name]


def build_metric(name: str, node: Any, allow: list[str]) -> Metric:
    """Instantiate ``node`` (targets limited to ``allow``) as the metric called ``name``."""
    metric = instantiate(node, allow)
    if not isinstance(metric, Metric):
        raise ConfigError(f"metrics.{name} builds a {type(metric).__name__}, not a mill Metric")
    metric.name = name
    return metric
