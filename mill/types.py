"""The currency between tasks, the runner and models, in one place.

A task turns dataset rows into :class:`Doc` s and each doc into :class:`Request` s; a model
answers each request with a :class:`Response`; the evaluator folds a doc's responses into
one :class:`DocOutput` (the per-doc record written to the samples file). Models call an
:data:`OnResponse` as each request finishes; tasks render chat prompts through a
:data:`ChatTemplate`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import Any

from mill.errors import ConfigError
from mill.files import sha256_json

THINK_TAGS: tuple[tuple[str, str], ...] = (("<think>", "</think>"),)
"""The default reasoning block (``reasoning.tags``): Qwen3, DeepSeek-R1 and its distills,
QwQ, SmolLM3; lighteval 0.13's default ``reasoning_tags``."""


@dataclass(frozen=True)
class ReasoningRule:
    """How a generation's reasoning is removed before metrics read it: the answer is seed
    002's ``text_post_processed``. One rule for every backend, applied by the evaluator.

    For each (open, close) tag pair, in order: closed blocks ``open ... close`` are removed;
    then text up to a closing tag left alone is reasoning too (a chat template that opens the
    block itself, as the R1 distills' does, leaves only ``... close answer`` in the
    generation); then an opening tag left alone means the reasoning never finished (the
    budget cut it off): there is **no answer** (an empty one, flagged
    ``reasoning_unfinished``), whatever the block contains. Text with no tag at all is
    returned as it is; when a tag was removed, the answer's leading whitespace goes too.
    No tag pairs (``reasoning.tags=[]``): every text is its own answer."""

    tags: tuple[tuple[str, str], ...] = THINK_TAGS

    def apply(self, text: str) -> tuple[str, bool]:
        """(the answer, whether the reasoning was left unfinished) of one generation."""
        answer, changed = text, False
        for opening, closing in self.tags:
            block = re.compile(re.escape(opening) + ".*?" + re.escape(closing), re.DOTALL)
            answer, removed = block.subn("", answer)
            cut = answer.rfind(closing)
            if cut >= 0:  # a lone closing tag: everything before it was reasoning
                answer = answer[cut + len(closing) :]
            changed = changed or removed > 0 or cut >= 0
            if opening in answer:
                return "", True
        return (answer.lstrip() if changed else answer), False

    @classmethod
    def parse(cls, tags: Any, key: str = "reasoning.tags") -> ReasoningRule:
        """The rule of a ``reasoning.tags`` value: a list of [open, close] pairs of two
        non-empty, different strings (ConfigError, one line naming ``key``, otherwise)."""
        if tags is None:
            return cls()
        if isinstance(tags, (str, bytes)) or not isinstance(tags, (list, tuple)):
            raise ConfigError(
                f"{key}={tags!r}: give a list of [open, close] tag pairs, e.g. "
                '\'reasoning.tags=[["<think>","</think>"]]\', or [] to keep every '
                "generation as it is"
            )
        pairs = []
        for i, pair in enumerate(tags):
            good = (
                isinstance(pair, (list, tuple))
                and len(pair) == 2
                and all(isinstance(t, str) and t.strip() for t in pair)
                and pair[0] != pair[1]
            )
            if not good:
                raise ConfigError(
                    f"{key}[{i}]={pair!r} is not a tag pair: give two non-empty, different "
                    'strings [open, close], e.g. ["<think>","</think>"]'
                )
            pairs.append((str(pair[0]), str(pair[1])))
        return cls(tuple(pairs))

    def describe(self) -> list[list[str]]:
        """The tag pairs as results.json and the settings record them."""
        return [list(pair) for pair in self.tags]


class OutputType(str, Enum):
    """How a task queries the model: log-likelihood, rolling log-likelihood or generation."""

    GENERATIVE = "generative"
    """``generate_until`` -> str."""
    LOGPROBS = "logprobs"
    """``loglikelihood`` -> (logprob, is_greedy), one request per choice."""
    PERPLEXITY = "perplexity"
    """``loglikelihood_rolling`` -> total log-probability of a whole text."""

    @property
    def model_method(self) -> str:
        """Name of the model method that answers this output type."""
        return {
            OutputType.GENERATIVE: "generate_until",
            OutputType.LOGPROBS: "loglikelihood",
            OutputType.PERPLEXITY: "loglikelihood_rolling",
        }[self]


@dataclass(frozen=True)
class GenerationArgs:
    """Arguments of one ``generate_until`` request (greedy unless ``do_sample``)."""

    until: tuple[str, ...] = ()
    """Stop strings; generation is cut at the first occurrence of any of them."""
    max_gen_toks: int = 256
    """Maximum number of new tokens."""
    do_sample: bool = False
    temperature: float = 0.0
    seed: int = 1234
    """Sampling seed; each request draws from its own generator seeded by (seed, id)."""
    top_p: float = 1.0
    """Sampling: draw from the smallest set of most likely tokens whose probability reaches
    ``top_p`` (nucleus sampling); 1.0: the whole vocabulary."""

    def hashed(self) -> dict[str, Any]:
        """The fields that identify a generation: ``top_p`` only when it is not 1, so that
        requests from before it existed keep their hashes (and their cached answers)."""
        out = dict(self.__dict__)
        if out.get("top_p") == 1.0:
            del out["top_p"]
        return out


@dataclass(frozen=True)
class Request:
    """One question to a model. Immutable; answers come back as :class:`Response`.

    ``LOGPROBS``: score ``continuation`` after ``context``. ``PERPLEXITY``: score the whole of
    ``continuation`` (``context`` is empty). ``GENERATIVE``: continue ``context``.
    """

    output_type: OutputType
    task: str
    doc_id: int
    index: int
    """Choice index for LOGPROBS, repeat index for GENERATIVE, 0 for PERPLEXITY."""
    context: str
    continuation: str = ""
    generation: GenerationArgs | None = None
    role: str = "choice"
    """``choice`` for ordinary requests, ``unconditioned`` for PMI's context-free ones."""
    subject: str = "default"
    messages: tuple[tuple[str, str], ...] | None = None
    """GENERATIVE for chat endpoints: the prompt as (role, content) turns, handed to a
    server that applies its own chat template; None for every other model."""
    item_id: str | None = None
    """GENERATIVE: the dataset's own id of the doc (``HumanEval/0``), for models that replay
    saved answers (``model=replay``); part of :attr:`content_hash` (two docs with the same
    prompt are two questions to a model that answers by id)."""

    @property
    def id(self) -> str:
        """Stable, human-readable id: unique within a run and the same on every run."""
        subject = "" if self.subject == "default" else f"{self.subject}/"
        return f"{self.task}/{subject}{self.doc_id}/{self.role}/{self.index}"

    @cached_property
    def content_hash(self) -> str:
        """sha256 of everything a model answers by: identical requests have identical hashes
        (computed once per request: the shard fingerprint and the cache each read it)."""
        payload: dict[str, Any] = {
            "type": self.output_type.value,
            "context": self.context,
            "continuation": self.continuation,
            "generation": None if self.generation is None else self.generation.hashed(),
        }
        sampled = self.generation is not None and self.generation.do_sample
        if sampled or (self.output_type is OutputType.GENERATIVE and self.index > 0):
            payload["sample"] = self.id  # repeats differ (sampled, or replayed from a file)
        if self.messages is not None:
            payload["messages"] = [list(m) for m in self.messages]
        if self.item_id is not None:  # left out when none: other requests keep their hash
            payload["item_id"] = self.item_id
        return sha256_json(payload)


@dataclass
class Response:
    """A model's answer to one :class:`Request` (the per-request part of the results)."""

    request_id: str
    input_tokens: list[int] = field(default_factory=list)
    """Tokens fed as context (after truncation)."""
    output_tokens: list[int] = field(default_factory=list)
    """Scored continuation tokens, or generated tokens."""
    logprob: float | None = None
    """Sum of log-probabilities of ``output_tokens`` (LOGPROBS, PERPLEXITY)."""
    is_greedy: bool | None = None
    """Argmax at every scored position equals the continuation token (LOGPROBS)."""
    text: str | None = None
    """Generated text after stop-string cutting (GENERATIVE)."""
    hit_max_gen_toks: bool | None = None
    """GENERATIVE: generation ended because it reached ``max_gen_toks`` (not at EOS or a stop
    string); None when the backend cannot tell (saved completions)."""
    text_post_processed: str | None = None
    """GENERATIVE: ``text`` under the run's :class:`ReasoningRule` (seed 002's
    ``text_post_processed``), set by the evaluator before any metric reads it; None until
    then (and for other output types)."""
    reasoning_unfinished: bool = False
    """GENERATIVE: the reasoning block never closed, so there is no answer."""
    truncated_tokens_count: int = 0
    padded_tokens_count: int = 0

    @property
    def answer(self) -> str:
        """What metrics read of a generation: :attr:`text_post_processed` once the evaluator
        set it, else :attr:`text` (empty when there is none)."""
        if self.text_post_processed is not None:
            return self.text_post_processed
        return self.text or ""


OnResponse = Callable[[Request, Response], None]
"""Called once per finished request, in completion order (for incremental writing)."""

DocKey = tuple[str, str, int]
"""(task, subject, doc id): one doc of one run."""

ChatTemplate = Callable[[list[dict[str, str]], bool], str]
"""Renders chat messages (``{"role", "content"}``) to the model's prompt string; the bool
is ``add_generation_prompt``."""


@dataclass(frozen=True)
class Doc:
    """One evaluation item of one task, with its few-shot context already decided."""

    task: str
    id: int
    """Position in the evaluated split (stable: the same item always gets the same id)."""
    subject: str
    context: str
    """Everything before the answer: initial prompt, few-shot examples and the query."""
    choices: tuple[str, ...] = ()
    """LOGPROBS: the candidate answers, without the target delimiter."""
    gold: int | str | tuple[str, ...] | None = None
    """LOGPROBS: gold choice index. GENERATIVE: reference answer(s). PERPLEXITY: the text
    whose words and bytes normalise perplexity (WikiText: the page before detokenization)."""
    continuation: str = ""
    """PERPLEXITY: the text scored as a whole. LOGPROBS with ``contexts``: the continuation
    shared by every choice (without the target delimiter)."""
    contexts: tuple[str, ...] = ()
    """LOGPROBS "multiple input" tasks (WinoGrande): one context per choice, all scored on
    the same ``continuation`` (lm-eval's partial scoring). Empty for ordinary tasks."""
    fewshot_ids: tuple[int, ...] = ()
    """Ids (in the few-shot split) of the examples placed in ``context``."""
    idk_index: int | None = None
    """Index of the explicit "I don't know" choice, if the task variant has one."""
    item: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The dataset row after loading and preprocessing."""
    messages: tuple[tuple[str, str], ...] | None = None
    """GENERATIVE, for models that take chat messages (``openai_chat``): the prompt as
    (role, content) turns; ``context`` is then their plain-text rendering."""


@dataclass
class DocOutput:
    """Everything the model returned for one doc: its :class:`Response` s folded together
    (the fields of lighteval's ``ModelResponse``)."""

    input: str
    input_tokens: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    output_tokens: list[list[int]] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    argmax_logits_eq_gold: list[bool] = field(default_factory=list)
    unconditioned_logprobs: list[float] | None = None
    truncated_tokens_count: int = 0
    padded_tokens_count: int = 0
    text_post_processed: list[str] | None = None
    """GENERATIVE: each generation's answer under the run's :class:`ReasoningRule` (what the
    metrics read; seed 002's ``text_post_processed``); None for other output types."""
    reasoning_unfinished: list[bool] | None = None
    """GENERATIVE: per generation, the reasoning block never closed (no answer)."""
    hit_max_gen_toks: list[bool | None] | None = None
    """GENERATIVE: per generation, it stopped at ``max_gen_toks`` (None: not known)."""

    @classmethod
    def from_responses(
        cls, doc: Doc, output_type: OutputType, responses: list[Response]
    ) -> DocOutput:
        """Fold a doc's per-request responses (ordered by request index) into one record."""
        return cls(
            input=doc.context if output_type is not OutputType.PERPLEXITY else doc.continuation,
            input_tokens=list(responses[0].input_tokens) if responses else [],
            text=[r.text for r in responses if r.text is not None],
            output_tokens=[list(r.output_tokens) for r in responses],
            logprobs=[float(r.logprob) for r in responses if r.logprob is not None],
            argmax_logits_eq_gold=[bool(r.is_greedy) for r in responses if r.is_greedy is not None],
            truncated_tokens_count=sum(r.truncated_tokens_count for r in responses),
            padded_tokens_count=sum(r.padded_tokens_count for r in responses),
            **(_generation_fields(responses) if output_type is OutputType.GENERATIVE else {}),
        )


def _generation_fields(responses: list[Response]) -> dict[str, Any]:
    return {
        "text_post_processed": [r.answer for r in responses],
        "reasoning_unfinished": [r.reasoning_unfinished for r in responses],
        "hit_max_gen_toks": [r.hit_max_gen_toks for r in responses],
    }
