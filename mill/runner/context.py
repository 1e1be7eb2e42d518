"""What one run on one rank carries from phase to phase (:class:`RunContext`): the typed
settings, the rank, the experiment folder and its manifest, the console, the phase clock,
and what the phases open (the response cache, the judge, the sinks). It opens the run,
turns a failure into the one error the user sees, and closes the run whatever happened:
the manifest's final status, the phase lines in ``mill.log``, the sinks."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import storage_error
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import record_failure
from mill.judging import Judging
from mill.model.base import LanguageModel
from mill.progress import NullProgress, Progress
from mill.record import SampleRecord
from mill.redact import redact
from mill.results import Manifest, Results
from mill.runner.cache import ResponseStore, corrupt_cache_error
from mill.runner.dist import Dist
from mill.runner.phases import PhaseClock
from mill.runner.run_config import RunConfig
from mill.runner.settings import RunnerSettings
from mill.sinks import RunRecord, Sink, send

if TYPE_CHECKING:
    from rich.console import Console

    from mill.report.background import ReportHelper

log = logging.getLogger("mill")


@dataclass
class RunContext:
    """One run on one rank: what every phase reads, and what the phases open.

    Only rank 0 writes to the folder (:attr:`writes`); ``folder`` None
    (``mill.evaluate`` without ``output_dir``) writes nothing anywhere."""

    config: RunConfig
    """The run's configuration, typed once (:meth:`RunConfig.from_resolved`)."""
    cfg: DictConfig
    """:attr:`RunConfig.values` as the one DictConfig the builders instantiate from."""
    dist: Dist
    folder: ExperimentFolder | None
    folder_path: Path | None
    manifest: Manifest
    show: bool
    """Render on the terminal (rank 0 only): progress, the loading line."""
    err_console: Console
    progress: Progress
    allow: list[str]
    on_sample: Callable[[SampleRecord], None] | None
    drawer: ReportHelper | None
    """Rank 0's report helper: draws the plots in a child that imports matplotlib while
    the model loads (None without a folder to write)."""
    start: float = field(default_factory=time.monotonic)
    clock: PhaseClock = field(default_factory=PhaseClock)
    candidate: LanguageModel | None = None
    """The candidate model this run built (released before the judge loads); None for a
    caller's in-memory model."""
    cache_dir: Path | None = None
    """The candidate's response cache (None: none, or a model without files)."""
    store: ResponseStore | None = None
    judging: Judging | None = None
    sinks: list[Sink] = field(default_factory=list)
    scoring: str = "scoring"
    """The phase the model's calls belong to: ``scoring``, then ``judging``."""
    results: Results | None = None
    success: bool = False
    status: str = "failed"

    @classmethod
    def open(
        cls,
        config: RunConfig,
        folder_path: Path | None,
        dist: Dist,
        *,
        on_sample: Callable[[SampleRecord], None] | None,
        show: bool,
    ) -> RunContext:
        """The context of a run about to start (the manifest read back from the folder)."""
        from mill.report.background import ReportHelper
        from mill.report.console import interactive, make_console
        from mill.report.progress import PhaseProgress

        cfg = OmegaConf.create(config.values)
        settings = config.runner
        folder = (
            ExperimentFolder(folder_path, settings.sample_tokens)
            if folder_path is not None
            else None
        )
        writes = folder if dist.is_main else None
        mode = config.report.progress
        err_console = make_console(stderr=True, mode=mode)
        show = dist.is_main and show  # ranks other than 0 never render
        progress: Progress = (
            PhaseProgress(err_console, interactive(mode), config.report.every_s)
            if show
            else NullProgress()
        )
        return cls(
            config=config,
            cfg=cfg,
            dist=dist,
            folder=folder,
            folder_path=folder_path,
            manifest=writes.read_manifest() if writes is not None else Manifest(),
            show=show,
            err_console=err_console,
            progress=progress,
            allow=[str(a) for a in cfg.get("allow_targets", [])],
            on_sample=on_sample,
            drawer=ReportHelper() if writes is not None else None,
        )

    @property
    def settings(self) -> RunnerSettings:
        """The ``runner`` group, typed."""
        return self.config.runner

    @property
    def mode(self) -> str:
        """``report.progress`` (auto, always, never)."""
        return self.config.report.progress

    @property
    def main(self) -> bool:
        return self.dist.is_main

    @property
    def writes(self) -> ExperimentFolder | None:
        """The folder rank 0 writes (None without one, and on other ranks)."""
        return self.folder if self.main else None

    @property
    def cache_root(self) -> Path | None:
        """Where this run's caches live (responses, verdicts): none without a folder."""
        return self.settings.cache_dir(self.folder.path) if self.folder is not None else None

    def write_manifest(self) -> None:
        if self.writes is not None:
            self.writes.write_manifest(self.manifest)

    def release_candidate(self) -> None:
        """Free the candidate's weights before the judge's load (a model this run built)."""
        if self.candidate is not None:
            self.candidate.release()
            log.info("released the candidate model before loading the judge")

    def succeed(self, results: Results | None) -> Results | None:
        self.success = True
        self.results = results
        return results

    def fail(self, caught: BaseException) -> BaseException:
        """The error to raise for ``caught`` (a corrupt cache file, a full disk or a
        read-only folder: one line); rank 0 marks the manifest failed."""
        err = (
            corrupt_cache_error(caught, self.cache_dir)
            or storage_error(caught, self.folder_path)
            or caught
        )
        if self.main:
            record_failure(self.manifest, err)
            self.status = self.manifest.status
        return err

    def finish(self) -> None:
        """Close what the run opened; rank 0 writes the manifest's final status and
        phases, logs where the time went, and sends a succeeded run to the sinks."""
        if self.drawer is not None:
            self.drawer.close()
        if self.store is not None:
            self.store.close()
        if self.judging is not None:
            self.judging.close()
        if not self.main:
            return
        manifest, writes = self.manifest, self.writes
        if not self.success and writes is not None:
            with contextlib.suppress(OSError):  # a full disk fails the close's flush too
                writes.close_samples(success=False)
        manifest.status = "succeeded" if self.success else self.status
        if not self.success:  # a resumed run writes results.json again
            manifest.results_sha256 = None
        manifest.seconds = round(time.monotonic() - self.start, 3)
        self.clock.mark("report" if self.success else "until failure")
        manifest.phases = self.clock.seconds()
        try:
            self.write_manifest()
        except OSError:
            if self.success:  # else the error being raised says more than this one
                raise
        log.info(self.clock.line())
        log.info(self.clock.cpu_line())
        memory = self.clock.memory_line()
        if memory is not None:
            log.info(memory)
        log.info("run %s (%.1f s)", manifest.status, manifest.seconds)
        if self.success and self.sinks and self.results is not None:  # the folder is complete
            send(self.sinks, sink_record(self.folder_path, self.results, self.config.values))


def _sweep_dir() -> str | None:
    """The sweep folder when this process runs a job of a Hydra multirun, else None."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    hydra_cfg = HydraConfig.get()
    if str(hydra_cfg.mode) != "RunMode.MULTIRUN":
        return None
    return str(Path(str(hydra_cfg.sweep.dir)).resolve())


def sink_record(folder: Path | None, results: Results, resolved: dict[str, Any]) -> RunRecord:
    """What the sinks log about a run: its name, results, settings, folder and tags."""
    settings = redact({k: v for k, v in resolved.items() if k != "hydra"})
    task = (resolved.get("task") or {}).get("name") or "+".join(results.tasks)
    model = (resolved.get("model") or {}).get("name") or "?"
    tags = {"mill.task": str(task), "mill.model": str(model)}
    tags["mill.data"] = results.data_source.source
    if folder is not None:
        tags["mill.folder"] = str(folder)
    sweep = _sweep_dir()
    if sweep is not None:  # a job of `mill -m`: its runs share the sweep folder's tag
        tags["mill.sweep"] = sweep
    name = folder.name if folder is not None else f"{task}_{model}"
    return RunRecord(name, results, settings, folder, tags)
