"""Load the rows of one split through ``datasets.load_dataset``, from the hub or from files.

Hub and local files go through the same call: the hub by path/name/revision, local files
by a builder (``json``, ``csv``, ``text``) and ``data_files``. The task adapts a local
file's schema to the hub's one afterwards, so prompts never depend on the source.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, DatasetUnavailable

SOURCES = ("hub", "local", "bundled")


def bundled_data_dir() -> Path:
    """Folder of the small real benchmark samples shipped inside the package."""
    return Path(str(resources.files("mill.resources").joinpath("data")))


@dataclass(frozen=True)
class DataSource:
    """Where the task data comes from: ``hub``, ``local`` (a folder laid out like
    ``../shared/data``) or ``bundled`` (the samples shipped with Mill)."""

    source: str = "hub"
    dir: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise ConfigError(f"data.source={self.source!r} is unknown; choose one of {SOURCES}")
        if self.source == "local" and not self.dir:
            raise ConfigError("data=local needs a folder: add data.dir=/path/to/data")

    @property
    def root(self) -> Path | None:
        """Root folder for local files, or None for the hub."""
        if self.source == "bundled":
            return bundled_data_dir()
        if self.source == "local":
            return Path(os.path.expanduser(str(self.dir))).resolve()
        return None


@dataclass(frozen=True)
class DatasetSpec:
    """How to find one task's data on the hub and in local files."""

    path: str
    """Hub dataset id."""
    name: str | None = None
    revision: str | None = None
    """Pinned hub commit."""
    local_files: dict[str, str] = field(default_factory=dict)
    """split -> file path relative to the data folder (``{subject}`` is substituted)."""
    local_builder: str = "json"
    """``datasets`` builder for local files: json, csv or text."""
    builder_kwargs: dict[str, Any] = field(default_factory=dict)
    data_files: dict[str, str] = field(default_factory=dict)
    """The user's own files (absolute or relative paths): used whatever the data source."""


@dataclass
class LoadedSplit:
    """Rows of one split plus where they came from (for the manifest)."""

    rows: list[dict[str, Any]]
    origin: dict[str, Any]
    local: bool


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _local_file(spec: DatasetSpec, split: str, source: DataSource, subject: str) -> Path | None:
    if split in spec.data_files:
        return Path(os.path.expanduser(spec.data_files[split].format(subject=subject))).resolve()
    if source.root is None:
        return None
    if split not in spec.local_files:
        raise DatasetUnavailable(
            f"dataset {spec.path!r} has no local file for split {split!r}; "
            f"give one with task.dataset.data_files.{split}=/path/to/file"
        )
    return source.root / spec.local_files[split].format(subject=subject)


def load_rows(
    spec: DatasetSpec, split: str, source: DataSource, subject: str = "default"
) -> LoadedSplit:
    """Load one split as a list of dict rows (hub schema for hub, file schema for files)."""
    import datasets  # heavy: imported only when data is loaded

    datasets.disable_progress_bars()
    path = _local_file(spec, split, source, subject)
    if path is not None:
        if not path.is_file():
            raise DatasetUnavailable(
                f"data file {path} for {spec.path} split {split!r} does not exist; "
                "check data.dir (data=local) or task.dataset.data_files"
            )
        try:
            ds = datasets.load_dataset(
                spec.local_builder,
                data_files={split: str(path)},
                split=split,
                **spec.builder_kwargs,
            )
        except Exception as err:  # datasets raises many types; all mean "bad file"
            raise DatasetUnavailable(f"cannot read {path}: {err}") from err
        origin = {"file": str(path), "sha256": _sha256(path), "fingerprint": ds._fingerprint}
        return LoadedSplit(rows=ds.to_list(), origin=origin, local=True)

    name = spec.name if subject == "default" else subject
    try:
        ds = datasets.load_dataset(spec.path, name, revision=spec.revision, split=split)
    except Exception as err:
        raise DatasetUnavailable(
            f"cannot load {spec.path} ({name or 'default'}, split {split!r}, revision "
            f"{spec.revision}) from the Hugging Face hub: {type(err).__name__}. Offline? "
            "Use local files: data=local data.dir=/path/to/data (a folder laid out like "
            "Mill's bundled samples), or data=bundled for the shipped samples"
        ) from err
    origin = {
        "hub": spec.path,
        "name": name,
        "revision": spec.revision,
        "fingerprint": ds._fingerprint,
    }
    return LoadedSplit(rows=ds.to_list(), origin=origin, local=False)
