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
from typing import Any

from mill.files import sha256_json


def strip_reasoning(text: str, tag: str = "think") -> str:
    """Text without ``<tag>...</tag>`` blocks (an unclosed block runs to the end), its
    leading whitespace removed (``strip_reasoning`` of served models and of IFEval)."""
    t = re.escape(tag)
    text = re.sub(rf"<{t}>.*?</{t}>", "", text, flags=re.DOTALL)
    text = re.sub(rf"<{t}>.*\Z", "", text, flags=re.DOTALL)
    return text.lstrip() if text != "" else text


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
    saved answers (``model=replay``); not part of :attr:`content_hash`."""

    @property
    def id(self) -> str:
        """Stable, human-readable id: unique within a run and the same on every run."""
        subject = "" if self.subject == "default" else f"{self.subject}/"
        return f"{self.task}/{subject}{self.doc_id}/{self.role}/{self.index}"

    @property
    def content_hash(self) -> str:
        """sha256 of everything a model sees: identical requests have identical hashes."""
        payload: dict[str, Any] = {
            "type": self.output_type.value,
            "context": self.context,
            "continuation": self.continuation,
            "generation": None if self.generation is None else self.generation.__dict__,
        }
        sampled = self.generation is not None and self.generation.do_sample
        if sampled or (self.output_type is OutputType.GENERATIVE and self.index > 0):
            payload["sample"] = self.id  # repeats differ (sampled, or replayed from a file)
        if self.messages is not None:
            payload["messages"] = [list(m) for m in self.messages]
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
    raw_text: str | None = None
    """The server's text before reasoning was stripped (``strip_reasoning``); None when
    ``text`` is the whole generation."""
    truncated_tokens_count: int = 0
    padded_tokens_count: int = 0


OnResponse = Callable[[Request, Response], None]
"""Called once per finished request, in completion order (for incremental writing)."""

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
    raw_text: list[str] | None = None
    """GENERATIVE with ``strip_reasoning``: the generations before stripping (left out of
    sample lines when None)."""

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
            raw_text=(
                [r.raw_text or r.text or "" for r in responses]
                if any(r.raw_text is not None for r in responses)
                else None
            ),
        )
