"""Bad input through the real CLI: one line naming what, where and how to fix it, exit code
2, and no results.json. Truncation is the exception: counted, one warning, the run goes on.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mill.report.rebuild import report_command
from tests.helpers import ARC_ROW, run_mill, write_jsonl
from tests.lmeval.conftest import skip_without_lm_eval


def _nan_model(tmp_path: Path) -> Path:
    """The random GPT-2 with NaN in its final layer norm: every log-probability is NaN."""
    from safetensors.torch import load_file, save_file

    from mill.model.random import random_gpt2_dir

    folder = tmp_path / "nan-gpt2"
    shutil.copytree(random_gpt2_dir(), folder)
    weights = load_file(folder / "model.safetensors")
    weights["transformer.ln_f.weight"].fill_(float("nan"))
    save_file(weights, folder / "model.safetensors", metadata={"format": "pt"})
    return folder


def _test_split(data: Path) -> list[str]:
    """The override that points the task's test split at the file ``data``."""
    return [f"+task.dataset.data_files.test={data}"]


def _case(name: str, tmp_path: Path) -> tuple[list[str], list[str]]:
    """(overrides, fragments the one-line message must contain)."""
    if name == "unknown task":
        return ["task=arc_esy"], ["unknown task 'arc_esy'", "did you mean arc_easy"]
    if name == "unknown command":  # a first word that is no command and no override
        return ["comapre", "a=x", "b=y"], [
            "'comapre' is neither a command nor an override",
            "did you mean 'mill compare'",
            "mill report, mill compare, mill judge",
        ]
    if name == "unknown model":
        return ["model=gpt2"], ["unknown model 'gpt2'", "gpt2_random"]
    if name == "model group set to null":
        return ["model=null"], ["model=null", "takes one of its configs", "stories260k"]
    if name == "unknown metric":
        return ["+metrics=[acc,acc_nrom]"], ["unknown metric 'acc_nrom'", "did you mean acc_norm"]
    if name == "unknown runner":
        return ["runner=lcal"], ["unknown runner 'lcal'", "did you mean local"]
    if name == "unknown setting":
        return ["runner.sed=1"], ["unknown setting runner.sed", "runner.seed"]
    if name == "malformed yaml":
        (tmp_path / "conf" / "task").mkdir(parents=True)
        bad = tmp_path / "conf" / "task" / "mine.yaml"
        bad.write_text("_target_: mill.tasks.arc.ArcEasy\nname: [mine\n")
        return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=mine"], [
            "malformed YAML",
            str(bad),
            "line 3",
        ]
    if name == "doc lacks a prompt field":
        # a file with another schema ("query" where the prompt reads "question")
        rows = [{"query": "1+1?", "answer": "#### 2"}, {"query": "2+1?", "answer": "#### 3"}]
        data = write_jsonl(tmp_path / "gsm.jsonl", rows)
        return ["task=gsm8k", "task.num_fewshot=0", *_test_split(data)], [
            "task 'gsm8k', split 'test'",
            "doc 0",
            "lacks field 'question' that the task needs",
        ]
    if name == "file row lacks a field":
        row = {k: v for k, v in ARC_ROW.items() if k != "answerKey"}
        data = write_jsonl(tmp_path / "arc.jsonl", [row, row])
        return _test_split(data), [
            "task 'arc_easy'",
            "row 0",
            "lacks field 'answerKey'",
            str(data),
        ]
    if name == "doc without choices":
        row = {**ARC_ROW, "question": {"stem": "?", "choices": []}}
        data = write_jsonl(tmp_path / "arc.jsonl", [ARC_ROW, ARC_ROW, row])
        return _test_split(data), ["doc 2", "the doc has no choices"]
    if name == "gold outside choices":
        data = write_jsonl(tmp_path / "arc.jsonl", [{**ARC_ROW, "answerKey": "E"}])
        return _test_split(data), [
            "doc 0",
            "gold answer is not among its 2 choices",
        ]
    if name == "non-finite log-probability":
        folder = _nan_model(tmp_path)
        return ["model=hf", f"model.pretrained={folder}", "model.name=nan_lp", "task.limit=2"], [
            "request arc_easy/",
            "non-finite log-probability nan",
        ]
    if name == "dataset offline":
        return ["data=hub", "task.limit=2"], [
            "allenai/ai2_arc",
            "HF_HUB_OFFLINE is set and the dataset is not in the Hugging Face cache",
            "data=local data.dir=",
        ]
    if name == "target outside allow-list":
        return ["model._target_=os.system"], ["'os.system' is not allowed", "allow_targets"]
    if name == "null field in a file row":
        # datasets fills a field that one row lacks with null: never "gold not among choices"
        rows = [ARC_ROW, {k: v for k, v in ARC_ROW.items() if k != "answerKey"}, ARC_ROW]
        data = write_jsonl(tmp_path / "arc.jsonl", rows)
        return _test_split(data), [
            "task 'arc_easy', split 'test'",
            "row 1",
            "field 'answerKey' is null",
            "data.skip_bad_rows=true",
        ]
    if name == "null text in a file row":
        row = {**ARC_ROW, "question": {**ARC_ROW["question"], "stem": None}}
        data = write_jsonl(tmp_path / "arc.jsonl", [ARC_ROW, ARC_ROW, row])
        return _test_split(data), [
            "split 'test'",
            "row 2",
            "field 'question.stem' is null",
        ]
    if name == "null field in a YAML task row":
        return _user_task(tmp_path, [{"q": "a?", "a": "b"}, {"q": None, "a": "c"}]), [
            "task 'mine', split 'test'",
            "doc 1",
            "field 'q' is null",
        ]
    if name == "task YAML without name":
        return _user_task(tmp_path, [{"q": "a?", "a": "b"}], name=None), [
            "the task config has no `name`",
            "name: <short name>",
        ]
    if name == "task YAML without name, default folder":
        overrides = _user_task(tmp_path, [{"q": "a?", "a": "b"}], name=None)
        return overrides + ["--no-run-dir"], ["the task config has no `name`", "name:"]
    if name == "non-UTF-8 data file":
        data = tmp_path / "arc.jsonl"
        data.write_bytes(json.dumps(ARC_ROW).replace("water", "caf\u00e9").encode("latin-1"))
        return _test_split(data), [
            str(data),
            "line 1 is not UTF-8",
            "save the file as UTF-8",
        ]
    if name == "garbage JSONL line":
        data = tmp_path / "arc.jsonl"
        data.write_text(json.dumps(ARC_ROW) + "\n" + json.dumps(ARC_ROW)[:40] + "\n")
        return _test_split(data), [str(data), "line 2 is not valid JSON"]
    if name == "empty data file":
        data = tmp_path / "arc.jsonl"
        data.write_text("")
        return _test_split(data), [str(data), "is empty"]
    if name == "missing data file":
        return _test_split(tmp_path / "nope.jsonl"), [
            "nope.jsonl",
            "does not exist",
        ]
    if name == "corrupt cache database":
        cache = tmp_path / "cache"
        cache.mkdir()
        (cache / "responses-somehost.sqlite").write_bytes(b"this is not a database" * 100)
        return [f"runner.cache={cache}", "task.limit=2"], [
            "responses-somehost.sqlite",
            "is corrupt",
            "runner.cache=false",
        ]
    if name == "edited cache entry":  # a first run fills the cache; one entry is edited
        import sqlite3
        import zlib

        cache = tmp_path / "cache"
        args = [f"runner.cache={cache}", "task.limit=2", "model=fake"]
        first = run_mill(*args, f"hydra.run.dir={tmp_path / 'first'}")
        assert first.returncode == 0, first.stderr
        (db,) = cache.glob("responses-*.sqlite")
        with sqlite3.connect(db) as conn:
            request, blob = conn.execute("SELECT request, response FROM responses").fetchone()
            body = json.loads(zlib.decompress(blob))
            body["logprob"] = 0.0
            edited = zlib.compress(json.dumps(body).encode())
            conn.execute("UPDATE responses SET response = ? WHERE request = ?", (edited, request))
        return args, [str(db), "is corrupt", "fails its checksum", "runner.cache=false"]
    if name == "task.limit not a number":
        return ["task.limit=abc"], ["task.limit='abc'", "give a whole number >= 1"]
    if name == "task.limit not whole":
        return ["task.limit=2.5"], ["task.limit=2.5", "give a whole number >= 1"]
    if name == "task.num_fewshot not whole":
        return ["task.num_fewshot=1.5"], ["task.num_fewshot=1.5", "give a whole number >= 0"]
    if name == "lm-eval task YAML syntax error":
        overrides, yaml_file = _lm_eval_task(tmp_path, "doc_to_text: [oops\ndoc_to_target: a\n")
        return overrides, [
            "lm-eval task 'mine'",
            "cannot be read: malformed YAML in",
            f"{yaml_file}, line 9",
            "started at line 8",
        ]
    if name == "lm-eval data file missing":
        missing = tmp_path / "nope.jsonl"
        overrides, yaml_file = _lm_eval_task(tmp_path, data=missing)
        return overrides, [
            f"lm-eval task 'mine' ({yaml_file}), dataset_kwargs.data_files.test",
            f"data file {missing} does not exist",
        ]
    if name == "lm-eval !function module missing":
        overrides, yaml_file = _lm_eval_task(tmp_path, "process_docs: !function nomodule.fix\n")
        return overrides, [
            f"lm-eval task 'mine' ({yaml_file}), process_docs",
            "!function nomodule.fix",
            "nomodule.py beside the YAML",
        ]
    if name == "lm-eval dataset_overrides malformed":
        overrides, _ = _lm_eval_task(tmp_path)
        bad = tmp_path / "bbh.yaml"
        bad.write_text("mine:\n  dataset_kwargs:\n    data_files: {test: /d/{dataset_name}.json}\n")
        return [*overrides, f"task.dataset_overrides={bad}"], [
            "task.dataset_overrides: malformed YAML in",
            f"{bad}, line 3",
            "block style",
        ]
    if name == "run folder is a file":
        (tmp_path / "run").write_text("not a folder")
        return ["task.limit=2"], ["hydra.run.dir=", "a file is in the way", "choose a folder"]
    if name == "launcher is not a plugin":
        return ["hydra.launcher._target_=mill.runner.sweep.SweepSummary"], [
            "hydra.launcher._target_='mill.runner.sweep.SweepSummary'",
            "is not a Hydra launcher plugin",
            "hydra/launcher=<name>",
        ]
    if name == "sweeper is not a plugin":
        return ["hydra.sweeper._target_=os.system"], [
            "hydra.sweeper._target_='os.system' is not allowed",
            "allow_targets",
        ]
    # numeric settings: refused before the model loads (its folder does not even exist)
    missing_model = ["model=hf", f"model.pretrained={tmp_path / 'no-such-model'}"]
    if name == "model.max_length zero":
        bound = ">= 1 and <= 2147483647 (or null)"
        return [*missing_model, "model.max_length=0"], ["model.max_length=0", bound]
    if name == "model.max_length negative":
        return [*missing_model, "model.max_length=-8"], ["model.max_length=-8", ">= 1"]
    if name == "model.batch_size zero":
        return [*missing_model, "model.batch_size=0"], ["model.batch_size=0", "(or auto)"]
    if name == "runner.timeout_s zero":
        return [*missing_model, "runner.timeout_s=0"], ["runner.timeout_s=0", ">= 1"]
    if name == "runner.seed not a number":
        return [*missing_model, "runner.seed=abc"], ["runner.seed='abc'", "whole number"]
    judged = ["model=fake", "judge=fake"]
    if name == "judge template field the protocol cannot fill":
        template = "'{question} {answer} {rubric}'"
        return [
            *judged, "task=mt_bench", "+metrics=[mt_bench_score]",
            f"+metrics.mt_bench_score.templates.single.prompt_template={template}",
        ], ["mt_bench_score", "does not fill: rubric"]  # fmt: skip
    if name == "rubric without a scale":
        return [
            *judged, "task=mt_bench", "+metrics=[mt_bench_score]",
            "metrics.mt_bench_score.scale=null",
        ], ["metric 'mt_bench_score': the rubric has no scale", "scale: [1, 10]"]  # fmt: skip
    if name == "Arena-Hard patterns that cannot read its labels":
        return [
            *judged, "task=arena_hard", "data=bundled", "+metrics=[arena_hard_score]",
            "metrics.arena_hard_score.patterns=['\\[\\[([AB>]+)\\]\\]']",
        ], ["cannot read the label 'A=B'", "fix the metric's patterns"]  # fmt: skip
    raise AssertionError(name)


def _lm_eval_task(
    tmp_path: Path, extra: str = "", data: Path | None = None
) -> tuple[list[str], Path]:
    """An lm-eval task YAML ``mine`` (with ``extra`` lines) in its own include path: the
    overrides that run it through the bridge, and the YAML's path."""
    if data is None:
        data = write_jsonl(tmp_path / "mine.jsonl", [{"q": "a?", "a": "b"}])
    folder = tmp_path / "lm_tasks"
    folder.mkdir()
    yaml_file = folder / "mine.yaml"
    yaml_file.write_text(
        "task: mine\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {data}\noutput_type: loglikelihood\ntest_split: test\n"
        + (extra or 'doc_to_text: "{{q}}"\ndoc_to_target: "{{a}}"\n')
    )
    overrides = [
        "task=lm_eval",
        "task.tasks=[mine]",
        f"task.include_path={folder}",
        "task.include_defaults=false",
    ]
    return overrides, yaml_file


def _user_task(tmp_path: Path, rows: list[dict], name: str | None = "mine") -> list[str]:
    """A YAML-only generative task over ``rows``; the overrides that select it."""
    data = write_jsonl(tmp_path / "mine.jsonl", rows)
    folder = tmp_path / "conf" / "task"
    folder.mkdir(parents=True)
    lines = [
        "_target_: mill.task.YamlTask",
        *([f"name: {name}"] if name else []),
        "output_type: generative",
        'doc_to_text: "Q: {{q}}"',
        "doc_to_target: a",
        "dataset:",
        "  data_files:",
        f"    test: {data}",
    ]
    (folder / "mine.yaml").write_text("\n".join(lines) + "\n")
    return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=mine"]


CASES = [
    "unknown command",
    "unknown task",
    "unknown model",
    "unknown metric",
    "unknown runner",
    "unknown setting",
    "model group set to null",
    "malformed yaml",
    "doc lacks a prompt field",
    "file row lacks a field",
    "doc without choices",
    "gold outside choices",
    "non-finite log-probability",
    "dataset offline",
    "target outside allow-list",
    "null field in a file row",
    "null text in a file row",
    "null field in a YAML task row",
    "task YAML without name",
    "task YAML without name, default folder",
    "non-UTF-8 data file",
    "garbage JSONL line",
    "empty data file",
    "missing data file",
    "corrupt cache database",
    "edited cache entry",
    "task.limit not a number",
    "task.limit not whole",
    "task.num_fewshot not whole",
    "run folder is a file",
    "launcher is not a plugin",
    "sweeper is not a plugin",
    "model.max_length zero",
    "model.max_length negative",
    "model.batch_size zero",
    "runner.timeout_s zero",
    "runner.seed not a number",
    "judge template field the protocol cannot fill",
    "rubric without a scale",
    "Arena-Hard patterns that cannot read its labels",
    *(
        pytest.param(case, marks=skip_without_lm_eval)
        for case in (
            "lm-eval task YAML syntax error",
            "lm-eval data file missing",
            "lm-eval !function module missing",
            "lm-eval dataset_overrides malformed",
        )
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_bad_input_is_one_line_exit_2_no_results(name: str, tmp_path: Path) -> None:
    overrides, fragments = _case(name, tmp_path)
    out = tmp_path / "run"
    if "--no-run-dir" in overrides:  # Hydra names the folder itself (under the cwd)
        overrides.remove("--no-run-dir")
        out = tmp_path / "cwd"
        out.mkdir()
        proc = run_mill(*overrides, cwd=out)
    else:
        proc = run_mill(*overrides, f"hydra.run.dir={out}")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mill: error: ")]
    assert len(errors) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in errors[0], (fragment, errors[0])
    assert "Traceback" not in proc.stderr + proc.stdout
    assert not list(out.rglob("results.json"))
    if (out / "manifest.json").exists():  # it got as far as the folder: marked failed
        assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
        # ... and its log holds the same error
        assert errors[0].removeprefix("mill: error: ") in (out / "mill.log").read_text()


@pytest.mark.slow
def test_bad_rows_are_skipped_and_counted_when_asked(tmp_path: Path) -> None:
    rows = [ARC_ROW, {k: v for k, v in ARC_ROW.items() if k != "answerKey"}, ARC_ROW]
    data = write_jsonl(tmp_path / "arc.jsonl", rows)
    out = tmp_path / "run"
    proc = run_mill(*_test_split(data), "data.skip_bad_rows=true", f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("mill: warning: ")]
    warnings = [x for x in warnings if "bad row(s)" in x]  # beside the repeated ids
    assert len(warnings) == 1 and "skipped 1 bad row(s) (arc_easy: 1" in warnings[0]
    task = json.loads((out / "results.json").read_text())["tasks"]["arc_easy"]
    assert task["skipped_rows"]["count"] == 1
    (skipped,) = task["skipped_rows"]["rows"]
    assert (skipped["split"], skipped["row"]) == ("test", 1)
    assert "field 'answerKey' is null" in skipped["error"]
    assert task["metrics"]["acc"]["n"] == 2
    docs = [json.loads(line)["doc_id"] for line in (out / "samples" / "arc_easy.jsonl").open()]
    assert docs == [0, 2]  # doc ids stay the rows' positions
    assert "skipped 1 bad row(s)" in (out / "report.txt").read_text()
    # mill -cn report rebuilds the same report.txt, the skipped rows' line included
    rebuilt = tmp_path / "rebuilt"
    report_command(OmegaConf.create({"runs": [str(out)], "out": str(rebuilt), "progress": "never"}))
    assert (rebuilt / "report.txt").read_text() == (out / "report.txt").read_text()


@pytest.mark.slow
def test_long_contexts_are_truncated_counted_and_warned_once(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = run_mill(
        "task=arc_easy",
        "model=gpt2_random",
        "model.max_length=24",
        "task.limit=6",
        f"hydra.run.dir={out}",
    )
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("mill: warning: ")]
    assert len(warnings) == 1, proc.stderr
    results = json.loads((out / "results.json").read_text())
    truncation = results["truncation"]
    rows = [json.loads(line) for line in (out / "samples" / "arc_easy.jsonl").open()]
    cut = sum(r["response"]["truncated_tokens_count"] for r in rows)
    assert truncation["tokens"] == cut > 0 and truncation["by_task"]["arc_easy"] > 0
    assert f"{truncation['requests']} of 24 requests (arc_easy: " in warnings[0]
    assert f"{cut} tokens were cut" in warnings[0] and "max_length=24" in warnings[0]


@pytest.mark.slow
def test_duplicate_document_ids_are_warned_and_counted(tmp_path: Path) -> None:
    """Rows repeating a document id are scored (the file is what it is) but never in
    silence: one warning in the console and mill.log, the count in the manifest."""
    rows = [ARC_ROW, {**ARC_ROW}, {**ARC_ROW, "id": "other"}, {**ARC_ROW}]
    data = write_jsonl(tmp_path / "arc.jsonl", rows)
    out = tmp_path / "run"
    proc = run_mill("model=fake", *_test_split(data), f"hydra.run.dir={out}")
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "repeat a document id" in line]
    assert len(warnings) == 1, proc.stderr
    assert str(data) in warnings[0] and "2 row(s)" in warnings[0]
    assert "repeat a document id" in (out / "mill.log").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    origin = manifest["datasets"]["arc_easy"]["default/test"]
    assert origin["duplicate_ids"] == {"field": "id", "count": 2, "first": ARC_ROW["id"]}
    assert json.loads((out / "results.json").read_text())["tasks"]["arc_easy"]["metrics"]
