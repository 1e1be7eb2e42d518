"""A task's requests: what one doc asks of the model (one request per choice, per repeat,
or one for the whole text), built from the doc and the task's spec (data: this module
knows no ``Task``)."""

from __future__ import annotations

from typing import Any

from mill.task.spec import TaskSpec
from mill.types import Doc, OutputType, Request


def build_requests(
    doc: Doc,
    output_type: OutputType,
    spec: TaskSpec,
    delimiter: str,
    item_id: str | None = None,
    unconditioned: bool = False,
) -> list[Request]:
    """The model requests ``doc`` needs: one per choice for LOGPROBS (each continuation
    ``delimiter`` + the choice; plus, with ``unconditioned``, one per choice with an empty
    context, for PMI), one per repeat of ``spec`` for GENERATIVE (carrying ``item_id``, the
    dataset's own id of the row), one for PERPLEXITY."""
    base: dict[str, Any] = dict(task=spec.name, subject=doc.subject, doc_id=doc.id)
    if output_type is OutputType.LOGPROBS:
        return _choice_requests(doc, delimiter, unconditioned, base)
    if output_type is OutputType.GENERATIVE:
        return [
            Request(
                OutputType.GENERATIVE,
                index=i,
                context=doc.context,
                generation=spec.generation,
                messages=doc.messages,
                item_id=item_id,
                **base,
            )
            for i in range(spec.repeats)
        ]
    return [
        Request(OutputType.PERPLEXITY, index=0, context="", continuation=doc.continuation, **base)
    ]


def _choice_requests(
    doc: Doc, delim: str, unconditioned: bool, base: dict[str, Any]
) -> list[Request]:
    """LOGPROBS: one request per choice (per context for MULTIPLE_INPUT docs), then with
    ``unconditioned`` one per choice with an empty context."""
    if doc.contexts:
        out = [
            Request(
                OutputType.LOGPROBS,
                index=i,
                context=ctx,
                continuation=delim + doc.continuation,
                **base,
            )
            for i, ctx in enumerate(doc.contexts)
        ]
        scored = [doc.continuation] * len(doc.contexts)
    else:
        out = [
            Request(
                OutputType.LOGPROBS,
                index=i,
                context=doc.context,
                continuation=delim + choice,
                **base,
            )
            for i, choice in enumerate(doc.choices)
        ]
        scored = list(doc.choices)
    if unconditioned:
        out += [
            Request(
                OutputType.LOGPROBS,
                index=i,
                context="",
                continuation=delim + text,
                role="unconditioned",
                **base,
            )
            for i, text in enumerate(scored)
        ]
    return out
