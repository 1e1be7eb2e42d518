"""``mill view``: a run's samples page, (re)built when needed and opened in the browser
($BROWSER is a script that records the URL it is given), and its bad input."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_mill


def _browser(tmp_path: Path) -> tuple[dict[str, str], Path]:
    seen = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f'#!/bin/sh\necho "$1" >> {seen}\n')
    script.chmod(0o755)
    return {"BROWSER": str(script)}, seen


@pytest.mark.slow
def test_view_builds_the_page_opens_it_and_says_where(single_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(single_run, run)
    (run / "samples.html").unlink()
    env, seen = _browser(tmp_path)
    proc = run_mill("view", str(run), env=env)
    assert proc.returncode == 0, proc.stderr
    page = run / "samples.html"
    assert proc.stderr.strip().splitlines()[-1] == f"[mill] page: {page}"
    assert seen.read_text().split() == [page.resolve().as_uri()]
    # a page newer than the samples is opened as it is; an older one is built again
    built = page.stat().st_mtime_ns
    assert run_mill("view", f"run={run}", "open=false", env=env).returncode == 0
    assert page.stat().st_mtime_ns == built and len(seen.read_text().split()) == 1
    # older than every samples file (copied with the session's run: their times are its)
    old = min(p.stat().st_mtime_ns for p in (run / "samples").glob("*.jsonl")) - 10**10
    os.utime(page, ns=(old, old))
    assert run_mill("view", f"run={run}", "open=false").returncode == 0
    assert page.stat().st_mtime_ns > old


@pytest.mark.slow
def test_view_of_a_sweep_opens_the_sweep_page_that_links_every_job(sweep, tmp_path: Path) -> None:
    env, seen = _browser(tmp_path)
    proc = run_mill("view", str(sweep.path), env=env)
    assert proc.returncode == 0, proc.stderr
    assert seen.read_text().split() == [(sweep.path / "report.html").resolve().as_uri()]
    html = (sweep.path / "report.html").read_text()
    for job in sweep.path.iterdir():
        if job.is_dir() and (job / "results.json").is_file():
            assert (job / "samples.html").is_file()
            assert f"href='{job.name}/samples.html'" in html


@pytest.mark.slow
def test_the_sweep_ends_by_naming_its_page(sweep) -> None:
    assert sweep.stderr.strip().splitlines()[-1] == (
        f"[mill] sweep report: {sweep.path / 'report.html'}"
    )


@pytest.mark.slow
def test_bad_input_is_one_line_and_exit_2(single_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(single_run, run)
    (run / "samples.html").unlink()
    (run / "samples" / "arc_easy.jsonl").unlink()
    lines = {
        "no samples": run_mill("view", str(run), "trust_edited=true"),
        "not a folder": run_mill("view", str(tmp_path / "nowhere")),
        "no runs": run_mill("view", f"dir={tmp_path / 'empty'}"),
    }
    (run / "samples" / "arc_easy.jsonl").write_text('{"format": "from another version"}\n')
    lines["unknown format"] = run_mill("view", str(run), "trust_edited=true")
    for why, proc in lines.items():
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (why, proc.stderr)
        errors = [x for x in proc.stderr.splitlines() if x.startswith("mill: error:")]
        assert len(errors) == 1, (why, proc.stderr)
    assert "arc_easy.jsonl is missing" in lines["no samples"].stderr
    assert (
        "format 'from another version'; this Mill reads formats 1 and 2"
        in lines["unknown format"].stderr
    )
    assert not (run / "samples.html").exists()  # nothing half-written
