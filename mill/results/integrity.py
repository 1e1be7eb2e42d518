"""Whether a run folder holds what the run wrote: the SHA-256 checksums a finished run
records (:data:`~mill.results.format.INTEGRITY_FIELDS`) checked against its files; an edited
or unprovable folder is refused in one line unless the reader trusts it knowingly."""

from __future__ import annotations

from pathlib import Path

from mill import files
from mill.errors import MillError
from mill.results.format import (
    INTEGRITY_SINCE,
    SCHEMA_VERSION,
    Manifest,
    Results,
    ResultsError,
)


class EditedResults(ResultsError):
    """A run's ``results.json`` or samples file changed after the run wrote it."""


def missing_integrity(results: Results, manifest: Manifest) -> list[str]:
    """The integrity fields (:data:`INTEGRITY_FIELDS`) a finished run should carry and this
    one lacks, each as ``file (what is missing)``; a folder of a schema version older than
    :data:`INTEGRITY_SINCE` lacks them all. Empty for a run that carries them all."""
    if results.schema_version < INTEGRITY_SINCE:
        return [f"results.json (schema_version {results.schema_version}: no checksums recorded)"]
    missing = []
    if not manifest.results_sha256:
        missing.append("manifest.json (no results_sha256)")
    for task in results.tasks:
        if task not in results.samples_sha256:
            missing.append(f"results.json (no samples_sha256 for {task})")
    return missing


def changed_files(path: Path, results: Results, manifest: Manifest) -> list[str]:
    """The files of the run folder ``path`` that no longer hold what the run wrote:
    ``results.json`` against the manifest's ``results_sha256``, each ``samples/<task>.jsonl``
    against ``results.json``'s ``samples_sha256`` (a recorded file that is gone counts)."""
    edited = []
    results_path = path / "results.json"
    if manifest.results_sha256 and files.sha256_file(results_path) != manifest.results_sha256:
        edited.append("results.json")
    for task, digest in results.samples_sha256.items():
        samples = path / "samples" / f"{task}.jsonl"
        if not samples.is_file() or files.sha256_file(samples) != digest:
            edited.append(f"samples/{task}.jsonl")
    return edited


def edited_files(path: Path, results: Results, manifest: Manifest) -> list[str]:
    """:func:`changed_files`, then every integrity field the run lacks
    (:func:`missing_integrity`): a checksum deleted or never written proves nothing, so the
    folder counts as edited."""
    return changed_files(path, results, manifest) + missing_integrity(results, manifest)


def check_edited(
    path: Path,
    results: Results,
    manifest: Manifest,
    trust_edited: bool,
    how: str = "trust_edited=True",
    error: type[MillError] = EditedResults,
) -> list[str]:
    """:func:`edited_files`, refused with one line (``error``) unless ``trust_edited``;
    returns the edited files (what a reader accepting them says it read). ``how``: how the
    reader accepts them (``trust_edited=true`` on the command line)."""
    changed = changed_files(path, results, manifest)
    lacking = missing_integrity(results, manifest)
    edited = changed + lacking
    if edited and not trust_edited:
        why = []
        if changed:
            why.append(
                f"{', '.join(changed)} changed after the run wrote it (its SHA-256 is not "
                "the one the run recorded)"
            )
        if lacking:
            why.append(
                f"{', '.join(lacking)} lacks the checksums a finished run records "
                f"(results schema {SCHEMA_VERSION}), so nothing shows it unedited"
            )
        raise error(
            f"{path}: {'; '.join(why)}; Mill does not read edited results: rerun the "
            f"evaluation, or read them knowingly with {how}"
        )
    return edited


def edited_note(path: Path, edited: list[str]) -> str:
    """What a reader that accepted edited files says (console, logs, report pages)."""
    return (
        f"{path}: read with trust_edited: {', '.join(edited)} changed after the run wrote "
        "it or lacks its checksums; nothing shows they are the run's own results"
    )
