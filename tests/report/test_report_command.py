"""``mill -cn report``: rebuild tables, plots and pages from existing folders, no model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_mill

DERIVED = ("report.html", "report.txt", "plots", "sweep.png")


def _strip(folder: Path) -> dict[str, bytes]:
    """Remove the derived files of a run folder; return what they were."""
    before = {
        str(p.relative_to(folder)): p.read_bytes()
        for name in DERIVED
        for p in ([folder / name] if (folder / name).is_file() else (folder / name).rglob("*"))
        if p.is_file()
    }
    for name in DERIVED:
        target = folder / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    return before


@pytest.mark.slow
def test_rebuilding_a_sweep_reproduces_every_file(sweep, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    jobs = sorted(p for p in copy.iterdir() if p.is_dir() and p.name[0].isdigit())
    before = {job.name: _strip(job) for job in jobs}
    sweep_before = _strip(copy)
    proc = run_mill("-cn", "report", f"runs=[{copy}]")
    assert proc.returncode == 0, proc.stderr
    for job in jobs:
        after = {k: (job / k).read_bytes() for k in before[job.name]}
        assert after.keys() == before[job.name].keys()
        for name, data in after.items():
            if name == "report.html":  # the page names its folder; all else is identical
                data = data.replace(str(copy).encode(), str(sweep.path).encode())
            assert data == before[job.name][name], f"{job.name}/{name}"
    # the sweep's task x model table is printed again, and the page is rebuilt
    assert set(sweep_before) == {"report.html", "report.txt", "sweep.png"}
    assert (copy / "sweep.png").read_bytes() == sweep_before["sweep.png"]
    table = [line for line in proc.stdout.splitlines() if line.startswith(("|", "+"))]
    old = [line for line in sweep_before["report.txt"].decode().splitlines() if line[:1] in "|+"]
    assert table == old and any("| gpt2_random |" in line for line in table)
    assert f"wrote {copy / 'report.html'}" in proc.stderr


@pytest.mark.slow
def test_one_run_prints_its_table(sweep) -> None:
    run = sweep.path / "3_wikitext_gpt2_random"
    proc = run_mill("-cn", "report", f"runs=[{run}]")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (run / "report.txt").read_text().strip()
    assert "| task     | metric            |" in proc.stdout


@pytest.mark.slow
def test_several_runs_get_a_combined_page(sweep, single_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "combined"
    runs = [sweep.path / "0_arc_stories260k", single_run]
    proc = run_mill("-cn", "report", f"runs=[{runs[0]},{runs[1]}]", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert (out / "sweep.png").is_file() and "../" in html
    # one row per task x model: arc_easy has both models; arc_challenge only stories260k
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| arc_easy ")]
    assert sum("stories260k" in line for line in lines) == 2  # acc, acc_norm
    assert sum("gpt2_random" in line for line in lines) == 2
    value = json.loads((single_run / "results.json").read_text())["tasks"]["arc_easy"]
    acc = value["metrics"]["acc"]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    expected = ["arc_easy", "acc ^", "gpt2_random", f"{acc['value']:.4f}", f"{acc['stderr']:.4f}"]
    assert expected + ["30"] in cells


@pytest.mark.slow
def test_report_never_imports_torch_or_transformers(sweep, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    code = (
        "import sys\n"
        f"sys.argv = ['mill', '-cn', 'report', 'runs=[{copy}]']\n"
        "from mill.cli import main\n"
        "main()\n"
        "heavy = ('torch', 'transformers', 'accelerate', 'datasets')\n"
        "bad = [m for m in heavy if m in sys.modules]\n"
        "assert not bad, bad\n"
        "print('NO-MODEL-IMPORTS')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "NO-MODEL-IMPORTS" in proc.stdout and (copy / "report.html").is_file()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("runs", "message"),
    [
        (None, "report needs folders"),
        ("[{missing}]", "does not exist"),
        ("[{failed}]", "has no results.json (its manifest says 'failed'"),
        ("[{empty}]", "holds no run folders"),
    ],
)
def test_bad_folders_are_one_line_and_exit_2(tmp_path: Path, runs, message) -> None:
    failed = tmp_path / "failed"
    failed.mkdir()
    (failed / "manifest.json").write_text(json.dumps({"status": "failed", "error": "boom"}))
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["-cn", "report"]
    if runs:
        args.append("runs=" + runs.format(missing=tmp_path / "nope", failed=failed, empty=empty))
    proc = run_mill(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("mill: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not list(tmp_path.rglob("report.html"))
