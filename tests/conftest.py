"""Shared fixtures: offline environment, the model cache, composed configs; helpers live in
tests/helpers.py."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests import helpers

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist the workers share the cores: each worker, and every process it starts
# (mill, its data-parallel workers, lm-eval, training loops), gets its share of torch
# threads instead of all of them. Two workers of two threads on two cores spin at every
# op's barrier: tests/model/engine/test_prefix_attention.py ran 168.5 s with two threads against
# 53.7 s with one. Set before torch is imported; a test that needs the default removes it.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    _share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, _share)))


@pytest.fixture(scope="session", autouse=True)
def _mill_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build cached test models (random GPT-2) in a per-session folder."""
    os.environ.setdefault("MILL_CACHE", str(tmp_path_factory.mktemp("mill-cache")))


@pytest.fixture(scope="session", autouse=True)
def _fast_runs_draw_in_process() -> Iterator[None]:
    """A run in a fast test draws its plots and report.html in process, as a run does when
    its report helper cannot start (the same files: tests/report/test_background.py), so
    the fast tier starts no process and imports matplotlib once, not once per run (about
    2 s of CPU a run); a slow test's run keeps the helper process."""
    from mill.report.background import ReportHelper

    start = ReportHelper.__init__

    def helper_in_slow_tests_only(self: ReportHelper) -> None:
        if helpers.SLOW_ALLOWED["now"]:
            start(self)
        else:
            self._proc = None  # no child: ReportHelper.render draws in process

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ReportHelper, "__init__", helper_in_slow_tests_only)
        yield


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The fast tier never starts mill: :func:`tests.helpers.run_mill` fails a test that is
    not marked ``slow`` (set before any fixture, session fixtures included, runs)."""
    helpers.SLOW_ALLOWED["now"] = item.get_closest_marker("slow") is not None


@pytest.fixture()
def compose():
    """Compose Mill's real config with overrides (:func:`tests.helpers.compose_config`)."""
    return helpers.compose_config
