"""The public Python API: mill.evaluate, mill.compose, mill.load, on the bundled tiny model."""

from __future__ import annotations

import re
import sys
from importlib import resources
from pathlib import Path

import pytest

import mill
from mill.errors import ConfigError
from mill.results import Results
from tests.helpers import run_process

DEMO = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))
REPO = Path(__file__).resolve().parents[1]
BASE = ["task.limit=3", "report.progress=never"]


@pytest.fixture(scope="module")
def folder_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Results]:
    """The demo (stories260k on ARC-Easy, 3 docs) run into an experiment folder."""
    out = tmp_path_factory.mktemp("api") / "run"
    return out, mill.evaluate("arc_easy", "stories260k", limit=3, output_dir=out)


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
    results = mill.evaluate("arc_easy", "stories260k", limit=3, on_sample=samples.append)
    assert list(tmp_path.iterdir()) == []
    want = folder_run[1]
    for name, row in want.tasks["arc_easy"].metrics.items():
        assert results.metric("arc_easy", name) == row
    assert [s.doc_id for s in sorted(samples, key=lambda s: s.doc_id)] == [0, 1, 2]
    on_disk = mill.load(folder_run[0]).samples("arc_easy")
    got = sorted(samples, key=lambda s: (s.subject, s.doc_id))
    assert [s.response.logprobs for s in got] == [s.response.logprobs for s in on_disk]


def test_transformers_model_in_memory(folder_run, tmp_path: Path) -> None:
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(DEMO)
    tokenizer = transformers.AutoTokenizer.from_pretrained(DEMO)
    model.train()  # as inside a training loop
    max_len = tokenizer.model_max_length
    out = tmp_path / "run"
    results = mill.evaluate("arc_easy", model, tokenizer=tokenizer, limit=3, output_dir=out)
    assert model.training and tokenizer.model_max_length == max_len
    assert results.model["in_memory"] is True and results.model["weights_fingerprint"] is None
    want = folder_run[1].tasks["arc_easy"].metrics
    for name, row in want.items():
        got = results.metric("arc_easy", name)
        assert got.value == pytest.approx(row.value, abs=1e-6) and got.n == row.n
    run = mill.load(out)
    assert run.manifest.cache is None  # no response cache for a model without files
    assert run.manifest.model and run.manifest.model["in_memory"] is True
    assert not (out / "cache").exists()


def test_any_language_model_is_marked_in_memory(folder_run) -> None:
    from mill.model.hf import HFCausalLM

    model = HFCausalLM(str(DEMO), device="cpu")
    assert "in_memory" not in model.identity()
    results = mill.evaluate("arc_easy", model, limit=3)
    assert results.model["in_memory"] is True
    assert results.metric("arc_easy", "acc") == folder_run[1].metric("arc_easy", "acc")


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
    results = mill.evaluate(["arc_easy", "piqa"], "stories260k", limit=3)
    assert list(results.tasks) == ["arc_easy", "piqa"]
    for name, row in folder_run[1].tasks["arc_easy"].metrics.items():
        assert results.metric("arc_easy", name) == row
    alone = mill.evaluate("piqa", "stories260k", limit=3)
    for name, row in alone.tasks["piqa"].metrics.items():
        assert results.metric("piqa", name) == row
    with pytest.raises(ConfigError, match="task 'arc' is a group of tasks"):
        mill.evaluate(["arc", "piqa"], "stories260k")


@pytest.mark.parametrize("where", ["afile", "afile/run"])
def test_output_dir_that_is_a_file_is_a_user_error(where: str, tmp_path: Path) -> None:
    """A file where the folder goes: ConfigError naming output_dir, nothing written."""
    (tmp_path / "afile").write_text("mine")
    with pytest.raises(ConfigError, match=r"output_dir=.*a file is in the way"):
        mill.evaluate("arc_easy", "fake", limit=2, output_dir=tmp_path / where)
    assert (tmp_path / "afile").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
