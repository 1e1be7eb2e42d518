"""Code tasks: the model writes code, the sandbox runs it against the problem's tests.

A :class:`CodeTask` is GENERATIVE and ``EXECUTES``: after generation the evaluator asks it
for one complete program per generation (:meth:`CodeTask.program`), runs them all in
``mill.execution``'s sandbox, and the metrics (``pass_at_k``) score from the verdicts.
:func:`fenced_code` takes the code out of a chat model's answer.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from mill.schema import typed_one
from mill.task.base import Task
from mill.types import Doc, OutputType

FENCE = "```"
_OPENING = re.compile(r"```[^\n`]*\n")


_TAGGED_OPENING = re.compile(r"```[A-Za-z][^\n`]*\n")


def code_block_setting(task: str, value: Any) -> str:
    """The checked ``task.code_block`` (its declared choices, :func:`mill.schema.typed_one`):
    ``leading`` (lm-eval's: the answer up to its first fence, or the block the answer opens
    itself at its start) or ``first`` (the first block opened with a language tag anywhere in
    the answer, e.g. after a sentence of prose)."""
    return str(typed_one("task.code_block", value))


def first_tagged_block(answer: str) -> str | None:
    """The content of the first fenced block opened with a language tag (```` ```python ````)
    anywhere in ``answer``, to its closing fence or the end; None when there is none."""
    match = _TAGGED_OPENING.search(answer)
    if match is None:
        return None
    end = answer.find(FENCE, match.end())
    return answer[match.end() :] if end == -1 else answer[match.end() : end]


def fenced_code(answer: str, opened: bool, block: str = "leading") -> str:
    """The code of an answer, the way the model wrote it.

    ``opened``: the prompt already opened a fenced block (a ``gen_prefix`` ending in
    ````` ```python\\n `````), so the answer starts inside it and its code runs to the first
    fence (lm-eval's ``build_predictions_instruct``) -- unless the answer opens a block of
    its own first (a chat model that ignored the prefix), whose content is then taken.
    Otherwise: the content of the first fenced block, or the whole answer when it has no
    opening fence. An unclosed block runs to the end of the answer.

    ``block="first"`` (``task.code_block=first``): the first block opened with a language
    tag anywhere in the answer wins (``Sure! Here it is: ```python ...```` ``), else as
    above; a closing fence has no tag, so an answer that continues the opened block is read
    the same either way.
    """
    if block == "first":
        tagged = first_tagged_block(answer)
        if tagged is not None:
            return tagged
    if opened and not answer.lstrip().startswith(FENCE):
        end = answer.find(FENCE)
        return answer if end == -1 else answer[:end]
    match = _OPENING.search(answer)
    if match is None:
        return answer
    end = answer.find(FENCE, match.end())
    return answer[match.end() :] if end == -1 else answer[match.end() : end]


class CodeTask(Task):
    """A GENERATIVE task scored by running each generation's program in the sandbox."""

    OUTPUT_TYPE = OutputType.GENERATIVE
    EXECUTES: ClassVar[bool] = True
    METRICS = ["pass_at_k"]

    def program(self, item: dict[str, Any], completion: str) -> str:
        """The complete Python program that passes when ``completion`` solves ``item``."""
        raise NotImplementedError

    def programs(self, doc: Doc, texts: list[str]) -> list[str] | None:
        return [self.program(doc.item, text) for text in texts]

    def sample_extra(self, doc: Doc) -> dict[str, Any]:
        """What a sample line adds: the problem's own id (the report lists verdicts by it)."""
        return {"item_id": self.item_id(doc.item)}
