"""Reading a run: the records of ``samples/<task>.jsonl`` and a whole finished folder
(:func:`load`, checked by :mod:`mill.results.integrity`)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path

from mill.record import SampleRecord, read_sample_rows
from mill.results.format import Manifest, Results, ResultsError, sample_from_dict
from mill.results.integrity import check_edited, edited_note


def read_samples(path: str | Path) -> list[SampleRecord]:
    """Every line of a ``samples/<task>.jsonl`` file (either format,
    :data:`mill.record.READ_FORMATS`), typed."""
    path = Path(path)
    records = []
    for number, row in enumerate(read_sample_rows(path, "samples", ResultsError), 1):
        try:
            records.append(sample_from_dict(row))
        except (ValueError, TypeError) as err:
            raise ResultsError(f"{path}:{number} is not a sample record ({err})") from err
    return records


@dataclass
class Run:
    """A finished experiment folder, typed: what :func:`load` returns."""

    path: Path
    results: Results
    manifest: Manifest
    edited: list[str] = field(default_factory=list)
    """Files read although they changed after the run (``trust_edited``); empty otherwise."""

    def samples_path(self, task: str) -> Path:
        """``samples/<task>.jsonl`` of this run."""
        return self.path / "samples" / f"{task}.jsonl"

    def samples(self, task: str) -> list[SampleRecord]:
        """The per-doc records of ``task``, sorted by (subject, doc id)."""
        path = self.samples_path(task)
        if not path.is_file():
            raise ResultsError(f"{path} is missing; the run folder is incomplete")
        return read_samples(path)


def load(folder: str | Path, trust_edited: bool = False) -> Run:
    """Read a finished run's folder: ``results.json``, ``manifest.json`` and its samples.

    The files are checked against the SHA-256 the run recorded (:func:`edited_files`): an
    edited one raises :class:`EditedResults`, unless ``trust_edited=True``, which reads it
    with a warning and lists it in ``Run.edited``."""
    path = Path(folder)
    results_path = path / "results.json"
    if not results_path.is_file():
        raise ResultsError(f"{path} has no results.json; give the folder of a run that succeeded")
    manifest_path = path / "manifest.json"
    manifest = Manifest.read(manifest_path) if manifest_path.is_file() else Manifest()
    results = Results.read(results_path)
    edited = check_edited(path, results, manifest, trust_edited)
    if edited:
        warnings.warn(edited_note(path, edited), stacklevel=2)
    return Run(path, results, manifest, edited)
