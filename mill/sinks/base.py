"""What every result sink shares: the record of a finished run (:class:`RunRecord`), the
:class:`Sink` interface, building the configured sinks and sending a run to each (a failure
warns and never fails the evaluation)."""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mill.dotted import flatten
from mill.errors import ConfigError
from mill.results.format import Results

log = logging.getLogger("mill")

ARTIFACTS = ("results.json", "manifest.json", "resolved.yaml", "report.txt", "report.html")
"""Files of the run folder logged as artifacts (with ``samples/`` and ``plots/``)."""


@dataclass
class RunRecord:
    """What a sink logs about one run."""

    name: str
    """The run's name: the experiment folder's name (a sweep job's folder)."""
    results: Results
    settings: dict[str, Any]
    """The resolved config, as ``resolved.yaml`` holds it."""
    folder: Path | None = None
    """The experiment folder (None for ``mill.evaluate`` without ``output_dir``)."""
    tags: dict[str, str] = field(default_factory=dict)

    def params(self) -> dict[str, str]:
        """Settings flattened to dotted keys with string values (trackers' parameters)."""
        return {k: "null" if v is None else str(v) for k, v in flatten(self.settings).items()}

    def artifacts(self) -> list[Path]:
        """Files to upload, relative to :attr:`folder`: reports, results, samples, plots."""
        if self.folder is None:
            return []
        files = [Path(name) for name in ARTIFACTS if (self.folder / name).is_file()]
        for sub in ("samples", "plots"):
            if (self.folder / sub).is_dir():
                files += sorted(
                    p.relative_to(self.folder) for p in (self.folder / sub).iterdir() if p.is_file()
                )
        return files


def safe_key(key: str) -> str:
    """A metric or parameter name trackers accept (letters, digits, ``_-./`` and spaces)."""
    return re.sub(r"[^\w\-./ ]", "_", key)


class Sink(ABC):
    """Where a finished run's results go. Constructing one must be cheap and import
    nothing heavy (it happens before the evaluation, to check the settings)."""

    name: str = "sink"

    @abstractmethod
    def log(self, record: RunRecord) -> str:
        """Log one run; returns where it went (shown in ``mill.log``). Raises on failure."""


def build_sinks(node: Any, allow: list[str]) -> list[Sink]:
    """The sinks of ``cfg.sink`` (``{name: {_target_: ..., ...}}``), in config order."""
    if not node:
        return []
    from mill.instantiate import instantiate

    sinks = []
    for name in node:
        sink = instantiate(node[name], allow)
        if not isinstance(sink, Sink):
            raise ConfigError(f"sink.{name} builds a {type(sink).__name__}, not a mill Sink")
        sink.name = str(name)
        sinks.append(sink)
    return sinks


def send(sinks: list[Sink], record: RunRecord) -> list[str]:
    """Log ``record`` to every sink; a failing sink warns and the others still run.
    Returns the warnings (one line each)."""
    warnings = []
    for sink in sinks:
        try:
            where = sink.log(record)
        except Exception as err:  # any tracker failure is only a warning
            first = f"{type(err).__name__}: {err}".splitlines()[0]
            message = (
                f"sink {sink.name} could not log run {record.name} ({first}); the evaluation "
                "succeeded and its folder is complete"
            )
            log.warning(message)
            warnings.append(message)
        else:
            log.info("sink %s logged run %s to %s", sink.name, record.name, where)
    return warnings
