"""Hydra's composition errors become one line with close matches (CLI cases are in
test_bad_input.py; these are the branches the CLI cannot reach here)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hydra.errors import MissingConfigException

from mill.runner.config_errors import describe, group_options
from tests.helpers import compose_config


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


@pytest.mark.parametrize(
    ("override", "said", "unsaid"),
    [
        # a root key misspelled: the suggestion keeps what was written after it (no stray dot)
        ("tsk.limit=2", ["unknown setting tsk.limit;", "did you mean task.limit?",
                         "write +tsk.limit=..."], [".task", " .task"]),
        ("modle=fake", ["unknown setting modle;", "did you mean model?"], [".model"]),
        ("task.limt=2", ["unknown setting task.limt;", "did you mean task.limit?"], []),
        # a sweep's value in a single run: the list (several tasks, one run) and -m (a sweep)
        ("task=arc_easy,piqa", ["task=arc_easy,piqa lists several tasks",
                                "task=[arc_easy,piqa] (one folder, one model load)",
                                "mill -m task=arc_easy,piqa"], ["\\", "Ambiguous"]),
        ("model=fake,stories260k", ["model=fake,stories260k is a sweep",
                                    "mill -m model=fake,stories260k"], ["[fake", "\\"]),
        ("task.limit=1,2", ["mill -m task.limit=1,2", "a list is task.limit=[1,2]",
                            "quoted: task.limit='1,2'"], ["\\"]),
        ("task.limit=range(1,3)", ["task.limit=range(1,3) is a sweep",
                                   "mill -m task.limit=range(1,3)"], ["requires --multirun"]),
    ],
)  # fmt: skip
def test_composition_errors_are_one_line(override: str, said: list[str], unsaid: list[str]) -> None:
    from hydra.errors import HydraException

    with pytest.raises(HydraException) as raised:
        compose_config(override)
    message = describe(raised.value, [override])
    assert "\n" not in message
    assert all(s in message for s in said), message
    assert not any(u in message for u in unsaid), message


@pytest.mark.parametrize(
    ("logger", "level", "line"),
    [
        ("mill", logging.WARNING, "mill: warning: said"),
        ("mill.runner.run", logging.WARNING, "mill: warning: said"),
        ("mill", logging.ERROR, "mill: error: said"),
        ("huggingface_hub.utils._http", logging.WARNING,
         "mill: warning: (huggingface_hub.utils._http) said"),
        ("millet", logging.WARNING, "mill: warning: (millet) said"),
    ],
)  # fmt: skip
def test_the_console_says_log_records_in_mills_style(logger: str, level: int, line: str) -> None:
    from mill.runner.logs import ConsoleFormatter

    record = logging.getLogger(logger).makeRecord(logger, level, __file__, 1, "said", (), None)
    assert ConsoleFormatter().format(record) == line
