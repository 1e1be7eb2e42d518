"""The typed results of a run: ``results.json``, ``manifest.json`` and ``samples/<task>.jsonl``.

One definition shared by the writer (the experiment folder, :mod:`mill.runner.execute`) and
every reader (reports, the sweep summary, ``compare``, the sinks and user scripts through
:func:`mill.load`):

- :mod:`mill.results.format`: the classes (``from_dict`` / ``to_dict``) and their versions;
- :mod:`mill.results.io`: reading samples files and a whole finished folder (:func:`load`);
- :mod:`mill.results.integrity`: the checksums that show a folder unedited;
- :mod:`mill.results.markdown`: docs/results-schema.md, printed by ``python -m mill.results``
  (a test checks the file is up to date).

Nothing here imports torch.
"""

from __future__ import annotations

from mill.results.format import (
    INTEGRITY_FIELDS,
    INTEGRITY_SINCE,
    SCHEMA_VERSION,
    DataOrigin,
    GroupMetric,
    GroupResults,
    Manifest,
    MetricValue,
    Results,
    ResultsError,
    TaskResults,
    Truncation,
    judge_label,
    read_json,
    sample_from_dict,
)
from mill.results.integrity import (
    EditedResults,
    changed_files,
    check_edited,
    edited_files,
    edited_note,
    missing_integrity,
)
from mill.results.io import Run, load, read_samples
from mill.results.markdown import SCHEMA_CLASSES, schema_markdown

__all__ = [
    "INTEGRITY_FIELDS",
    "INTEGRITY_SINCE",
    "SCHEMA_CLASSES",
    "SCHEMA_VERSION",
    "DataOrigin",
    "EditedResults",
    "GroupMetric",
    "GroupResults",
    "Manifest",
    "MetricValue",
    "Results",
    "ResultsError",
    "Run",
    "TaskResults",
    "Truncation",
    "changed_files",
    "check_edited",
    "edited_files",
    "edited_note",
    "judge_label",
    "load",
    "missing_integrity",
    "read_json",
    "read_samples",
    "sample_from_dict",
    "schema_markdown",
]
