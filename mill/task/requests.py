"""A task's requests: what one doc asks of the model (one request per choice, per repeat,
or one for the whole text), built from the doc and the task's spec."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.types import Doc, OutputType, Request

if TYPE_CHECKING:
    from mill.task.base import Task


def build_requests(task: Task, doc: Doc, unconditioned: bool = False) -> list[Request]:
    """The model requests one doc needs: one per choice for LOGPROBS (plus, with
    ``unconditioned``, one per choice with an empty context, for PMI), one per repeat
    for GENERATIVE, one for PERPLEXITY."""
    base = dict(task=task.name, subject=doc.subject, doc_id=doc.id)
    if task.OUTPUT_TYPE is OutputType.LOGPROBS:
        delim = task.continuation_delimiter
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
    if task.OUTPUT_TYPE is OutputType.GENERATIVE:
        return [
            Request(
                OutputType.GENERATIVE,
                index=i,
                context=doc.context,
                generation=task.generation,
                messages=doc.messages,
                item_id=task._get_item_id(doc.item),
                **base,
            )
            for i in range(task.repeats)
        ]
    return [
        Request(OutputType.PERPLEXITY, index=0, context="", continuation=doc.continuation, **base)
    ]
