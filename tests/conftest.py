"""Shared fixtures: offline environment, composed configs, and a CLI runner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def _mill_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build cached test models (random GPT-2) in a per-session folder."""
    os.environ.setdefault("MILL_CACHE", str(tmp_path_factory.mktemp("mill-cache")))


def run_mill(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 300
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``mill`` console script in a subprocess (offline, CI=1)."""
    full_env = {**os.environ, "CI": "1", **(env or {})}
    exe = Path(sys.executable).with_name("mill")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "mill"]
    return subprocess.run(
        [*cmd, *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


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
