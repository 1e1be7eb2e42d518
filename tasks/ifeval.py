"""IFEval (Zhou et al. 2023): 541 prompts with 25 kinds of verifiable instructions ("answer
in all lowercase", "at least 300 words"), checked without a judge by Mill's checker
(:mod:`mill.ifeval`); lm-eval 0.4.13's ``ifeval`` / ``leaderboard_ifeval``.

The prompt is the user turn, through the model's chat template (``task.chat_template``, on
by default); a model without one gets the prompt as plain text (lm-eval without
``--apply_chat_template``), with one warning, and the task's settings say which
(``conversation_format``). Greedy, at most 1280 new tokens, no stop strings but the
model's end of turn. The answer checked is the generation under the run's reasoning rule
(``reasoning.tags``, :class:`mill.types.ReasoningRule`).

A row's instruction ids and arguments are checked when the docs are built, before a model
loads: an unknown id or arguments that do not fit the instruction stop the run with one line
(or skip the row with ``data.skip_bad_rows=true``).
"""

from __future__ import annotations

from typing import Any

from mill.data.load import DataSource
from mill.ifeval import checks, text
from mill.task.base import SKIP_HINT, BadRow
from mill.task.chat_default import ChatTemplateByDefault
from mill.types import Doc, GenerationArgs, OutputType


class IFEval(ChatTemplateByDefault):
    """IFEval's prompts, each response checked against its prompt's instructions."""

    NAME = "ifeval"
    DATASET_PATH = "google/IFEval"
    # lm-eval 0.4.13's ifeval.yaml names no revision; this is the head of google/IFEval's main
    # as its hub page shows it (not loaded from here: no hub access offline)
    DATASET_REVISION = "966cd89545d6b6acfd7638bc708b98261ca58e84"
    LOCAL_FILES = {"train": "ifeval/input_data.jsonl"}
    SAMPLE_SPLIT = "train"
    OUTPUT_TYPE = OutputType.GENERATIVE
    METRICS = [
        "prompt_level_strict_acc",
        "inst_level_strict_acc",
        "prompt_level_loose_acc",
        "inst_level_loose_acc",
    ]
    GENERATION = GenerationArgs(until=(), max_gen_toks=1280)

    def doc_to_text(self, item: dict[str, Any]) -> str:
        return str(item["prompt"])

    def doc_to_target(self, item: dict[str, Any]) -> list[str]:
        return [str(i) for i in item["instruction_id_list"]]

    def item_id(self, item: dict[str, Any]) -> str | None:
        return str(item["prompt"])  # IFEval's response files name their prompt, not a key

    def instruction_checks(self, item: dict[str, Any]) -> list[checks.Check]:
        """The checks of a row's instructions (:func:`mill.ifeval.checks.checks`)."""
        return checks.checks(item["instruction_id_list"], item["kwargs"])

    def prepare(self, source: DataSource) -> None:
        text.require()  # the checker's libraries, before any model loads
        super().prepare(source)

    def validate_doc(self, doc: Doc) -> None:
        """A row whose instructions IFEval's checker cannot build is a bad row."""
        item = doc.item
        try:
            self.instruction_checks(item)
        except checks.BadInstruction as err:
            key = f" (key {item['key']})" if "key" in item else ""
            raise BadRow(
                f"task {self.name!r}, split {self.sample_split!r}, row {doc.id}{key}: {err}"
                + SKIP_HINT,
                split=self.sample_split,
                row=doc.id,
            ) from err
        except (KeyError, TypeError):
            pass  # a missing field: named where it is read (doc_to_target reads the list)
