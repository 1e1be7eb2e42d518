"""MLflow sink (``+sink=mlflow``; ``pip install 'mill-eval[mlflow]'``).

One MLflow run per Mill run: the resolved settings as parameters, every metric and its
stderr (``<task>/<metric>``, ``<task>/<metric>_stderr``, subjects and group aggregates
likewise) as metrics, tags for the task, model and folder, and the report, results,
manifest, samples and plots as artifacts.

The default tracking store is a local file store, ``outputs/mlruns`` (``mlflow ui
--backend-store-uri outputs/mlruns`` shows it); ``sink.mlflow.tracking_uri`` (or
``MLFLOW_TRACKING_URI``) points elsewhere: a server URL, or ``sqlite:///mlflow.db`` with
the full ``mlflow`` package. MLflow 3 keeps its file store in maintenance mode behind
``MLFLOW_ALLOW_FILE_STORE``; this sink sets it while it writes to a file store.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mill.sinks import RunRecord, Sink, safe_key

PARAM_LIMIT = 6000
"""MLflow's longest parameter value; longer settings are cut (the full config is the
``resolved.yaml`` artifact)."""


def tracking_uri(value: str | None) -> str:
    """A URI for ``value``: URIs as they are, a plain path as an absolute ``file:`` URI."""
    value = value or os.environ.get("MLFLOW_TRACKING_URI") or "outputs/mlruns"
    if "://" in value or value.startswith("file:"):
        return value
    return Path(value).expanduser().resolve().as_uri()


@contextmanager
def _file_store_allowed(uri: str) -> Iterator[None]:
    if not uri.startswith("file:"):
        yield
        return
    before = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = before


class MLflowSink(Sink):
    """Log runs to an MLflow tracking store.

    Args:
        tracking_uri: store URI or local folder; null: ``MLFLOW_TRACKING_URI`` or
            ``outputs/mlruns``.
        experiment: MLflow experiment name (created when missing).
        run_name: null: the run folder's name.
        tags: extra tags for every run.
    """

    def __init__(
        self,
        tracking_uri: str | None = None,
        experiment: str = "mill",
        run_name: str | None = None,
        tags: dict[str, Any] | None = None,
    ) -> None:
        self.tracking_uri = tracking_uri
        self.experiment = str(experiment)
        self.run_name = run_name
        self.tags = {str(k): str(v) for k, v in (tags or {}).items()}

    def log(self, record: RunRecord) -> str:
        uri = tracking_uri(self.tracking_uri)
        with _file_store_allowed(uri):
            return self._log(uri, record)

    def _log(self, uri: str, record: RunRecord) -> str:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(self.experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(self.experiment)
        tags = {**record.tags, **self.tags}
        run = client.create_run(experiment_id, run_name=self.run_name or record.name, tags=tags)
        run_id = run.info.run_id
        try:
            now = int(time.time() * 1000)
            metrics = [Metric(safe_key(k), v, now, 0) for k, v in record.results.flat().items()]
            params = [Param(safe_key(k), v[:PARAM_LIMIT]) for k, v in record.params().items()]
            for i in range(0, max(len(metrics), len(params)), 100):
                client.log_batch(run_id, metrics=metrics[i : i + 100], params=params[i : i + 100])
            version = str(record.results.schema_version)
            client.log_batch(run_id, tags=[RunTag("mill.schema_version", version)])
            for path in record.artifacts():
                parent = str(path.parent) if str(path.parent) != "." else None
                client.log_artifact(run_id, str(record.folder / path), parent)
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
        return f"{uri} (experiment {self.experiment}, run {run_id})"
