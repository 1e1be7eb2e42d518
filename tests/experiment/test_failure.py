"""A failure enters a manifest one way: status failed, the first error, a traceback for bugs."""

from __future__ import annotations

from pathlib import Path

from mill.errors import ConfigError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import mark_failed, record_failure
from mill.results import Manifest


def test_user_errors_have_no_traceback_and_bugs_do() -> None:
    manifest = Manifest(status="running")
    record_failure(manifest, ConfigError("task.name is missing\nmore"))
    assert manifest.to_dict() == {"status": "failed", "error": "ConfigError: task.name is missing"}
    try:
        raise KeyError("boom")
    except KeyError as err:
        bug = Manifest(status="running")
        record_failure(bug, err)
    assert bug.error == "KeyError: 'boom'"
    assert bug.traceback is not None and 'raise KeyError("boom")' in bug.traceback


def test_only_a_running_manifest_is_marked_and_the_first_error_wins(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path)
    folder.write_manifest({"status": "running", "error": "ModelError: first"})
    mark_failed(folder, KeyboardInterrupt())
    assert folder.read_manifest().to_dict() == {
        "status": "interrupted",
        "error": "ModelError: first",
    }
    folder.write_manifest({"status": "succeeded"})
    mark_failed(folder, ConfigError("late"))
    assert folder.read_manifest().to_dict() == {"status": "succeeded"}
    (tmp_path / "manifest.json").write_text("{")
    mark_failed(folder, ConfigError("unreadable"))  # left as it is, no exception
    assert (tmp_path / "manifest.json").read_text() == "{"
