"""Names that become paths (task, model, group members) never lead out of the experiment
folder: refused with one line naming the setting, exit 2, nothing written."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
from omegaconf import OmegaConf

from mill.errors import ConfigError, MillError
from mill.experiment.folder import ExperimentFolder, check_name
from mill.runner.build import build_tasks
from tests.helpers import REPO, run_mill

BAD = ["../x", "../../x", "a/b", "..", ".", "", "a\\b", "new\nline", "/abs"]


@pytest.mark.parametrize("name", BAD)
def test_unsafe_names_are_refused_naming_the_setting(name: str) -> None:
    with pytest.raises(ConfigError, match=r"^model\.name=.* cannot be used"):
        check_name(name, "model.name")


@pytest.mark.parametrize("name", ["arc_easy", "gpt2-random", "llama3.1", "mmlu_abstract_algebra"])
def test_plain_names_pass(name: str) -> None:
    assert check_name(name, "task.name") == name


def test_built_tasks_and_group_members_are_checked(compose) -> None:
    with pytest.raises(ConfigError, match=r"^task\.name='\.\./x'"):
        build_tasks(compose("task=arc_easy", "task.name=../x").task, [])
    group = OmegaConf.create(
        {
            "_target_": "mill.task.TaskGroup",
            "name": "g",
            "tasks": [
                {"_target_": "mill.tasks.arc.ArcEasy"},
                {"_target_": "mill.tasks.arc.ArcChallenge", "name": "../../evil"},
            ],
        }
    )
    with pytest.raises(ConfigError, match=r"^task\.tasks\[1\]\.name='\.\./\.\./evil'"):
        build_tasks(group, [])


def test_the_folder_writes_nothing_outside_itself(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path / "run")
    folder.claim()
    record = SimpleNamespace(task="../escape", to_json=lambda: {"x": 1})
    with pytest.raises(MillError, match="task.name='../escape'"):
        folder.write_sample(record)  # type: ignore[arg-type]
    with pytest.raises(MillError, match="leads outside"):
        folder.write_text("../report.txt", "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    folder.unlock()


def _user_task(tmp_path: Path, name: str) -> Path:
    user = tmp_path / "user"
    shutil.copytree(REPO / "examples" / "user_tasks", user)
    yaml = user / "conf" / "task" / "capitals.yaml"
    yaml.write_text(yaml.read_text().replace("name: capitals", f"name: {name}"))
    return user


@pytest.mark.slow
def test_user_yaml_task_named_with_dotdot_is_refused(tmp_path: Path) -> None:
    user = _user_task(tmp_path, "../../victim")
    victim = user / "victim.jsonl"
    victim.write_text("precious\n")
    search = f"hydra.searchpath=[file://{user / 'conf'}]"
    for extra in ([f"hydra.run.dir={user / 'out' / 'run'}"], []):
        proc = run_mill(search, "task=capitals", *extra, cwd=user)
        assert proc.returncode == 2, proc.stderr
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and errors[0].startswith("mill: error: task.name='../../victim'")
        assert victim.read_text() == "precious\n"
        assert not list(user.rglob("results.json")) and not list(user.rglob("*.partial.jsonl"))
    # without hydra.run.dir the run folder's name is refused before Hydra makes it
    assert not (user / "outputs").exists()


@pytest.mark.slow
def test_model_name_cannot_move_the_run_folder(tmp_path: Path) -> None:
    cwd = tmp_path / "a" / "b"
    cwd.mkdir(parents=True)
    proc = run_mill("model.name=../../x", "task.limit=2", cwd=cwd)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("mill: error: model.name='../../x'")
    assert "model.name" in errors[0]
    # nothing was created anywhere: not the run folder, not outputs/
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == [
        Path("a"),
        Path("a/b"),
    ]
