"""The typed fields of the config groups whose node differs by what it builds (``model``,
``task``, ``judge``, ``sink``, ``metrics``, ``reasoning`` and the primary config's own
key), each field declared with its rule (``field(metadata=setting(rule))``): the one
declaration of those settings, as :mod:`mill.schema.groups` is of the fixed groups'.
:data:`mill.schema.SETTINGS` takes every rule from these fields and those
(:func:`mill.schema.groups.group_rules`), under the key each is used at:

* :class:`ModelFields`: every backend's settings (a backend without the key is not
  checked), under ``model.`` and, a judge being a model config, under ``judge.`` too;
  :class:`JudgeFields` the judge's own.
* :class:`GenerationFields`: what a task and a judge generate with, under
  ``task.generation.``, ``judge.generation.`` and arena-hard's ``judge_generation``.
* :class:`TaskFields` (its ``dataset`` :class:`DatasetFields`, and
  :class:`LmEvalTaskFields`: the ``limit`` of lm-eval's suite, a fraction too).
* :class:`SinkFields` under ``sink.*.``, :class:`MlflowFields`, :class:`WandbFields`.
* :class:`MetricFields` under ``metrics.*.`` (any metric), and the parameters of one
  metric: :class:`PassAtKFields`, :class:`MajAtKFields`, :class:`EceFields`,
  :class:`ArenaHardFields`.

A field whose metadata is :func:`group_of` holds a group of its own (``task.generation``):
its fields are settings under the field's key. These classes declare; the subsystems'
classes build from the typed values (a backend's constructor, a task's). Nothing here
imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mill.schema.groups import group_of, setting
from mill.schema.rules import (
    ITERS_MAX,
    SEED_MAX,
    SIZE_MAX,
    Choice,
    Flag,
    Nested,
    Number,
    Text,
    positive,
)

__all__ = [
    "ArenaHardFields",
    "DatasetFields",
    "EceFields",
    "GenerationFields",
    "JudgeFields",
    "LmEvalTaskFields",
    "MajAtKFields",
    "MetricFields",
    "MlflowFields",
    "ModelFields",
    "PassAtKFields",
    "PrimaryFields",
    "ReasoningFields",
    "SinkFields",
    "TaskFields",
    "WandbFields",
]


@dataclass(frozen=True)
class GenerationFields:
    """The generation settings a task and a judge share (``generation``)."""

    do_sample: bool = field(
        metadata=setting(Flag(meaning="sample (true) or decode greedily (false)"))
    )
    max_gen_toks: int = field(
        metadata=setting(Number(1, maximum=SIZE_MAX, meaning="tokens generated at most"))
    )
    temperature: float = field(
        metadata=setting(Number(0, whole=False, maximum=100, meaning="sampling temperature"))
    )
    seed: int | None = field(
        metadata=setting(Number(0, optional=True, maximum=SEED_MAX, meaning="sampling seed"))
    )
    top_p: float = field(metadata=setting(positive(1, "nucleus sampling (1: no cut)")))
    until: str | list[str] = field(
        metadata=setting(Nested(text=True, meaning="stop sequences (added to the default)"))
    )


def _count(minimum: int, meaning: str, optional: bool = False) -> dict[str, Any]:
    """A whole number from ``minimum`` to :data:`SIZE_MAX` (null too when ``optional``)."""
    return setting(Number(minimum, optional=optional, maximum=SIZE_MAX, meaning=meaning))


@dataclass(frozen=True)
class ModelFields:
    """The ``model`` group's settings, every backend's (a judge is a model config: they are
    the judge's too, under ``judge.``)."""

    _target_: str = field(metadata=setting(Text(meaning="the backend's class (allow-listed)")))
    name: str = field(metadata=setting(Text(meaning="label of runs (folders, reports)")))
    max_length: int | None = field(metadata=_count(1, "context window in tokens", True))
    max_gen_toks: int = field(metadata=_count(1, "generation length when a task sets none"))
    batch_size: int | str = field(
        metadata=setting(
            Number(1, words=("auto",), maximum=SIZE_MAX, meaning="requests per forward pass")
        )
    )
    token_budget: int | None = field(metadata=_count(1, "tokens per forward pass", True))
    cache_budget: int | None = field(metadata=_count(1, "KV-cache tokens", True))
    num_concurrent: int = field(
        metadata=setting(Number(1, maximum=1024, meaning="requests in flight at once"))
    )
    batch_prompts: int = field(metadata=_count(1, "prompts per request"))
    max_retries: int = field(
        metadata=setting(Number(0, maximum=100, meaning="retries per request"))
    )
    backoff_s: float = field(
        metadata=setting(Number(0, whole=False, maximum=3600, meaning="first retry delay, s"))
    )
    timeout_s: float = field(metadata=setting(positive(86400, "seconds one whole answer may take")))
    max_response_mb: float = field(
        metadata=setting(positive(1_000_000, "the largest answer read, MB"))
    )
    seed: int = field(
        metadata=setting(Number(0, maximum=SEED_MAX, meaning="the fake or random model's seed"))
    )
    n_embd: int = field(
        metadata=setting(Number(1, maximum=65536, meaning="width of the random GPT-2"))
    )
    n_head: int = field(
        metadata=setting(Number(1, maximum=1024, meaning="attention heads of the random GPT-2"))
    )
    n_layer: int = field(
        metadata=setting(Number(1, maximum=1024, meaning="layers of the random GPT-2"))
    )
    pretrained: str | None = field(
        metadata=setting(Text(optional=True, meaning="hub id or folder of the weights"))
    )
    revision: str | None = field(
        metadata=setting(Text(optional=True, meaning="hub commit or label pinning the model"))
    )
    dtype: str = field(
        metadata=setting(
            Choice(("float32", "float16", "bfloat16", "auto"), meaning="weights' dtype")
        )
    )
    device: str = field(
        metadata=setting(
            Text(
                pattern=r"auto|mps|meta|(cpu|cuda|xpu|npu|hpu)(:[0-9]+)?",
                shape="auto, cpu, cuda, cuda:<n> or mps (also xpu, npu, hpu, meta)",
                meaning="where the weights run",
            )
        )
    )
    device_map: str | dict[str, Any] | None = field(
        metadata=setting(Nested("mapping", optional=True, text=True, meaning="spread over GPUs"))
    )
    max_memory: dict[str, Any] | None = field(
        metadata=setting(Nested("mapping", optional=True, meaning="memory per device (device_map)"))
    )
    offload_folder: str | None = field(
        metadata=setting(Text(optional=True, meaning="where weights that fit nowhere go"))
    )
    fused_gelu: bool = field(metadata=setting(Flag(meaning="torch's fused tanh-GELU")))
    batch_invariant: bool = field(
        metadata=setting(Flag(meaning="a score's bits independent of its batch"))
    )
    share_prefix: bool = field(metadata=setting(Flag(meaning="run a shared context once")))
    chat_template_kwargs: dict[str, Any] | None = field(
        metadata=setting(
            Nested(
                "mapping",
                optional=True,
                meaning="the chat template's variables (enable_thinking)",
            )
        )
    )
    gguf: str | None = field(
        metadata=setting(Text(optional=True, meaning="a GGUF file to convert"))
    )
    sha256: str | None = field(
        metadata=setting(Text(optional=True, meaning="the weights file's SHA-256 (null: any file)"))
    )
    path: str = field(metadata=setting(Text(meaning="the replayed samples file or run folder")))
    answer: str | None = field(
        metadata=setting(Text(optional=True, meaning="the fake model's reply"))
    )
    replies: dict[str, str] = field(
        metadata=setting(Nested("mapping", meaning="the fake model's replies by prompt substring"))
    )
    base_url: str = field(metadata=setting(Text(meaning="the API root of a served model")))
    model: str | dict[str, Any] | None = field(
        metadata=setting(
            Nested(
                "mapping",
                optional=True,
                text=True,
                meaning="the served model's name (mill judge: the answering model's identity)",
            )
        )
    )
    tokenizer: str | None = field(
        metadata=setting(Text(optional=True, meaning="the served model's tokenizer (or remote)"))
    )
    api_key_env: str | None = field(
        metadata=setting(Text(optional=True, meaning="NAME of the variable holding the API key"))
    )
    prompt_ids: str | bool = field(
        metadata=setting(Choice(("auto", True, False), meaning="send token ids, text, or ask"))
    )
    sampling: dict[str, Any] | None = field(
        metadata=setting(
            Nested("mapping", optional=True, meaning="fields sent with each generation")
        )
    )


@dataclass(frozen=True)
class JudgeFields:
    """The judge's own settings (``judge.``), beside the model's it also has."""

    max_invalid: float = field(
        metadata=setting(
            Number(0, whole=False, maximum=1, meaning="share of judgments that may fail to parse")
        )
    )
    cache: str | bool | None = field(
        metadata=setting(
            Text(
                optional=True,
                flags=True,
                meaning="shared (true says the same), run, false or a folder",
            )
        )
    )
    allow_targets: list[str] = field(
        metadata=setting(Nested(meaning="extra _target_ prefixes of the judge's config"))
    )
    generation: GenerationFields = field(metadata=group_of(GenerationFields))


@dataclass(frozen=True)
class DatasetFields:
    """A task's ``dataset`` settings."""

    revision: str | None = field(
        metadata=setting(Text(optional=True, meaning="hub commit of the dataset"))
    )
    data_files: dict[str, Any] = field(
        metadata=setting(Nested("mapping", meaning="your own file per split"))
    )


def _seed(meaning: str, optional: bool = False) -> dict[str, Any]:
    """A seed: a whole number from 0 to :data:`SEED_MAX` (null too when ``optional``)."""
    return setting(Number(0, optional=optional, maximum=SEED_MAX, meaning=meaning))


@dataclass(frozen=True)
class TaskFields:
    """The ``task`` group's settings, every task's (a task without the key is not checked);
    a group's members are checked by the same rules under their own keys."""

    _target_: str = field(metadata=setting(Text(meaning="the task's class (allow-listed)")))
    name: str = field(metadata=setting(Text(meaning="the task's name in results")))
    num_fewshot: int | None = field(
        metadata=setting(
            Number(0, optional=True, maximum=10_000, meaning="few-shot examples per prompt")
        )
    )
    limit: int | None = field(metadata=_count(1, "docs per task (task=lm_eval: see below)", True))
    fewshot_seed: int = field(metadata=_seed("seed of the few-shot examples drawn"))
    repeats: int = field(
        metadata=setting(Number(1, maximum=10_000, meaning="generations per doc (pass@k, maj@k)"))
    )
    max_turns: int | None = field(
        metadata=setting(
            Number(
                1,
                optional=True,
                maximum=10_000,
                meaning="turns answered of each conversation",
            )
        )
    )
    fewshot_sampler: str = field(
        metadata=setting(Choice(("random", "first_n"), meaning="how examples are drawn"))
    )
    sample_split: str | None = field(
        metadata=setting(Text(optional=True, meaning="the split evaluated (null: the task's)"))
    )
    fewshot_split: str | None = field(
        metadata=setting(Text(optional=True, meaning="the split examples come from"))
    )
    chat_template: bool | None = field(
        metadata=setting(Flag(optional=True, meaning="prompts in the chat template"))
    )
    fewshot_as_multiturn: bool = field(
        metadata=setting(Flag(meaning="few-shot examples as chat turns"))
    )
    system_prompt: str | None = field(
        metadata=setting(Text(optional=True, meaning="a system message before each prompt"))
    )
    math_verify: bool = field(
        metadata=setting(Flag(meaning="check answers by equivalence (math-verify)"))
    )
    code_block: str = field(
        metadata=setting(Choice(("leading", "first"), meaning="which fenced block is the code"))
    )
    confirm_run_unsafe_code: bool = field(
        metadata=setting(Flag(meaning="lm-eval code tasks may run (sandboxed)"))
    )
    dataset: DatasetFields = field(metadata=group_of(DatasetFields))
    dataset_overrides: str | dict[str, Any] | None = field(
        metadata=setting(
            Nested(
                "mapping",
                optional=True,
                text=True,
                meaning="lm-eval TaskConfig keys, or a YAML file",
            )
        )
    )
    subjects: str | list[str] | None = field(
        metadata=setting(Nested(optional=True, text=True, meaning="the subjects run"))
    )
    tasks: str | list[Any] = field(
        metadata=setting(Nested(text=True, meaning="the group's member tasks"))
    )
    include_path: str | list[str] | None = field(
        metadata=setting(Nested(optional=True, text=True, meaning="lm-eval YAML folders"))
    )
    include_defaults: bool = field(metadata=setting(Flag(meaning="index lm-eval's own tasks too")))
    random_seed: int | None = field(metadata=_seed("lm-eval's python seed", True))
    numpy_random_seed: int | None = field(metadata=_seed("lm-eval's numpy seed", True))
    torch_random_seed: int | None = field(metadata=_seed("lm-eval's torch seed", True))
    fewshot_random_seed: int | None = field(metadata=_seed("lm-eval's few-shot seed", True))
    questions: str = field(metadata=setting(Text(meaning="the questions file (judged tasks)")))
    references: str | None = field(
        metadata=setting(Text(optional=True, meaning="reference answers (judged tasks)"))
    )
    baseline: str | None = field(
        metadata=setting(Text(optional=True, meaning="the baseline's answers (pairwise judging)"))
    )
    generation: GenerationFields = field(metadata=group_of(GenerationFields))


@dataclass(frozen=True)
class LmEvalTaskFields:
    """The task settings that differ for lm-eval's suite (``mill.lm_eval.*`` targets):
    its limit is also a fraction, as lm-eval's ``--limit`` is."""

    limit: float | None = field(
        metadata=setting(
            Number(
                0,
                whole=False,
                above=True,
                optional=True,
                maximum=SIZE_MAX,
                meaning="docs per task: a count, or a fraction below 1 (lm-eval's --limit)",
            )
        )
    )


@dataclass(frozen=True)
class ReasoningFields:
    """The ``reasoning`` group: what of a generation the metrics read (seed 002's
    ``text_post_processed``)."""

    tags: list[list[str]] = field(
        metadata=setting(Nested(meaning="[open, close] tag pairs of reasoning blocks removed"))
    )


@dataclass(frozen=True)
class SinkFields:
    """Every tracker's settings (``sink.<name>.``)."""

    _target_: str = field(metadata=setting(Text(meaning="the tracker's class (allow-listed)")))


@dataclass(frozen=True)
class MlflowFields:
    """``sink.mlflow.``: the MLflow tracker."""

    tracking_uri: str | None = field(
        metadata=setting(Text(optional=True, meaning="MLflow's store"))
    )
    experiment: str = field(metadata=setting(Text(meaning="MLflow experiment")))
    run_name: str | None = field(metadata=setting(Text(optional=True, meaning="MLflow run name")))
    tags: dict[str, Any] = field(
        metadata=setting(Nested("mapping", meaning="tags of the MLflow run"))
    )


@dataclass(frozen=True)
class WandbFields:
    """``sink.wandb.``: the Weights & Biases tracker."""

    project: str = field(metadata=setting(Text(meaning="W&B project")))
    entity: str | None = field(metadata=setting(Text(optional=True, meaning="W&B entity")))
    mode: str | None = field(
        metadata=setting(Choice(("online", "offline", "disabled"), optional=True, meaning="W&B"))
    )
    dir: str | None = field(
        metadata=setting(Text(optional=True, meaning="W&B's files (null: the run folder)"))
    )
    group: str | None = field(metadata=setting(Text(optional=True, meaning="W&B group")))
    job_type: str = field(metadata=setting(Text(meaning="W&B job type")))
    tags: list[str] = field(metadata=setting(Nested(meaning="tags of the W&B run")))


def _k_rule(metric: str) -> Number:
    """``k`` of pass@k and maj@k: one k or a list of them."""
    return Number(1, each=True, maximum=10_000, meaning=f"k of {metric} (a list: one row per k)")


@dataclass(frozen=True)
class PassAtKFields:
    """``metrics.pass_at_k.``."""

    k: int | list[int] = field(metadata=setting(_k_rule("pass@k")))


@dataclass(frozen=True)
class MajAtKFields:
    """``metrics.maj_at_k.``."""

    k: int | list[int] = field(metadata=setting(_k_rule("maj@k")))


@dataclass(frozen=True)
class EceFields:
    """``metrics.ece.``."""

    bins: int = field(
        metadata=setting(Number(1, maximum=100_000, meaning="equal-width confidence bins"))
    )


@dataclass(frozen=True)
class MetricFields:
    """The parameters any metric may take (``metrics.<metric>.``): the answer-matching
    metrics' and the judged metrics'."""

    _target_: str = field(metadata=setting(Text(meaning="the metric's class (allow-listed)")))
    ignore_case: bool = field(metadata=setting(Flag(meaning="compare without case")))
    ignore_punctuation: bool = field(metadata=setting(Flag(meaning="compare without punctuation")))
    regexes_to_ignore: list[str] = field(
        metadata=setting(Nested(meaning="patterns removed before comparing"))
    )
    extract_pattern: str | None = field(
        metadata=setting(Text(optional=True, meaning="regex taking the answer"))
    )
    extract_group: int = field(
        metadata=setting(Number(-1000, maximum=1000, meaning="which match (-1: the last)"))
    )
    correct: float = field(
        metadata=setting(
            Number(0, whole=False, maximum=1_000_000, meaning="reward of a correct answer")
        )
    )
    wrong: float = field(
        metadata=setting(
            Number(0, whole=False, maximum=1_000_000, meaning="penalty of a wrong answer")
        )
    )
    len_normalised: bool = field(metadata=setting(Flag(meaning="score by per-byte log-likelihood")))
    mode: str = field(metadata=setting(Choice(("strict", "loose"), meaning="IFEval's checking")))
    patterns: list[str] | None = field(
        metadata=setting(Nested(optional=True, meaning="the grade's regexes"))
    )
    reference_categories: list[str] = field(
        metadata=setting(Nested(meaning="categories judged with a reference"))
    )
    scale: list[float] | None = field(
        metadata=setting(Nested(optional=True, meaning="the grade's [lowest, highest]"))
    )
    templates: dict[str, Any] = field(
        metadata=setting(Nested("mapping", meaning="judge templates by name"))
    )
    template_names: dict[str, Any] = field(
        metadata=setting(Nested("mapping", meaning="which template for which turn"))
    )
    templates_file: str | None = field(
        metadata=setting(Text(optional=True, meaning="a JSONL of judge templates"))
    )


@dataclass(frozen=True)
class ArenaHardFields:
    """``metrics.arena_hard_score.``: arena-hard's score."""

    rounds: int = field(
        metadata=setting(Number(1, maximum=ITERS_MAX, meaning="bootstrap rounds of the score"))
    )
    weight: int = field(
        metadata=setting(Number(1, maximum=1000, meaning="battles a strong verdict counts"))
    )
    judge_generation: GenerationFields = field(metadata=group_of(GenerationFields))


@dataclass(frozen=True)
class PrimaryFields:
    """The primary config's own settings, at its root."""

    allow_targets: list[str] = field(
        metadata=setting(Nested(meaning="extra _target_ module prefixes"))
    )
