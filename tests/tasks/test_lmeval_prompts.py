"""Mill's requests equal lm-evaluation-harness 0.4.13's, string for string, on the same rows.

For each task, the rows Mill loads (hub schema after local adaptation) are written to
jsonl files; lm-eval builds the same task from those files (``dataset_path: json``) in its
own virtualenv, and every request's context and continuation (or stop strings) must be
identical -- plain text and through a chat template, few-shot as multi-turn or not.
HellaSwag is not covered: its local file lost the hub fields lm-eval's preprocessing needs.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from mill.tasks.arc import ArcChallenge, ArcEasy
from mill.tasks.boolq import BoolQ
from mill.tasks.gsm8k import GSM8K, GSM8KCoT
from mill.tasks.humaneval import HumanEval, HumanEvalInstruct
from mill.tasks.lambada import LambadaOpenAI
from mill.tasks.mbpp import MBPP, MBPPInstruct
from mill.tasks.mmlu import MMLU
from mill.tasks.openbookqa import OpenBookQA
from mill.tasks.piqa import PIQA
from mill.tasks.wikitext import WikiText
from mill.tasks.winogrande import WinoGrande

from benchmarks.driver_common import lmeval_python
from mill.data.load import DataSource
from mill.model.chat import tokenizer_chat_template
from mill.progress import NullProgress
from mill.task import Task
from tests.helpers import make_chat_tokenizer

pytestmark = pytest.mark.parity
LMEVAL_PYTHON = lmeval_python()
SCRIPT = Path(__file__).with_name("lmeval_requests.py")
BUNDLED = DataSource("bundled")
NO_SPLITS = {"training_split": None, "validation_split": None, "test_split": None}
FIRST_N = {"fewshot_config": {"sampler": "first_n"}}

# (id, Mill task, lm-eval task, {lm-eval split: Mill split}, lm-eval overrides)
CASES: list[tuple[str, Any, str, dict[str, str], dict[str, Any]]] = [
    (
        "arc_easy",
        lambda: ArcEasy(limit=5),
        "arc_easy",
        {"test": "test"},
        NO_SPLITS | {"test_split": "test"},
    ),
    (
        "arc_easy_3shot",
        lambda: ArcEasy(
            limit=5, num_fewshot=3, fewshot_split="validation", fewshot_sampler="first_n"
        ),
        "arc_easy",
        {"test": "test", "validation": "validation"},
        NO_SPLITS | {"test_split": "test", "validation_split": "validation"} | FIRST_N,
    ),
    (
        "arc_challenge",
        lambda: ArcChallenge(limit=5),
        "arc_challenge",
        {"test": "test"},
        NO_SPLITS | {"test_split": "test"},
    ),
    (
        "piqa",
        lambda: PIQA(limit=5),
        "piqa",
        {"validation": "validation"},
        NO_SPLITS | {"validation_split": "validation"},
    ),
    (
        "boolq",
        lambda: BoolQ(limit=5),
        "boolq",
        {"validation": "validation"},
        NO_SPLITS | {"validation_split": "validation"},
    ),
    (
        "openbookqa",
        lambda: OpenBookQA(limit=5),
        "openbookqa",
        {"test": "test"},
        NO_SPLITS | {"test_split": "test"},
    ),
    ("lambada_openai", lambda: LambadaOpenAI(limit=5), "lambada_openai", {"test": "test"}, {}),
    (
        "wikitext",
        lambda: WikiText(limit=2),
        "wikitext",
        {"test": "test"},
        NO_SPLITS | {"test_split": "test"},
    ),
    (
        "winogrande_2shot",
        lambda: WinoGrande(
            limit=5,
            num_fewshot=2,
            fewshot_split="train",
            fewshot_sampler="first_n",
            dataset={"data_files": {"train": str(_bundled("winogrande/dev.jsonl"))}},
        ),
        "winogrande",
        {"validation": "validation", "train": "train"},
        NO_SPLITS
        | {"validation_split": "validation", "training_split": "train", "fewshot_split": "train"}
        | FIRST_N,
    ),
    (
        "gsm8k_3shot",
        lambda: GSM8K(limit=3, num_fewshot=3, fewshot_sampler="first_n"),
        "gsm8k",
        {"test": "test", "train": "train"},
        FIRST_N,
    ),
    (
        "gsm8k_cot",
        lambda: GSM8KCoT(limit=3, num_fewshot=8, fewshot_sampler="first_n"),
        "gsm8k_cot",
        {"test": "test"},
        {},
    ),
    (
        "mmlu_anatomy",
        lambda: MMLU(subjects=["anatomy"], num_fewshot=5, fewshot_sampler="first_n"),
        "mmlu_anatomy",
        {"test": "test", "dev": "dev"},
        {},
    ),
]
CHAT = {"arc_easy_3shot", "winogrande_2shot", "gsm8k_cot", "mmlu_anatomy", "lambada_openai"}


def _bundled(relpath: str) -> Path:
    root = BUNDLED.root
    assert root is not None
    return root / relpath


def _mill_requests(task: Task, chat: Any) -> list[list[list[Any]]]:
    out = []
    for doc in task.docs(BUNDLED, chat=chat):
        reqs = task.requests(doc)
        out.append(
            [
                [r.context, list(r.generation.until) if r.generation else r.continuation]
                for r in reqs
            ]
        )
    return out


def _chat_mode(task: Task, chat_mode: str, tmp_path: Path) -> tuple[Path | None, Any]:
    """Set ``task`` up for ``chat_mode`` (plain, chat, chat_multiturn): the chat tokenizer's
    folder and Mill's chat template, or None for plain prompts."""
    if chat_mode == "plain":
        return None, None
    import transformers

    tokenizer_dir = make_chat_tokenizer(tmp_path / "tok")
    chat = tokenizer_chat_template(transformers.AutoTokenizer.from_pretrained(tokenizer_dir))
    task.chat_template = True
    task.fewshot_as_multiturn = chat_mode == "chat_multiturn"
    return tokenizer_dir, chat


def _request_spec(
    task: Task,
    lm_task: str,
    splits: dict,
    overrides: dict,
    folder: Path,
    tokenizer_dir: Path | None,
) -> dict[str, Any]:
    """lm-eval's side of one comparison: the rows Mill loads, written where lm-eval reads
    them, and the task's settings."""
    folder.mkdir(parents=True, exist_ok=True)
    subject = task.subjects[0]
    files = {}
    for lm_split, mill_split in splits.items():
        rows = task.load_split(mill_split, BUNDLED, subject)
        path = folder / f"{lm_split}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        files[lm_split] = str(path)
    return {
        "task": lm_task,
        "data_files": files,
        "overrides": overrides,
        "num_fewshot": task.num_fewshot,
        "limit": task.limit,
        "chat_tokenizer": str(tokenizer_dir) if tokenizer_dir else None,
        "multiturn": task.fewshot_as_multiturn,
    }


def _request_cases() -> list[tuple[str, str, Any, str, dict, dict]]:
    """(key, chat mode, Mill task, lm-eval task, splits, overrides) of every comparison of
    requests that runs: the library's cases, then the code tasks (with generation kwargs)."""
    cases = []
    for chat_mode in CHAT_MODES:
        for case, make, lm_task, splits, overrides in CASES:
            if chat_mode == "plain" or case in CHAT:
                cases.append((f"{case}-{chat_mode}", chat_mode, make, lm_task, splits, overrides))
        for case, make, lm_task in CODE:
            if chat_mode == "plain" or case.endswith("instruct"):
                code = {"test": "test"}
                cases.append((f"code-{case}-{chat_mode}", chat_mode, make, lm_task, code, {}))
    return cases


def _from_lmeval(root: Path, keys: list[str], specs: list[dict]) -> dict[str, Any]:
    """lm-eval's outputs for ``specs`` (requests, or scores where a spec names a model),
    from one lm-eval process (its start-up and task index once), keyed by ``keys``."""
    (root / "specs.json").write_text(json.dumps(specs))
    proc = subprocess.run(
        [str(LMEVAL_PYTHON), str(SCRIPT), str(root / "specs.json"), str(root / "out.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"},
        timeout=1200,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return dict(zip(keys, json.loads((root / "out.json").read_text()), strict=True))


@pytest.fixture(scope="module")
def lmeval_requests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """lm-eval's requests for every case, from one lm-eval process (its task index and
    start-up once: 34 processes of 25-35 s each before)."""
    root = tmp_path_factory.mktemp("lmeval_requests")
    keys, specs = [], []
    for key, chat_mode, make, lm_task, splits, overrides in _request_cases():
        task: Task = make()
        tokenizer_dir, _ = _chat_mode(task, chat_mode, root / key)
        spec = _request_spec(task, lm_task, splits, overrides, root / key, tokenizer_dir)
        if key.startswith("code-"):
            spec["gen_kwargs"] = True
        keys.append(key)
        specs.append(spec)
    return _from_lmeval(root, keys, specs)


CHAT_MODES = ["plain", "chat_multiturn", "chat_single"]


@pytest.mark.skipif(not LMEVAL_PYTHON.is_file(), reason="needs the lm-eval dev virtualenv")
@pytest.mark.parametrize("chat_mode", CHAT_MODES)
@pytest.mark.parametrize(
    ("case", "make", "lm_task", "splits", "overrides"), CASES, ids=[c[0] for c in CASES]
)
def test_requests_match_lm_eval(
    tmp_path: Path,
    lmeval_requests: dict[str, Any],
    case: str,
    make: Any,
    lm_task: str,
    splits: dict,
    overrides: dict,
    chat_mode: str,
) -> None:
    if chat_mode != "plain" and case not in CHAT:
        pytest.skip("chat rendering is checked on a subset")
    task: Task = make()
    _, chat = _chat_mode(task, chat_mode, tmp_path)
    theirs = lmeval_requests[f"{case}-{chat_mode}"]
    ours = _mill_requests(task, chat)
    assert len(ours) == len(theirs) > 0
    for doc_id, (mine, lm) in enumerate(zip(ours, theirs, strict=True)):
        assert mine == lm, f"doc {doc_id}"


# (id, Mill task, lm-eval task): code tasks, compared with their generation kwargs
CODE: list[tuple[str, Any, str]] = [
    ("humaneval", lambda: HumanEval(limit=4), "humaneval"),
    ("humaneval_instruct", lambda: HumanEvalInstruct(limit=4), "humaneval_instruct"),
    ("mbpp", lambda: MBPP(num_fewshot=3, fewshot_sampler="first_n"), "mbpp"),
    (
        "mbpp_instruct",
        lambda: MBPPInstruct(num_fewshot=3, fewshot_sampler="first_n"),
        "mbpp_instruct",
    ),
]
LMEVAL_MAX_GEN_TOKS = 256  # lm-eval's HF backend when a task's generation_kwargs omit it


@pytest.mark.skipif(not LMEVAL_PYTHON.is_file(), reason="needs the lm-eval dev virtualenv")
@pytest.mark.parametrize("chat_mode", CHAT_MODES)
@pytest.mark.parametrize(("case", "make", "lm_task"), CODE, ids=[c[0] for c in CODE])
def test_code_requests_match_lm_eval(
    tmp_path: Path, lmeval_requests: dict[str, Any], case: str, make: Any, lm_task: str,
    chat_mode: str,
) -> None:  # fmt: skip
    """Prompts (plain and through a chat template, gen_prefix continued), stop strings,
    max_gen_toks and greedy decoding equal lm-eval's for every doc of the bundled rows."""
    if chat_mode != "plain" and not case.endswith("instruct"):
        pytest.skip("chat rendering is checked on the instruct variants")
    task: Task = make()
    _, chat = _chat_mode(task, chat_mode, tmp_path)
    theirs = lmeval_requests[f"code-{case}-{chat_mode}"]
    docs = list(task.docs(BUNDLED, chat=chat))
    assert len(docs) == len(theirs) > 0
    for doc, lm in zip(docs, theirs, strict=True):
        (request,) = task.requests(doc)
        ((context, kwargs),) = lm
        assert request.context == context, f"doc {doc.id}"
        gen = request.generation
        assert gen is not None
        assert list(gen.until) == kwargs["until"], f"doc {doc.id}"
        assert gen.max_gen_toks == kwargs.get("max_gen_toks", LMEVAL_MAX_GEN_TOKS)
        assert gen.do_sample is bool(kwargs.get("do_sample", False))


# (id, Mill task, Mill metrics, lm-eval task, splits, overrides, {Mill metric: lm-eval key})
SCORED: list[tuple[str, Any, list[str], str, dict[str, str], dict[str, Any], dict[str, str]]] = [
    (
        "arc_easy",
        lambda: ArcEasy(limit=8),
        ["acc", "acc_norm", "acc_bytes", "acc_mutual_info", "brier"],
        "arc_easy",
        {"test": "test"},
        NO_SPLITS
        | {"test_split": "test"}
        | {
            "metric_list": [
                {"metric": m}
                for m in ("acc", "acc_norm", "acc_bytes", "acc_mutual_info", "brier_score")
            ]
        },
        {
            "acc": "acc,none",
            "acc_norm": "acc_norm,none",
            "acc_bytes": "acc_bytes,none",
            "acc_mutual_info": "acc_mutual_info,none",
            "brier": "brier_score,none",
        },
    ),
    (
        "piqa",
        lambda: PIQA(limit=8),
        ["acc", "acc_norm"],
        "piqa",
        {"validation": "validation"},
        NO_SPLITS | {"validation_split": "validation"},
        {"acc": "acc,none", "acc_norm": "acc_norm,none"},
    ),
    (
        "winogrande",
        lambda: WinoGrande(limit=8),
        ["acc"],
        "winogrande",
        {"validation": "validation"},
        NO_SPLITS | {"validation_split": "validation"},
        {"acc": "acc,none"},
    ),
    (
        "lambada_openai",
        lambda: LambadaOpenAI(limit=8),
        ["perplexity", "acc"],
        "lambada_openai",
        {"test": "test"},
        {},
        {"perplexity": "perplexity,none", "acc": "acc,none"},
    ),
    (
        "mmlu_anatomy",
        lambda: MMLU(subjects=["anatomy"], num_fewshot=5, fewshot_sampler="first_n"),
        ["acc"],
        "mmlu_anatomy",
        {"test": "test", "dev": "dev"},
        {},
        {"acc": "acc,none"},
    ),
    (
        "wikitext",
        lambda: WikiText(limit=2),
        ["word_perplexity", "byte_perplexity", "bits_per_byte"],
        "wikitext",
        {"test": "test"},
        NO_SPLITS | {"test_split": "test"},
        {
            "word_perplexity": "word_perplexity,none",
            "byte_perplexity": "byte_perplexity,none",
            "bits_per_byte": "bits_per_byte,none",
        },
    ),
    (
        "gsm8k_cot",
        lambda: GSM8KCoT(limit=2, num_fewshot=8, fewshot_sampler="first_n"),
        ["exact_match_strict_cot", "exact_match_flexible"],
        "gsm8k_cot",
        {"test": "test"},
        {},
        {
            "exact_match_strict_cot": "exact_match,strict-match",
            "exact_match_flexible": "exact_match,flexible-extract",
        },
    ),
]


STORIES = BUNDLED.root.parent / "models" / "stories260k"  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def lmeval_scores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """lm-eval's metrics and per-request responses for every scored case, from one lm-eval
    process (nine processes before, each paying lm-eval's start-up and task index)."""
    root = tmp_path_factory.mktemp("lmeval_scores")
    keys, specs = [], []
    for case, make, _metrics, lm_task, splits, overrides, _keys in SCORED:
        task: Task = make()
        files = {}
        for lm_split, mill_split in splits.items():
            rows = task.load_split(mill_split, BUNDLED, task.subjects[0])
            path = root / f"{case}-{lm_split}.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in rows))
            files[lm_split] = str(path)
        keys.append(case)
        specs.append(
            {
                "task": lm_task,
                "data_files": files,
                "overrides": overrides,
                "num_fewshot": task.num_fewshot,
                "limit": task.limit,
                "model": str(STORIES),
            }
        )
    return _from_lmeval(root, keys, specs)


@pytest.mark.skipif(not LMEVAL_PYTHON.is_file(), reason="needs the lm-eval dev virtualenv")
@pytest.mark.parametrize(
    ("case", "make", "metrics", "lm_task", "splits", "overrides", "keys"),
    SCORED,
    ids=[c[0] for c in SCORED],
)
def test_scores_match_lm_eval(
    lmeval_scores: dict[str, Any],
    case: str,
    make: Any,
    metrics: list[str],
    lm_task: str,
    splits: dict,
    overrides: dict,
    keys: dict,
) -> None:
    """Same rows, same demo model: per-request log-likelihoods to 1e-4, metrics equal."""
    from mill.evaluator import evaluate_tasks
    from mill.metrics.config import build_metric, metric_config
    from mill.model.hf import HFCausalLM

    task: Task = make()
    theirs = lmeval_scores[case]
    built = {task.name: [build_metric(m, metric_config(m), []) for m in metrics]}
    records: list[Any] = []
    results = evaluate_tasks(
        [task],
        built,
        HFCausalLM(str(STORIES), device="cpu"),
        BUNDLED,
        records.append,
        NullProgress(),
        bootstrap_iters=10,
    )
    records.sort(key=lambda r: r.doc_id)
    assert len(records) == len(theirs["resps"])
    for record, resps in zip(records, theirs["resps"], strict=True):
        if isinstance(resps[0], list):  # (logprob, is_greedy) per request
            mine = record.response.logprobs + (record.response.unconditioned_logprobs or [])
            assert mine == pytest.approx([r[0] for r in resps], abs=1e-4)
        elif isinstance(resps[0], str):
            assert record.response.text == resps
        else:  # rolling totals: docs/parity.md's max(1e-4, 1e-6 |ll|), fp32 sums of windows
            assert record.response.logprobs == pytest.approx(resps, rel=1e-6, abs=1e-4)
    for name, key in keys.items():
        assert results[task.name].metrics[name]["value"] == pytest.approx(
            theirs["metrics"][key], rel=1e-4, abs=1e-9
        ), name
