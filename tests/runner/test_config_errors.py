"""Hydra's composition errors become one line with close matches (CLI cases are in
test_bad_input.py; these are the branches the CLI cannot reach here)."""

from __future__ import annotations

from pathlib import Path

from hydra.errors import MissingConfigException

from mill.runner.config_errors import describe, group_options


def test_missing_submitit_plugin_says_what_to_install() -> None:
    err = MissingConfigException("x", missing_cfg_file="hydra/launcher/submitit_slurm")
    message = describe(err, [])
    assert "\n" not in message and "mill-eval[slurm]" in message


def test_group_options_include_the_users_search_path(tmp_path: Path) -> None:
    (tmp_path / "task").mkdir()
    (tmp_path / "task" / "my_task.yaml").write_text("name: my_task\n")
    argv = [f"hydra.searchpath=[file://{tmp_path}]", "task=my_tsk"]
    options = group_options("task", argv)
    assert "my_task" in options and "arc_easy" in options
    err = MissingConfigException("Could not load 'task/my_tsk'.", missing_cfg_file="task/my_tsk")
    message = describe(err, argv)
    assert message.startswith("unknown task 'my_tsk'") and "did you mean my_task" in message
