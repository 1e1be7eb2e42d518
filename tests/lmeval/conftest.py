"""Fixtures of the lm-eval bridge tests: lm-eval installed (else skip), local task YAMLs."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from benchmarks.driver_common import documented_overrides
from tests.helpers import SHARED, installed, run_mill

HAS_LM_EVAL = installed("lm_eval")

skip_without_lm_eval = pytest.mark.skipif(
    not HAS_LM_EVAL, reason='lm-eval is not installed (pip install "mill-eval[lm-eval]")'
)
skip_without_shared = pytest.mark.skipif(
    not (SHARED / "data").is_dir(), reason=f"no shared data at {SHARED} (set MILL_SHARED)"
)


def parity_script() -> ModuleType:
    """:mod:`benchmarks.lmeval_bridge_parity` (its helpers are the tests' too)."""
    from benchmarks import lmeval_bridge_parity

    return lmeval_bridge_parity


def run_bridge_on_stories(
    tasks: list[str], overrides: Path, limit: int, run: Path, timeout: int
) -> dict[str, Any]:
    """``mill task=lm_eval`` on ``tasks`` with the ``task.dataset_overrides`` file
    ``overrides``, ``limit`` docs each, on stories260k into ``run``: its results.json (the
    run must succeed)."""
    proc = run_mill(
        "task=lm_eval",
        f"task.tasks=[{','.join(tasks)}]",
        f"task.dataset_overrides={overrides}",
        f"task.limit={limit}",
        "model=stories260k",
        f"hydra.run.dir={run}",
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results: dict[str, Any] = json.loads((run / "results.json").read_text())
    return results


def documented_bbh_overrides() -> list[tuple[Path, str]]:
    """The documented examples for ``leaderboard_bbh`` (:func:`documented_overrides`)."""
    return documented_overrides("leaderboard_bbh_*")


@pytest.fixture()
def local_tasks(tmp_path: Path) -> Path:
    """The test-tree task YAMLs with their ``../shared/`` paths pointing at SHARED."""
    return parity_script().prepare_tasks(tmp_path / "tasks", SHARED)
