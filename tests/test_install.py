"""The built wheel (not the source tree) finds its configs, tasks, model and data."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

# `python -m mill` without the development checkout's editable install, whose finder (on
# sys.meta_path, from a .pth file) would supply any module the wheel lacks from the source
# tree: only the installed files can be imported.
WITHOUT_EDITABLE = """
import runpy, sys
editable = lambda hook: getattr(hook, "__module__", "").startswith("__editable__")
sys.meta_path[:] = [finder for finder in sys.meta_path if not editable(finder)]
sys.path_hooks[:] = [hook for hook in sys.path_hooks if not editable(hook)]
runpy.run_module("mill", run_name="__main__", alter_sys=True)
"""


@pytest.mark.slow
def test_non_editable_install_runs_the_demo(tmp_path: Path) -> None:
    target = tmp_path / "site"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(REPO),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert build.returncode == 0, build.stderr
    assert not (target / "tasks").exists()  # no generic top-level `tasks` package
    # nor the benchmark tools (beside the package) or the maintenance scripts
    assert not (target / "benchmarks").exists() and not (target / "scripts").exists()
    shipped = {p.name for p in target.iterdir() if not p.name.endswith("-info")} - {"bin"}
    assert shipped == {"mill"}, shipped
    for script in ("mill", "mill-convert-gguf", "mill-convert-llama2c"):  # the commands
        assert (target / "bin" / script).is_file(), script
    for path in (
        "mill/conf/mill.yaml",
        "mill/conf/task/arc.yaml",
        "mill/tasks/arc.py",
        "mill/resources/models/stories260k/model.safetensors",
        "mill/resources/data/arc_easy/ARC-Easy-Test.jsonl",
    ):
        assert (target / path).is_file(), path
    # every package of the source tree is in the wheel
    packages = {p.parent.relative_to(REPO).as_posix() for p in (REPO / "mill").rglob("*.py")}
    missing = {p for p in packages if not (target / p).is_dir()}
    assert not missing, f"not in the wheel ([tool.setuptools] packages): {sorted(missing)}"
    env = {**os.environ, "PYTHONPATH": str(target), "CI": "1"}
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-c", WITHOUT_EDITABLE, "task.limit=5", f"hydra.run.dir={out}"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "results.json").is_file()
    assert str(target) in (out / "results.json").read_text()  # bundled data read from the wheel
