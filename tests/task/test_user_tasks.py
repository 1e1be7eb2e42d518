"""The two user-task examples of docs/tasks.md run from a user directory, as documented."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO, run_mill

EXAMPLE = REPO / "examples" / "user_tasks"
FILES = ("conf/task/capitals.yaml", "conf/task/capitals_py.yaml", "my_tasks.py")


def test_the_docs_show_the_example_files_verbatim() -> None:
    page = (REPO / "docs" / "tasks.md").read_text()
    for name in FILES:
        assert (EXAMPLE / name).read_text().strip() in page, name


@pytest.mark.slow
def test_yaml_and_python_tasks_run_from_a_user_directory(tmp_path: Path) -> None:
    user = tmp_path / "user"
    shutil.copytree(EXAMPLE, user)
    search = f"hydra.searchpath=[file://{user / 'conf'}]"
    yaml_run = run_mill(search, "task=capitals", "hydra.run.dir=out_yaml", cwd=user)
    assert yaml_run.returncode == 0, yaml_run.stderr
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [".", os.environ.get("PYTHONPATH")]))}
    py_run = run_mill(
        search, "task=capitals_py", "allow_targets=[my_tasks.]", "hydra.run.dir=out_py",
        cwd=user, env=env,
    )  # fmt: skip
    assert py_run.returncode == 0, py_run.stderr
    yaml_res = json.loads((user / "out_yaml" / "results.json").read_text())
    py_res = json.loads((user / "out_py" / "results.json").read_text())
    a, b = yaml_res["tasks"]["capitals"]["metrics"], py_res["tasks"]["capitals_py"]["metrics"]
    assert a["acc"]["n"] == b["acc"]["n"] == 8
    assert a["acc"]["value"] == b["acc"]["value"] and a["acc_norm"] == b["acc_norm"]
    # the class is refused unless allowed
    refused = run_mill(search, "task=capitals_py", "hydra.run.dir=out_no", cwd=user, env=env)
    assert refused.returncode == 2 and "allow_targets" in refused.stderr
    assert not (user / "out_no" / "results.json").exists()


@pytest.mark.slow
def test_a_user_task_with_an_old_hook_name_stops_the_run_naming_the_new_one(
    tmp_path: Path,
) -> None:
    """A class written for Mill's underscore hooks (``_get_instruction_text``) is not
    silently run without its prompt: the run stops with one line naming ``doc_to_text``."""
    user = tmp_path / "user"
    shutil.copytree(EXAMPLE, user)
    module = user / "my_tasks.py"
    module.write_text(module.read_text().replace("def doc_to_text", "def _get_instruction_text"))
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [".", os.environ.get("PYTHONPATH")]))}
    run = run_mill(
        f"hydra.searchpath=[file://{user / 'conf'}]", "task=capitals_py",
        "allow_targets=[my_tasks.]", "hydra.run.dir=out", cwd=user, env=env,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert "my_tasks.Capitals defines _get_instruction_text" in line
    assert "it is now doc_to_text" in line and "Traceback" not in run.stderr
    assert not (user / "out" / "results.json").exists()
