"""Result sinks against the real libraries, read back as a user reads them: MLflow's default
SQLite store (and its file store) through MLflow's own client, W&B offline run files through
W&B's own reader (``wandb leet inspect``)."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import mill
from mill.runner.job import config_changes
from tests.helpers import run_mill, run_process

pytest.importorskip("mlflow")
pytest.importorskip("wandb")

# every run here is on the fake model: these tests are about the sinks, not the scores
TINY = ["task.limit=3", "report.progress=never"]


def mlflow_client(store: Path):
    """MLflow's client on a store: a ``.db`` file (SQLite) or a file store's folder."""
    from mlflow.tracking import MlflowClient

    if store.suffix == ".db":
        return MlflowClient(tracking_uri=f"sqlite:///{store.resolve()}")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"  # MLflow 3's file store opt-in
    return MlflowClient(tracking_uri=store.resolve().as_uri())


def wandb_inspect(run_file: Path, *flags: str) -> list[dict]:
    """W&B's own reader of a ``.wandb`` run file: ``wandb leet inspect --json`` (one JSON
    object per record, or one for ``--summary``)."""
    wandb_cli = Path(sys.executable).with_name("wandb")
    cmd = [wandb_cli] if wandb_cli.exists() else [sys.executable, "-m", "wandb"]
    proc = run_process(*cmd, "leet", "inspect", "--json", *flags, run_file, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if "--summary" in flags:  # one (indented) object
        return [json.loads(proc.stdout)]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory):
    """One run (3 ARC-Easy docs, the fake model) logged to MLflow's default store and W&B
    (offline) at once, from a fresh working folder."""
    root = tmp_path_factory.mktemp("sinks")
    # a folder whose path is longer than a W&B tag may be (64 characters): W&B refused the
    # whole run on its ``mill.folder`` tag before
    folder = root / ("run-with-a-name-that-makes-the-path-longer-than-a-wandb-tag-" + "x" * 8)
    before, env = Path.cwd(), os.environ.pop("MLFLOW_TRACKING_URI", None)
    os.chdir(root)  # the default store is outputs/mlflow.db under the working folder
    try:
        results = mill.evaluate(
            "arc_easy",
            "fake",
            output_dir=folder,
            overrides=[
                *TINY,
                "+sink=[mlflow,wandb]",
                "sink.mlflow.experiment=api-test",
                "sink.wandb.mode=offline",
            ],
        )
    finally:
        os.chdir(before)
        if env is not None:
            os.environ["MLFLOW_TRACKING_URI"] = env
    return results, folder, root


@pytest.mark.slow  # MLflow creates its sqlite store by running its schema migrations: ~13 s
def test_mlflow_default_sqlite_store_holds_settings_metrics_and_artifacts(
    logged, tmp_path: Path
) -> None:
    results, folder, root = logged
    store = root / "outputs" / "mlflow.db"
    assert store.is_file() and not (root / "mlruns").exists()  # nothing outside outputs/
    client = mlflow_client(store)
    experiment = client.get_experiment_by_name("api-test")
    assert experiment.artifact_location == (root / "outputs" / "mlartifacts").as_uri()
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_name == folder.name
    flat = results.flat()
    assert "arc_easy/acc" in flat and "arc_easy/acc_stderr" in flat
    assert run.data.metrics == pytest.approx(flat)
    assert run.data.params["task.name"] == "arc_easy"
    assert run.data.params["model.name"] == "fake"
    assert run.data.tags["mill.model"] == "fake"
    top = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"results.json", "manifest.json", "report.txt", "resolved.yaml", "samples"} <= top
    samples = [a.path for a in client.list_artifacts(run.info.run_id, "samples")]
    assert samples == ["samples/arc_easy.jsonl"]
    got = client.download_artifacts(run.info.run_id, "results.json", str(tmp_path))
    assert json.loads(Path(got).read_text()) == results.to_dict()
    manifest = client.download_artifacts(run.info.run_id, "manifest.json", str(tmp_path))
    assert json.loads(Path(manifest).read_text())["status"] == "succeeded"


@pytest.mark.slow
def test_wandb_offline_run_files_read_by_wandb_hold_config_metrics_and_artifact(logged) -> None:
    results, folder, _ = logged
    (run_file,) = (folder / "wandb").glob("offline-run-*/run-*.wandb")
    (summary,) = wandb_inspect(run_file, "--summary")
    assert summary["state"] == "finished" and summary["exit_code"] == 0
    assert summary["name"] == folder.name and summary["project"] == "mill"
    metrics = {k: v for k, v in summary["summary"].items() if not k.startswith("_")}
    assert metrics == pytest.approx(results.flat())
    assert summary["config"]["task"]["name"] == "arc_easy"
    assert summary["config"]["model"]["name"] == "fake"
    assert summary["config"]["mill_tags"]["mill.folder"] == str(folder)
    assert "mill.model:fake" in summary["tags"]
    assert all(len(tag) <= 64 for tag in summary["tags"])
    records = wandb_inspect(run_file)
    (history,) = [r["history"]["item"] for r in records if r["type"] == "history"]
    assert {k: v for k, v in history.items() if not k.startswith("_")} == pytest.approx(
        results.flat()
    )
    (artifact,) = [r["artifact"] for r in records if r["type"] == "artifact"]
    assert artifact["type"] == "mill-run"
    paths = {entry["path"] for entry in artifact["manifest"]["contents"]}
    assert {"results.json", "report.txt", "samples/arc_easy.jsonl"} <= paths


def test_mlflow_sqlite_store_without_sqlalchemy_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mill.errors import ConfigError
    from mill.results import Results
    from mill.sinks import RunRecord
    from mill.sinks.mlflow import MLflowSink

    monkeypatch.setitem(sys.modules, "sqlalchemy", None)  # import sqlalchemy -> ImportError
    sink = MLflowSink(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    with pytest.raises(ConfigError, match=r"pip install 'mill-eval\[mlflow\]'"):
        sink.log(RunRecord("run", Results(), {}))
    assert not (tmp_path / "mlflow.db").exists()


def test_tracking_uris_resolve_against_the_working_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from mill.sinks.mlflow import DEFAULT_STORE, sqlite_file, tracking_uri

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert DEFAULT_STORE == "sqlite:///outputs/mlflow.db"
    assert tracking_uri(None) == f"sqlite:///{tmp_path / 'outputs' / 'mlflow.db'}"
    assert sqlite_file(tracking_uri(None)) == tmp_path / "outputs" / "mlflow.db"
    assert tracking_uri("outputs/mlruns") == (tmp_path / "outputs" / "mlruns").as_uri()
    assert tracking_uri("sqlite:////abs/m.db?timeout=5") == "sqlite:////abs/m.db?timeout=5"
    assert tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///elsewhere.db")
    assert tracking_uri(None) == f"sqlite:///{tmp_path / 'elsewhere.db'}"
    assert sqlite_file("http://x") is None and sqlite_file("sqlite:///:memory:") is None


def test_in_memory_run_logs_to_the_file_store_without_artifacts(tmp_path: Path) -> None:
    store = tmp_path / "mlruns"  # a folder: MLflow's file store, still an option
    overrides = [*TINY, "+sink=mlflow", f"sink.mlflow.tracking_uri={store}"]
    results = mill.evaluate("arc_easy", "fake", overrides=overrides)
    client = mlflow_client(store)
    (run,) = client.search_runs([client.get_experiment_by_name("mill").experiment_id])
    assert run.info.run_name == "arc_easy_fake" and "mill.folder" not in run.data.tags
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
            "fake",
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
        "model=fake",
        *TINY,
        "+sink=mlflow",
        "+sink.mlflow.nonsense=1",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mill: error:")]
    assert len(lines) == 1 and "sink" in lines[0], proc.stderr
    assert not (tmp_path / "run" / "results.json").exists()


@pytest.mark.slow
def test_sweep_logs_one_run_per_job_and_a_failing_sink_only_warns(tmp_path: Path) -> None:
    store = tmp_path / "outputs" / "mlflow.db"  # the default store, under the working folder
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "model=fake",
        "task.limit=2,3",
        "report.progress=never",
        "+sink=[mlflow,wandb]",
        "sink.wandb.mode=offline",
        "sink.wandb.dir=/proc/mill-no-such-dir",
        f"hydra.sweep.dir={sweep}",
        cwd=tmp_path,
        env={"MLFLOW_TRACKING_URI": ""},
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


def test_wandb_tags_fit_its_limit_and_a_long_own_tag_is_refused() -> None:
    from mill.errors import ConfigError
    from mill.sinks.wandb import WandbSink, _tags

    folder = "/a/path/" + "x" * 80
    assert _tags(["mine"], {"mill.task": "arc_easy", "mill.folder": folder}) == [
        "mine",
        "mill.task:arc_easy",
    ]
    with pytest.raises(ConfigError, match=r"sink.wandb.tags: .* 70 characters"):
        WandbSink(tags=["y" * 70])


def test_a_sink_built_from_python_reads_its_settings_typed_by_the_schema() -> None:
    """The sinks hold their settings to the declared rules (mill.schema.SETTINGS
    ``sink.*``), as the config is held at composition: a number where a name is meant is
    refused, never turned into its text; a mode not among W&B's is refused."""
    from mill.errors import ConfigError
    from mill.sinks.mlflow import MLflowSink
    from mill.sinks.wandb import WandbSink

    number: Any = 123
    with pytest.raises(ConfigError, match=r"^sink\.mlflow\.experiment=123 is not allowed"):
        MLflowSink(experiment=number)
    with pytest.raises(ConfigError, match=r"^sink\.wandb\.mode='cloud' is unknown: give one of"):
        WandbSink(mode="cloud")
    assert WandbSink(mode="OFFLINE", tags=["a"]).mode == "offline"
    assert MLflowSink(experiment="e", tags={"k": 1}).tags == {"k": "1"}
