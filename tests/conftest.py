"""Shared fixtures: offline environment, the model cache, composed configs; helpers live in
tests/helpers.py."""

from __future__ import annotations

import os

import pytest

from tests import helpers
from tests.helpers import REPO, SHARED, run_mill  # noqa: F401  (older imports of these)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def _mill_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build cached test models (random GPT-2) in a per-session folder."""
    os.environ.setdefault("MILL_CACHE", str(tmp_path_factory.mktemp("mill-cache")))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """The fast tier never starts mill: :func:`tests.helpers.run_mill` fails a test that is
    not marked ``slow`` (set before any fixture, session fixtures included, runs)."""
    helpers.SLOW_ALLOWED["now"] = item.get_closest_marker("slow") is not None


@pytest.fixture()
def compose():
    """Compose Mill's real config with overrides (Hydra compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import mill.cli  # noqa: F401  (registers the mill_resource resolver)

    def _compose(*overrides: str):
        GlobalHydra.instance().clear()
        with initialize_config_module("mill.conf", version_base="1.3"):
            return hydra_compose("mill", overrides=list(overrides), return_hydra_config=False)

    yield _compose
    GlobalHydra.instance().clear()
