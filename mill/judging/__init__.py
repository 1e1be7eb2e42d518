"""LLM-as-judge in one place: the judge's typed settings, the judging phase of a run, the
record the manifest keeps, FastChat's judgment files and the ``mill judge`` command.

The rubrics themselves are metrics (:mod:`mill.metrics.judge`: templates, the reply
parser, the per-doc value, :func:`~mill.metrics.judge.is_judged`); the evaluator calls
the judging phase through :class:`mill.evaluator.JudgePhase`, which :class:`Judging`
implements; the runner builds it and loads the judge behind its response cache
(:mod:`mill.runner.judge`).
"""

from mill.judging.command import judge_job, rejudge_config
from mill.judging.fastchat import fastchat_judgments, write_fastchat_judgments
from mill.judging.loop import (
    JUDGE_ROLE,
    JudgeFailed,
    Judging,
    LoadedJudge,
    judge_request,
    metric_generation,
    template_hashes,
)
from mill.judging.settings import JUDGE_SETTINGS, JudgeSettings, judge_cache_setting

__all__ = [
    "JUDGE_ROLE",
    "JUDGE_SETTINGS",
    "JudgeFailed",
    "JudgeSettings",
    "Judging",
    "LoadedJudge",
    "fastchat_judgments",
    "judge_cache_setting",
    "judge_job",
    "judge_request",
    "metric_generation",
    "rejudge_config",
    "template_hashes",
    "write_fastchat_judgments",
]
