"""Local JSON-lines files read without ``datasets`` give exactly ``datasets``' rows."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from mill.data.load import (
    DatasetSpec,
    DataSource,
    bundled_data_dir,
    load_rows,
    read_uniform_jsonl,
)
from tests.helpers import REPO, SHARED_DATA


def _json_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.suffix in (".json", ".jsonl"))


BUNDLED = _json_files(bundled_data_dir())
SHARED_FILES = _json_files(SHARED_DATA) if SHARED_DATA.is_dir() else []


def _datasets_rows(path: Path) -> list[dict]:
    import datasets

    datasets.disable_progress_bars()
    return datasets.load_dataset("json", data_files={"x": str(path)}, split="x").to_list()


def _exact(rows: list[dict]) -> str:
    """Values, types (1 vs 1.0 vs True) and key order, all in one string."""
    return json.dumps(rows, ensure_ascii=False)


JUDGED = {"mt_bench", "arena_hard", "judged"}
"""Folders of the judged tasks' files: tasks/judged.py reads them line by line itself (their
rows differ in shape: optional references, answers' metadata), never through datasets."""

MIXED = {"ifeval"}
"""Folders whose rows differ in shape (IFEval's kwargs name each instruction's own
arguments): datasets reads them (a struct of every key, None where a row lacks one), and
model=replay reads IFEval's response file itself."""


def test_every_bundled_jsonl_file_is_read_directly() -> None:
    assert len(BUNDLED) >= 9  # arc (4), gsm8k (2), piqa, winogrande, boolq, lambada
    for path in BUNDLED:
        if path.suffix == ".jsonl" and path.parent.name not in JUDGED | MIXED:
            assert read_uniform_jsonl(path) is not None, path


@pytest.mark.parametrize("path", BUNDLED + SHARED_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_direct_rows_equal_datasets_rows(path: Path) -> None:
    direct = read_uniform_jsonl(path)
    if direct is None:  # not one shape: datasets reads it, nothing to compare
        mixed = path.parent.name in JUDGED | MIXED
        assert path.suffix == ".json" or path in SHARED_FILES or mixed, path
        return
    expected = _datasets_rows(path)
    assert len(direct) == len(expected)
    assert _exact(direct) == _exact(expected)


def test_shared_data_is_there() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no shared data folder at {SHARED_DATA} (set MILL_SHARED_DATA)")
    # the full ARC/GSM8K/BoolQ/... files, one shape each: read directly
    direct = [p for p in SHARED_FILES if read_uniform_jsonl(p) is not None]
    assert len(direct) >= 9, [p.name for p in SHARED_FILES]


@pytest.mark.parametrize(
    "lines",
    [
        ['{"a": 1, "b": "x"}', '{"a": 2.5, "b": "y"}'],  # int and float: pyarrow promotes
        ['{"a": 1, "b": "x"}', '{"a": 2}'],  # a key missing: datasets fills in null
        ['{"a": 1, "b": "x"}', '{"b": "y", "a": 2}'],  # another key order
        ['{"a": {"x": 1, "y": 2}}', '{"a": {"y": 2, "x": 1}}'],  # nested key order
        ['{"a": [1, 2.5]}'],  # mixed list items
        ['{"a": true}', '{"a": 0}'],  # bool and int
        ['{"a": 1, "a": 2}'],  # a duplicate key
        ['[{"a": 1}, {"a": 2}]'],  # a JSON array file
        ['{"a": 1}', "[1, 2]"],  # a line that is not an object
        ['{"a": 18446744073709551616}'],  # beyond int64
        ['{"a": NaN}'],
    ],
)
def test_files_of_several_shapes_go_through_datasets(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n")
    assert read_uniform_jsonl(path) is None


@pytest.mark.parametrize(
    "text",
    [
        '{"a": 1, "b": null, "c": [], "d": {"x": "1"}}\n\n{"a": 2, "b": "y", "c": ["z"], '
        '"d": null}\n   \n',
        '{"q": "caf\\u00e9 \\ud83d\\ude00", "n": -3, "f": 1e-7, "l": [[1], []]}\r\n'
        '{"q": "", "n": 9007199254740993, "f": 0.1, "l": [null]}',
        '{"s": [{"t": "a", "u": 1}, {"t": "b", "u": null}]}\n{"s": []}',
    ],
    ids=["nulls-and-blank-lines", "unicode-crlf-numbers", "list-of-structs"],
)
def test_uniform_edge_cases_equal_datasets(tmp_path: Path, text: str) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(text)
    direct = read_uniform_jsonl(path)
    assert direct is not None
    assert _exact(direct) == _exact(_datasets_rows(path))


def test_load_rows_falls_back_to_datasets(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1, "b": "x"}\n{"a": 2.5}\n')
    spec = DatasetSpec(path="mine", data_files={"test": str(path)})
    loaded = load_rows(spec, "test", DataSource("hub"))
    assert loaded.rows == [{"a": 1.0, "b": "x"}, {"a": 2.5, "b": None}]  # datasets' rows
    assert "fingerprint" in loaded.origin


def test_load_rows_reads_a_uniform_file_directly(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": "y"}\n')
    spec = DatasetSpec(path="mine", data_files={"test": str(path)})
    loaded = load_rows(spec, "test", DataSource("hub"))
    assert loaded.rows == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    assert loaded.local and loaded.origin["file"] == str(path)
    assert loaded.origin["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert "fingerprint" not in loaded.origin


@pytest.mark.slow
def test_bundled_arc_loads_without_importing_datasets() -> None:
    code = (
        "import sys\n"
        "from tasks.arc import ArcEasy\n"
        "from mill.data.load import DataSource\n"
        "docs = list(ArcEasy().docs(DataSource('bundled')))\n"
        "assert len(docs) == 100, len(docs)\n"
        "assert 'datasets' not in sys.modules and 'pyarrow' not in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr


def test_duplicate_ids_counted_in_the_origin_and_warned(tmp_path: Path, caplog) -> None:
    from mill.data.load import DatasetSpec, DataSource, duplicate_ids, load_rows

    rows = [{"id": "a", "q": 1}, {"id": "b", "q": 2}, {"id": "a", "q": 3}, {"id": "a", "q": 4}]
    assert duplicate_ids(rows) == {"field": "id", "count": 2, "first": "a"}
    assert duplicate_ids([{"task_id": 1}, {"task_id": 1}])["field"] == "task_id"
    assert duplicate_ids([{"id": "a"}, {"id": "b"}]) is None
    assert duplicate_ids([{"q": 1}, {"q": 1}]) is None  # no id field: nothing to say
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = DatasetSpec(path="mine", data_files={"test": str(path)})
    with caplog.at_level("WARNING"):
        loaded = load_rows(spec, "test", DataSource())
    assert len(loaded.rows) == 4  # kept: each is scored
    assert loaded.origin["duplicate_ids"]["count"] == 2
    assert [r.getMessage() for r in caplog.records if "repeat a document id" in r.getMessage()]
