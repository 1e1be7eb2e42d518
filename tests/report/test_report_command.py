"""``mill report`` (and its Hydra spelling ``mill -cn report``): rebuild tables, plots and
pages from existing folders, no model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import run_mill

DERIVED = ("report.html", "samples.html", "report.txt", "plots", "sweep.png")


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


def _snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``folder``: its bytes and mtime (what "nothing written" compares)."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in folder.rglob("*")
        if p.is_file()
    }


@pytest.mark.slow
def test_rebuilding_a_sweep_reproduces_every_file_under_out(sweep, tmp_path: Path) -> None:
    """Issue 26, item 7: the rebuilt reports go under out=, equal to the ones the sweep
    wrote; the sweep folder it reads is left exactly as it was."""
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    jobs = sorted(p for p in copy.iterdir() if p.is_dir() and p.name[0].isdigit())
    before = _snapshot(copy)
    out = tmp_path / "out"
    proc = run_mill("report", f"runs=[{copy}]", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(copy) == before  # not a byte, not an mtime changed
    for job in jobs:
        derived = {k: v for k, (v, _) in before.items() if k.startswith(job.name + "/")}
        derived = {
            k.removeprefix(job.name + "/"): v
            for k, v in derived.items()
            if k.split("/")[1] in DERIVED
        }
        assert derived, job.name
        for name, data in derived.items():
            rebuilt = (out / job.name / name).read_bytes()
            if name in ("report.html", "samples.html"):  # they name the folder they read
                rebuilt = rebuilt.replace(str(copy).encode(), str(sweep.path).encode())
            assert rebuilt == data, f"{job.name}/{name}"
    # the sweep's task x model table is printed again, and the page is rebuilt in out
    assert (out / "sweep.png").read_bytes() == before["sweep.png"][0]
    table = [line for line in proc.stdout.splitlines() if line.startswith(("|", "+"))]
    old = [line for line in before["report.txt"][0].decode().splitlines() if line[:1] in "|+"]
    assert table == old and any("| fake1 |" in line for line in table)
    assert f"wrote {out / 'report.html'}" in proc.stderr
    assert "href='0_arc_fake0/report.html'" in (out / "report.html").read_text()


@pytest.mark.slow
def test_a_sweep_with_failed_jobs_names_them_and_exits_2(sweep, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    job = copy / "3_wikitext_fake1"
    (job / "results.json").unlink()
    manifest = json.loads((job / "manifest.json").read_text())
    manifest.update(status="failed", error="ValueError: boom")
    (job / "manifest.json").write_text(json.dumps(manifest))
    before = _snapshot(copy)
    out = tmp_path / "out"
    proc = run_mill("-cn", "report", f"runs=[{copy}]", f"out={out}")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mill: error: ")]
    assert len(errors) == 1 and "1 job(s) of the sweep failed" in errors[0]
    assert "3_wikitext_fake1" in errors[0] and "boom" in errors[0]
    assert _snapshot(copy) == before
    page = (out / "report.html").read_text()
    assert "Failed jobs" in page and "3_wikitext_fake1" in page
    assert (out / "0_arc_fake0" / "report.html").is_file()
    assert not (out / "3_wikitext_fake1").exists()


@pytest.mark.slow
def test_out_inside_a_folder_it_reads_is_refused(sweep, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    before = _snapshot(copy)
    proc = run_mill("-cn", "report", f"runs=[{copy}]", f"out={copy / 'again'}")
    assert proc.returncode == 2 and "a folder this report reads" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    # two jobs given one by one with out= their sweep folder: out/<run> is each run's own
    jobs = [copy / "0_arc_fake0", copy / "1_arc_fake1"]
    proc = run_mill("-cn", "report", f"runs=[{jobs[0]},{jobs[1]}]", f"out={copy}")
    assert proc.returncode == 2 and f"would write into {jobs[0]}" in proc.stderr
    assert _snapshot(copy) == before


@pytest.mark.slow
def test_one_run_prints_its_table(sweep, tmp_path: Path) -> None:
    run = sweep.path / "3_wikitext_fake1"
    out = tmp_path / "out"
    proc = run_mill("-cn", "report", f"runs=[{run}]", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == (out / "report.txt").read_text().strip()
    assert proc.stdout.strip() == (run / "report.txt").read_text().strip()
    assert "| task     | metric            |" in proc.stdout
    assert (out / "report.html").is_file() and (out / "plots" / "scores.png").is_file()
    # the page's hint names the command as users type it
    assert "rebuild with <code>mill report runs=[" in (out / "report.html").read_text()


@pytest.mark.slow
def test_several_runs_get_a_combined_page(sweep, single_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "combined"
    runs = [sweep.path / "0_arc_fake0", single_run]
    proc = run_mill("-cn", "report", f"runs=[{runs[0]},{runs[1]}]", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    html = (out / "report.html").read_text()
    assert (out / "sweep.png").is_file() and "href='run/report.html'" in html
    assert (out / "0_arc_fake0" / "report.html").is_file()
    # one row per task x model: arc_easy has both models; arc_challenge only fake0
    lines = [line for line in proc.stdout.splitlines() if line.startswith("| arc_easy ")]
    assert sum("fake0" in line for line in lines) == 2  # acc, acc_norm
    assert sum("fake1" in line for line in lines) == 2
    value = json.loads((single_run / "results.json").read_text())["tasks"]["arc_easy"]
    acc = value["metrics"]["acc"]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    expected = ["arc_easy", "acc ^", "fake1", f"{acc['value']:.4f}", f"{acc['stderr']:.4f}"]
    assert expected + ["30"] in cells


def _edit_acc(run: Path) -> None:
    """Every acc of the run's arc_easy samples set to 1 (the issue's edit)."""
    path = run / "samples" / "arc_easy.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for row in rows:
        row["metrics"]["acc"] = 1.0
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@pytest.mark.slow
def test_report_and_compare_refuse_edited_samples_unless_trusted(
    single_run: Path, tmp_path: Path
) -> None:
    """Issue 26, item 5: report and compare see an edited samples file: one line, exit 2;
    with trust_edited=true they run and say so, in the console and on the pages."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(single_run, a)
    shutil.copytree(single_run, b)
    _edit_acc(b)
    for args in (
        ["-cn", "report", f"runs=[{b}]", f"out={tmp_path / 'r'}"],
        ["-cn", "compare", f"a={a}", f"b={b}", "iters=200"],
    ):
        proc = run_mill(*args)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("mill: error: ") and len(proc.stderr.splitlines()) == 1
        assert "samples/arc_easy.jsonl changed after the run" in proc.stderr
        assert "trust_edited=true" in proc.stderr
    assert not (tmp_path / "r").exists()
    proc = run_mill("-cn", "report", f"runs=[{b}]", f"out={tmp_path / 'r'}", "trust_edited=true")
    assert proc.returncode == 0, proc.stderr
    assert "read with trust_edited: samples/arc_easy.jsonl" in proc.stdout
    assert "Edited results." in (tmp_path / "r" / "report.html").read_text()
    out = tmp_path / "c"
    proc = run_mill(
        "-cn", "compare", f"a={a}", f"b={b}", "iters=200", "trust_edited=true", f"out={out}"
    )
    assert proc.returncode == 0, proc.stderr
    assert f"{b}: read with trust_edited: samples/arc_easy.jsonl" in proc.stdout
    assert "Edited results." in (out / "compare.html").read_text()
    blob = json.loads((out / "compare.json").read_text())
    assert blob["b"]["edited"] == ["samples/arc_easy.jsonl"] and blob["a"]["edited"] == []


@pytest.mark.slow
def test_report_never_imports_torch_or_transformers(sweep, tmp_path: Path) -> None:
    copy = tmp_path / "sweep"
    shutil.copytree(sweep.path, copy)
    out = tmp_path / "out"
    code = (
        "import sys\n"
        f"sys.argv = ['mill', '-cn', 'report', 'runs=[{copy}]', 'out={out}']\n"
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
    assert "NO-MODEL-IMPORTS" in proc.stdout and (out / "report.html").is_file()


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
