"""benchmarks.before_after: two revisions' run folders compared file by file after removing
only what legitimately varies; HEAD against HEAD is all equal, a deliberate difference is
found and named."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks.before_after import Places, compare, normalised, side_places, table
from benchmarks.driver_common import REPO
from tests.helpers import run_process


def test_only_the_varying_fields_are_removed(tmp_path: Path) -> None:
    sha = "58eaf29d1e7bdbfb56348c766fad1f1c3bd71ae5"
    places = Places(Path("/repo"), tmp_path / "out", tmp_path / "cache", tmp_path, sha)
    manifest = {
        "started": "2026-11-28T23:40:25.767542+00:00",
        "argv": ["/repo/mill/__main__.py", f"hydra.run.dir={tmp_path / 'out' / 'x'}"],
        "git_sha": "58eaf29",
        "seconds": 17.4,
        "phases": {"start": 1.0},
        "results_sha256": "b1c9",
        "cache": {"dir": str(tmp_path / "cache"), "hits": 3},
        "tasks": {"arc_easy": {"limit": 5, "seconds_per_doc": 2}},
        # a sandbox verdict: its seal covers its wall time; a seal of anything else is kept
        "verdict": {"status": "passed", "duration_s": 0.4, "checksum": "9f2e"},
        # a verdict file as the sandbox's cache writes it: the seal is beside the data
        "verdict_file": {"data": {"status": "failed", "duration_s": 0.1}, "checksum": "1c3d"},
        "cache_seal": {"checksum": "77aa"},
    }
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(manifest))
    kept = json.loads(normalised(path, places))
    assert kept == {
        "argv": ["<REPO>/mill/__main__.py", "hydra.run.dir=<OUT>/x"],
        "cache": {"dir": "<CACHE>", "hits": 3},
        "tasks": {"arc_easy": {"limit": 5, "seconds_per_doc": 2}},
        "verdict": {"status": "passed"},
        "verdict_file": {"data": {"status": "failed"}},
        "cache_seal": {"checksum": "77aa"},
    }
    log = tmp_path / "mill.log"
    log.write_text(
        "[2026-11-28 23:40:28,293][mill][INFO] run succeeded (17.4 s)\n"
        "memory by phase (peak/current RSS MiB): start 50/50\n20 requests, 0.5 acc, 3 shots\n"
        f"git {sha[:10]}, {tmp_path}/cwd\n"
    )
    assert normalised(log, places).decode() == (
        "[<time>][mill][INFO] run succeeded (<duration>)\n<memory>\n20 requests, 0.5 acc, 3 shots"
        "\ngit <revision>, <SIDE>/cwd\n"
    )
    html = tmp_path / "report.html"
    html.write_text(
        "<table><thead><tr><th>task</th><th class='num'>seconds</th><th>acc</th></tr></thead>"
        "<tbody><tr><td>arc</td><td class='num'>2.4760</td><td>0.25</td></tr></tbody></table>"
        "<td><code>data.arc.fingerprint</code></td><td>c547af71</td>"
        "<td><code>task.limit</code></td><td>5</td>"
    )
    assert normalised(html, places).decode() == (
        "<table><thead><tr><th>task</th><th class='num'>seconds</th><th>acc</th></tr></thead>"
        "<tbody><tr><td>arc</td><td><seconds></td><td>0.25</td></tr></tbody></table>"
        "<td><code>data.arc.fingerprint</code></td><td><removed></td>"
        "<td><code>task.limit</code></td><td>5</td>"
    )


@pytest.fixture(scope="module")
def head_against_head(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, Path]:
    keep = tmp_path_factory.mktemp("ba") / "kept"
    proc = run_process(
        sys.executable,
        "-m",
        "benchmarks.before_after",
        "--before",
        "HEAD",
        "--after",
        "HEAD",
        "--runs",
        "loglik",
        "generation",
        "--keep",
        keep,
        cwd=REPO,
        timeout=900,
    )
    return proc.stdout + proc.stderr, proc.returncode, keep


@pytest.mark.slow  # two checkouts, four mill processes
def test_head_against_head_is_all_equal(head_against_head: tuple[str, int, Path]) -> None:
    out, code, keep = head_against_head
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.startswith(("loglik/", "generation/"))]
    assert rows and all(line.split()[-1] == "equal" for line in rows), out
    names = {line.split()[0] for line in rows}
    assert {"loglik/results.json", "loglik/manifest.json", "loglik/report.html"} <= names
    assert "loglik/samples/arc_easy.jsonl" in names and "loglik/cache/responses-vm.sqlite" in names
    # the temporary worktrees are gone, from the disk and from git's list
    assert not (keep / "before" / "checkout").exists()
    assert not (keep / "after" / "checkout").exists()
    listed = run_process("git", "worktree", "list", cwd=REPO).stdout
    assert str(keep) not in listed


@pytest.mark.slow
def test_a_deliberate_difference_is_found_and_named(
    head_against_head: tuple[str, int, Path], tmp_path: Path
) -> None:
    _, code, keep = head_against_head
    assert code == 0
    after = tmp_path / "after"
    shutil.copytree(keep / "after", after)
    samples = after / "runs" / "loglik" / "samples" / "arc_easy.jsonl"
    lines = samples.read_text().splitlines()
    first = json.loads(lines[0])
    first["doc_id"] = "changed"
    samples.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    (after / "runs" / "generation" / "extra.txt").write_text("new\n")
    # the copy's files name the kept folder's paths: those are the after side's places
    places = (side_places(REPO, keep / "before"), side_places(REPO, keep / "after"))
    verdicts = dict(compare(places[0].out, after / "runs", places))
    assert verdicts["loglik/samples/arc_easy.jsonl"].startswith("differs: line ")
    assert verdicts["generation/extra.txt"] == "only after"
    others = {k: v for k, v in verdicts.items() if k.split("/")[-1] not in ("arc_easy.jsonl",)}
    assert sum(v == "equal" for v in others.values()) == len(others) - 1
    assert "differs" in table(list(verdicts.items()))
