"""The workloads that ``parity`` and ``benchmark`` run on both Mill and lm-evaluation-harness.

A workload is one Mill task config plus the lm-eval task YAML it corresponds to, with the
same doc limit, few-shot count, few-shot split and sampler (``first_n`` on both sides, so
both place the same shots). Local data files feed both sides: Mill reads them with
``data=local``; lm-eval reads hub-schema JSONL files derived from the same local files by
Mill's own loader and adapter (:func:`derive_data`), through a task YAML that ``include``s
lm-eval's own YAML and overrides only the data source and few-shot settings.

Adding a workload (e.g. a new task) is one more entry in :data:`WORKLOADS`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

MMLU_SUBJECTS = ["abstract_algebra", "anatomy", "college_biology", "high_school_geography"]
"""Subjects of the MMLU workload (a few, as the issue asks)."""


@dataclass(frozen=True)
class Workload:
    """One evaluation run, described for both harnesses."""

    name: str
    mill_task: str
    """Mill task config (``conf/task/<name>.yaml``)."""
    lmeval_yaml: str
    """lm-eval task YAML relative to ``lm_eval/tasks``; ``{subject}`` is substituted; empty:
    a standalone YAML made of ``lmeval_overrides`` alone (no ``include``)."""
    output_type: str
    """logprobs, perplexity or generative (what is compared per request)."""
    metrics: dict[str, str]
    """lm-eval ``metric,filter`` key -> Mill metric name."""
    num_fewshot: int = 0
    limit: int | None = None
    test_split: str = "test"
    fewshot_split: str | None = None
    subjects: tuple[str, ...] = ("default",)
    extra_mill_overrides: tuple[str, ...] = field(default_factory=tuple)
    lmeval_overrides: dict[str, Any] = field(default_factory=dict)
    """Extra lm-eval task YAML keys (the same change as ``extra_mill_overrides``)."""
    requires: str | None = None
    """A module that must be importable for this workload to run (e.g. a task in progress)."""
    max_gen_toks: int | None = None
    """Generative workloads of ``whole_process``: the generation limit on every side (None:
    the task's own)."""
    repeats: int = 1
    """Generations per doc (sampled when ``temperature`` > 0)."""
    temperature: float = 0.0
    """0: greedy (every side's tokens are compared with Mill's); else sampled at it."""
    chat: bool = False
    """Prompts through the model's chat template on both sides (Mill's
    ``task.chat_template``, lm-eval's ``apply_chat_template``), few-shot examples as
    alternating turns when there are any (``fewshot_as_multiturn`` on both sides)."""
    top_p: float = 1.0
    """Sampled: nucleus sampling's p on every side (1.0: off)."""
    lighteval_task: str | None = None
    """``whole_process``'s ``lighteval`` peer: the task of :mod:`benchmarks.lighteval_math`
    (``math500``) that lighteval runs on the same rows; None: no lighteval side."""
    lmeval_own_prompt: bool = False
    """lm-eval's task prompts differently from Mill's (its Minerva 4-shot MATH-500 against
    lighteval's zero-shot one): its side is timed, its answers are not compared."""
    lmeval_requires: str | None = None
    """A module lm-eval's task imports that only an lm-eval extra installs: the ``lmeval``
    side checks lm-eval's interpreter imports it before anything runs (``minerva_math``'s
    ``utils`` needs the math extra's ANTLR 4.11, which Mill's own 4.9.3 excludes)."""

    def with_limit(self, limit: int | None) -> Workload:
        return replace(self, limit=limit)

    def with_chat(self) -> Workload:
        """The same workload with the chat template on (its name ends in ``_chat``)."""
        return replace(self, name=f"{self.name}_chat", chat=True)

    def lmeval_chat(self) -> dict[str, bool]:
        """lm-eval's ``simple_evaluate`` chat arguments for this workload."""
        return {
            "apply_chat_template": self.chat,
            "fewshot_as_multiturn": self.chat and self.num_fewshot > 0,
        }

    def lmeval_task_name(self, subject: str) -> str:
        return f"mill__{self.name}__{subject}"

    def mill_overrides(self, data_dir: Path) -> list[str]:
        """Hydra overrides selecting this workload on the Mill side (the CLI's syntax)."""
        out = [
            f"task={self.mill_task}",
            f"++task.num_fewshot={self.num_fewshot}",
            "++task.fewshot_sampler=first_n",
            f"++task.limit={'null' if self.limit is None else self.limit}",
            "data=local",
            f"data.dir={data_dir}",
        ]
        if self.fewshot_split:
            out.append(f"++task.fewshot_split={self.fewshot_split}")
        if self.subjects != ("default",):
            out.append("++task.subjects=[" + ",".join(self.subjects) + "]")
        if self.max_gen_toks is not None:
            out.append(f"++task.generation.max_gen_toks={self.max_gen_toks}")
        if self.repeats != 1:
            out.append(f"++task.repeats={self.repeats}")
        if self.temperature > 0:
            out += ["++task.generation.do_sample=true"]
            out += [f"++task.generation.temperature={self.temperature}"]
        if self.top_p != 1.0:
            out.append(f"++task.generation.top_p={self.top_p}")
        if self.chat:
            multiturn = str(self.lmeval_chat()["fewshot_as_multiturn"]).lower()
            out += ["++task.chat_template=true", f"++task.fewshot_as_multiturn={multiturn}"]
        return out + list(self.extra_mill_overrides)

    def lmeval_tasks(self, files: dict[str, dict[str, str]]) -> list[dict[str, Any]]:
        """lm-eval task specs for ``lmeval_driver``; ``files[subject][split]`` = JSONL path."""
        tasks = []
        for subject in self.subjects:
            data_files = dict(files[subject])
            overrides: dict[str, Any] = {
                "dataset_path": "json",
                "dataset_name": None,
                "dataset_kwargs": {"data_files": data_files},
                "training_split": None,
                "validation_split": None,
                "test_split": self.test_split,
                "num_fewshot": self.num_fewshot,
            }
            if self.fewshot_split:
                overrides["fewshot_split"] = self.fewshot_split
                overrides["fewshot_config"] = {"sampler": "first_n"}
            overrides.update(self.lmeval_overrides)
            if self.max_gen_toks is not None:  # the workload's limit on both sides
                kwargs = dict(overrides.get("generation_kwargs", {}))
                overrides["generation_kwargs"] = {**kwargs, "max_gen_toks": self.max_gen_toks}
            tasks.append(
                {
                    "name": self.lmeval_task_name(subject),
                    "include": self.lmeval_yaml.format(subject=subject) or None,
                    "overrides": overrides,
                }
            )
        return tasks

    def available(self) -> bool:
        if self.requires is None:
            return True
        import importlib.util

        return importlib.util.find_spec(self.requires) is not None


_MC = {"acc,none": "acc", "acc_norm,none": "acc_norm"}
_GSM8K = {
    "exact_match,strict-match": "exact_match_strict",
    "exact_match,flexible-extract": "exact_match_flexible",
}
_GSM8K_COT = {  # Mill's gsm8k_cot reads "The answer is <n>" strictly
    "exact_match,strict-match": "exact_match_strict_cot",
    "exact_match,flexible-extract": "exact_match_flexible",
}
HUMANEVAL_UNTIL = ["\nclass", "\ndef", "\n#", "\nif", "\nprint"]
"""lm-eval's ``humaneval`` stop strings (Mill's ``humaneval`` task has the same)."""

WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(
            "arc_easy_0shot",
            "arc_easy",
            "arc/arc_easy.yaml",
            "logprobs",
            _MC,
            num_fewshot=0,
            limit=300,
        ),
        Workload(
            "arc_easy_25shot",
            "arc_easy",
            "arc/arc_easy.yaml",
            "logprobs",
            _MC,
            num_fewshot=25,
            limit=100,
            fewshot_split="validation",  # local ARC has no train split: shots from Dev
        ),
        Workload(
            "mmlu_5shot",
            "mmlu",
            "mmlu/default/mmlu_{subject}.yaml",
            "logprobs",
            {"acc,none": "acc"},
            num_fewshot=5,
            fewshot_split="dev",
            subjects=tuple(MMLU_SUBJECTS),
            requires="mill.tasks.mmlu",
        ),
        Workload(
            "gsm8k_8shot",
            "gsm8k",
            "gsm8k/gsm8k.yaml",
            "generative",
            _GSM8K,
            num_fewshot=8,
            limit=50,
            fewshot_split="train",
        ),
        Workload(  # stop strings that fire early: rows stop at different steps
            "gsm8k_8shot_stop",
            "gsm8k",
            "gsm8k/gsm8k.yaml",
            "generative",
            _GSM8K,
            num_fewshot=8,
            limit=50,
            fewshot_split="train",
            extra_mill_overrides=('++task.generation.until=[".","Question:"]',),
            lmeval_overrides={
                "generation_kwargs": {
                    "until": [".", "Question:"],
                    "do_sample": False,
                    "temperature": 0.0,
                }
            },
        ),
        Workload(  # issue 23: generation-bound, every gpt2_bench answer runs to the limit
            "gsm8k_cot_8shot",
            "gsm8k_cot",
            "gsm8k/gsm8k-cot.yaml",
            "generative",
            _GSM8K_COT,
            num_fewshot=8,
            limit=100,
            max_gen_toks=256,
            lmeval_overrides={
                "generation_kwargs": {
                    "until": ["Q:", "</s>", "<|im_end|>"],
                    "do_sample": False,
                }
            },
        ),
        Workload(  # issue 23: n=10 sampled (pass@1, pass@10); the first 20 problems
            "humaneval_n10",
            "humaneval",
            "",  # standalone: lm-eval's humaneval.yaml loads HF evaluate's code_eval from
            # the Hub on import (offline here), so its side generates only (--predict_only)
            "generative",
            {},
            limit=20,
            max_gen_toks=256,
            repeats=10,
            temperature=0.8,
            extra_mill_overrides=("+metrics=[pass_at_k]", "metrics.pass_at_k.k=[1,10]"),
            lmeval_overrides={
                "output_type": "generate_until",
                "doc_to_text": "{{prompt}}",
                "doc_to_target": "{{test}}\ncheck({{entry_point}})",
                "repeats": 10,
                "generation_kwargs": {
                    "until": HUMANEVAL_UNTIL,
                    "do_sample": True,
                    "temperature": 0.8,
                },
            },
        ),
        Workload(  # issue 23: stories260k (512 positions, so 0-shot); answers end at stops
            "gsm8k_0shot",
            "gsm8k",
            "gsm8k/gsm8k.yaml",
            "generative",
            _GSM8K,
            num_fewshot=0,
            limit=200,
            fewshot_split="train",  # lm-eval's gsm8k.yaml reads it even at 0 shots
            max_gen_toks=256,
            lmeval_overrides={  # gsm8k.yaml's own, written out: the limit is added to them
                "generation_kwargs": {
                    "until": ["Question:", "</s>", "<|im_end|>"],
                    "do_sample": False,
                    "temperature": 0.0,
                }
            },
        ),
        Workload(
            "wikitext2",
            "wikitext",
            "wikitext/wikitext.yaml",
            "perplexity",
            {
                "word_perplexity,none": "word_perplexity",
                "byte_perplexity,none": "byte_perplexity",
                "bits_per_byte,none": "bits_per_byte",
            },
        ),
    ]
}


_GSM8K_UNTIL = {  # gsm8k.yaml's own, written out: the limit is added to them
    "generation_kwargs": {
        "until": ["Question:", "</s>", "<|im_end|>"],
        "do_sample": False,
        "temperature": 0.0,
    }
}

_REAL_MODEL_BASE = [
    WORKLOADS["arc_easy_0shot"],
    Workload("arc_challenge_0shot", "arc_challenge", "arc/arc_challenge.yaml", "logprobs", _MC),
    Workload(
        "arc_challenge_25shot",
        "arc_challenge",
        "arc/arc_challenge.yaml",
        "logprobs",
        _MC,
        num_fewshot=25,
        fewshot_split="validation",  # local ARC has no train split: shots from Dev
    ),
    Workload(  # the local file is llama.cpp's processed text: lm-eval reads the docs Mill's
        "hellaswag",  # loader made from it (query, choices, gold) with hellaswag.yaml's own
        "hellaswag",  # prompt and metrics, written out (its process_docs needs the hub's
        "",  # columns, which the file lost)
        "logprobs",
        _MC,
        test_split="validation",
        lmeval_overrides={
            "output_type": "multiple_choice",
            "doc_to_text": "{{query}}",
            "doc_to_target": "{{gold}}",
            "doc_to_choice": "choices",
            "metric_list": [
                {"metric": m, "aggregation": "mean", "higher_is_better": True}
                for m in ("acc", "acc_norm")
            ],
        },
    ),
    Workload("piqa", "piqa", "piqa/piqa.yaml", "logprobs", _MC, test_split="validation"),
    Workload(
        "winogrande",
        "winogrande",
        "winogrande/default.yaml",
        "logprobs",
        {"acc,none": "acc"},
        test_split="validation",
    ),
    Workload("openbookqa", "openbookqa", "openbookqa/openbookqa.yaml", "logprobs", _MC),
    Workload(
        "boolq",
        "boolq",
        "super_glue/boolq/default.yaml",
        "logprobs",
        {"acc,none": "acc"},
        test_split="validation",
    ),
    Workload(
        "lambada_openai",
        "lambada_openai",
        "lambada/lambada_openai.yaml",
        "logprobs",
        {"acc,none": "acc"},
    ),
    WORKLOADS["mmlu_5shot"],
    Workload(
        "gsm8k_5shot",
        "gsm8k",
        "gsm8k/gsm8k.yaml",
        "generative",
        _GSM8K,
        num_fewshot=5,
        fewshot_split="train",
        max_gen_toks=256,
        lmeval_overrides=_GSM8K_UNTIL,
    ),
]

REAL_MODEL_WORKLOADS: dict[str, Workload] = {
    w.name: w for base in _REAL_MODEL_BASE for w in (base, base.with_chat())
}
"""The real model's parity suite (SmolLM2-135M-Instruct, ``parity --models smollm2``):
ARC-Easy, ARC-Challenge 0- and 25-shot, HellaSwag, PIQA, WinoGrande, OpenBookQA, BoolQ,
LAMBADA, MMLU 5-shot and GSM8K 5-shot greedy, each with the chat template off and on
(``<name>_chat``). Limits come from the caller (the full files by default)."""


MMLU_BENCH_SUBJECTS = [
    *MMLU_SUBJECTS,
    "astronomy",
    "college_physics",
    "marketing",
    "nutrition",
    "philosophy",
    "world_religions",
]
"""The ten MMLU subjects of the real model's speed benchmark."""

SMOLLM2_BENCH: dict[str, Workload] = {
    w.name: w
    for w in [
        replace(REAL_MODEL_WORKLOADS["arc_easy_0shot"], name="arc_easy_full", limit=None),
        replace(REAL_MODEL_WORKLOADS["hellaswag"], name="hellaswag_1000", limit=1000),
        replace(
            REAL_MODEL_WORKLOADS["mmlu_5shot"],
            name="mmlu_5shot_10",
            subjects=tuple(MMLU_BENCH_SUBJECTS),
        ),
        replace(REAL_MODEL_WORKLOADS["gsm8k_5shot"], name="gsm8k_5shot_100", limit=100),
        Workload(  # issue 37: answers of up to 1,280 tokens through the chat template
            "ifeval_100",
            "ifeval",
            "ifeval/ifeval.yaml",
            "generative",
            {
                f"{level}_{kind}_acc,none": f"{level}_{kind}_acc"
                for level in ("prompt_level", "inst_level")
                for kind in ("strict", "loose")
            },
            limit=100,
            test_split="train",
            chat=True,
        ),
    ]
}
"""The whole-process benchmark's SmolLM2 workloads (``whole_process --model smollm2``):
ARC-Easy 0-shot in full (2,376 docs), HellaSwag (1,000 docs), MMLU 5-shot on ten subjects
in full, GSM8K 5-shot (100 docs, 256 new tokens, greedy); IFEval's first 100 prompts
through the chat template (up to 1,280 new tokens, greedy; lm-eval's checker needs NLTK's
``punkt_tab``: ``NLTK_DATA`` pointing at a folder that holds it)."""

_MINERVA_UNTIL = {"until": ["Problem:"], "do_sample": False, "temperature": 0.0}
"""lm-eval's ``minerva_math500`` generation settings, written out (the limit is added)."""

_MINERVA_UTILS = "lm_eval.tasks.minerva_math.utils"
"""``minerva_math500``'s module: it fails to import without lm-eval's math extra."""

MATH_BENCH: dict[str, Workload] = {
    w.name: w
    for w in [
        Workload(  # issue 50: greedy, answers compared text for text with lighteval's
            "math500_greedy",
            "math500",
            "minerva_math/minerva_math500.yaml",
            "generative",
            {},
            limit=100,
            max_gen_toks=512,
            lighteval_task="math500",
            lmeval_own_prompt=True,
            lmeval_requires=_MINERVA_UTILS,
            lmeval_overrides={"num_fewshot": 4, "generation_kwargs": _MINERVA_UNTIL},
        ),
        Workload(  # issue 50: n=4 sampled at open-r1's temperature 0.6, top-p 0.95
            "math500_n4",
            "math500",
            "minerva_math/minerva_math500.yaml",
            "generative",
            {},
            limit=100,
            max_gen_toks=512,
            repeats=4,
            temperature=0.6,
            top_p=0.95,
            lighteval_task="math500",
            lmeval_own_prompt=True,
            lmeval_requires=_MINERVA_UTILS,
            lmeval_overrides={
                "num_fewshot": 4,
                "repeats": 4,
                "generation_kwargs": {
                    "until": ["Problem:"],
                    "do_sample": True,
                    "temperature": 0.6,
                    "top_p": 0.95,
                },
            },
        ),
    ]
}
"""The math workloads of ``whole_process`` (SmolLM2 against lighteval 0.13's transformers
backend, issue 50): MATH-500's first 100 problems through the chat template with lighteval's
prompt, 512 new tokens, greedy or n=4 sampled. lm-eval 0.4.13 has MATH-500 only with its own
prompt (``minerva_math500``: four worked examples, ``Problem:``/``Solution:``, no chat
template), so its side is timed on that prompt and not compared."""

ALL_WORKLOADS: dict[str, Workload] = {
    **WORKLOADS,
    **REAL_MODEL_WORKLOADS,
    **SMOLLM2_BENCH,
    **MATH_BENCH,
}
"""Every workload by name (the tools look names up here)."""


def derive_data(workload: Workload, data_dir: Path, out_dir: Path) -> dict[str, dict[str, str]]:
    """Write hub-schema JSONL files for lm-eval from the local files Mill reads.

    Rows go through Mill's own loader, local-schema adapter and document preprocessing
    (e.g. WikiText's split into articles), so both harnesses see the same documents.
    Returns ``{subject: {split: path}}``.
    """
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import mill.cli  # noqa: F401  (mill_resource resolver)
    from mill.data.load import DataSource
    from mill.runner.build import build_tasks

    GlobalHydra.instance().clear()
    with initialize_config_module("mill.conf", version_base="1.3"):
        cfg = compose("mill", overrides=workload.mill_overrides(data_dir))
    GlobalHydra.instance().clear()
    (task,), _ = build_tasks(cfg.task, [str(a) for a in cfg.get("allow_targets", [])])
    source = DataSource("local", str(data_dir))
    splits = [workload.test_split] + ([workload.fewshot_split] if workload.fewshot_split else [])
    files: dict[str, dict[str, str]] = {}
    for subject in workload.subjects:
        files[subject] = {}
        for split in splits:
            rows = task.load_split(split, source, subject)
            path = out_dir / f"{workload.name}.{subject}.{split}.jsonl"
            with path.open("w") as handle:
                for row in rows:
                    handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            files[subject][split] = str(path)
    return files
