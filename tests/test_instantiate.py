"""The ``_target_`` allow-list checks what a target names, not how it is spelled."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError
from mill.instantiate import check_targets, current_targets, instantiate, resolve_target

# attribute paths through modules that mill imports (os, sqlite3, subprocess, ...); shutil
# through a user package is in test_user_packages_are_checked_the_same_way
BYPASSES = [
    "mill.cli.os.makedirs",
    "mill.cli.os.system",
    "mill.cli.sys.exit",
    "mill.runner.cache.sqlite3.connect",
    "mill.runner.launch.subprocess.run",
    "mill.runner.launch.subprocess.Popen",
    "mill.files.os.replace",
    "mill.runner.job.OmegaConf.save",  # a class of another package, walked through
    "mill.runner.job.OmegaConf",  # a class of another package, re-exported
    "mill.errors.ConfigError.__init__",  # dunders lead to __globals__ and friends
    "mill.errors.ConfigError.with_traceback",  # inherited from a builtin
    "mill.runner.execute.log.manager",  # an instance, not a class of mill's own
    "mill.cli",  # a module is not a class or function
    "os.system",
    "shutil.rmtree",
    "millstone.x",  # spelled like mill, another package
]


@pytest.mark.parametrize("target", BYPASSES)
def test_attribute_paths_out_of_mill_are_refused(target: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        resolve_target(target)
    made = tmp_path / "made"
    node = {"_target_": target, "_args_": [str(made)]}
    with pytest.raises(ConfigError, match=rf"_target_='{target}' is not allowed"):
        instantiate(node)
    assert not made.exists()


def test_the_refusal_names_the_setting_and_why() -> None:
    cfg = OmegaConf.create({"model": {"_target_": "mill.cli.os.makedirs", "name": "x"}})
    with pytest.raises(ConfigError) as info:
        check_targets(cfg)
    message = str(info.value)
    assert message.startswith("model._target_='mill.cli.os.makedirs' is not allowed")
    assert "module 'os' imported by 'mill.cli'" in message and "allow_targets" in message
    assert "\n" not in message


def test_legitimate_targets_still_build() -> None:
    from mill.metrics.calibration import ExpectedCalibrationError
    from mill.model.random import random_gpt2

    assert resolve_target("mill.model.random.random_gpt2") is random_gpt2
    metric = instantiate({"_target_": "mill.metrics.calibration.ExpectedCalibrationError"})
    assert isinstance(metric, ExpectedCalibrationError) and metric.bins == 10
    # a built-in task class (mill.tasks is installed from tasks/)
    assert resolve_target("mill.tasks.arc.ArcEasy").__module__ == "mill.tasks.arc"


def test_user_packages_are_checked_the_same_way(tmp_path: Path, monkeypatch) -> None:
    pkg = tmp_path / "trusted_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(
        "import os\nimport shutil\nimport subprocess\nfrom pathlib import Path\n\n\n"
        "def make(x):\n    return ('made', x)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    allow = ["trusted_pkg."]
    assert instantiate({"_target_": "trusted_pkg.make", "x": 1}, allow) == ("made", 1)
    for target in (
        "trusted_pkg.os.makedirs",
        "trusted_pkg.shutil.rmtree",
        "trusted_pkg.subprocess.run",
        "trusted_pkg.Path",
    ):
        with pytest.raises(ConfigError, match="is not allowed"):
            instantiate({"_target_": target, "_args_": [str(tmp_path / "x")]}, allow)
    # without the allow-list entry the package is not even imported
    sys.modules.pop("trusted_pkg", None)
    with pytest.raises(ConfigError, match="outside the allowed packages"):
        check_targets(OmegaConf.create({"_target_": "trusted_pkg.make"}))
    assert "trusted_pkg" not in sys.modules
    assert not (tmp_path / "x").exists()


def test_an_older_runs_moved_targets_name_where_the_class_lives_now() -> None:
    # runs written before judging moved into mill.judging name mill.metrics.judge.*
    old = {
        "metrics": {"judge_score": {"_target_": "mill.metrics.judge.JudgeScore", "k": [1]}},
        "task": {"_target_": "mill.tasks.judged.JudgedTask"},
        "list": [{"_target_": "mill.metrics.judge.PairwiseWinRate"}],
    }
    new = current_targets(old)
    assert new["metrics"]["judge_score"] == {
        "_target_": "mill.judging.rubrics.JudgeScore",
        "k": [1],
    }
    assert new["task"] == old["task"]  # not moved: unchanged
    assert new["list"][0]["_target_"] == "mill.judging.rubrics.PairwiseWinRate"
    for target in (new["metrics"]["judge_score"]["_target_"], new["list"][0]["_target_"]):
        assert resolve_target(target).__module__ == "mill.judging.rubrics"
