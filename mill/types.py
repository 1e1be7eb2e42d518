"""The currency between tasks, the runner and models: requests in, responses out."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum


class OutputType(str, Enum):
    """How a task queries the model (seed 000)."""

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

    @property
    def id(self) -> str:
        """Stable, human-readable id: unique within a run and the same on every run."""
        subject = "" if self.subject == "default" else f"{self.subject}/"
        return f"{self.task}/{subject}{self.doc_id}/{self.role}/{self.index}"

    @property
    def content_hash(self) -> str:
        """sha256 of everything a model sees: identical requests have identical hashes."""
        payload = {
            "type": self.output_type.value,
            "context": self.context,
            "continuation": self.continuation,
            "generation": None if self.generation is None else self.generation.__dict__,
        }
        if self.generation is not None and self.generation.do_sample:
            payload["sample"] = self.id  # repeats of a sampled request differ
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=list)
        return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class Response:
    """A model's answer to one :class:`Request` (the per-request part of seed 002)."""

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
