"""A benchmark item turned into what the evaluator needs: prompt pieces and the answer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
