"""Weights & Biases sink (``+sink=wandb``; ``pip install 'mill-eval[wandb]'``).

One W&B run per Mill run: the resolved settings as its config, every metric and its
stderr (``<task>/<metric>``, ``<task>/<metric>_stderr``, ...) logged once and in the run
summary, and an artifact of type ``mill-run`` holding the report, results, manifest,
samples and plots. ``sink.wandb.mode=offline`` (or ``WANDB_MODE=offline``) writes real run
files without network; ``wandb sync`` uploads them later. W&B's run files go under the
experiment folder (``<run folder>/wandb``) unless ``sink.wandb.dir`` says otherwise.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mill.redact import redact
from mill.sinks import RunRecord, Sink, safe_key


def _sweep_group(record: RunRecord) -> str | None:
    """The jobs of one sweep form one W&B group, named after the sweep folder."""
    sweep = record.tags.get("mill.sweep")
    return "/".join(Path(sweep).parts[-2:]) if sweep else None


class WandbSink(Sink):
    """Log runs to Weights & Biases.

    Args:
        project: W&B project.
        entity: W&B entity (team or user); null: the default of the logged-in user.
        mode: online, offline or disabled; null: ``WANDB_MODE`` or W&B's default.
        dir: where W&B writes its run files; null: the experiment folder.
        group: W&B group; null: the sweep folder (``<date>/<time>``) for the jobs of a
            sweep, none for a single run.
        job_type: W&B job type.
        tags: W&B tags.
    """

    def __init__(
        self,
        project: str = "mill",
        entity: str | None = None,
        mode: str | None = None,
        dir: str | None = None,
        group: str | None = None,
        job_type: str = "eval",
        tags: list[str] | None = None,
    ) -> None:
        self.project = str(project)
        self.entity = entity
        self.mode = mode
        self.dir = dir
        self.group = group
        self.job_type = str(job_type)
        self.tags = [str(t) for t in (tags or [])]

    def log(self, record: RunRecord) -> str:
        import wandb

        where = Path(self.dir) if self.dir else record.folder
        if where is not None:
            where.mkdir(parents=True, exist_ok=True)
        with _redacted_argv():  # W&B records the command line in the run's metadata
            run = wandb.init(
                project=self.project,
                entity=self.entity,
                name=record.name,
                group=self.group or _sweep_group(record),
                job_type=self.job_type,
                tags=[*self.tags, *(f"{k}:{v}" for k, v in record.tags.items())][:64] or None,
                config=record.settings,
                dir=str(where) if where is not None else None,
                mode=self.mode,
                reinit="create_new",
                settings=wandb.Settings(silent=True, console="off"),
            )
        try:
            metrics: dict[str, Any] = {safe_key(k): v for k, v in record.results.flat().items()}
            run.log(metrics)
            run.summary.update(metrics)
            files = record.artifacts()
            if files and record.folder is not None:
                artifact = wandb.Artifact(f"mill-{safe_key(record.name)}", type="mill-run")
                for path in files:
                    artifact.add_file(
                        str(record.folder / path), name=path.as_posix(), policy="immutable"
                    )
                run.log_artifact(artifact)
        except BaseException:
            run.finish(exit_code=1)
            raise
        run.finish()
        return f"{self.project} run {run.id} ({run.settings.mode})"


@contextmanager
def _redacted_argv() -> Iterator[None]:
    """``sys.argv`` with the credentials of its URLs masked, for as long as it lasts."""
    original = sys.argv
    sys.argv = redact(list(original))
    try:
        yield
    finally:
        sys.argv = original
