"""Every task x model config composes; tasks and metrics instantiate; targets are allowed."""

from __future__ import annotations

from importlib import resources

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError
from mill.instantiate import check_targets, instantiate
from mill.metrics.config import metric_config
from mill.runner.build import build_metrics, build_tasks
from mill.task.base import Task


def _options(group: str) -> list[str]:
    folder = resources.files("mill.conf").joinpath(group)
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


TASKS, MODELS, METRICS = _options("task"), _options("model"), _options("metrics")


def test_groups_are_not_empty() -> None:
    assert {"arc", "arc_easy", "arc_challenge", "gsm8k", "wikitext"} <= set(TASKS)
    assert {"stories260k", "llama3", "gpt2_random", "hf"} <= set(MODELS)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("task", TASKS)
def test_every_task_model_pair_composes(compose, task: str, model: str) -> None:
    cfg = compose(f"task={task}", f"model={model}")
    assert cfg.task.name == task and cfg.model.name
    check_targets(cfg)  # every _target_ is inside the allow-list
    tasks, _ = build_tasks(cfg.task, [])
    assert all(isinstance(t, Task) for t in tasks)
    build_metrics(None, tasks, [])  # the task's default metrics exist as configs


def test_hub_models_switch_data_to_hub_unless_overridden(compose) -> None:
    assert compose("model=llama3").data.source == "hub"
    assert compose("model=llama3", "data=local", "data.dir=/x").data.source == "local"
    assert compose().data.source == "bundled"


@pytest.mark.parametrize("name", METRICS)
def test_every_metric_config_instantiates(name: str) -> None:
    metric = instantiate(metric_config(name))
    assert metric.output_types


def test_appended_metrics_land_under_metrics(compose) -> None:
    cfg = compose("+metrics=[acc,acc_norm]")
    assert list(cfg.metrics) == ["acc", "acc_norm"]


def test_targets_outside_allow_list_are_refused() -> None:
    node = OmegaConf.create({"_target_": "os.system", "command": "true"})
    with pytest.raises(ConfigError, match="not allowed"):
        instantiate(node)
    nested = OmegaConf.create({"_target_": "mill.task.TaskGroup", "tasks": [{"_target_": "x.Y"}]})
    with pytest.raises(ConfigError, match=r"tasks\[0\]"):
        check_targets(nested)


def test_user_configs_load_through_searchpath(compose, tmp_path) -> None:
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "my_arc.yaml").write_text(
        "_target_: mill.tasks.arc.ArcEasy\nname: my_arc\nnum_fewshot: 0\nlimit: 7\n"
    )
    cfg = compose(f"hydra.searchpath=[file://{tmp_path}]", "task=my_arc")
    assert cfg.task.name == "my_arc" and cfg.task.limit == 7
