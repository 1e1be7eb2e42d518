"""The public Python API: mill.evaluate, mill.compose, mill.load, on the fake model; the
bundled tiny model (stories260k) where its weights are the point (a model in memory)."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import mill
from mill.errors import ConfigError
from mill.model.fake import FakeLM
from mill.results import Results
from tests.helpers import ARC_ROW, REPO, run_process, write_jsonl

DEMO = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))
BASE = ["task.limit=3", "report.progress=never"]


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Results]:
    """The fake model on ARC-Easy, 3 docs, run into an experiment folder."""
    out = tmp_path_factory.mktemp("api") / "run"
    return out, mill.evaluate("arc_easy", "fake", limit=3, output_dir=out)


@pytest.fixture(scope="module")
def demo_scores() -> Results:
    """The demo's model (stories260k, loaded from its config) on ARC-Easy, 3 docs, no
    folder: the numbers an in-memory model with the same weights must give."""
    return mill.evaluate("arc_easy", "stories260k", limit=3)


def test_folder_run_returns_what_results_json_holds(folder_run) -> None:
    out, results = folder_run
    assert isinstance(results, Results)
    assert mill.load(out).results == results
    assert results.metric("arc_easy", "acc").n == 3
    assert (out / "samples" / "arc_easy.jsonl").is_file()


def test_in_memory_run_writes_nothing_and_matches_the_folder_run(
    folder_run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    samples = []
    results = mill.evaluate("arc_easy", "fake", limit=3, on_sample=samples.append)
    assert list(tmp_path.iterdir()) == []
    want = folder_run[1]
    for name, row in want.tasks["arc_easy"].metrics.items():
        assert results.metric("arc_easy", name) == row
    assert [s.doc_id for s in sorted(samples, key=lambda s: s.doc_id)] == [0, 1, 2]
    on_disk = mill.load(folder_run[0]).samples("arc_easy")
    got = sorted(samples, key=lambda s: (s.subject, s.doc_id))
    assert [s.response.logprobs for s in got] == [s.response.logprobs for s in on_disk]


def test_transformers_model_in_memory(demo_scores, tmp_path: Path) -> None:
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(DEMO)
    tokenizer = transformers.AutoTokenizer.from_pretrained(DEMO)
    model.train()  # as inside a training loop
    max_len = tokenizer.model_max_length
    out = tmp_path / "run"
    results = mill.evaluate("arc_easy", model, tokenizer=tokenizer, limit=3, output_dir=out)
    assert model.training and tokenizer.model_max_length == max_len
    assert results.model["in_memory"] is True and results.model["weights_fingerprint"] is None
    want = demo_scores.tasks["arc_easy"].metrics
    for name, row in want.items():
        got = results.metric("arc_easy", name)
        assert got.value == pytest.approx(row.value, abs=1e-6) and got.n == row.n
    run = mill.load(out)
    assert run.manifest.cache is None  # no response cache for a model without files
    assert run.manifest.model and run.manifest.model["in_memory"] is True
    assert not (out / "cache").exists()


def test_any_language_model_is_marked_in_memory(demo_scores) -> None:
    from mill.model.hf import HFCausalLM

    model = HFCausalLM(str(DEMO), device="cpu")
    assert "in_memory" not in model.identity()
    results = mill.evaluate("arc_easy", model, limit=3)
    assert results.model["in_memory"] is True
    assert results.metric("arc_easy", "acc") == demo_scores.metric("arc_easy", "acc")


def test_compose_and_bad_input() -> None:
    cfg = mill.compose(["task=arc_easy", "model=stories260k", *BASE])
    assert cfg.task.limit == 3 and cfg.model.name == "stories260k"
    with pytest.raises(ConfigError, match="config="):
        mill.evaluate("arc_easy", config=cfg)
    with pytest.raises(ConfigError, match="nosuchtask"):
        mill.compose(["task=nosuchtask"])
    with pytest.raises(ConfigError, match="tokenizer"):
        mill.evaluate("arc_easy", object(), limit=1)


@pytest.mark.slow
def test_import_mill_stays_torch_free() -> None:
    code = "import sys, mill; mill.evaluate; mill.load; assert 'torch' not in sys.modules"
    proc = run_process(sys.executable, "-c", code)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
def test_the_python_api_page_example_runs(tmp_path: Path) -> None:
    """The Python API page's example (docs/python-api.md), run as a script (its printed
    numbers checked)."""
    text = (REPO / "docs" / "python-api.md").read_text()
    section = text[text.index("# Python API") :]
    code = re.search(r"```python\n(.*?)```", section, re.S)
    assert code is not None
    script = tmp_path / "example.py"
    script.write_text(code.group(1))
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = run_process(sys.executable, script, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert re.search(r"acc = 0\.\d+ ± 0\.\d+", proc.stdout), proc.stdout


def test_a_list_of_tasks_is_evaluated_together(folder_run) -> None:
    results = mill.evaluate(["arc_easy", "piqa"], "fake", limit=3)
    assert list(results.tasks) == ["arc_easy", "piqa"]
    for name, row in folder_run[1].tasks["arc_easy"].metrics.items():
        assert results.metric("arc_easy", name) == row
    alone = mill.evaluate("piqa", "fake", limit=3)
    for name, row in alone.tasks["piqa"].metrics.items():
        assert results.metric("piqa", name) == row
    with pytest.raises(ConfigError, match="task 'arc' is a group of tasks"):
        mill.evaluate(["arc", "piqa"], "fake")


@pytest.mark.parametrize("where", ["afile", "afile/run"])
def test_output_dir_that_is_a_file_is_a_user_error(where: str, tmp_path: Path) -> None:
    """A file where the folder goes: ConfigError naming output_dir, nothing written."""
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(ConfigError, match=r"output_dir=.*a file is in the way"):
        mill.evaluate("arc_easy", "fake", limit=2, output_dir=tmp_path / where)
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def _json_bytes(data: dict) -> bytes:
    """``data`` in the experiment folder's JSON format (``mill.files.write_json``)."""
    return (json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n").encode()


def _results_bytes(text: bytes, *aside: str) -> bytes:
    """results.json's bytes with the keys ``aside`` (timings, model identity) emptied;
    the round trip through JSON is checked to be exact first."""
    data = json.loads(text)
    assert _json_bytes(data) == text
    return _json_bytes({k: (None if k in aside else v) for k, v in data.items()})


def test_in_memory_model_runs_the_cli_path_folder_and_warnings_identical(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same weights evaluated as a folder (``model=hf model.pretrained=<saved
    folder>``, the CLI's run_job) and in memory (the loaded torch model, with and without
    ``output_dir``): results.json and samples byte for byte, report.txt, the warnings
    logged (contexts truncated, a bad row skipped) and the truncation counts identical;
    only the model identity and the timings differ."""
    import jsonlines
    import transformers

    from mill.files import sha256_file
    from mill.redact import redact

    model = transformers.AutoModelForCausalLM.from_pretrained(DEMO)
    tokenizer = transformers.AutoTokenizer.from_pretrained(DEMO)
    weights = tmp_path / "weights"
    model.save_pretrained(weights)
    tokenizer.save_pretrained(weights)
    bundled = DEMO.parents[1] / "data" / "arc_easy" / "ARC-Easy-Test.jsonl"
    rows = [json.loads(line) for line in bundled.read_text().splitlines()[:1]]
    rows.insert(1, {k: v for k, v in ARC_ROW.items() if k != "answerKey"})  # a bad row
    data = write_jsonl(tmp_path / "arc.jsonl", rows)
    overrides = [
        f"+task.dataset.data_files.test={data}",
        "data.skip_bad_rows=true",
        "task.num_fewshot=5",  # longer than stories260k's 512 tokens: cut from the left
        "task.fewshot_split=validation",
        "runner.cache=false",
    ]

    def warnings(run: Callable[[], Results]) -> tuple[Results, list[str]]:
        caplog.clear()
        # transformers' own warnings reach caplog too (off by default; some library
        # imported earlier in the same process may have turned it on): the caller's
        # tokenizer keeps its 512-token limit, and its "Token indices sequence length is
        # longer" warning must not add to Mill's one truncation warning
        library = logging.getLogger("transformers")
        propagates, library.propagate = library.propagate, True
        try:
            with caplog.at_level(logging.INFO, logger="mill"):
                results = run()
        finally:
            library.propagate = propagates
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        return results, said

    folder, in_memory = tmp_path / "folder", tmp_path / "in_memory"
    as_folder = [f"model.pretrained={weights}", *overrides]
    _, said = warnings(
        lambda: mill.evaluate("arc_easy", "hf", overrides=as_folder, output_dir=folder)
    )
    assert len(said) == 2 and "longer than the model's context window" in said[0]
    assert "skipped 1 bad row(s) (arc_easy: 1" in said[1]
    _, said_in_memory = warnings(
        lambda: mill.evaluate(
            "arc_easy", model, tokenizer=tokenizer, overrides=overrides, output_dir=in_memory
        )
    )
    samples: list[Any] = []
    no_folder, said_no_folder = warnings(
        lambda: mill.evaluate(
            "arc_easy", model, tokenizer=tokenizer, overrides=overrides, on_sample=samples.append
        )
    )
    assert said_in_memory == said_no_folder == said

    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    assert files == sorted(str(p.relative_to(in_memory)) for p in in_memory.rglob("*"))
    want = (folder / "samples" / "arc_easy.jsonl").read_bytes()
    assert (in_memory / "samples" / "arc_easy.jsonl").read_bytes() == want
    aside = ("model", "seconds")
    results = (folder / "results.json").read_bytes()
    assert json.loads(results)["truncation"]["requests"] > 0
    assert _results_bytes((in_memory / "results.json").read_bytes(), *aside) == _results_bytes(
        results, *aside
    )
    title, *table = (folder / "report.txt").read_text().splitlines()
    assert (in_memory / "report.txt").read_text().splitlines()[1:] == table
    manifests = [mill.load(f).manifest for f in (folder, in_memory)]
    for key in ("status", "tasks", "datasets", "truncation", "cache", "world_size"):
        assert getattr(manifests[0], key) == getattr(manifests[1], key), key

    # without a folder: the records handed to on_sample are the samples file's lines
    # (written as the folder writes them), and the Results are results.json
    with jsonlines.open(tmp_path / "records.jsonl", "w") as out:
        out.write_all(r.to_json() for r in sorted(samples, key=lambda r: (r.subject, r.doc_id)))
    assert (tmp_path / "records.jsonl").read_bytes() == want
    no_folder.samples_sha256 = {"arc_easy": sha256_file(tmp_path / "records.jsonl")}
    assert _results_bytes(_json_bytes(redact(no_folder.to_dict())), *aside) == _results_bytes(
        results, *aside
    )
    assert no_folder.model["in_memory"] is True


class MeteredFake(FakeLM):
    """The fake model counting what it was asked per task, in the form of a served model's
    usage (:meth:`mill.model.served.openai_api.OpenAICompletions.usage_summary`)."""

    def __init__(self) -> None:
        super().__init__()
        self.usage: dict[str, dict[str, int]] = {}

    def loglikelihood(self, requests: Any, on_response: Any = None) -> Any:
        for r in requests:
            row = self.usage.setdefault(r.task, dict.fromkeys(USAGE_KEYS, 0))
            row["requests"] += 1
            row["prompts"] += 1
            row["prompt_tokens"] += len((r.context + r.continuation).encode())
        return super().loglikelihood(requests, on_response or (lambda *_: None))

    def usage_summary(self) -> dict[str, dict[str, int]]:
        return {task: dict(row) for task, row in sorted(self.usage.items())}


USAGE_KEYS = ("requests", "prompts", "prompt_tokens", "completion_tokens")


def test_in_memory_run_reports_usage_as_the_folder_run(tmp_path: Path) -> None:
    """A model that reports its usage (as a served model does): the same
    ``results.usage`` with and without a folder (the in-memory path never set it)."""
    out = tmp_path / "run"
    with_folder = mill.evaluate("arc_easy", MeteredFake(), limit=3, output_dir=out)
    without = mill.evaluate("arc_easy", MeteredFake(), limit=3)
    assert with_folder.usage == without.usage and without.usage is not None
    assert without.usage["arc_easy"]["requests"] == 12  # 3 docs x 4 choices
    assert mill.load(out).results.usage == without.usage
    assert "served model usage" in (out / "report.txt").read_text()


def test_compose_reads_a_task_list_as_the_command_line_does() -> None:
    cfg = mill.compose(["task=[arc_easy,piqa]", "task.piqa.limit=2"])
    assert cfg.task.name == "arc_easy+piqa" and cfg.task.piqa.limit == 2
    assert cfg.task.arc_easy._target_.endswith("ArcEasy")
