"""Nothing is written outside the experiment folder and Mill's cache: the caches libraries
keep under the user's home (matplotlib's, datasets' Arrow copy of a local file, torch's
compile cache) go into Mill's cache unless the user chose a place for them.

Runs the real ``mill`` with HOME and TMPDIR set to empty folders and no cache variable set,
on a task whose data goes through ``datasets`` (WikiText-2's text file) and whose report
draws plots (matplotlib), then lists what appeared.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers import run_mill

# variables that would point a cache elsewhere: unset, so the defaults (the home) apply
CACHE_VARIABLES = (
    "MILL_CACHE",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "HF_HOME",
    "HF_DATASETS_CACHE",
    "MPLCONFIGDIR",
    "TORCHINDUCTOR_CACHE_DIR",
    "TRITON_CACHE_DIR",
)


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **env: str):
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    for name in CACHE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "run"
    proc = run_mill(
        "task=wikitext",
        "task.limit=2",
        "model=stories260k",
        f"hydra.run.dir={out}",
        env={"HOME": str(home), "TMPDIR": str(tmp), **env},
    )
    assert proc.returncode == 0, proc.stderr
    assert list((out / "plots").iterdir()), "the report drew no plots: matplotlib untested"
    return home, tmp


@pytest.mark.slow
def test_nothing_appears_outside_the_folder_and_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home, tmp = _run(tmp_path, monkeypatch)
    outside = [f for f in _files(home) if not f.startswith(".cache/mill/")]
    assert outside == [], outside
    assert [p.name for p in home.iterdir()] == [".cache"]
    assert [p.name for p in (home / ".cache").iterdir()] == ["mill"]
    assert list(tmp.iterdir()) == []
    cache = home / ".cache" / "mill"
    assert _files(cache / "datasets"), "the Arrow copy of the data file is in Mill's cache"
    assert _files(cache / "matplotlib"), "matplotlib's font cache is in Mill's cache"


@pytest.mark.slow
def test_a_place_the_user_chose_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "my-mpl"
    datasets_cache = tmp_path / "my-datasets"
    home, _ = _run(
        tmp_path,
        monkeypatch,
        MPLCONFIGDIR=str(mine),
        HF_DATASETS_CACHE=str(datasets_cache),
    )
    assert _files(mine) and _files(datasets_cache)
    assert not (home / ".cache" / "mill" / "matplotlib").exists()
    assert not (home / ".cache" / "mill" / "datasets").exists()
    assert os.environ.get("MPLCONFIGDIR") is None  # the test's own environment untouched
