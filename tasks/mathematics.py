"""Competition math, answers checked for equivalence: MATH-500, AIME 2024, AIME 2025 and
AMC 2023, as lighteval 0.13's ``math_500``, ``aime24`` and ``aime25`` tasks.

Each problem is one user turn through the model's chat template (on by default, as lighteval
uses the template whenever the tokenizer has one; a model without one gets plain text, with
one warning), no few-shot examples, no stop strings. MATH-500's prompt asks for a last line
``ANSWER: $ANSWER`` and its gold is ``"ANSWER: " + solution`` (the worked solution, whose
``\\boxed{}`` math-verify reads first); AIME's and AMC's prompt asks for
``Therefore, the final answer is: $\\boxed{ANSWER}$`` and the gold is the answer. lighteval
0.13 has no AMC 2023 task: ``amc23`` uses AIME's prompt, as open-r1's recipe does. Answers
are checked by :class:`mill.metrics.equivalence.MathChecker` (math-verify, the ``math``
extra); a gold it cannot read stops the run at load, naming the row (or is skipped with
``data.skip_bad_rows=true``). The default metric is ``pass_at_k`` with k=1 (lighteval's);
with ``task.repeats=n`` and sampling: ``avg_at_n``, ``pass_at_k`` with a list of k,
``maj_at_k`` (a vote by equivalence).
"""

from __future__ import annotations

from typing import Any, ClassVar

from mill.metrics.equivalence import MathChecker
from mill.task.base import SKIP_HINT, BadRow
from mill.task.chat_default import ChatTemplateByDefault
from mill.task.rows import MissingField
from mill.types import Doc, GenerationArgs, OutputType

MATH_500_PROMPT = (
    "Solve the following problem. The final line of your response MUST be of the following "
    'format:\n"ANSWER: $ANSWER" (without quotes) where $ANSWER is the final answer. Think '
    "step by step before answering.\n\n{prompt}"
)
"""lighteval 0.13 ``tasks/tasks/math_500.py`` ``MATH_QUERY_TEMPLATE``."""

AIME_PROMPT = (
    "\nSolve the following math problem efficiently and clearly.  The last line of your "
    "response should be of the following format: 'Therefore, the final answer is: "
    "$\\boxed{{ANSWER}}$. I hope it is correct' (without quotes) where ANSWER is just the "
    "final number or expression that solves the problem. Think step by step before "
    "answering.\n\n{prompt}\n"
)
"""lighteval 0.13 ``tasks/tasks/aime.py`` ``MATH_PROMPT_TEMPLATE`` (its leading and trailing
newline included)."""

QWQ_INSTRUCTION = "\nPlease reason step by step, and put your final answer within \\boxed{}."
"""What QwQ's AIME 2025 file appends to each problem (``../shared/data/aime25``)."""


class MathTask(ChatTemplateByDefault):
    """A math benchmark: the problem in the prompt, the answer checked by math-verify."""

    SAMPLE_SPLIT = "test"
    OUTPUT_TYPE = OutputType.GENERATIVE
    METRICS = ["pass_at_k"]
    # lighteval asks for 32768 new tokens (MATH-500) or the model's length (AIME): 4096
    # fits a model of 8192 tokens; reasoning models want task.generation.max_gen_toks higher
    GENERATION = GenerationArgs(until=(), max_gen_toks=4096)
    PROMPT: ClassVar[str] = AIME_PROMPT
    ID_FIELD: ClassVar[str] = "id"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.math_checker = MathChecker()
        """Checks every generation's answer (the metrics of :mod:`mill.metrics.repeats`)."""

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return self.PROMPT.format(prompt=item["problem"])

    def doc_to_target(self, item: dict[str, Any]) -> str:
        answer = item.get("answer")
        if answer is None or not str(answer).strip():
            raise MissingField("answer", null=answer is None)
        return str(answer)

    def item_id(self, item: dict[str, Any]) -> str | None:
        return str(item[self.ID_FIELD])

    def math_gold(self, doc: Doc) -> str:
        """The text the gold is read from (the metrics' view of :attr:`Doc.gold`)."""
        return str(doc.gold)

    def validate_doc(self, doc: Doc) -> None:
        """A doc whose gold math-verify reads no answer from is a bad row."""
        gold = self.math_gold(doc)
        if not self.math_checker.gold(gold).parsed:
            raise BadRow(
                f"task {self.name!r}, split {self.sample_split!r}, row {doc.id} "
                f"({self.ID_FIELD} {doc.item.get(self.ID_FIELD)!r}): math-verify reads no "
                f"answer from its gold {gold[:80]!r}; fix the data" + SKIP_HINT,
                split=self.sample_split,
                row=doc.id,
            )

    def describe(self) -> dict[str, Any]:
        checker = self.math_checker
        return {
            **super().describe(),
            "answer_check": {
                "checker": "math-verify",
                "precision": checker.precision,
                "timeout_s": checker.timeout_s,
            },
        }


class Math500(MathTask):
    """MATH-500 (PRM800K's test split of Hendrycks et al.'s MATH)."""

    NAME = "math500"
    DATASET_PATH = "HuggingFaceH4/MATH-500"
    LOCAL_FILES = {"test": "math500/test.jsonl"}
    SUBJECTS = ["default"]
    PROMPT = MATH_500_PROMPT
    ID_FIELD = "unique_id"

    def doc_to_target(self, item: dict[str, Any]) -> str:
        solution = item.get("solution")
        if solution is None or not str(solution).strip():
            raise MissingField("solution", null=solution is None)
        return f"ANSWER: {solution}"


class AIME24(MathTask):
    """AIME 2024 I and II: 30 problems, integer answers 0-999."""

    NAME = "aime24"
    DATASET_PATH = "HuggingFaceH4/aime_2024"
    SAMPLE_SPLIT = "train"
    LOCAL_FILES = {"train": "aime24/test.jsonl"}


class AIME25(MathTask):
    """AIME 2025 I and II: 30 problems. The local file (QwQ's) has ``prompt`` (the problem
    and QwQ's instruction, removed here) and ``answer``, no id: a row's id is its position."""

    NAME = "aime25"
    DATASET_PATH = "yentinglin/aime_2025"
    SAMPLE_SPLIT = "train"
    LOCAL_FILES = {"train": "aime25/test.jsonl"}

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        if "problem" in row or "prompt" not in row:
            return row
        problem = str(row["prompt"])
        problem = problem.removesuffix(QWQ_INSTRUCTION)
        return {**{k: v for k, v in row.items() if k != "prompt"}, "problem": problem}

    def process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [row if "id" in row else {**row, "id": i} for i, row in enumerate(rows)]


class AMC23(MathTask):
    """AMC 12 2023 (A and B): the usual 40-problem set, answers as floats (``27.0``)."""

    NAME = "amc23"
    DATASET_PATH = "math-ai/amc23"
    LOCAL_FILES = {"test": "amc23/test.jsonl"}
