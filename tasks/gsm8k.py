"""GSM8K grade-school math, generative; lm-eval 0.4.13 ``gsm8k`` and ``gsm8k_cot``.

``gsm8k``: ``Question: {question}\\nAnswer:``, 5 shots from train, greedy generation until
``Question:``; the answer is extracted from ``#### <number>`` (strict) or the last number
(flexible). With ``task.math_verify=true`` the repeat metrics (``pass_at_k``, ``maj_at_k``,
``avg_at_n``) check each answer by equivalence with math-verify instead (the gold: the
number after ``####``), beside lm-eval's regexes.

``gsm8k_cot``: ``Q: {question}\\nA:`` after lm-eval's 8 fixed chain-of-thought
exemplars (Wei et al. 2022); strict extraction reads ``The answer is <number>``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from mill.task import Task
from mill.types import Doc, GenerationArgs, OutputType

COT_EXEMPLARS: list[dict[str, str]] = [
    {
        "question": "There are 15 trees in the grove. Grove workers will plant trees in the "
        "grove today. After they are done, there will be 21 trees. How many trees did the "
        "grove workers plant today?",
        "target": "There are 15 trees originally. Then there were 21 trees after some more "
        "were planted. So there must have been 21 - 15 = 6. The answer is 6.",
    },
    {
        "question": "If there are 3 cars in the parking lot and 2 more cars arrive, how many "
        "cars are in the parking lot?",
        "target": "There are originally 3 cars. 2 more cars arrive. 3 + 2 = 5. The answer is 5.",
    },
    {
        "question": "Leah had 32 chocolates and her sister had 42. If they ate 35, how many "
        "pieces do they have left in total?",
        "target": "Originally, Leah had 32 chocolates. Her sister had 42. So in total they "
        "had 32 + 42 = 74. After eating 35, they had 74 - 35 = 39. The answer is 39.",
    },
    {
        "question": "Jason had 20 lollipops. He gave Denny some lollipops. Now Jason has 12 "
        "lollipops. How many lollipops did Jason give to Denny?",
        "target": "Jason started with 20 lollipops. Then he had 12 after giving some to Denny."
        " So he gave Denny 20 - 12 = 8. The answer is 8.",
    },
    {
        "question": "Shawn has five toys. For Christmas, he got two toys each from his mom and "
        "dad. How many toys does he have now?",
        "target": "Shawn started with 5 toys. If he got 2 toys each from his mom and dad, "
        "then that is 4 more toys. 5 + 4 = 9. The answer is 9.",
    },
    {
        "question": "There were nine computers in the server room. Five more computers were "
        "installed each day, from monday to thursday. How many computers are now in the "
        "server room?",
        "target": "There were originally 9 computers. For each of 4 days, 5 more computers "
        "were added. So 5 * 4 = 20 computers were added. 9 + 20 is 29. The answer is 29.",
    },
    {
        "question": "Michael had 58 golf balls. On tuesday, he lost 23 golf balls. On "
        "wednesday, he lost 2 more. How many golf balls did he have at the end of wednesday?",
        "target": "Michael started with 58 golf balls. After losing 23 on tuesday, he had "
        "58 - 23 = 35. After losing 2 more, he had 35 - 2 = 33 golf balls. The answer is 33.",
    },
    {
        "question": "Olivia has $23. She bought five bagels for $3 each. How much money does "
        "she have left?",
        "target": "Olivia had 23 dollars. 5 bagels for 3 dollars each will be 5 x 3 = 15 "
        "dollars. So she has 23 - 15 dollars left. 23 - 15 is 8. The answer is 8.",
    },
]
"""lm-eval 0.4.13 ``gsm8k-cot.yaml`` ``fewshot_config.samples``, in order."""


class GSM8K(Task):
    """GSM8K main split, exact match after answer extraction."""

    NAME = "gsm8k"
    DATASET_PATH = "openai/gsm8k"
    DATASET_NAME = "main"
    DATASET_REVISION = "740312add88f781978c0658806c59bc2815b9866"
    LOCAL_FILES = {"test": "gsm8k/test.jsonl", "train": "gsm8k/train.jsonl"}
    SAMPLE_SPLIT = "test"
    FEWSHOT_SPLIT: ClassVar[str | None] = "train"  # None in GSM8KCoT (fixed exemplars)
    OUTPUT_TYPE = OutputType.GENERATIVE
    METRICS = ["exact_match_strict", "exact_match_flexible"]
    GENERATION = GenerationArgs(until=("Question:", "</s>", "<|im_end|>"), max_gen_toks=256)

    def __init__(self, math_verify: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.math_verify = bool(math_verify)
        if self.math_verify:  # pass_at_k, maj_at_k, avg_at_n check answers by equivalence
            from mill.metrics.equivalence import MathChecker

            self.math_checker = MathChecker()

    def math_gold(self, doc: Doc) -> str:
        """The number after ``####`` (``task.math_verify=true``: what math-verify reads)."""
        return str(doc.gold).split("####")[-1].strip()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "math_verify": self.math_verify}

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"Question: {item['question']}\nAnswer:"

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["answer"]


class GSM8KCoT(GSM8K):
    """GSM8K with 8 fixed chain-of-thought exemplars; the reference is the final number."""

    NAME = "gsm8k_cot"
    FEWSHOT_SPLIT = None
    FEWSHOT_SAMPLES = COT_EXEMPLARS
    METRICS = ["exact_match_strict_cot", "exact_match_flexible"]
    GENERATION = GenerationArgs(until=("Q:", "</s>", "<|im_end|>"), max_gen_toks=256)

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return f"Q: {item['question']}\nA:"

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return item["answer"].split("####")[-1].strip()

    def doc_to_fewshot_target(self, item: dict[str, Any]) -> str:
        return item["target"]
