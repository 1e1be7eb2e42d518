"""benchmarks.driver_common: the tools start ``mill`` as the tests do, and lm-eval's driver
runs in an interpreter without Mill installed."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from benchmarks import driver_common
from benchmarks.driver_common import REPO, mill_cmd, module_cmd, write_task_yamls
from tests.helpers import mill_command


def test_scripts_and_tests_locate_the_same_mill() -> None:
    command = mill_command()
    assert mill_cmd(["task=arc_easy"]) == [*command, "task=arc_easy"]
    # the console script beside this interpreter, or this interpreter's ``-m mill``
    assert Path(command[0]).is_file() and Path(command[0]).parent == Path(sys.executable).parent


def _mill_imports(module: Path) -> set[str]:
    """The modules of ``mill`` and ``benchmarks`` a file imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        found |= {n for n in names if n.split(".")[0] in ("mill", "benchmarks")}
    return found


def test_the_lmeval_driver_needs_nothing_of_mill_but_driver_common() -> None:
    """lm-eval's interpreter may lack Mill and its dependencies: the driver and what it
    imports of this package use only the standard library (and lm-eval's own stack)."""
    bench = REPO / "benchmarks"
    assert _mill_imports(bench / "lmeval_driver.py") == {"benchmarks.driver_common"}
    assert _mill_imports(bench / "driver_common.py") == set()
    assert _mill_imports(bench / "__init__.py") == set()


@pytest.mark.slow  # starts an interpreter
def test_the_checkout_root_makes_the_drivers_package_importable_without_site_packages() -> None:
    """``python -S`` (no site-packages: Mill is not installed there) in the checkout's root,
    as the tools start ``python -m benchmarks.lmeval_driver``: ``benchmarks.driver_common``
    imports from the working directory, and nothing but the standard library comes with it."""
    code = (
        "import sys, benchmarks.driver_common as d\n"
        "print(d.__file__)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names"
        " and not m.startswith('_')))"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    where, others = done.stdout.splitlines()
    assert Path(where) == REPO / "benchmarks" / "driver_common.py"
    assert others == "['benchmarks', 'benchmarks.driver_common']"


def test_a_tool_runs_as_a_module_of_the_package() -> None:
    assert module_cmd("/x/python", "lmeval_driver", "a", "b") == [
        "/x/python", "-m", "benchmarks.lmeval_driver", "a", "b",
    ]  # fmt: skip
    assert driver_common.lmeval_python().name.startswith("python")


def test_task_yamls_include_lm_evals_own_and_override_only_what_is_given(tmp_path: Path) -> None:
    tasks = [{"name": "mill__x", "include": "arc/arc_easy.yaml", "overrides": {"num_fewshot": 3}}]
    folder = write_task_yamls(tasks, tmp_path / "tasks", Path("/lm_eval/tasks"))
    assert folder == tmp_path / "tasks"
    text = (folder / "mill__x.yaml").read_text()
    assert yaml.safe_load(text) == {
        "include": "/lm_eval/tasks/arc/arc_easy.yaml",
        "task": "mill__x",
        "tag": [],
        "num_fewshot": 3,
    }
    assert text.startswith("include: ")  # lm-eval reads the include first
