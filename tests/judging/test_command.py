"""``mill judge``'s own settings, typed by the schema (``mill.schema.COMMANDS["judge"]``)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError
from mill.judging import judge_job
from mill.report.load import RunFolder


def test_a_number_as_the_run_is_refused_naming_run() -> None:
    cfg = OmegaConf.create({"command": "judge", "run": 123, "judge": {"_target_": "x"}})
    with pytest.raises(ConfigError, match=r"^run=123 is not allowed: give a string; "):
        judge_job(cfg, RunFolder.open)


def test_a_missing_run_says_how_to_give_it() -> None:
    cfg = OmegaConf.create({"command": "judge", "run": "???", "judge": {"_target_": "x"}})
    with pytest.raises(ConfigError, match="mill judge needs the finished run: mill judge run="):
        judge_job(cfg, RunFolder.open)
