"""The lm-eval task bridge in-process, offline: requests built by lm-eval's own code, the
mapping to Mill requests, scoring through lm-eval's filters and process_results, errors."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mill.data.load import DataSource
from mill.errors import ConfigError, DatasetUnavailable, TaskError
from mill.types import OutputType, Response
from tests.lmeval.conftest import (
    documented_bbh_overrides,
    skip_without_lm_eval,
    skip_without_shared,
)

pytestmark = [skip_without_lm_eval]


def _suite(local_tasks: Path, tasks: list[str], **kwargs):
    from mill.lm_eval.bridge import LMEvalSuite

    return LMEvalSuite(tasks=tasks, include_path=str(local_tasks), include_defaults=False, **kwargs)


def _lm_eval_instances(local_tasks: Path, name: str, limit: int, num_fewshot: int):
    """lm-eval's own requests for a task, built as simple_evaluate builds them."""
    from lm_eval.tasks import TaskManager

    random.seed(0)
    manager = TaskManager(include_path=str(local_tasks), include_defaults=False)
    task = manager.load([name])["tasks"][name]
    task.set_config(key="num_fewshot", value=num_fewshot)
    task.set_fewshot_seed(seed=1234)
    task.build_all_requests(limit=limit)
    return sorted(task.instances, key=lambda i: (i.doc_id, i.idx))


@skip_without_shared
def test_multiple_choice_requests_are_lm_evals_own(local_tasks: Path) -> None:
    suite = _suite(local_tasks, ["mill_arc_easy"], limit=4, num_fewshot=2)
    (task,) = suite.tasks
    docs = list(task.docs(DataSource("bundled")))
    requests = [r for doc in docs for r in task.requests(doc)]
    expected = _lm_eval_instances(local_tasks, "mill_arc_easy", limit=4, num_fewshot=2)
    assert [(r.doc_id, r.index, r.context, r.continuation) for r in requests] == [
        (i.doc_id, i.idx, i.args[0], i.args[1]) for i in expected
    ]
    assert {r.output_type for r in requests} == {OutputType.LOGPROBS}
    # the !function process_docs ran: AI2 rows became the Hub schema, 2 shots + the query
    assert docs[0].item["choices"]["label"][:2] == ["A", "B"]
    assert requests[0].context.count("Answer:") == 3
    assert task.chance == pytest.approx(sum(1 / len(d.choices) for d in docs) / len(docs))


@skip_without_shared
def test_rolling_requests_are_perplexity(local_tasks: Path) -> None:
    suite = _suite(local_tasks, ["mill_wikitext"], limit=2)
    (task,) = suite.tasks
    assert task.OUTPUT_TYPE is OutputType.PERPLEXITY
    docs = list(task.docs(DataSource("bundled")))
    requests = [r for doc in docs for r in task.requests(doc)]
    expected = _lm_eval_instances(local_tasks, "mill_wikitext", limit=2, num_fewshot=0)
    assert [(r.context, r.continuation) for r in requests] == [("", i.args[0]) for i in expected]
    assert {r.output_type for r in requests} == {OutputType.PERPLEXITY}


@skip_without_shared
def test_scores_come_from_lm_evals_process_results(local_tasks: Path) -> None:
    suite = _suite(local_tasks, ["mill_arc_easy"], limit=2)
    (task,) = suite.tasks
    doc = next(iter(task.docs(DataSource("bundled"))))
    requests = task.requests(doc)
    gold = int(doc.gold)
    # the gold choice is most likely per token, another one in total: acc 0, acc_norm 1
    lengths = [len(c) for c in doc.choices]
    logprobs = [-1.0 * n for n in lengths]
    logprobs[gold] = -0.5 * lengths[gold]
    worst = max(range(len(lengths)), key=lambda i: -lengths[i] if i != gold else -1e9)
    logprobs[worst] = -0.4 * lengths[gold]  # higher total, lower per-character
    responses = [
        Response(r.id, logprob=lp, is_greedy=False)
        for r, lp in zip(requests, logprobs, strict=True)
    ]
    metrics = {m.name: m for m in task.lm_eval_metrics()}
    assert set(metrics) == {"acc,none", "acc_norm,none"}
    scores = {name: m.score(doc, responses) for name, m in metrics.items()}
    expected = task.lm_task.process_results(doc.item, [(lp, False) for lp in logprobs])
    assert scores == {f"{k},none": v for k, v in expected.items()}
    extra = task.sample_extra(doc)["lm_eval"]
    assert extra["doc"]["question"] == doc.item["question"]
    assert extra["filtered_resps"]["none"] == [(lp, False) for lp in logprobs]
    assert metrics["acc,none"].is_mean


@skip_without_shared
def test_unknown_task_suggests_close_names(local_tasks: Path) -> None:
    with pytest.raises(ConfigError, match="did you mean mill_arc_easy"):
        _suite(local_tasks, ["mill_arc_esy"])


def test_unreachable_dataset_names_it(tmp_path: Path) -> None:
    (tmp_path / "gated.yaml").write_text(
        "task: mill_gated\ndataset_path: mill-test-org/not-on-this-machine\n"
        "output_type: loglikelihood\ntest_split: test\ndoc_to_text: '{{q}}'\n"
        "doc_to_target: '{{a}}'\n"
    )
    with pytest.raises(DatasetUnavailable) as err:
        _suite(tmp_path, ["mill_gated"])
    message = str(err.value)
    assert "mill-test-org/not-on-this-machine" in message
    assert "gated or unreachable offline" in message and "does not exist" not in message
    assert "task.dataset_overrides" in message and "\n" not in message


def test_dataset_overrides_validate(tmp_path: Path) -> None:
    from mill.lm_eval.overrides import read_overrides

    file = tmp_path / "o.yaml"
    file.write_text("gsm8k: {dataset_path: json}\n")
    assert read_overrides(str(file)) == {"gsm8k": {"dataset_path": "json"}}
    with pytest.raises(ConfigError, match="not a file"):
        read_overrides(str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="must map"):
        read_overrides({"gsm8k": "json"})


def _csv_choice_suite(tmp_path: Path, **dataset_kwargs: Any):
    """A multiple-choice task on a hub dataset, pointed by ``task.dataset_overrides`` at a
    local CSV whose second row's choices are cells pandas reads as missing values (lm-eval
    checks the first doc's choices itself, with a traceback)."""
    (tmp_path / "mill_csv_mc.yaml").write_text(
        "task: mill_csv_mc\ndataset_path: mill-test-org/not-on-this-machine\n"
        "output_type: multiple_choice\ntest_split: test\ndoc_to_text: '{{q}}'\n"
        "doc_to_target: '{{answer}}'\ndoc_to_choice: '{{[c0, c1, c2, c3]}}'\n"
        "metric_list:\n  - metric: acc_norm\n"
    )
    data = tmp_path / "data.csv"
    data.write_text('q,c0,c1,c2,c3,answer\nFirst?,a,b,c,d,0\n"Which, if any?",None,NA,null,7,0\n')
    kwargs = {"data_files": {"test": str(data)}, **dataset_kwargs}
    overrides = {"mill_csv_*": {"dataset_path": "csv", "dataset_kwargs": kwargs}}
    return _suite(tmp_path, ["mill_csv_mc"], dataset_overrides=overrides)


def test_a_local_csv_reads_its_cells_as_text(tmp_path: Path) -> None:
    (task,) = _csv_choice_suite(tmp_path).tasks
    _, doc = task.docs(DataSource("bundled"))
    assert doc.choices == ("None", "NA", "null", "7")
    assert [r.continuation for r in task.requests(doc)] == [" None", " NA", " null", " 7"]


def test_a_choice_that_is_not_text_is_one_line_before_any_request(tmp_path: Path) -> None:
    (task,) = _csv_choice_suite(tmp_path, na_filter=True).tasks  # the user's own setting
    with pytest.raises(TaskError) as err:
        list(task.docs(DataSource("bundled")))
    message = str(err.value)
    assert message.startswith("lm-eval task 'mill_csv_mc', doc 1: choice 0 is None, not text;")
    assert "na_filter" in message and "\n" not in message


def test_malformed_dataset_overrides_file_is_one_line_naming_file_and_line(
    tmp_path: Path,
) -> None:
    from mill.lm_eval.overrides import read_overrides

    file = tmp_path / "bbh.yaml"  # {dataset_name} inside a flow mapping: not YAML
    file.write_text(
        "leaderboard_bbh_*:\n  dataset_kwargs:\n    data_files: {test: /d/{dataset_name}.json}\n"
    )
    with pytest.raises(ConfigError) as err:
        read_overrides(str(file))
    message = str(err.value)
    assert message.startswith("task.dataset_overrides: malformed YAML in ")
    assert f"{file}, line 3, column 27" in message and "\n" not in message


def test_readme_dataset_overrides_example_is_valid_yaml(tmp_path: Path) -> None:
    """The documented ``task.dataset_overrides`` for leaderboard_bbh reads as printed (the
    slow tests/lmeval/test_leaderboard_tasks.py runs it on the BIG-Bench-Hard files)."""
    from mill.lm_eval.overrides import read_overrides

    examples = documented_bbh_overrides()
    assert examples, "the docs lost their leaderboard_bbh dataset_overrides example"
    for n, (doc, text) in enumerate(examples):
        file = tmp_path / f"{n}.yaml"
        file.write_text(text)
        keys = read_overrides(str(file))["leaderboard_bbh_*"]
        assert keys["dataset_path"] == "json" and keys["dataset_name"] is None, doc
        assert keys["dataset_kwargs"]["data_files"]["test"].endswith("/{dataset_name}.json")
        assert keys["dataset_kwargs"]["field"] == "examples"


def test_missing_lm_eval_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from mill.lm_eval import require_lm_eval

    monkeypatch.setitem(sys.modules, "lm_eval", None)  # import lm_eval -> ImportError
    with pytest.raises(ConfigError, match=r'pip install "mill-eval\[lm-eval\]"'):
        require_lm_eval()


@pytest.mark.slow
def test_import_mill_does_not_import_lm_eval() -> None:
    code = (
        "import sys, mill, mill.lm_eval, mill.lm_eval.leaderboard, mill.cli; "
        "print('lm_eval' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_lm_eval_cli_defaults_mills_batch_size_to_auto() -> None:
    from mill.lm_eval.__main__ import default_batch_size

    base = ["--model", "mill", "--tasks", "arc_easy"]
    assert default_batch_size(base) == [*base, "--batch_size", "auto"]
    assert default_batch_size(["--model=mill"]) == ["--model=mill", "--batch_size", "auto"]
    for kept in (
        [*base, "--batch_size", "4"],
        [*base, "--batch_size=4"],
        [*base, "-b", "4"],
        [*base, "--config", "c.yaml"],
        ["--model", "hf", "--tasks", "arc_easy"],  # lm-eval's own models keep its default
        ["ls", "tasks"],
    ):
        assert default_batch_size(kept) == kept


def test_missing_local_file_is_named_and_a_hub_id_is_not_a_file(tmp_path: Path) -> None:
    from mill.lm_eval.errors import missing_file

    gone = tmp_path / "nope.jsonl"
    assert missing_file(FileNotFoundError(f"Unable to find '{gone}'")) == str(gone)
    assert missing_file(FileNotFoundError(2, "No such file", str(gone))) == str(gone)
    hub = "Dataset 'org/name' doesn't exist on the Hub or cannot be accessed."
    assert missing_file(FileNotFoundError(hub)) is None
    assert missing_file(ConnectionError(f"Couldn't reach '{gone}'")) is None
    assert missing_file(FileNotFoundError(f"Unable to find '{tmp_path}'")) is None  # exists


def test_dataset_error_without_a_dataset_id_reads_as_a_sentence() -> None:
    from mill.lm_eval.errors import dataset_error

    message = str(dataset_error(None, ConnectionError("Network is unreachable")))
    assert message.startswith(
        "an lm-eval task's dataset cannot be loaded (Network is unreachable); it is gated"
    )
    assert "an lm-eval dataset cannot" not in message and "\n" not in message


def test_an_lm_eval_task_refuses_chat_turns_for_a_chat_endpoint_in_one_line() -> None:
    """model=openai_chat asks tasks for chat turns; lm-eval builds its own prompts, so the
    bridge says so in one line (it raised a TypeError before)."""
    from mill.errors import TaskError
    from mill.lm_eval.bridge import LMEvalTask

    task = LMEvalTask.__new__(LMEvalTask)
    task.spec = SimpleNamespace()  # type: ignore[assignment]  # the name is its spec's field
    task.name = "gsm8k"
    with pytest.raises(TaskError, match="'gsm8k' builds its own prompts") as err:
        next(task.docs(DataSource("bundled"), messages=True))
    assert "model=openai_completions" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("limit", "expected"), [(None, None), (0.5, 0.5), (5, 5), (5.0, 5)])
def test_the_bridges_limit_is_lm_evals_count_or_fraction(limit: Any, expected: Any) -> None:
    from mill.lm_eval.bridge import _limit

    assert _limit(limit) == expected and type(_limit(limit)) is type(expected)


@pytest.mark.parametrize("limit", [0, -1, math.inf, math.nan, "lots", True])
def test_the_bridges_limit_is_checked_by_the_schema(limit: Any) -> None:
    """Issue 35: the bridge's task.limit is checked by the schema's rule for lm-eval tasks
    (a count, or a fraction below 1), one line naming the key; it had its own float()
    check, which let nan through and failed on text with a traceback."""
    from mill.lm_eval.bridge import _limit

    with pytest.raises(ConfigError, match=r"^task\.limit=.* is not allowed: give "):
        _limit(limit)
