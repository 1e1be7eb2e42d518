"""ExperimentFolder's files are written whole: a text file or a final samples file appears
under its name only complete (a temp file renamed over it), and a resume removes the temp
files a killed run left."""

from __future__ import annotations

import json
from pathlib import Path

from mill.experiment.folder import ExperimentFolder
from mill.record import SampleRecord
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
    assert lines[0] == json.dumps(_record(0).to_json(), ensure_ascii=False)  # jsonlines' form
    folder.unlock()


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
