"""Config -> objects: tasks (or a task group), metrics per task."""

from __future__ import annotations

from contextlib import nullcontext

from omegaconf import DictConfig

from mill.data.load import DataSource
from mill.errors import ConfigError, TaskError
from mill.instantiate import instantiate
from mill.metrics.base import Metric
from mill.metrics.config import build_metric, metric_config
from mill.schema import already_typed
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


def build_metrics(
    chosen: DictConfig | None, tasks: list[Task], allow: list[str], typed: bool = False
) -> dict[str, list[Metric]]:
    """Metrics per task: the ``metrics`` selection if given, else each task's defaults.
    ``typed``: ``chosen`` is a run config's typed group, not checked again."""
    out: dict[str, list[Metric]] = {}
    for task in tasks:
        own = getattr(task, "lm_eval_metrics", None)
        if own is not None:  # lm-eval tasks score with their own metric_list
            if chosen:
                raise ConfigError(
                    f"task {task.name!r} is an lm-eval task scored by its own metric_list; "
                    "drop metrics=... (or +metrics=...) from the command"
                )
            out[task.name] = own()
            continue
        if chosen:
            with already_typed() if typed else nullcontext():
                built = [build_metric(str(k), v, allow) for k, v in chosen.items()]
        else:
            built = [build_metric(n, metric_config(n), allow) for n in task.METRICS]
        out[task.name] = [part for metric in built for part in metric.parts()]
    return out


def model_replays(node: DictConfig | None, allow: list[str]) -> bool:
    """Whether the model config answers from saved answers (``REPLAYS``: ``model=replay``,
    ``mill judge``'s saved answers), so a task's repeats are the file's own."""
    from mill.instantiate import resolve_target

    target = node.get("_target_") if node is not None else None
    if not target:
        return False
    try:
        return bool(getattr(resolve_target(str(target), allow), "REPLAYS", False))
    except (ValueError, ImportError):
        return False  # instantiating the model says why, in one line


def seed_metrics(metrics: dict[str, list[Metric]], seed: int) -> None:
    """Give ``runner.seed`` (typed) to the metrics whose value is itself a seeded resample
    (``run_seed``: Arena-Hard's bootstrap score)."""
    for metric in (m for ms in metrics.values() for m in ms):
        if hasattr(metric, "run_seed"):
            metric.run_seed = seed


def build_run(
    cfg: DictConfig, allow: list[str], source: DataSource, seed: int
) -> tuple[list[Task], TaskGroup | None, dict[str, list[Metric]]]:
    """Everything but the model and the data source (``source``, typed with the run's
    config): tasks (and their group), metrics per task (``seed``: ``runner.seed``), checked
    against each other, then every task's rows checked and docs built."""
    from mill.evaluator import check_metrics

    with already_typed():  # the run config's typed task group: not checked again
        tasks, group = build_tasks(cfg.task, allow)
    metrics = build_metrics(cfg.get("metrics"), tasks, allow, typed=True)
    seed_metrics(metrics, seed)
    replays = model_replays(cfg.get("model"), allow)
    for task in tasks:
        problem = None if replays else task.greedy_repeats()
        if problem:
            raise TaskError(problem)
        check_metrics(task, metrics[task.name])
    for task in tasks:  # every row checked (and docs built) before the model loads
        task.prepare(source)
    return tasks, group, metrics
