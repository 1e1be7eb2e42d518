"""Weights & Biases sink (``+sink=wandb``; ``pip install 'mill-eval[wandb]'``).

One W&B run per Mill run: the resolved settings as its config (Mill's tags, task, model,
data, folder and sweep, under ``mill_tags``; as W&B tags too where they fit its 64
characters), every metric and its
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
from typing import Any, Literal, cast

from mill.errors import ConfigError
from mill.redact import redact
from mill.schema import typed
from mill.sinks.base import RunRecord, Sink, safe_key


def _sweep_group(record: RunRecord) -> str | None:
    """The jobs of one sweep form one W&B group, named after the sweep folder."""
    sweep = record.tags.get("mill.sweep")
    return "/".join(Path(sweep).parts[-2:]) if sweep else None


# W&B refuses a whole run whose tag is longer than this (pydantic ValidationError on init)
_TAG_LIMIT = 64


def _tags(own: list[str], mill_tags: dict[str, str]) -> list[str] | None:
    """The run's W&B tags: the sink's own, then Mill's as ``key:value`` where that fits W&B's
    64-character limit (a folder path rarely does: every Mill tag is in the run's config
    under ``mill_tags`` as well)."""
    tags = [*own, *(f"{k}:{v}" for k, v in mill_tags.items())]
    return [t for t in tags if 0 < len(t) <= _TAG_LIMIT][:64] or None


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
        values = typed(
            "sink.wandb",
            {
                "project": project,
                "entity": entity,
                "mode": mode,
                "dir": dir,
                "group": group,
                "job_type": job_type,
                "tags": tags or [],
            },
        )
        self.project: str = values["project"]
        self.entity: str | None = values["entity"]
        self.mode: str | None = values["mode"]
        self.dir: str | None = values["dir"]
        self.group: str | None = values["group"]
        self.job_type: str = values["job_type"]
        self.tags = [str(t) for t in values["tags"]]
        for tag in self.tags:
            if not 0 < len(tag) <= _TAG_LIMIT:
                raise ConfigError(
                    f"sink.wandb.tags: {tag[:40]!r}... is {len(tag)} characters; W&B takes "
                    f"tags of 1 to {_TAG_LIMIT} characters: shorten it"
                )

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
                tags=_tags(self.tags, record.tags),
                config={**record.settings, "mill_tags": dict(record.tags)},
                dir=str(where) if where is not None else None,
                mode=cast(Literal["online", "offline", "disabled", "shared"] | None, self.mode),
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
