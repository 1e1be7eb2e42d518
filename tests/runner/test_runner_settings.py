"""The runner config group: parsing and validation, and what a resumed run may change."""

from __future__ import annotations

from pathlib import Path

import pytest

from mill.errors import ConfigError
from mill.runner.job import config_changes, earlier_config
from mill.runner.settings import RunnerSettings


def test_defaults_match_the_local_preset(compose) -> None:
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(compose().runner)
    settings = RunnerSettings.parse(node)
    assert settings == RunnerSettings.default()
    assert settings.cache_dir(Path("/r")) == Path("/r/cache")
    assert (
        RunnerSettings.parse(OmegaConf.to_container(compose("runner=dp").runner)).num_processes
        is None
    )


@pytest.mark.parametrize(
    ("node", "match"),
    [
        ({"num_processes": 0}, r"runner.num_processes=0 is not allowed: give a whole number >= 1"),
        (
            {"num_processes": "two"},
            r"'two' is not allowed: give a whole number >= 1 and <= 1024 \(or auto\)",
        ),
        ({"launcher": "mpirun"}, "unknown"),
        ({"cpu": "maybe"}, "true, false or auto"),
        ({"seeed": 1}, "no setting 'seeed'"),
    ],
)
def test_bad_runner_settings_are_config_errors(node: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        RunnerSettings.parse(node)


def test_cache_setting_forms() -> None:
    assert RunnerSettings.parse({"cache": False}).cache_dir(Path("/r")) is None
    assert RunnerSettings.parse({"cache": "/srv/c"}).cache_dir(Path("/r")) == Path("/srv/c")
    assert RunnerSettings.parse({"cpu": True}).use_cpu() is True


def test_resume_may_change_placement_but_not_scores() -> None:
    old = {
        "task": {"name": "arc_easy", "limit": 10},
        "model": {"name": "m", "device": "cpu", "batch_size": "auto", "dtype": "float32"},
        "runner": {"resume": False, "num_processes": 1, "seed": 1},
        "report": {"progress": "auto"},
    }
    new = {
        "task": {"name": "arc_easy", "limit": 10},
        "model": {"name": "m", "device": "cuda", "batch_size": 8, "dtype": "float32"},
        "runner": {"resume": True, "num_processes": 4, "seed": 1},
        "report": {"progress": "never"},
    }
    assert config_changes(old, new) == []
    new["task"]["limit"] = 11
    new["model"]["dtype"] = "bfloat16"
    assert config_changes(old, new) == ["model.dtype", "task.limit"]


def test_a_model_spread_over_gpus_is_refused_under_data_parallelism() -> None:
    from mill.runner.settings import refuse_device_map

    refuse_device_map({"device_map": "auto"}, 1)  # one process: allowed
    refuse_device_map({"device": "auto"}, 4)
    with pytest.raises(ConfigError, match="runner.num_processes=1"):
        refuse_device_map({"device_map": "auto"}, 2)


def test_resume_may_lower_memory_settings() -> None:
    """Running out of memory is fixed by a smaller KV-cache budget or another placement:
    neither changes a score, so neither blocks runner.resume=true."""
    old = {"model": {"name": "m", "cache_budget": None, "max_memory": None}}
    new = {
        "model": {
            "name": "m",
            "cache_budget": 1024,
            "max_memory": {"0": "20GiB", "cpu": "64GiB"},
            "offload_folder": "/tmp/off",
        }
    }
    assert config_changes(old, new) == []
    new["model"]["name"] = "other"
    assert config_changes(old, new) == ["model.name"]


@pytest.mark.parametrize(
    ("setting", "value", "fragment"),
    [
        ("model.max_length", 0, ">= 1 and <= 2147483647 (or null)"),  # was silently the model's 512
        ("model.max_length", -1, ">= 1"),
        ("model.max_length", 2.5, "whole number"),
        ("model.max_gen_toks", 0, ">= 1"),
        ("model.batch_size", 0, "(or auto)"),
        ("model.batch_size", "big", "(or auto)"),
        ("model.token_budget", -4096, ">= 1"),
        ("model.timeout_s", 0, "> 0"),
        ("model.max_response_mb", 0, "> 0"),
        ("model.max_response_mb", "lots", "> 0"),
        ("model.max_retries", -1, ">= 0"),
        ("model.num_concurrent", 0, ">= 1"),
        ("report.every_s", -1.0, "> 0"),
        ("runner.bootstrap_iters", -5, ">= 0"),
        ("runner.timeout_s", 0, ">= 1"),
        ("runner.seed", "abc", "whole number"),
    ],
)
def test_nonsense_numbers_are_refused(setting: str, value: object, fragment: str) -> None:
    from mill.runner.settings import check_settings

    group, key = setting.split(".")
    with pytest.raises(ConfigError) as info:
        check_settings({group: {key: value}})
    assert str(info.value).startswith(f"{setting}={value!r} is not allowed"), str(info.value)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "node",
    [
        {"model": {"max_length": None, "batch_size": "auto", "token_budget": None}},
        {"model": {"max_length": 2048, "batch_size": 8, "timeout_s": 0.5, "max_retries": 0}},
        {"report": {"every_s": 10.0}, "runner": {"seed": 0, "bootstrap_iters": 0}},
    ],
)
def test_sensible_numbers_pass(node: dict) -> None:
    from mill.runner.settings import check_settings

    check_settings(node)


def test_api_refuses_before_the_model_loads(tmp_path) -> None:
    """mill.evaluate: max_length=0 is named, not the model folder that does not exist
    (which loading would have reported first)."""
    import mill

    overrides = [f"model.pretrained={tmp_path / 'none'}", "model.max_length=0"]
    with pytest.raises(ConfigError, match=r"model\.max_length=0 is not allowed"):
        mill.evaluate("arc_easy", "hf", limit=2, overrides=overrides)


def test_a_resumed_folder_is_compared_typed(tmp_path: Path) -> None:
    """A resolved.yaml written before values were typed (AUTO, 8.0) is read typed, as the
    resuming run's config is: not a change; a value today's rules refuse is compared as
    written, and so named."""
    (tmp_path / "resolved.yaml").write_text(
        "model:\n  name: m\n  batch_size: AUTO\n  seed: 8.0\n", encoding="utf-8"
    )
    new = {"model": {"name": "m", "batch_size": "auto", "seed": 8}}
    old = earlier_config(tmp_path)
    assert old == new and type(old["model"]["seed"]) is int
    assert config_changes(old, new) == []
    (tmp_path / "resolved.yaml").write_text("model:\n  name: m\n  seed: -1\n", encoding="utf-8")
    assert config_changes(earlier_config(tmp_path), new) == ["model.seed"]
