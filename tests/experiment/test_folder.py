"""ExperimentFolder's files are written whole: a text file or a final samples file appears
under its name only complete (a temp file renamed over it), and a resume removes the temp
files a killed run left."""

from __future__ import annotations

import json
from pathlib import Path

from mill.experiment.folder import ExperimentFolder
from mill.record import SampleRecord
from mill.results import read_samples
from mill.types import DocOutput


def _record(doc_id: int) -> SampleRecord:
    response = DocOutput(input="Q", input_tokens=[1], text=[" A"], output_tokens=[[2]])
    return SampleRecord(
        task="t", subject="default", doc_id=doc_id, fewshot_ids=[], choices=[], gold=0,
        prediction=" A", metrics={"acc": 1.0}, response=response, doc_hash="d", prompt_hash="p",
    )  # fmt: skip


def test_text_files_replace_the_old_file_whole(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path / "run")
    folder.write_text(".hydra/config.yaml", "old: 1\n")
    reader = (folder.path / ".hydra" / "config.yaml").open(encoding="utf-8")
    folder.write_text(".hydra/config.yaml", "new: 2\n")
    folder.write_text("report.txt", "table\n")
    # a rename: a reader of the old file reads all of it, the name holds all of the new one
    assert reader.read() == "old: 1\n"
    reader.close()
    assert (folder.path / ".hydra" / "config.yaml").read_text() == "new: 2\n"
    assert (folder.path / "report.txt").read_text() == "table\n"
    assert not list(folder.path.rglob("*.tmp"))


def test_final_samples_appear_complete_and_sorted(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path / "run")
    folder.claim()
    for doc_id in (2, 0, 1):
        folder.write_sample(_record(doc_id))
    folder.close_samples(success=True)
    names = sorted(p.name for p in folder.samples_dir.iterdir())
    assert names == ["t.jsonl"]
    lines = (folder.samples_dir / "t.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["doc_id"] for line in lines] == [0, 1, 2]
    line = {"format": 2, **_record(0).to_json(tokens=False)}  # compact JSON, no token ids
    assert lines[0] == json.dumps(line, ensure_ascii=False, separators=(",", ":"))
    folder.unlock()


def _fewshot(doc_id: int, subject: str, question: str) -> SampleRecord:
    prefix = f"About {subject}.\n\n" + "An example question?\nAnswer: A\n\n" * 10
    record = _record(doc_id)
    record.subject, record.fewshot_ids = subject, [0, 1]
    record.response = DocOutput(input=prefix + question, input_tokens=[1] * 300, text=[])
    return record


def test_final_samples_hold_a_shared_fewshot_prefix_once_and_read_back_whole(
    tmp_path: Path,
) -> None:
    folder = ExperimentFolder(tmp_path / "run")
    folder.claim()
    records = [_fewshot(i, s, f"Question {s} {i}?\nAnswer:") for s in ("b", "a") for i in (1, 0, 2)]
    for record in records:
        folder.write_sample(record)
    folder.close_samples(success=True)
    folder.unlock()
    path = folder.samples_dir / "t.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    # the first doc of each subject holds its whole prompt, the others their own question
    holders = [r for r in rows if "input_from" not in r["response"]]
    assert [(r["subject"], r["doc_id"]) for r in holders] == [("a", 0), ("b", 0)]
    referring = [r["response"] for r in rows if "input_from" in r["response"]]
    assert [r["input"] for r in referring][:2] == [
        "Question a 1?\nAnswer:",
        "Question a 2?\nAnswer:",
    ]
    assert all(r["input_from"]["doc_id"] == 0 for r in referring)
    assert not any("input_tokens" in r["response"] for r in rows)
    back = read_samples(path)
    by_key = {(r.subject, r.doc_id): r.response.input for r in back}
    assert by_key == {(r.subject, r.doc_id): r.response.input for r in records}
    assert all(r.response.input_tokens == [] for r in back)


def test_sample_tokens_keeps_the_token_ids(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path / "run", sample_tokens=True)
    folder.claim()
    folder.write_sample(_record(0))
    folder.close_samples(success=True)
    folder.unlock()
    (back,) = read_samples(folder.samples_dir / "t.jsonl")
    assert (back.response.input_tokens, back.response.output_tokens) == ([1], [[2]])


def test_a_resume_removes_the_temp_files_of_a_killed_run(tmp_path: Path) -> None:
    folder = ExperimentFolder(tmp_path / "run")
    folder.path.mkdir()
    folder.write_manifest({"status": "running"})
    leftovers = ["results.json.tmp", ".hydra/config.yaml.tmp", "samples/t.jsonl.tmp"]
    for name in leftovers:
        (folder.path / name).parent.mkdir(parents=True, exist_ok=True)
        (folder.path / name).write_text("half")
    folder.reopen()
    assert not [name for name in leftovers if (folder.path / name).exists()]
    folder.unlock()
