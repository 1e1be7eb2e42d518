"""A task's specification (mill.task.spec.TaskSpec): its settings checked and typed by the
schema's rules (the ones the command line is held to), whoever builds the task: a config, a
group, or Python."""

from __future__ import annotations

import pytest
from mill.tasks.arc import ArcChallenge, ArcEasy
from mill.tasks.gsm8k import GSM8K
from mill.tasks.judged import JudgedTask

from mill.errors import ConfigError, TaskError
from mill.task import TaskGroup
from mill.task.spec import TaskSpec


def test_the_spec_holds_the_settings_typed() -> None:
    task = GSM8K(limit=3.0, num_fewshot=2.0, repeats=1, generation={"until": "Q:"})
    assert isinstance(task.spec, TaskSpec)
    assert (task.limit, task.num_fewshot) == (3, 2) and isinstance(task.limit, int)
    assert task.generation.until == ("Q:",)  # one stop string, not its characters
    assert task.describe()["limit"] == 3


def test_a_group_types_what_it_sets_on_its_members() -> None:
    group = TaskGroup("arc", [ArcEasy(), ArcChallenge()], limit=2, chat_template="true")
    assert [(t.limit, t.chat_template) for t in group.tasks] == [(2, True), (2, True)]
    with pytest.raises(ConfigError, match=r"^task\.chat_template='maybe' is not allowed"):
        TaskGroup("arc", [ArcEasy(), ArcChallenge()], chat_template="maybe")
    with pytest.raises(ConfigError, match=r"^task\.limit=0 is not allowed"):
        TaskGroup("arc", [ArcEasy(), ArcChallenge()], limit=0)


def test_the_class_checks_stay_the_tasks() -> None:
    with pytest.raises(TaskError, match=r"repeats apply to generative tasks only"):
        ArcEasy(repeats=2)
    with pytest.raises(TaskError, match=r"unknown subjects \['nope'\]"):
        ArcEasy(subjects=["nope"])


def test_a_judged_tasks_own_settings_are_typed() -> None:
    with pytest.raises(ConfigError, match=r"^task\.max_turns=0 is not allowed"):
        JudgedTask(questions="q.jsonl", max_turns=0)
    with pytest.raises(ConfigError, match=r"^task\.questions=5 is not allowed: give a string"):
        JudgedTask(questions=5)
