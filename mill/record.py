"""The sample line written to ``samples/<task>.jsonl``: a doc, its :class:`~mill.types.DocOutput`,
the prediction and the per-sample metrics."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mill.files import sha256_json
from mill.types import Doc, DocOutput


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
    response: DocOutput
    doc_hash: str
    prompt_hash: str
    extra: dict[str, Any] | None = None
    """Task-specific additions (lm-eval tasks: the lm-eval doc, raw and filtered responses);
    left out of the line when None."""
    execution: list[dict[str, Any]] | None = None
    """Tasks that run programs: each generation's verdict (status, message, duration_s,
    output_tail; ``mill.execution.Verdict``), in repeat order; left out when None."""
    picks: dict[str, int] | None = None
    """LOGPROBS: each selected metric's own choice (``acc``: the argmax of the
    log-likelihoods, ``acc_norm``: of the length-normalised ones, ...; ``Metric.pick``), by
    metric name; left out when no metric picks (and in files written before Mill kept it)."""

    @classmethod
    def build(
        cls, doc: Doc, response: DocOutput, prediction: Any, metrics: dict[str, Any]
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
            doc_hash=sha256_json(doc.item),
            prompt_hash=sha256_json(response.input),
        )

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for optional in ("extra", "execution", "picks"):
            if out.get(optional) is None:
                out.pop(optional, None)
        for generative in ("text_post_processed", "reasoning_unfinished", "hit_max_gen_toks"):
            if out["response"].get(generative) is None:  # other output types
                out["response"].pop(generative, None)
        return out
