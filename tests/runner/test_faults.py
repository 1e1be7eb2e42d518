"""Fault injection: a real ``mill`` run is killed at named points of its life, then resumed.

``MILL_FAULT=<point>[:<n>]`` (test-only, :mod:`mill.runner.faults`) makes the run SIGKILL
itself at the n-th pass through a point: before the model loads, with the model loaded,
after the n-th scored or generated response, with the samples closed, after results.json,
after report.txt, after every report but before the manifest's ``succeeded``. Every kill
must leave a folder that ``runner.resume=true`` completes, and the completed folder must
equal an uninterrupted run's file for file and byte for byte (timings, the command line and
the folder's own path aside), with no finished request computed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml

import mill
from tests.helpers import run_mill

pytestmark = pytest.mark.slow

# 4 docs x 4 choices scored one request per forward pass
SCORING = ("task=arc_easy", "model=stories260k", "task.limit=4", "model.batch_size=1")
SCORING_REQUESTS = 16
# 4 questions generated in one batch; "?" stops rows at different steps, the rest run to 16
GENERATION = (
    "task=gsm8k",
    "model=stories260k",
    "task.num_fewshot=0",
    "task.limit=4",
    "model.batch_size=4",
    "task.generation.max_gen_toks=16",
    "+task.generation.until=[?]",
    "runner.sample_tokens=true",  # the generated tokens counted below; token ids resumed too
)
GENERATION_REQUESTS = 4

SKIPPED = {".lock", "mill.log"}
"""Files that legitimately differ: the lock and the log of each attempt."""


def _cached(folder: Path) -> int:
    files = list((folder / "cache").glob("responses-*.sqlite"))
    if not files:
        return 0
    with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def _snapshot(folder: Path, batch_padding: bool = False) -> dict[str, Any]:
    """Every file of a finished folder (but the cache, the lock and the log), normalised
    where a resumed run legitimately differs. ``batch_padding``: blank each sample's
    ``padded_tokens_count``, the padding of the batch its request ran in (a resumed
    generation batches only the unfinished rows: same tokens, less padding)."""
    out: dict[str, Any] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_dir() or rel in SKIPPED or rel.startswith(("cache/", ".hydra/")):
            continue
        data = path.read_bytes()
        if rel == "results.json":
            results = {k: v for k, v in json.loads(data).items() if k != "seconds"}
            if batch_padding:  # the samples differ in their padding: checked against the files
                for task, digest in results.pop("samples_sha256").items():
                    assert digest == _sha256(folder / "samples" / f"{task}.jsonl")
            out[rel] = results
        elif rel == "manifest.json":
            manifest = json.loads(data)
            volatile = (
                "started",
                "first_started",
                "seconds",
                "attempts",
                "argv",
                "cache",
                "phases",
            )
            # results.json's checksum covers its seconds: checked below against the file
            assert manifest["results_sha256"] == _sha256(folder / "results.json")
            volatile += ("results_sha256",)
            manifest = {k: v for k, v in manifest.items() if k not in volatile}
            manifest["ranks"] = [{"requests": r["requests"]} for r in manifest["ranks"]]
            out[rel] = manifest
        elif rel == "resolved.yaml":
            resolved = yaml.safe_load(data)
            resolved["runner"].pop("resume")
            out[rel] = resolved
        elif rel == "report.html":
            text = data.decode().replace(str(folder), "<run>")
            text = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", "<started>", text)
            text = re.sub(r"<span class=\"chip \">[\d.]+ s</span>", "<seconds>", text)
            text = re.sub(r"<h3>Command</h3><pre>.*?</pre>", "<command>", text, flags=re.S)
            out[rel] = text
        elif rel == "samples.html":  # names its folder, as report.html does
            out[rel] = data.decode().replace(str(folder), "<run>")
        elif batch_padding and rel.startswith("samples/"):
            out[rel] = re.sub(rb'"padded_tokens_count": ?\d+', b"<padding>", data)
        else:
            out[rel] = data
    return out


@pytest.fixture(scope="module")
def references(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An uninterrupted run of each scenario."""
    out = {}
    for name, args in (("scoring", SCORING), ("generation", GENERATION)):
        folder = tmp_path_factory.mktemp(name) / "run"
        proc = run_mill(*args, f"hydra.run.dir={folder}")
        assert proc.returncode == 0, proc.stderr
        out[name] = folder
    return out


def test_generation_rows_finish_at_different_steps(references: dict[str, Path]) -> None:
    """The generation scenario really has rows stopping early beside rows running on."""
    rows = [json.loads(line) for line in (references["generation"] / "samples/gsm8k.jsonl").open()]
    lengths = sorted(len(r["response"]["output_tokens"][0]) for r in rows)
    assert len(rows) == GENERATION_REQUESTS and lengths[0] < lengths[-1], lengths


def test_mill_log_holds_the_runs_records(references: dict[str, Path]) -> None:
    log = (references["scoring"] / "mill.log").read_text()
    for fragment in (
        "[mill][INFO] tasks: arc_easy (0-shot); data: bundled",
        "[mill][INFO] loading model stories260k",
        "[mill][INFO] model loaded: LlamaForCausalLM",
        f"[mill][INFO] {SCORING_REQUESTS} requests built",
        f"[mill][INFO] responses: 0 from the cache, {SCORING_REQUESTS} computed, 0 shared",
        "[mill][INFO] run succeeded",
    ):
        assert fragment in log, (fragment, log)


POINTS = [
    ("scoring", "prepared"),
    ("scoring", "model_loaded"),
    ("scoring", "response:1"),
    ("scoring", "response:9"),
    ("scoring", "samples_closed"),
    ("scoring", "results_written"),
    ("scoring", "report_text"),
    ("scoring", "reports_written"),
    ("generation", "response:1"),
    ("generation", "response:3"),
]


@pytest.mark.parametrize(("scenario", "point"), POINTS)
def test_killed_run_resumes_to_the_uninterrupted_folder(
    references: dict[str, Path], scenario: str, point: str, tmp_path: Path
) -> None:
    args = SCORING if scenario == "scoring" else GENERATION
    total = SCORING_REQUESTS if scenario == "scoring" else GENERATION_REQUESTS
    folder = tmp_path / "run"
    killed = run_mill(*args, f"hydra.run.dir={folder}", env={"MILL_FAULT": point})
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    status = _manifest(folder)["status"] if (folder / "manifest.json").exists() else None
    assert status in (None, "running")
    committed = _cached(folder)
    if point.startswith("response:"):
        assert 0 < committed < total
    # an unfinished folder is never reported or compared
    if (folder / "results.json").exists():
        report = run_mill("-cn", "report", f"runs=[{folder}]")
        assert report.returncode == 2 and "not a finished run" in report.stderr
        compare = run_mill("-cn", "compare", f"a={folder}", f"b={references[scenario]}")
        assert compare.returncode == 2 and "not a finished run" in compare.stderr

    resumed = run_mill(*args, "runner.resume=true", f"hydra.run.dir={folder}")
    assert resumed.returncode == 0, resumed.stderr
    manifest = _manifest(folder)
    assert manifest["status"] == "succeeded"
    if status is not None:  # the killed attempt had written its manifest
        assert manifest["attempts"] == 2
        # every response committed before the kill is served from the cache: none is
        # computed twice
        cache = manifest["cache"]
        assert (cache["entries_before"], cache["hits"]) == (committed, committed)
        assert cache["computed"] == total - committed
    padding = scenario == "generation"
    assert _snapshot(folder, padding) == _snapshot(references[scenario], padding)
    assert mill.load(folder).edited == []  # the resumed folder passes the checks on read


def test_sigterm_marks_the_manifest_interrupted_and_says_how_to_resume(
    references: dict[str, Path], tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    stopped = run_mill(
        *SCORING, f"hydra.run.dir={folder}", env={"MILL_FAULT": "response:5:SIGTERM"}
    )
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    assert _manifest(folder)["status"] == "interrupted"
    assert not (folder / "results.json").exists()
    lines = [line for line in stopped.stderr.splitlines() if line.startswith("mill: ")]
    assert len(lines) == 1 and "runner.resume=true" in lines[0], stopped.stderr
    command = lines[0].split("resume it with: ", 1)[1]
    assert command.startswith("mill ") and f"hydra.run.dir={folder}" in command
    assert "interrupted by SIGTERM" in (folder / "mill.log").read_text()

    committed = _cached(folder)
    resumed = run_mill(*shlex.split(command)[1:])
    assert resumed.returncode == 0, resumed.stderr
    manifest = _manifest(folder)
    assert manifest["status"] == "succeeded" and manifest["cache"]["hits"] == committed
    assert manifest["cache"]["computed"] == SCORING_REQUESTS - committed
    assert _snapshot(folder) == _snapshot(references["scoring"])


def test_an_interrupted_run_without_the_cache_is_not_offered_a_resume(tmp_path: Path) -> None:
    """runner.cache=false keeps no response: the line says so, and does not print a
    resume command that Mill itself refuses ("runner.resume=true needs the cache")."""
    folder = tmp_path / "run"
    stopped = run_mill(
        *SCORING,
        "runner.cache=false",
        f"hydra.run.dir={folder}",
        env={"MILL_FAULT": "response:5:SIGTERM"},
    )
    assert stopped.returncode == 128 + signal.SIGTERM, stopped.stderr
    assert _manifest(folder)["status"] == "interrupted"
    lines = [line for line in stopped.stderr.splitlines() if line.startswith("mill: ")]
    assert lines == [
        "mill: interrupted; it ran with runner.cache=false, so no response was kept to "
        "resume from: run it again into a new folder"
    ], stopped.stderr
    log = (folder / "mill.log").read_text()
    assert "interrupted by SIGTERM; it ran with runner.cache=false" in log
    assert "runner.resume=true" not in stopped.stderr + log


def test_no_fault_hook_runs_without_the_variable() -> None:
    """MILL_FAULT unset: the hook is a no-op (the process survives every point)."""
    from mill.runner.faults import fault

    assert "MILL_FAULT" not in os.environ
    for point in ("prepared", "model_loaded", "response", "samples_closed"):
        fault(point)
