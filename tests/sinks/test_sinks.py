"""Result sinks against the real libraries: an MLflow local file store read back with the
MLflow client, and W&B offline run files read back record by record."""

from __future__ import annotations

import json
import logging
import struct
from pathlib import Path

import pytest

import mill
from mill.runner.job import config_changes
from tests.helpers import run_mill

pytest.importorskip("mlflow")
pytest.importorskip("wandb")

TINY = ["task.limit=3", "report.progress=never"]


def mlflow_client(store: Path):
    import os

    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3's file store opt-in
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=store.resolve().as_uri())


def wandb_records(path: Path) -> list:
    """Every record of a W&B ``.wandb`` run file (a LevelDB-style log of protobufs:
    7-byte file header, 32 KiB blocks, chunks of crc32 + length + type)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data = path.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, records, pending = 32768, 7, [], b""
    while pos + 7 <= len(data):
        left = block - pos % block
        if left < 7:  # block trailer
            pos += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            break
        pending += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):  # FULL or LAST
            record = pb.Record()
            record.ParseFromString(pending)
            records.append(record)
            pending = b""
    return records


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory):
    """One run (3 ARC-Easy docs, stories260k) logged to MLflow and W&B (offline) at once."""
    root = tmp_path_factory.mktemp("sinks")
    store = root / "mlruns"
    folder = root / "run"
    results = mill.evaluate(
        "arc_easy",
        "stories260k",
        output_dir=folder,
        overrides=[
            *TINY,
            "+sink=[mlflow,wandb]",
            f"sink.mlflow.tracking_uri={store}",
            "sink.mlflow.experiment=api-test",
            "sink.wandb.mode=offline",
        ],
    )
    return results, folder, store


def test_mlflow_file_store_holds_settings_metrics_and_artifacts(logged, tmp_path: Path) -> None:
    results, folder, store = logged
    client = mlflow_client(store)
    experiment = client.get_experiment_by_name("api-test")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == folder.name
    flat = results.flat()
    assert "arc_easy/acc" in flat and "arc_easy/acc_stderr" in flat
    assert run.data.metrics == pytest.approx(flat)
    assert run.data.params["task.name"] == "arc_easy"
    assert run.data.params["model.name"] == "stories260k"
    assert run.data.tags["mill.model"] == "stories260k"
    top = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"results.json", "manifest.json", "report.txt", "resolved.yaml", "samples"} <= top
    samples = [a.path for a in client.list_artifacts(run.info.run_id, "samples")]
    assert samples == ["samples/arc_easy.jsonl"]
    got = client.download_artifacts(run.info.run_id, "results.json", str(tmp_path))
    assert json.loads(Path(got).read_text()) == results.to_dict()
    manifest = client.download_artifacts(run.info.run_id, "manifest.json", str(tmp_path))
    assert json.loads(Path(manifest).read_text())["status"] == "succeeded"


def test_wandb_offline_run_files_hold_config_metrics_and_artifact(logged) -> None:
    results, folder, _ = logged
    (run_file,) = (folder / "wandb").glob("offline-run-*/run-*.wandb")
    records = wandb_records(run_file)
    kinds = [r.WhichOneof("record_type") for r in records]
    assert "run" in kinds and "history" in kinds and "artifact" in kinds
    run = next(r.run for r in records if r.WhichOneof("record_type") == "run")
    assert run.display_name == folder.name and run.project == "mill"
    items = [
        (item.key or "/".join(item.nested_key), item.value_json)
        for r in records
        if r.WhichOneof("record_type") == "history"
        for item in r.history.item
    ]
    history = {key: json.loads(value) for key, value in items if not key.startswith("_")}
    assert history == pytest.approx(results.flat())
    config = {
        item.key or "/".join(item.nested_key): json.loads(item.value_json)
        for r in records
        if r.WhichOneof("record_type") in ("config", "run")
        for item in (
            r.config.update if r.WhichOneof("record_type") == "config" else r.run.config.update
        )
    }
    assert config["task"]["name"] == "arc_easy" and config["model"]["name"] == "stories260k"
    artifact = next(r.artifact for r in records if r.WhichOneof("record_type") == "artifact")
    paths = {entry.path for entry in artifact.manifest.contents}
    assert {"results.json", "report.txt", "samples/arc_easy.jsonl"} <= paths


def test_in_memory_run_logs_settings_and_metrics_without_artifacts(tmp_path: Path) -> None:
    store = tmp_path / "mlruns"
    overrides = [*TINY, "+sink=mlflow", f"sink.mlflow.tracking_uri={store}"]
    results = mill.evaluate("arc_easy", "stories260k", overrides=overrides)
    client = mlflow_client(store)
    (run,) = client.search_runs([client.get_experiment_by_name("mill").experiment_id])
    assert run.info.run_name == "arc_easy_stories260k" and "mill.folder" not in run.data.tags
    assert run.data.metrics == pytest.approx(results.flat())
    assert client.list_artifacts(run.info.run_id) == []


def test_a_failing_sink_warns_and_the_evaluation_succeeds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the store should go")
    folder = tmp_path / "run"
    with caplog.at_level(logging.WARNING, logger="mill"):
        results = mill.evaluate(
            "arc_easy",
            "stories260k",
            output_dir=folder,
            overrides=[*TINY, "+sink=mlflow", f"sink.mlflow.tracking_uri={blocker}/mlruns"],
        )
    assert results.metric("arc_easy", "acc").n == 3
    assert mill.load(folder).manifest.status == "succeeded"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("sink mlflow could not log run" in w for w in warnings), warnings


def test_sink_settings_may_change_on_resume() -> None:
    old = {"task": {"name": "arc"}, "sink": {"mlflow": {"tracking_uri": "a"}}}
    new = {"task": {"name": "arc"}, "sink": {"mlflow": {"tracking_uri": "b"}}}
    assert config_changes(old, new) == []
    assert config_changes(old, {**new, "task": {"name": "mmlu"}}) == ["task.name"]


@pytest.mark.slow
def test_bad_sink_setting_is_one_line_before_the_run(tmp_path: Path) -> None:
    proc = run_mill(
        *TINY, "+sink=mlflow", "+sink.mlflow.nonsense=1", f"hydra.run.dir={tmp_path / 'run'}"
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mill: error:")]
    assert len(lines) == 1 and "sink" in lines[0], proc.stderr
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.slow
def test_sweep_logs_one_run_per_job_and_a_failing_sink_only_warns(tmp_path: Path) -> None:
    store = tmp_path / "mlruns"
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "task.limit=2,3",
        "report.progress=never",
        "+sink=[mlflow,wandb]",
        f"sink.mlflow.tracking_uri={store}",
        "sink.wandb.mode=offline",
        "sink.wandb.dir=/proc/mill-no-such-dir",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("sink wandb could not log run") == 2
    jobs = sorted(p for p in sweep.iterdir() if (p / "results.json").is_file())
    assert len(jobs) == 2
    for job in jobs:
        assert "sink wandb could not log run" in (job / "mill.log").read_text()
    client = mlflow_client(store)
    experiment = client.get_experiment_by_name("mill")
    runs = client.search_runs([experiment.experiment_id])
    assert sorted(r.info.run_name for r in runs) == [j.name for j in jobs]
    assert {r.data.tags["mill.sweep"] for r in runs} == {str(sweep.resolve())}
    assert sorted(r.data.metrics["arc_easy/acc"] for r in runs) == sorted(
        mill.load(j).results.metric("arc_easy", "acc").value for j in jobs
    )


def test_a_sweeps_jobs_share_one_wandb_group() -> None:
    from mill.results import Results
    from mill.sinks import RunRecord
    from mill.sinks.wandb import _sweep_group

    sweep = "/x/outputs/multiruns/2026-11-25/12-00-00-000000"
    job = RunRecord("0_arc_easy_stories260k", Results(), {}, None, {"mill.sweep": sweep})
    assert _sweep_group(job) == "2026-11-25/12-00-00-000000"
    assert _sweep_group(RunRecord("run", Results(), {}, None, {})) is None
