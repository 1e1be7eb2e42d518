"""LLM-as-judge in one place: the rubrics (the judged metrics), the judge's typed settings,
the judging phase of a run, the judged tasks' question files, FastChat's judgment files and
the ``mill judge`` command.

One face: callers import from ``mill.judging`` (each name imported on first use,
:mod:`mill.exports`); the modules are

* :mod:`~mill.judging.rubrics`: the judged metrics (templates, the reply parser, the
  per-doc value, MT-Bench's and Arena-Hard's scores), built from ``conf/metrics/``;
* :mod:`~mill.judging.settings`: ``judge.*`` typed (:class:`JudgeSettings`);
* :mod:`~mill.judging.loop`: the phase the evaluator runs once every answer is in
  (:class:`Judging`, the docs that wait for it, :class:`WaitingDoc`);
* :mod:`~mill.judging.questions`: the judged tasks' files (``mill.tasks.judged`` reads
  its question, reference, baseline and Arena-Hard files through it);
* :mod:`~mill.judging.fastchat`: FastChat's ``model_judgment`` files of a run;
* :mod:`~mill.judging.command`: ``mill judge run=<run>``, a finished run's answers judged
  again.

Judging lies below the evaluator and the task library (both call it) and above the task
API, the models and the metrics (it uses them): the import contract in pyproject.toml. The
runner loads the judge behind its response cache (:mod:`mill.runner.judge`) and writes
FastChat's files into the run's folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports

if TYPE_CHECKING:
    from mill.judging.command import SAVED_ANSWERS, OpenRun, judge_job, rejudge_config
    from mill.judging.fastchat import fastchat_files, fastchat_judgments
    from mill.judging.loop import (
        JUDGE_ROLE,
        DispatchFn,
        JudgeFailed,
        Judging,
        LoadedJudge,
        WaitingDoc,
        judge_request,
        metric_generation,
        template_hashes,
    )
    from mill.judging.questions import (
        answer_turns,
        arena_hard_rows,
        question_rows,
        read_rows,
        row_id,
    )
    from mill.judging.rubrics import (
        ArenaHardScore,
        JudgedMetric,
        JudgePrompt,
        JudgeScore,
        JudgeTemplate,
        PairwiseWinRate,
        is_judged,
    )
    from mill.judging.settings import (
        JUDGE_SETTINGS,
        JudgeSettings,
        as_judge_error,
        judge_cache_setting,
    )

_EXPORTS = {
    "mill.judging.command": ("SAVED_ANSWERS", "OpenRun", "judge_job", "rejudge_config"),
    "mill.judging.fastchat": ("fastchat_files", "fastchat_judgments"),
    "mill.judging.loop": (
        "JUDGE_ROLE",
        "DispatchFn",
        "JudgeFailed",
        "Judging",
        "LoadedJudge",
        "WaitingDoc",
        "judge_request",
        "metric_generation",
        "template_hashes",
    ),
    "mill.judging.questions": (
        "answer_turns",
        "arena_hard_rows",
        "question_rows",
        "read_rows",
        "row_id",
    ),
    "mill.judging.rubrics": (
        "ArenaHardScore",
        "JudgedMetric",
        "JudgePrompt",
        "JudgeScore",
        "JudgeTemplate",
        "PairwiseWinRate",
        "is_judged",
    ),
    "mill.judging.settings": (
        "JUDGE_SETTINGS",
        "JudgeSettings",
        "as_judge_error",
        "judge_cache_setting",
    ),
}

__all__ = [
    "ArenaHardScore",
    "DispatchFn",
    "JUDGE_ROLE",
    "JUDGE_SETTINGS",
    "JudgeFailed",
    "JudgePrompt",
    "JudgeScore",
    "JudgeSettings",
    "JudgeTemplate",
    "JudgedMetric",
    "Judging",
    "LoadedJudge",
    "OpenRun",
    "PairwiseWinRate",
    "SAVED_ANSWERS",
    "WaitingDoc",
    "answer_turns",
    "arena_hard_rows",
    "as_judge_error",
    "fastchat_files",
    "fastchat_judgments",
    "is_judged",
    "judge_cache_setting",
    "judge_job",
    "judge_request",
    "metric_generation",
    "question_rows",
    "read_rows",
    "rejudge_config",
    "row_id",
    "template_hashes",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
