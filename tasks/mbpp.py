"""MBPP, Mostly Basic Python Problems (Austin et al. 2021); lm-eval 0.4.13's ``mbpp`` and
``mbpp_instruct``.

``mbpp``: the MBPP paper's 3-shot prompt (``You are an expert Python programmer, and here
is your task: {text} Your code should pass these tests:\\n\\n{tests}\\n[BEGIN]\\n``, each shot
answered ``{code}\\n[DONE]``), the shots being the paper's prompt problems 2, 3 and 4 in
order (lm-eval's ``list_fewshot_samples``); greedy generation until ``[DONE]``.

``mbpp_instruct``: lm-eval's instruction layout, the answer started as
````` \\n```python\\n `````, each shot answered ````` {code}\\n``` `````; at most 256 tokens, no
stop string; the code is the answer up to the closing fence
(:func:`mill.task.code.fenced_code`).

The program is the row's ``test_setup_code`` (when it has one), the code, then its
``test_list`` asserts, one per line: ``code + "\\n" + "\\n".join(test_list)`` for the rows
without setup code, as lm-eval's ``code_eval`` builds it.
"""

from __future__ import annotations

from typing import Any

from mill.task.code import CodeTask, code_block_setting, fenced_code
from mill.types import GenerationArgs

PROMPT_PROBLEMS: list[dict[str, Any]] = [
    {
        "task_id": 2,
        "text": "Write a function to find the similar elements from the given two tuple lists.",
        "code": "def similar_elements(test_tup1, test_tup2):\r\n  res = tuple(set(test_tup1) & "
        "set(test_tup2))\r\n  return (res) ",
        "test_list": [
            "assert similar_elements((3, 4, 5, 6),(5, 7, 4, 10)) == (4, 5)",
            "assert similar_elements((1, 2, 3, 4),(5, 4, 3, 7)) == (3, 4)",
            "assert similar_elements((11, 12, 14, 13),(17, 15, 14, 13)) == (13, 14)",
        ],
    },
    {
        "task_id": 3,
        "text": "Write a python function to identify non-prime numbers.",
        "code": "import math\r\ndef is_not_prime(n):\r\n    result = False\r\n    for i in "
        "range(2,int(math.sqrt(n)) + 1):\r\n        if n % i == 0:\r\n            result = "
        "True\r\n    return result",
        "test_list": [
            "assert is_not_prime(2) == False",
            "assert is_not_prime(10) == True",
            "assert is_not_prime(35) == True",
        ],
    },
    {
        "task_id": 4,
        "text": "Write a function to find the largest integers from a given list of numbers "
        "using heap queue algorithm.",
        "code": "import heapq as hq\r\ndef heap_queue_largest(nums,n):\r\n  largest_nums = "
        "hq.nlargest(n, nums)\r\n  return largest_nums",
        "test_list": [
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],3)==[85, 75, 65] ",
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],2)==[85, 75] ",
            "assert heap_queue_largest( [25, 35, 22, 85, 14, 65, 75, 22, 58],5)==[85, 75, 65, "
            "58, 35]",
        ],
    },
]
"""The MBPP paper's prompt problems (task ids 2-4), as lm-eval 0.4.13's
``mbpp/utils.py:list_fewshot_samples`` lists them."""


class MBPP(CodeTask):
    """MBPP (full config, test split: task ids 11-510), 3-shot."""

    NAME = "mbpp"
    DATASET_PATH = "google-research-datasets/mbpp"
    DATASET_NAME = "full"
    # lm-eval 0.4.13's mbpp.yaml names no revision (the hub's main); this is main's commit,
    # as pinned by public pipelines
    DATASET_REVISION = "4bb6404fdc6cacfda99d4ac4205087b89d32030c"
    LOCAL_FILES = {"test": "mbpp/test.jsonl"}
    SAMPLE_SPLIT = "test"
    FEWSHOT_SAMPLES = PROMPT_PROBLEMS
    TARGET_DELIMITER = ""
    GENERATION = GenerationArgs(until=("[DONE]",), max_gen_toks=256)

    def _tests(self, item: dict[str, Any]) -> str:
        return "\n".join(item["test_list"][:3])

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return (
            f"You are an expert Python programmer, and here is your task: {item['text']} "
            f"Your code should pass these tests:\n\n{self._tests(item)}\n[BEGIN]\n"
        )

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return self._tests(item)

    def doc_to_fewshot_target(self, item: dict[str, Any]) -> str:
        return f"{item['code']}\n[DONE]"

    def item_id(self, item: dict[str, Any]) -> str | None:
        return f"Mbpp/{item['task_id']}"

    def code(self, completion: str) -> str:
        """The code taken from a completion: the completion as generated."""
        return completion

    def program(self, item: dict[str, Any], completion: str) -> str:
        setup = item.get("test_setup_code") or ""
        body = self.code(completion) + "\n" + self._tests(item)
        return f"{setup}\n{body}" if setup.strip() else body


class MBPPInstruct(MBPP):
    """MBPP for chat models: lm-eval's instruction, the answer opened as a code block."""

    NAME = "mbpp_instruct"
    GENERATION = GenerationArgs(until=(), max_gen_toks=256)

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return (
            f"You are an expert Python programmer, and here is your task:\n{item['text']}\n"
            f"Your code should pass these tests:\n{self._tests(item)}"
        )

    def doc_to_prefix(self, item: dict[str, Any]) -> str | None:
        return "\n```python\n"

    def doc_to_fewshot_target(self, item: dict[str, Any]) -> str:
        return f"\n```python\n{item['code']}\n```"

    def __init__(self, code_block: str = "leading", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.code_block = code_block_setting(self.name, code_block)

    def code(self, completion: str) -> str:
        return fenced_code(completion, opened=True, block=self.code_block)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "code_block": self.code_block}
