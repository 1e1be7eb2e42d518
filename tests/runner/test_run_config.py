"""The one typed run configuration (mill.runner.run_config): composed -> RunConfig ->
resolved.yaml -> read back as the same object; each declared setting typed once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError
from mill.runner.run_config import RunConfig
from mill.schema import ReportSettings, RunnerSettings
from tests.helpers import compose_config


def _resolved(*overrides: str) -> dict[str, Any]:
    resolved = OmegaConf.to_container(compose_config(*overrides), resolve=True)
    assert isinstance(resolved, dict)
    return resolved


def test_round_trip_through_resolved_yaml(tmp_path: Path) -> None:
    """to_yaml is resolved.yaml; read gives back an equal object, slices included."""
    config = RunConfig.from_resolved(_resolved("task=gsm8k", "model=fake", "runner.seed=7"))
    (tmp_path / "resolved.yaml").write_text(config.to_yaml())
    back = RunConfig.read(tmp_path)
    assert back == config
    assert back.runner.seed == 7 and back.data.source == "bundled"


def test_a_run_reads_back_as_the_object_it_started_with(tmp_path: Path) -> None:
    """The resolved.yaml a real run writes reads back as the object built from the same
    composition (what the data-parallel workers read)."""
    from mill.runner.job import run_job

    cfg = compose_config("task=arc_easy", "model=fake", "task.limit=3", "report.progress=never")
    out = tmp_path / "run"
    run_job(cfg, out, show=False)
    started = RunConfig.from_resolved(OmegaConf.to_container(cfg, resolve=True))  # type: ignore[arg-type]
    assert RunConfig.read(out) == started


@pytest.mark.parametrize(
    ("override", "group", "key", "typed"),
    [
        ("model.seed=3.0", "model", "seed", 3),  # a whole number given as a float: int
        ("+model.batch_size=AUTO", "model", "batch_size", "auto"),  # a word: lower case
        ("runner.cpu=TRUE", "runner", "cpu", True),  # a choice's true/false: a boolean
        ("task.limit=5.0", "task", "limit", 5),
        ("data.skip_bad_rows=True", "data", "skip_bad_rows", True),
        ("report.every_s=2", "report", "every_s", 2),
    ],
)
def test_each_group_gets_typed_values(override: str, group: str, key: str, typed: Any) -> None:
    config = RunConfig.from_resolved(_resolved("model=fake", override))
    value = config.values[group][key]
    assert value == typed and type(value) is type(typed)
    assert config.group(group)[key] == typed


def test_the_typed_slices() -> None:
    """runner, report and data come as their typed objects, read from the typed values
    without a second check."""
    config = RunConfig.from_resolved(
        _resolved(
            "model=fake",
            "runner.seed=11.0",
            "runner.num_processes=AUTO",
            "report.progress=NEVER",
            "data.skip_bad_rows=true",
        )
    )
    assert config.runner == RunnerSettings.parse({"seed": 11, "num_processes": "auto"})
    assert type(config.runner.seed) is int and config.runner.num_processes is None
    assert config.report == ReportSettings(progress="never", every_s=10.0)
    assert config.data.skip_bad_rows is True


@pytest.mark.parametrize(("group", "name"), [("runner", "local"), ("report", "console")])
def test_the_presets_are_written_typed(group: str, name: str) -> None:
    """of_typed fills what a node leaves out from the group's preset without checking it:
    the file holds each value as its rule types it."""
    from mill.schema import typed
    from mill.schema.groups import preset

    assert typed(group, preset(f"{group}/{name}.yaml")) == preset(f"{group}/{name}.yaml")


def test_the_fixed_groups_are_declared_by_their_fields() -> None:
    """SETTINGS takes the runner, report, execution and data rules from the typed objects'
    fields: one declaration, every field a setting and every setting a field."""
    from dataclasses import fields

    from mill.data import DataSource
    from mill.execution import ExecutionSettings
    from mill.schema import SETTINGS
    from mill.schema.groups import group_rules

    for group, cls in (
        ("runner", RunnerSettings),
        ("report", ReportSettings),
        ("execution", ExecutionSettings),
        ("data", DataSource),
    ):
        declared = {k: r for k, r in SETTINGS.items() if k.startswith(f"{group}.")}
        assert declared == group_rules(group, cls)
        assert [k.split(".")[1] for k in declared] == [f.name for f in fields(cls)]


def test_the_other_groups_are_declared_by_their_fields() -> None:
    """model, task, judge, sink, metrics and reasoning take their rules from the fields of
    mill.schema.components: the model's under model. and judge. alike (declared once),
    the generation settings under task.generation., judge.generation. and arena-hard's."""
    from mill.schema import SETTINGS, components
    from mill.schema.groups import group_rules

    model = group_rules("model", components.ModelFields)
    assert {k: r for k, r in SETTINGS.items() if k.startswith("model.")} == model
    for key, rule in model.items():
        assert SETTINGS["judge." + key.removeprefix("model.")] is rule
    generation = group_rules("g", components.GenerationFields)
    for prefix in (
        "task.generation",
        "judge.generation",
        "metrics.arena_hard_score.judge_generation",
    ):
        for key, rule in generation.items():
            assert SETTINGS[prefix + key.removeprefix("g")] is rule
    assert (
        SETTINGS["metrics.*.ignore_case"]
        is group_rules("m", components.MetricFields)["m.ignore_case"]
    )
    assert {k: r for k, r in SETTINGS.items() if k.startswith("task.")} == group_rules(
        "task", components.TaskFields
    )


def test_group_is_a_copy() -> None:
    config = RunConfig.from_resolved(_resolved("model=fake"))
    config.group("model")["name"] = "changed"
    assert config.values["model"]["name"] == "fake"


def test_bad_values_are_one_line_as_before() -> None:
    with pytest.raises(ConfigError, match=r"^model\.max_gen_toks=0 is not allowed: give "):
        RunConfig.from_resolved(_resolved("model=fake", "+model.max_gen_toks=0"))


def test_a_folder_without_resolved_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="has no resolved.yaml"):
        RunConfig.read(tmp_path)


@pytest.mark.parametrize("run", ["arc_easy", "judged"])
def test_an_older_run_folder_still_reads(run: str) -> None:
    """The resolved.yaml of folders written before RunConfig (results format 1, kept in
    tests/support/format1) reads as a run configuration, and its file is what to_yaml
    writes of it: the same bytes."""
    folder = Path(__file__).parents[1] / "support" / "format1" / run
    config = RunConfig.read(folder)
    assert config.to_yaml() == (folder / "resolved.yaml").read_text(encoding="utf-8")


def _declared_keys(node: Any, prefix: str = "") -> set[str]:
    """The full keys of ``node`` (a resolved config) that a rule declares (a setting
    whose value is a mapping is one key)."""
    from mill.schema import rule_of

    out: set[str] = set()
    for key, value in node.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if rule_of(full) is not None:
            out.add(full)
        elif isinstance(value, dict):
            out |= _declared_keys(value, full)
    return out


@pytest.mark.parametrize(
    "overrides",
    [
        ("task=arc_easy",),
        ("task=gsm8k", "task.num_fewshot=2", "+metrics=pass_at_k", "task.repeats=2")
        + ("task.generation.do_sample=true", "task.generation.temperature=0.5"),
        ("task=[arc_easy,piqa]", "+sink=wandb", "sink.wandb.mode=disabled", "+metrics=ece"),
        ("task=mt_bench", "judge=fake", "judge.max_invalid=1.0", "judge.cache=false"),
        ("task=humaneval", "execution=none", "execution.allow_unsafe=true"),
    ],
)
def test_a_run_checks_each_setting_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, overrides: tuple[str, ...]
) -> None:
    """On a fake-model run each declared setting is checked by its rule once, by RunConfig:
    the model, tasks, metrics, sinks, judge and sandbox built from its typed slices are not
    checked again (every module's check_number counted, the key it names)."""
    import sys
    from collections import Counter

    import mill.schema.rules
    from mill.runner.job import run_job

    calls: Counter[str] = Counter()
    real = mill.schema.rules.check_number

    def counting(setting: str, value: Any, rule: Any) -> Any:
        calls[setting] += 1
        return real(setting, value, rule)

    for module in list(sys.modules.values()):
        if module.__name__.startswith("mill") and getattr(module, "check_number", None) is real:
            monkeypatch.setattr(module, "check_number", counting)
    cfg = compose_config("model=fake", "task.limit=4", "report.progress=never", *overrides)
    run_job(cfg, tmp_path / "run", show=False)
    declared = _declared_keys(OmegaConf.to_container(cfg, resolve=True))
    assert declared and declared <= set(calls)
    assert {key: n for key, n in calls.items() if n != 1} == {}


def test_objects_built_in_python_are_still_checked_in_one_line() -> None:
    """A constructor still types its arguments outside a run's build: a backend or a task
    built in Python with a bad value is refused in one line, also after a run and in a
    thread started while another thread builds a run's objects."""
    import threading

    from mill.tasks.arc import ArcEasy

    from mill.model.fake import FakeLM
    from mill.model.hf import HFCausalLM
    from mill.schema import already_typed

    with pytest.raises(ConfigError, match=r"^model\.batch_size=0 is not allowed: give [^\n]*$"):
        HFCausalLM(pretrained="/nowhere", batch_size=0)
    with pytest.raises(ConfigError, match=r"^task\.limit=0 is not allowed: give [^\n]*$"):
        ArcEasy(limit=0)
    refused: list[BaseException] = []

    def build() -> None:
        try:
            FakeLM(seed=-1)
        except ConfigError as err:
            refused.append(err)

    with already_typed():  # this thread's block: another thread's objects are checked
        thread = threading.Thread(target=build)
        thread.start()
        thread.join()
    assert [str(e).split(" is ")[0] for e in refused] == ["model.seed=-1"]
    with pytest.raises(ConfigError, match=r"^model\.seed=-1 is not allowed"):
        FakeLM(seed=-1)  # the block ended with it
