"""\"I don't know\" variants of ARC-Easy, ARC-Challenge, MMLU and PIQA.

Each variant prepends an instruction that mistakes may be penalised and abstaining scores
0, adds the choice ``I don't know.``, and marks its index on the doc
(``Doc.idk_index``), so ``ternary`` and ``dcs`` know which choice abstains.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mill.tasks.arc import ArcChallenge, ArcEasy
from mill.tasks.mmlu import MMLU
from mill.tasks.piqa import PIQA

from mill.task import Task

IDK_CHOICE = "I don't know."
IDK_INSTRUCTION = (
    "Answer only if you are confident, since mistakes may be penalised, while correct "
    "answers receive points. It is acceptable to answer with 'I don't know' if you are "
    "unsure, and you will receive 0 points."
)
IDK_METRICS = ["acc", "acc_norm", "confidence_weighted_acc", "ternary", "dcs"]


class IDKVariant(Task):
    """Mixin: put before the base task class (``class X(IDKVariant, Base)``)."""

    IDK_CHOICE: ClassVar[str] = IDK_CHOICE
    IDK_INSTRUCTION: ClassVar[str] = IDK_INSTRUCTION
    METRICS = IDK_METRICS

    def doc_to_description(self, item: dict[str, Any]) -> str:
        description = super().doc_to_description(item) or ""
        return f"{self.IDK_INSTRUCTION}\n\n{description}"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return [*(super().doc_to_choice(item) or []), self.IDK_CHOICE]

    def idk_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return len(super().doc_to_choice(item) or [])


class ArcEasyIDK(IDKVariant, ArcEasy):
    NAME = "arc_easy_idk"


class ArcChallengeIDK(IDKVariant, ArcChallenge):
    NAME = "arc_challenge_idk"


class MMLUIDK(IDKVariant, MMLU):
    NAME = "mmlu_idk"


class PIQAIDK(IDKVariant, PIQA):
    NAME = "piqa_idk"
