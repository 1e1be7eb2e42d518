"""mill.files: atomic writes, JSON read back with a one-line error, digests, job-folder order."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mill.errors import MillError
from mill.files import job_order, read_json, sha256_file, write_atomic, write_json


def test_writes_replace_the_target_and_leave_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")
    write_json(target, {"acc": 0.5, "name": "é"})
    assert read_json(target) == {"acc": 0.5, "name": "é"}
    assert target.read_text(encoding="utf-8").endswith("}\n")
    write_atomic(tmp_path / "plot.png", b"\x89PNG")
    assert (tmp_path / "plot.png").read_bytes() == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png", "results.json"]


def test_invalid_json_names_the_file_and_line(tmp_path: Path) -> None:
    class Custom(MillError):
        pass

    bad = tmp_path / "manifest.json"
    bad.write_text('{\n  "status": \n')
    with pytest.raises(MillError, match=r"manifest\.json is not valid JSON \(.* at line 3\)"):
        read_json(bad)
    with pytest.raises(Custom):
        read_json(bad, Custom)
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "missing.json")


def test_jobs_sort_by_number_then_name_and_unnumbered_last() -> None:
    names = ["10_arc_gpt2", "misc", "2_arc_gpt2", "1", "0_boolq_llama", "2024-01-01"]
    ordered = [p.name for p in sorted(map(Path, names), key=job_order)]
    assert ordered == ["0_boolq_llama", "1", "2_arc_gpt2", "10_arc_gpt2", "2024-01-01", "misc"]


def test_sha256_file_reads_in_blocks_and_equals_the_digest_of_the_bytes(tmp_path: Path) -> None:
    # the one file digest (model weights, data files, replayed answers, saved runs)
    data = bytes(range(256)) * (3 * 4096 + 1)  # three 1 MiB blocks and a partial one
    path = tmp_path / "weights.bin"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert sha256_file(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()
