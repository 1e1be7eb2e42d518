"""A full disk or a read-only folder is bad input, not a bug: one line on stderr naming
the file or folder, exit 2, no results.json, and the run's manifest marked failed where
it can still be written.

A full disk is made with RLIMIT_FSIZE: every write past the limit fails with EFBIG (Python
ignores SIGXFSZ), for root too. A read-only folder is a read-only bind mount in a private
mount namespace (``unshare -rm``, no root needed); where that is unavailable, permission
bits for a non-root user; root without namespaces cannot be refused a write.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mill.model.random import random_gpt2_dir
from tests.helpers import mill_command

pytestmark = pytest.mark.slow

ARGS = ("task=arc_easy", "model=gpt2_random", "task.limit=20")


def _mill(*args: str, limit: int | None = None, wrap: list[str] | None = None, cwd=None):
    random_gpt2_dir()  # built before any limit applies
    cmd = mill_command()

    def full_disk() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [*(wrap or []), *cmd, *args],
        env={**os.environ, "CI": "1"},
        preexec_fn=full_disk,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1 and errors[0].startswith("mill: error: "), stderr
    assert "Traceback" not in stderr
    return errors[0]


def _failed(folder: Path) -> dict:
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["status"] == "failed" and "traceback" not in manifest
    assert manifest["error"].startswith("StorageError: cannot ")
    assert not (folder / "results.json").exists()
    return manifest


def test_full_disk_while_caching_responses(tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = _mill(*ARGS, f"hydra.run.dir={run}", limit=32 << 10)
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert f"cannot write to the response cache {run / 'cache'}" in line
    assert "runner.cache=false" in line
    _failed(run)


def test_full_disk_while_writing_samples(tmp_path: Path) -> None:
    run = tmp_path / "run"
    # 8 KiB: above the folder's first files (.hydra/hydra.yaml is ~5 KB with Mill's help
    # text, the manifest ~2.4 KB), below the samples (~22 KB for these 20 docs)
    proc = _mill(*ARGS, "runner.cache=false", f"hydra.run.dir={run}", limit=8 << 10)
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert f"cannot write in {run}: File too large (EFBIG)" in line
    assert "free disk space" in line
    _failed(run)


def _read_only() -> Callable[[Path], list[str]] | None:
    """A way to run a command with ``folder`` read-only, or None."""
    unshare = shutil.which("unshare")
    if unshare:
        probe = subprocess.run([unshare, "-rm", "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            return lambda folder: [
                unshare, "-rm", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(folder)
            ]  # fmt: skip
    if os.geteuid() != 0:

        def chmod(folder: Path) -> list[str]:
            for p in [folder, *folder.rglob("*")]:
                p.chmod(0o555 if p.is_dir() else 0o444)
            return []

        return chmod
    return None


@pytest.fixture()
def read_only() -> Callable[[Path], list[str]]:
    how = _read_only()
    if how is None:
        pytest.skip(
            "running as root without user namespaces (unshare -rm): no way to make a "
            "folder read-only for this process; the full-disk tests cover failed writes"
        )
    return how


def test_read_only_output_folders(tmp_path: Path, read_only) -> None:
    ro = tmp_path / "ro"
    (ro / "existing").mkdir(parents=True)
    # the run folder cannot even be made
    proc = _mill(*ARGS, f"hydra.run.dir={ro / 'run'}", wrap=read_only(ro))
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert f"cannot write {ro / 'run'}" in line and "writable" in line
    # an existing, empty run folder that cannot take the log
    proc = _mill(*ARGS, f"hydra.run.dir={ro / 'existing'}", wrap=read_only(ro))
    assert proc.returncode == 2
    assert f"cannot write {ro / 'existing'}" in _one_error_line(proc.stderr)
    assert sorted(p.relative_to(ro) for p in ro.rglob("*")) == [Path("existing")]


def test_read_only_cache_folder(tmp_path: Path, read_only) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    run = tmp_path / "run"
    proc = _mill(*ARGS, f"runner.cache={cache}", f"hydra.run.dir={run}", wrap=read_only(cache))
    assert proc.returncode == 2
    line = _one_error_line(proc.stderr)
    assert f"the response cache {cache}" in line
    _failed(run)
    assert list(cache.iterdir()) == []
