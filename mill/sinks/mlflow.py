"""MLflow sink (``+sink=mlflow``; ``pip install 'mill-eval[mlflow]'``).

One MLflow run per Mill run: the resolved settings as parameters, every metric and its
stderr (``<task>/<metric>``, ``<task>/<metric>_stderr``, subjects and group aggregates
likewise) as metrics, tags for the task, model and folder, and the report, results,
manifest, samples and plots as artifacts.

The default tracking store is the one MLflow recommends, a SQLite database:
``sqlite:///outputs/mlflow.db`` (relative to the working folder, as the runs' own
``outputs/``), its artifacts beside it in ``outputs/mlartifacts``; ``mlflow ui
--backend-store-uri sqlite:///outputs/mlflow.db`` shows it. It needs SQLAlchemy and Alembic,
which the ``mlflow`` extra installs (``mlflow-skinny`` alone lacks them).
``sink.mlflow.tracking_uri`` (or ``MLFLOW_TRACKING_URI``) points elsewhere: another
``sqlite:///`` file, a server URL, or a plain folder for MLflow's file store (kept in
maintenance mode by MLflow 3 behind ``MLFLOW_ALLOW_FILE_STORE``, which this sink sets while
it writes to one).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.schema import typed
from mill.sinks.base import RunRecord, Sink, safe_key

PARAM_LIMIT = 6000
"""MLflow's longest parameter value; longer settings are cut (the full config is the
``resolved.yaml`` artifact)."""


DEFAULT_STORE = "sqlite:///outputs/mlflow.db"
"""The tracking store when neither ``sink.mlflow.tracking_uri`` nor ``MLFLOW_TRACKING_URI``
names one (relative to the working folder)."""

_SQLITE = "sqlite:///"


def tracking_uri(value: str | None) -> str:
    """A URI for ``value`` (default :data:`DEFAULT_STORE`): a ``sqlite:///`` file as an
    absolute one, other URIs as they are, a plain path as an absolute ``file:`` URI (the
    file store)."""
    value = value or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_STORE
    if value.startswith(_SQLITE):
        path, sep, query = value.removeprefix(_SQLITE).partition("?")
        if path and path != ":memory:":
            path = str(Path(path).expanduser().resolve())
        return f"{_SQLITE}{path}{sep}{query}"
    if "://" in value or value.startswith("file:"):
        return value
    return Path(value).expanduser().resolve().as_uri()


def sqlite_file(uri: str) -> Path | None:
    """The database file of a local ``sqlite:///`` store URI, else None."""
    if not uri.startswith(_SQLITE):
        return None
    path = uri.removeprefix(_SQLITE).partition("?")[0]
    return Path(path) if path and path != ":memory:" else None


def _sql_store_available() -> None:
    """MLflow's SQL stores need SQLAlchemy and Alembic; ``mlflow-skinny`` does not bring
    them. A one-line error naming the fix instead of MLflow's import error."""
    try:
        import alembic  # noqa: F401
        import sqlalchemy  # noqa: F401
    except ImportError as err:
        raise ConfigError(
            f"MLflow's SQLite store needs SQLAlchemy and Alembic ({err}): pip install "
            "'mill-eval[mlflow]', or log to MLflow's file store with "
            "sink.mlflow.tracking_uri=outputs/mlruns"
        ) from None


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
        tracking_uri: store URI or local folder (MLflow's file store); null:
            ``MLFLOW_TRACKING_URI`` or ``sqlite:///outputs/mlflow.db``.
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
        values = typed(
            "sink.mlflow",
            {
                "tracking_uri": tracking_uri,
                "experiment": experiment,
                "run_name": run_name,
                "tags": tags or {},
            },
        )
        self.tracking_uri: str | None = values["tracking_uri"]
        self.experiment: str = values["experiment"]
        self.run_name: str | None = values["run_name"]
        self.tags = {str(k): str(v) for k, v in values["tags"].items()}

    def log(self, record: RunRecord) -> str:
        uri = tracking_uri(self.tracking_uri)
        if uri.startswith("sqlite:"):
            _sql_store_available()
        database = sqlite_file(uri)
        if database is not None:
            database.parent.mkdir(parents=True, exist_ok=True)
        with _file_store_allowed(uri):
            return self._log(uri, record, database)

    def _log(self, uri: str, record: RunRecord, database: Path | None) -> str:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=uri)
        found = client.get_experiment_by_name(self.experiment)
        if found is not None:
            experiment_id = found.experiment_id
        else:
            # a local database keeps its artifacts beside it (MLflow's default would be
            # ./mlruns in the working folder, outside outputs/)
            artifacts = (database.parent / "mlartifacts").as_uri() if database else None
            experiment_id = client.create_experiment(self.experiment, artifacts)
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
            folder = record.folder
            for path in record.artifacts():  # none without a folder
                parent = str(path.parent) if str(path.parent) != "." else None
                if folder is not None:
                    client.log_artifact(run_id, str(folder / path), parent)
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")
        return f"{uri} (experiment {self.experiment}, run {run_id})"
