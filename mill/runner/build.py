"""Config -> objects: tasks (or a task group), metrics per task, the data source."""

from __future__ import annotations

from importlib import resources
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.data.load import DataSource
from mill.errors import ConfigError
from mill.instantiate import instantiate
from mill.metrics.base import Metric
from mill.task.base import Task, TaskGroup


def build_tasks(node: DictConfig, allow: list[str]) -> tuple[list[Task], TaskGroup | None]:
    """Instantiate ``task``: a single task, or a group whose members are evaluated together."""
    from mill.experiment.folder import check_name

    built = instantiate(node, allow, _convert_="all")
    if isinstance(built, TaskGroup):
        for i, task in enumerate(built.tasks):  # each member names its samples file
            check_name(task.name, f"task.tasks[{i}].name")
        return built.tasks, built
    if isinstance(built, Task):
        check_name(built.name, "task.name")
        return [built], None
    raise ConfigError(f"task config builds a {type(built).__name__}, not a mill Task")


def metric_config(name: str) -> DictConfig:
    """The built-in config ``conf/metrics/<name>.yaml`` (its body under key ``name``)."""
    path = resources.files("mill.conf").joinpath("metrics", f"{name}.yaml")
    if not path.is_file():
        raise ConfigError(f"no built-in metric config named {name!r}")
    loaded = OmegaConf.create(path.read_text())
    assert isinstance(loaded, DictConfig)
    return loaded[name]


def build_metric(name: str, node: Any, allow: list[str]) -> Metric:
    metric = instantiate(node, allow)
    if not isinstance(metric, Metric):
        raise ConfigError(f"metrics.{name} builds a {type(metric).__name__}, not a mill Metric")
    metric.name = name
    return metric


def build_metrics(
    chosen: DictConfig | None, tasks: list[Task], allow: list[str]
) -> dict[str, list[Metric]]:
    """Metrics per task: the ``metrics`` selection if given, else each task's defaults."""
    out: dict[str, list[Metric]] = {}
    for task in tasks:
        if chosen:
            out[task.name] = [build_metric(str(k), v, allow) for k, v in chosen.items()]
        else:
            out[task.name] = [build_metric(n, metric_config(n), allow) for n in task.METRICS]
    return out


def build_source(node: DictConfig) -> DataSource:
    return DataSource(source=str(node.get("source", "hub")), dir=node.get("dir"))
