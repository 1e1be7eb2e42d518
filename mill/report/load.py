"""Read finished experiment folders back: results, manifest, config and samples.

Nothing here loads a model or imports torch: reports and comparisons work from the files a
run left behind (see README, "The experiment folder").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from mill.errors import MillError
from mill.files import job_order, read_json
from mill.metrics.stats import clipped_interval
from mill.record import SampleRecord
from mill.results.format import Manifest, Results
from mill.results.integrity import check_edited, edited_note
from mill.results.io import Run


class ReportInputError(MillError):
    """A folder given to ``report`` or ``compare`` is not a usable experiment folder."""


class EditedRunError(ReportInputError):
    """A run folder whose files changed after the run wrote them (refused even inside a
    sweep, where an unusable job is otherwise listed as failed)."""


@dataclass
class Score:
    """One reported number: a task (or group aggregate) x metric of one run."""

    task: str
    metric: str
    value: float | None
    stderr: float | None
    n: int | str
    higher_is_better: bool = True
    kind: str = "task"  # task, micro or macro
    interval: tuple[float, float] | None = None
    """The 95% interval results.json records (inside the metric's bounds)."""

    @property
    def row_name(self) -> str:
        return self.task if self.kind == "task" else f"{self.task} ({self.kind})"

    def ci(self) -> tuple[float, float] | None:
        """The 95% interval: as results.json records it (Wilson, percentile bootstrap or
        clipped to the metric's bounds, :func:`mill.metrics.stats.interval`), else, for
        results written before Mill recorded it, value +- 1.96 stderr (None without one)."""
        if self.interval is not None:
            return self.interval
        return clipped_interval(self.value, self.stderr, None)


@dataclass
class RunFolder(Run):
    """A finished run (:class:`mill.results.Run`, read through the typed schema) with its
    ``resolved.yaml`` and the checks and errors of ``report`` and ``compare``."""

    manifest: Manifest = field(default_factory=Manifest)
    config: dict[str, Any] = field(default_factory=dict)
    _samples_cache: dict[str, list[SampleRecord]] = field(
        default_factory=dict, repr=False, compare=False
    )

    @classmethod
    def open(cls, path: str | Path, finished: bool = True, trust_edited: bool = False) -> RunFolder:
        """Open a run folder; ReportInputError when it has no ``results.json``, (with
        ``finished``, for everything but the run's own last step) when its manifest does
        not say ``succeeded`` (an interrupted run's files are not a result), or when a file
        changed after the run wrote it (:func:`mill.results.check_edited`; accepted with
        ``trust_edited``, then listed in ``edited``)."""
        path = Path(path)
        if not path.is_dir():
            raise ReportInputError(f"{path} is not a folder; give the path of a run folder")
        has_manifest = (path / "manifest.json").is_file()
        try:
            manifest = (
                Manifest.from_dict(read_json(path / "manifest.json", ReportInputError))
                if has_manifest
                else Manifest()
            )
        except (TypeError, ValueError, MillError) as err:
            raise ReportInputError(f"{path / 'manifest.json'}: {err}") from err
        results_path = path / "results.json"
        if not results_path.is_file():
            status = manifest.status if has_manifest else None
            why = f"its manifest says {status!r}" if status else "it has no manifest.json either"
            if manifest.error:
                why += f" ({manifest.error})"
            raise ReportInputError(
                f"{path} has no results.json ({why}); only a succeeded run can be reported"
            )
        status = manifest.status if has_manifest else None
        if finished and status != "succeeded":
            why = f"its manifest says {status!r}" if status else "it has no manifest.json"
            raise ReportInputError(
                f"{path} is not a finished run ({why}); only a succeeded run can be reported "
                "or compared. Finish it with runner.resume=true and the run's command"
            )
        config: dict[str, Any] = {}
        resolved = path / "resolved.yaml"
        if resolved.is_file():
            from omegaconf import OmegaConf

            from mill.instantiate import current_targets

            loaded = current_targets(OmegaConf.to_container(OmegaConf.load(resolved)))
            config = cast(dict[str, Any], loaded) if isinstance(loaded, dict) else {}
        try:
            results = Results.from_dict(read_json(results_path, ReportInputError))
        except ReportInputError:
            raise
        except (TypeError, ValueError, MillError) as err:
            raise ReportInputError(
                f"{results_path} does not follow the results schema: {err}"
            ) from err
        edited = check_edited(
            path, results, manifest, trust_edited, "trust_edited=true", EditedRunError
        )
        return cls(path, results, manifest, edited=edited, config=config)

    # --- identity -------------------------------------------------------------------

    @property
    def task_names(self) -> list[str]:
        return list(self.results.tasks)

    @property
    def task_label(self) -> str:
        name = (self.config.get("task") or {}).get("name")
        return str(name) if name else "+".join(self.task_names)

    @property
    def model_label(self) -> str:
        name = (self.config.get("model") or {}).get("name")
        if name:
            return str(name)
        pretrained = self.results.model.get("pretrained")
        return Path(str(pretrained)).name if pretrained else self.path.name

    @property
    def data_source(self) -> str:
        """The short data label (:attr:`mill.results.Results.data_label`)."""
        return self.results.data_label

    @property
    def edited_note(self) -> str | None:
        """What a report of files read with ``trust_edited`` says; None when none was edited."""
        return edited_note(self.path, self.edited) if self.edited else None

    @property
    def title(self) -> str:
        return f"{self.task_label} | {self.model_label} | data={self.data_source}"

    def settings(self, task: str) -> dict[str, Any]:
        return dict(self.results.tasks[task].settings)

    def output_type(self, task: str) -> str:
        return str(self.settings(task).get("output_type", ""))

    # --- numbers --------------------------------------------------------------------

    def scores(self) -> list[Score]:
        """Per task and metric, then group aggregates (micro and macro)."""
        out: list[Score] = []
        for task, body in self.results.tasks.items():
            for metric, row in body.metrics.items():
                out.append(
                    Score(
                        task,
                        metric,
                        row.value,
                        row.stderr,
                        row.n,
                        row.better_is_higher,
                        interval=_pair(row.ci),
                    )  # fmt: skip
                )
        for group, group_body in self.results.groups.items():
            for metric, both in group_body.metrics.items():
                for kind, kind_row in both.kinds():
                    out.append(
                        Score(
                            group,
                            metric,
                            kind_row.value,
                            kind_row.stderr,
                            kind_row.n,
                            both.higher_is_better,
                            kind,
                            _pair(kind_row.ci),
                        )
                    )
        return out

    def samples(self, task: str) -> list[SampleRecord]:
        """The per-doc records of ``task`` (:meth:`mill.results.Run.samples`), read once;
        ReportInputError when missing or not sample records."""
        if task not in self._samples_cache:
            try:
                self._samples_cache[task] = super().samples(task)
            except MillError as err:
                raise ReportInputError(str(err)) from err
        return self._samples_cache[task]


def _pair(ci: list[float] | None) -> tuple[float, float] | None:
    return None if ci is None else (ci[0], ci[1])


@dataclass
class Sweep:
    """A multirun folder: one sub-folder per job; failed jobs have no results.json."""

    path: Path
    runs: list[RunFolder]
    failed: list[tuple[Path, str]]


def open_sweep(path: str | Path, trust_edited: bool = False) -> Sweep:
    """Open ``outputs/multiruns/<date>/<time>`` (job sub-folders with a manifest or results).
    A job that cannot be reported is listed in ``failed``; an edited one is refused
    (:class:`EditedRunError`) unless ``trust_edited``."""
    path = Path(path)
    jobs = sorted(
        (
            p
            for p in path.iterdir()
            if p.is_dir() and ((p / "manifest.json").is_file() or (p / "results.json").is_file())
        ),
        key=job_order,
    )
    if not jobs:
        raise ReportInputError(
            f"{path} holds no run folders (no */manifest.json); give a run folder or a sweep folder"
        )
    runs: list[RunFolder] = []
    failed: list[tuple[Path, str]] = []
    for job in jobs:
        try:
            runs.append(RunFolder.open(job, trust_edited=trust_edited))
        except EditedRunError:
            raise
        except ReportInputError as err:
            failed.append((job, str(err)))
    return Sweep(path, runs, failed)


def is_run(path: Path) -> bool:
    return (path / "results.json").is_file() or (path / "manifest.json").is_file()
