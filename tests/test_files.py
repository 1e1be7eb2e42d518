"""mill.files: atomic writes, JSON read back with a one-line error, digests, job-folder order."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mill.errors import MillError
from mill.files import (
    job_order,
    read_json,
    read_jsonl,
    replacing,
    sha256_file,
    sha256_json,
    write_atomic,
    write_json,
)
from mill.types import GenerationArgs, OutputType, Request


def test_writes_replace_the_target_and_leave_no_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")
    write_json(target, {"acc": 0.5, "name": "é"})
    assert read_json(target) == {"acc": 0.5, "name": "é"}
    assert target.read_text(encoding="utf-8").endswith("}\n")
    write_atomic(tmp_path / "plot.png", b"\x89PNG")
    assert (tmp_path / "plot.png").read_bytes() == b"\x89PNG"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plot.png", "results.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.txt"
    target.write_text("old")

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(27, "File too large")

    monkeypatch.setattr("mill.files.os.replace", full_disk)
    with pytest.raises(OSError, match="File too large"):
        write_atomic(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.txt"]


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


def test_sha256_json_keeps_every_digest_mill_has_stored() -> None:
    # one JSON digest for request content (the response cache's request key), sample
    # records' doc and prompt hashes, verdict keys and rubric hashes: the values below were
    # computed by the copies it replaced, so existing caches and samples keep their keys
    sampled = Request(
        OutputType.GENERATIVE, "gsm8k", 3, 1, "Q: café → ?\nA:",
        generation=GenerationArgs(until=("\n\n", "Q:"), max_gen_toks=32, do_sample=True,
                                  temperature=0.7, seed=1234),
        messages=(("user", "héllo"),),
    )  # fmt: skip
    choice = Request(OutputType.LOGPROBS, "arc_easy", 0, 2, "Question: naïve?\nAnswer:", " résumé")
    assert sampled.content_hash == (
        "80d0ae1f98c9fc13bd5203559120d04bd8a25ce699bfa0af2f21c52255b679cf"
    )
    assert choice.content_hash == "075bbea740092777e87fa532e49d32ff60b758286a7f4ebde91025ff703d5d4d"
    doc = {"question": "naïve", "choices": ["a", 1, None], "n": 2.5}
    assert sha256_json(doc) == "23c4a8f73b1aa12f741298d4f4bfe9214d7e8baf61bf8cc72dcae4ee1ebb386f"
    assert sha256_json({"b": 1, "a": 2}) == sha256_json({"a": 2, "b": 1})


def test_sha256_json_ascii_only_escapes_and_surrogates_are_hashed_not_refused() -> None:
    value = {"path": "/models/modèle"}
    escaped = json.dumps(value, sort_keys=True).encode()  # "\u00e8": the cache's model key
    assert sha256_json(value, ascii_only=True) == hashlib.sha256(escaped).hexdigest()
    assert sha256_json(value) != sha256_json(value, ascii_only=True)
    assert len(sha256_json(["\ud800 a lone surrogate a model wrote"])) == 64
    assert sha256_json({"when": Path("/x")}) == sha256_json({"when": "/x"})  # str() of the rest


def test_replacing_renames_a_complete_stream_and_keeps_the_old_file_on_error(
    tmp_path: Path,
) -> None:
    target = tmp_path / "samples.jsonl"
    target.write_text("old\n")
    with replacing(target) as handle:
        handle.write('{"é": 1}\n')
        assert target.read_text() == "old\n"  # nothing under the name until the end
    assert target.read_text(encoding="utf-8") == '{"é": 1}\n'
    with pytest.raises(RuntimeError), replacing(target) as handle:
        handle.write("half")
        raise RuntimeError("killed mid-write")
    assert target.read_text(encoding="utf-8") == '{"é": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["samples.jsonl"]


def test_a_cache_mill_cannot_write_names_mill_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mill.files import check_cache_root

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "file" / "cache"))
    with pytest.raises(MillError, match=r"^MILL_CACHE=.*/file/cache is not a folder Mill can"):
        check_cache_root()
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "ok"))
    assert check_cache_root() == tmp_path / "ok" and (tmp_path / "ok").is_dir()


def test_a_json_line_holding_unicode_line_separators_is_one_row(tmp_path: Path) -> None:
    # JSON may hold U+2028, U+2029 and U+0085 raw (ensure_ascii=False): str.splitlines()
    # would cut such a line in two (a full MMLU run's samples file has one)
    rows = [{"text": "a\u2028b\u2029c\x85d\x1ce"}, {"text": "plain"}]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    assert read_jsonl(path, "samples") == rows
