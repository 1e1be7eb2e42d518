"""Per-doc records: the model's answer to one doc (seed 002's ModelResponse) and the sample
line written to ``samples/<task>.jsonl``."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

from mill.task.doc import Doc
from mill.types import OutputType, Response


@dataclass
class ModelResponse:
    """Everything the model returned for one doc (fields of lighteval's ModelResponse)."""

    input: str
    input_tokens: list[int] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    output_tokens: list[list[int]] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    argmax_logits_eq_gold: list[bool] = field(default_factory=list)
    unconditioned_logprobs: list[float] | None = None
    raw_text: list[str] | None = None
    """GENERATIVE with ``strip_reasoning``: the generations before stripping."""
    truncated_tokens_count: int = 0
    padded_tokens_count: int = 0

    @classmethod
    def from_responses(
        cls, doc: Doc, output_type: OutputType, responses: list[Response]
    ) -> ModelResponse:
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


def _hash(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass
class SampleRecord:
    """One line of ``samples/<task>.jsonl``."""

    task: str
    subject: str
    doc_id: int
    fewshot_ids: list[int]
    choices: list[str]
    gold: Any
    prediction: Any
    metrics: dict[str, Any]
    response: ModelResponse
    doc_hash: str
    prompt_hash: str

    @classmethod
    def build(
        cls, doc: Doc, response: ModelResponse, prediction: Any, metrics: dict[str, Any]
    ) -> SampleRecord:
        return cls(
            task=doc.task,
            subject=doc.subject,
            doc_id=doc.id,
            fewshot_ids=list(doc.fewshot_ids),
            choices=list(doc.choices),
            gold=doc.gold,
            prediction=prediction,
            metrics=metrics,
            response=response,
            doc_hash=_hash(doc.item),
            prompt_hash=_hash(response.input),
        )

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        if out["response"]["raw_text"] is None:  # only reasoning-stripped generations
            del out["response"]["raw_text"]
        return out
