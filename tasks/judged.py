"""Open-ended questions answered by the model and scored by a judge model.

``judged``: the user's own question file, JSON lines of ``{"id", "turns": [str, ...],
"reference"?: [str, ...], "category"?: str}`` (FastChat's ``question_id`` is read as
``id``). ``mt_bench``: FastChat's 80 two-turn questions (``mill/resources/data/mt_bench``).

Each turn is a generation: turn 1 from the first question, turn k from the conversation so
far (the model's own earlier answers), built by :meth:`JudgedTask.follow_up` once turn
k - 1 is answered (the evaluator's request rounds). The conversation goes through the
model's chat template; a model without one gets Mill's plain-text conversation format
(:func:`mill.task.chat.plain_conversation`), named in the task's settings as
``conversation_format``. Categories are the task's subjects (per-category scores).
Pairwise metrics read the baseline's answers (``baseline``: FastChat ``model_answer``
JSON lines, ``{"question_id", "choices": [{"turns": [...]}]}``, or ``{"id", "turns"}``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.judging import arena_hard_rows, question_rows, read_rows
from mill.schema import typed
from mill.task import Task
from mill.task.chat import plain_conversation
from mill.types import ChatTemplate, Doc, GenerationArgs, OutputType, Request

log = logging.getLogger("mill")


class JudgedTask(Task):
    """A multi-turn generative task whose metrics are judged (see the module doc)."""

    NAME = "judged"
    OUTPUT_TYPE = OutputType.GENERATIVE
    METRICS = ["judge_score"]
    GENERATION = GenerationArgs(max_gen_toks=1024)
    NEEDS_QUESTIONS = True

    def _read(
        self, rows: list[dict[str, Any]], references: str | None, baseline: str | None
    ) -> None:
        """Check the question rows and attach their references and baseline answers
        (:func:`mill.judging.question_rows`)."""
        self.rows: list[dict[str, Any]] = question_rows(
            rows, self.questions, references, baseline, self.max_turns
        )
        if self.limit is not None:
            self.rows = self.rows[: self.limit]
        categories = list(dict.fromkeys(r["category"] for r in self.rows))
        self.SUBJECTS = categories  # the task's subjects are the file's categories
        self.subjects = categories

    def __init__(
        self,
        questions: str = "",
        references: str | None = None,
        baseline: str | None = None,
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("chat_template", True)
        super().__init__(**kwargs)
        files = {"questions": questions, "references": references, "baseline": baseline}
        settings = typed("task", {**files, "max_turns": max_turns})  # the schema's rules
        questions, max_turns = settings["questions"], settings["max_turns"]
        if not questions and type(self).NEEDS_QUESTIONS:
            raise TaskError(
                f"task {self.name!r} needs its question file: task.questions=/path/q.jsonl "
                '(JSON lines of {"id", "turns": [...], "reference"?: [...], "category"?})'
            )
        self.questions: str = questions
        self.references: str | None = settings["references"]
        self.baseline: str | None = settings["baseline"]
        self.max_turns: int | None = max_turns
        self.rows = []
        if questions:
            self._read(read_rows(self.questions, "question file"), references, baseline)
        self._format = "plain_text"

    def prepare(self, source: DataSource) -> None:
        return None  # rows are read and checked when the task is built

    def _conversation(self, turns: Sequence[tuple[str, str]]) -> tuple[str, Any]:
        """(context, messages) of a conversation for the model being evaluated."""
        msgs = [("system", self.system_prompt)] if self.system_prompt else []
        msgs += list(turns)
        dicts = [{"role": r, "content": c} for r, c in msgs]
        if self._hand_messages:
            return plain_conversation(dicts), tuple(msgs)
        if self._chat is not None:
            return self._chat(dicts, True), None
        return plain_conversation(dicts), None

    def docs(
        self, source: DataSource, chat: ChatTemplate | None = None, messages: bool = False
    ) -> Iterator[Doc]:
        self._chat = chat if self.chat_template else None
        self._hand_messages = messages
        self._format = "messages" if messages else "chat_template" if self._chat else "plain_text"
        if self._format == "plain_text":
            log.warning(
                "task %s: the model has no chat template; its conversations use Mill's "
                "plain-text format (### User / ### Assistant; docs/judging.md)",
                self.name,
            )
        for doc_id, item in enumerate(self.rows):
            context, msgs = self._conversation([("user", item["turns"][0])])
            yield Doc(
                task=self.name,
                id=doc_id,
                subject=item["category"],
                context=context,
                gold=tuple(item["reference"]) if "reference" in item else None,
                item=item,
                messages=msgs,
            )

    def follow_up(self, doc: Doc, answers: Sequence[str]) -> list[Request]:
        """The next turn's request, from the conversation so far; [] after the last."""
        turns = doc.item["turns"]
        k = len(answers)
        if k >= len(turns):
            return []
        conversation: list[tuple[str, str]] = []
        for question, answer in zip(turns, answers, strict=False):
            conversation += [("user", question), ("assistant", answer)]
        context, msgs = self._conversation([*conversation, ("user", turns[k])])
        return [
            Request(
                OutputType.GENERATIVE,
                task=self.name,
                subject=doc.subject,
                doc_id=doc.id,
                index=0,
                context=context,
                generation=self.generation,
                role=f"turn{k + 1}",
                messages=msgs,
            )
        ]

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(
            questions=self.questions,
            references=self.references,
            baseline=self.baseline,
            max_turns=self.max_turns,
            conversation_format=self._format,
        )
        return out


class MTBench(JudgedTask):
    """MT-Bench: FastChat's questions and rubrics; math, reasoning and coding graded
    against GPT-4's reference answers (``mt_bench_score``)."""

    NAME = "mt_bench"
    METRICS = ["mt_bench_score"]


class ArenaHard(JudgedTask):
    """Arena-Hard-Auto v0.1: 500 prompts judged pairwise against gpt-4-0314's answers
    (``arena_hard_score``). ``data=local data.dir=...`` reads ``arena_hard/`` there (the
    full set); ``data=bundled`` the shipped excerpt."""

    NAME = "arena_hard"
    METRICS = ["arena_hard_score"]
    NEEDS_QUESTIONS = False
    SUBJECTS = ["arena-hard-v0.1"]
    FOLDER = "arena_hard"

    def prepare(self, source: DataSource) -> None:
        root = source.root
        if root is None:
            raise TaskError(
                f"task {self.name!r} reads Arena-Hard's files: use data=local data.dir=<folder "
                "with arena_hard/> or data=bundled (an excerpt)"
            )
        folder = root / self.FOLDER
        rows, baseline = arena_hard_rows(folder)
        self.questions = str(folder / "question.jsonl")
        self._read(rows, None, None)
        for item in self.rows:
            if item["id"] in baseline:
                item["baseline"] = baseline[item["id"]]
        self._source = source

    def docs(
        self, source: DataSource, chat: ChatTemplate | None = None, messages: bool = False
    ) -> Iterator[Doc]:
        if getattr(self, "_source", None) != source:  # read from this source's folder
            self.prepare(source)
        yield from super().docs(source, chat, messages)
