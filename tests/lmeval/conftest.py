"""Fixtures of the lm-eval bridge tests: lm-eval installed (else skip), local task YAMLs."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("MILL_SHARED", REPO.parent / "shared"))
HAS_LM_EVAL = importlib.util.find_spec("lm_eval") is not None

needs_lm_eval = pytest.mark.skipif(
    not HAS_LM_EVAL, reason='lm-eval is not installed (pip install "mill-eval[lm-eval]")'
)
needs_shared = pytest.mark.skipif(
    not (SHARED / "data").is_dir(), reason=f"no shared data at {SHARED} (set MILL_SHARED)"
)


def parity_script():
    """scripts/lmeval_bridge_parity.py as a module (its helpers are the tests' too)."""
    sys.path.insert(0, str(REPO / "scripts"))
    spec = importlib.util.spec_from_file_location(
        "lmeval_bridge_parity", REPO / "scripts" / "lmeval_bridge_parity.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def local_tasks(tmp_path: Path) -> Path:
    """The test-tree task YAMLs with their ``../shared/`` paths pointing at SHARED."""
    return parity_script().prepare_tasks(tmp_path / "tasks", SHARED)
