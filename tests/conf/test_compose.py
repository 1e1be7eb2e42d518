"""Every task x model config composes; tasks and metrics instantiate; targets are allowed."""

from __future__ import annotations

import copy
from importlib import resources

import pytest
from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.instantiate import check_targets, instantiate
from mill.metrics.config import metric_config
from mill.runner.build import build_metrics, build_tasks
from mill.task.base import Task
from tests.helpers import compose_config


def _options(group: str) -> list[str]:
    folder = resources.files("mill.conf").joinpath(group)
    return sorted(
        p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")
    )


TASKS, MODELS, METRICS = _options("task"), _options("model"), _options("metrics")
# task=lm_eval needs task.tasks and the lm-eval extra: tests/lm_eval composes it; task=tasks
# is what task=[a,b] composes (tests/test_cli.py)
TASKS = [t for t in TASKS if t not in ("lm_eval", "tasks")]


def test_groups_are_not_empty() -> None:
    assert {"arc", "arc_easy", "arc_challenge", "gsm8k", "wikitext"} <= set(TASKS)
    assert {"stories260k", "llama3", "gpt2_random", "hf"} <= set(MODELS)


# Every task with the fake model, and every model with one task of each kind (log-likelihood,
# generation, perplexity, code, judged): a model config reaches a task only through the
# settings every task of a kind reads (and data=hub for hub models), so the full cross
# product (192 compositions, a third of the fast tier's time) finds nothing these do not.
KINDS = ["arc_easy", "gsm8k", "wikitext", "humaneval", "mt_bench"]
PAIRS = sorted({(t, "fake") for t in TASKS} | {(t, m) for t in KINDS for m in MODELS})


def test_the_pairs_cover_every_task_and_model() -> None:
    assert {t for t, _ in PAIRS} == set(TASKS) and {m for _, m in PAIRS} == set(MODELS)


_COMPOSED: dict[tuple[str, ...], DictConfig] = {}


def _composed(*overrides: str) -> DictConfig:
    """The config of ``overrides``, composed once in this module (a copy each time): the
    pairs test and the base test below read the same compositions (a quarter of a second
    each)."""
    if overrides not in _COMPOSED:
        _COMPOSED[overrides] = compose_config(*overrides)
    return copy.deepcopy(_COMPOSED[overrides])


@pytest.mark.parametrize(("task", "model"), PAIRS)
def test_every_task_and_model_composes(task: str, model: str) -> None:
    cfg = _composed(f"task={task}", f"model={model}")
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


def _own(group: str, name: str) -> dict:
    """A config file as written (its defaults list dropped)."""
    folder = resources.files("mill.conf")
    text = (folder.joinpath(group) if group else folder).joinpath(f"{name}.yaml").read_text()
    node = OmegaConf.to_container(OmegaConf.create(text), resolve=False)
    assert isinstance(node, dict)
    return node


def _defaults(target: str) -> dict:
    """Keyword defaults of a ``_target_`` (a **kwargs factory adds HFCausalLM's)."""
    import importlib
    import inspect

    module, _, attr = target.rpartition(".")
    params = dict(inspect.signature(getattr(importlib.import_module(module), attr)).parameters)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        from mill.model.hf import HFCausalLM

        params = {**inspect.signature(HFCausalLM).parameters, **params}
    return {k: p.default for k, p in params.items() if p.default is not inspect.Parameter.empty}


HF_MODELS = [  # transformers models: their configs extend model/hf
    m
    for m in MODELS
    if m != "hf"
    and str(_own("model", m).get("_target_", "mill.model.hf")).startswith(
        ("mill.model.hf", "mill.model.random")
    )
]
SINGLE_TASKS = [
    t for t in TASKS if str(_own("task", t).get("_target_", "")).startswith("mill.tasks.")
]
# (the defaults-list entry, the base's group and name)
HF_BASE, TASK_BASE = ("hf", "model", "hf"), ("/task_base@_here_", "", "task_base")
CHAT_BASE = ("openai_completions", "model", "openai_completions")
DATA_BASE = ("/data_base@_here_", "", "data_base")


@pytest.mark.parametrize(
    ("group", "name", "base"),
    [("model", m, HF_BASE) for m in HF_MODELS]
    + [("model", "openai_chat", CHAT_BASE)]
    + [("task", t, TASK_BASE) for t in SINGLE_TASKS]
    + [("data", d, DATA_BASE) for d in _options("data")],
)
def test_configs_extend_their_base_and_state_only_what_differs(
    group: str, name: str, base: tuple[str, str, str]
) -> None:
    entry, base_group, base_name = base
    own = _own(group, name)
    defaults = own.pop("defaults", [])
    assert entry in defaults and defaults.index(entry) < defaults.index("_self_"), defaults
    base_node = _own(base_group, base_name)
    same = [k for k, v in own.items() if k in base_node and base_node[k] == v and k != "dataset"]
    assert not same, f"{group}/{name}.yaml repeats its base: {same}"
    # a model beside arc_easy (the default task), a task beside the fake model: the
    # compositions of the pairs test above (a task's node is the same beside any model)
    overrides = {
        "model": [f"task={KINDS[0]}", f"model={name}"],
        "task": [f"task={name}", "model=fake"],
        "data": [f"data={name}"] + (["data.dir=/d"] if name == "local" else []),
    }[group]
    composed = OmegaConf.to_container(_composed(*overrides)[group], resolve=False)
    if "_target_" not in composed:  # a data config: plain settings
        assert set(composed) == set(base_node) | set(own)
        return
    # what the file leaves to its base is what its target would do without the key
    fallback = _defaults(composed["_target_"])
    inherited = {k: v for k, v in composed.items() if k not in own and k not in ("_target_",)}
    wrong = {k: v for k, v in inherited.items() if k in fallback and fallback[k] != v}
    assert not wrong, f"{group}/{name}: the base changes {wrong} from the target's defaults"
