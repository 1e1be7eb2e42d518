"""Nothing is written outside the folder that owns it: one rule (:func:`mill.files.inside`)
for every file Mill writes. A symbolic link planted at any name a run writes, pointing
outside, is refused with one line naming it before the run writes anything (and the run's
writers refuse it again where they write); nothing appears, changes or is truncated outside.
The same for what ``mill report`` and ``mill compare`` write, and for the temporary file of
an atomic write."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from mill.errors import StorageError
from mill.experiment.folder import RUN_NAMES, ExperimentFolder
from mill.files import inside, write_atomic, write_inside
from mill.runner.job import run_job
from mill.runner.logs import RunLog
from mill.runner.settings import RunnerSettings
from tests.helpers import compose_config, run_mill

FOLDERS = {".hydra", "samples", "cache", "plots", "model_judgment"}
"""The names of RUN_NAMES that are folders (the others are files)."""

PRECIOUS = "precious\n"


def _plant(run: Path, name: str, outside: Path) -> Path:
    """A link ``run/name`` to ``outside/name``: an existing folder, or a file with content."""
    run.mkdir(parents=True, exist_ok=True)
    target = outside / name.lstrip(".")
    if name in FOLDERS:
        target.mkdir(parents=True)
    else:
        target.write_text(PRECIOUS)
    (run / name).symlink_to(target)
    return target


def _unchanged(outside: Path, name: str) -> None:
    target = outside / name.lstrip(".")
    if name in FOLDERS:
        assert not list(target.iterdir()), f"written outside through {name}"
    else:
        assert target.read_text() == PRECIOUS, f"{name}: the file outside was changed"
    assert sorted(p.name for p in outside.iterdir()) == [name.lstrip(".")]


@pytest.mark.parametrize("name", RUN_NAMES)
def test_a_link_planted_at_any_name_a_run_writes_is_refused(name: str, tmp_path: Path) -> None:
    outside, run = tmp_path / "outside", tmp_path / "run"
    outside.mkdir()
    _plant(run, name, outside)
    cfg = compose_config("model=fake", "task=arc_easy", "task.limit=2", "report.progress=never")
    with pytest.raises(StorageError, match=rf"^{run / name} leads outside {run}") as err:
        run_job(cfg, run)
    assert len(str(err.value).splitlines()) == 1
    _unchanged(outside, name)
    assert [p.name for p in run.iterdir()] == [name], "the run wrote before refusing"


@pytest.mark.parametrize("name", RUN_NAMES)
def test_a_resumed_run_refuses_a_link_planted_since(name: str, tmp_path: Path) -> None:
    outside, run = tmp_path / "outside", tmp_path / "run"
    outside.mkdir()
    folder = ExperimentFolder(run)
    folder.claim()
    folder.write_manifest({"status": "interrupted"})
    folder.unlock()
    existing = run / name
    if existing.is_dir():
        existing.rmdir()  # samples/, empty: replaced by the link
    else:
        existing.unlink(missing_ok=True)
    _plant(run, name, outside)
    with pytest.raises(StorageError, match=rf"^{run / name} leads outside"):
        ExperimentFolder(run).reopen()
    _unchanged(outside, name)


def _sample(root: Path) -> None:
    record = SimpleNamespace(task="t", to_json=lambda: {"x": 1})
    ExperimentFolder(root).write_sample(record)  # type: ignore[arg-type]


def _cache(root: Path) -> None:
    RunnerSettings.parse({}).cache_dir(root)  # runner.cache=run: <run folder>/cache


def _text(name: str) -> Callable[[Path], object]:
    return lambda root: ExperimentFolder(root).write_text(name, "x")


WRITERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "a run's text file": ("report.txt", _text("report.txt")),
    "a run's .hydra/": (".hydra", _text(".hydra/config.yaml")),
    "the run's manifest": (
        "manifest.json",
        lambda root: ExperimentFolder(root).write_manifest({"status": "running"}),
    ),
    "a sample file": ("samples", _sample),
    "mill.log's handler": ("mill.log", lambda root: RunLog(root / "mill.log")),
    "the run's cache folder": ("cache", _cache),
    "a report's or compare's file": (
        "plots",
        lambda root: write_inside(root, "plots/compare.png", b"png"),
    ),
}
"""Each writer and the name it writes under its folder (the check at the writer itself,
whatever was checked before it)."""


@pytest.mark.parametrize("writer", WRITERS)
def test_every_writer_refuses_a_link_leading_outside(writer: str, tmp_path: Path) -> None:
    name, write = WRITERS[writer]
    outside, root = tmp_path / "outside", tmp_path / "root"
    outside.mkdir()
    _plant(root, name, outside)
    with pytest.raises(StorageError, match=rf"^{root / name}.* leads outside {root}"):
        write(root)
    _unchanged(outside, name)


def test_a_link_inside_the_folder_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "plots").symlink_to(tmp_path / "real")
    write_inside(tmp_path, "plots/a.png", b"png")
    assert (tmp_path / "real" / "a.png").read_bytes() == b"png"
    assert inside(tmp_path, tmp_path / "plots" / "b.png") == tmp_path / "plots" / "b.png"


def test_the_temporary_file_of_an_atomic_write_is_never_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text(PRECIOUS)
    (tmp_path / "report.txt.tmp").symlink_to(victim)
    write_atomic(tmp_path / "report.txt", "new")
    assert victim.read_text() == PRECIOUS
    assert (tmp_path / "report.txt").read_text() == "new"
    assert not (tmp_path / "report.txt").is_symlink()
    assert not (tmp_path / "report.txt.tmp").exists()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["mill.log", "plots", "cache", "samples", "report.txt"])
def test_the_command_refuses_a_planted_link_in_one_line(name: str, tmp_path: Path) -> None:
    """Through ``mill``: ``mill.log`` is opened by Hydra's logging, before Mill's job."""
    outside, run = tmp_path / "outside", tmp_path / "run"
    outside.mkdir()
    _plant(run, name, outside)
    proc = run_mill("model=fake", "task.limit=2", f"hydra.run.dir={run}")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"mill: error: {run / name} leads outside {run}")
    _unchanged(outside, name)
