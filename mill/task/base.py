"""The task API (seed 001): class attributes describe a benchmark, ``_get_*`` hooks format it.

A subclass sets ``NAME``, ``DATASET_PATH``, ``SAMPLE_SPLIT``, ``FEWSHOT_SPLIT``, ``SUBJECTS``,
``METRICS`` and ``OUTPUT_TYPE`` and implements the hooks it needs. Task configs select a
class with ``_target_`` and set its fields (few-shot count, limit, dataset overrides, ...).

Prompts follow lm-evaluation-harness: ``context = initial prompt + shots + query`` where
each shot is ``query + TARGET_DELIMITER + target`` followed by ``FEWSHOT_DELIMITER``, and a
LOGPROBS continuation is ``TARGET_DELIMITER + choice``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from mill.data.load import DatasetSpec, DataSource, load_rows
from mill.errors import TaskError
from mill.task.doc import Doc
from mill.task.fewshot import choose_shots
from mill.types import GenerationArgs, OutputType, Request


class Task:
    """Base class of every benchmark. Subclasses override class attributes and hooks."""

    NAME: ClassVar[str] = ""
    DATASET_PATH: ClassVar[str] = ""
    DATASET_NAME: ClassVar[str | None] = None
    DATASET_REVISION: ClassVar[str | None] = None
    LOCAL_FILES: ClassVar[dict[str, str]] = {}
    LOCAL_BUILDER: ClassVar[str] = "json"
    LOCAL_BUILDER_KWARGS: ClassVar[dict[str, Any]] = {}
    SAMPLE_SPLIT: ClassVar[str] = "test"
    FEWSHOT_SPLIT: ClassVar[str | None] = None
    SUBJECTS: ClassVar[list[str]] = ["default"]
    METRICS: ClassVar[list[str]] = []
    """Names of the default metrics (``conf/metrics/<name>.yaml``)."""
    OUTPUT_TYPE: ClassVar[OutputType] = OutputType.LOGPROBS
    TARGET_DELIMITER: ClassVar[str] = " "
    FEWSHOT_DELIMITER: ClassVar[str] = "\n\n"
    GENERATION: ClassVar[GenerationArgs] = GenerationArgs()

    def __init__(
        self,
        name: str | None = None,
        num_fewshot: int = 0,
        limit: int | None = None,
        fewshot_sampler: str = "random",
        fewshot_seed: int = 1234,
        subjects: list[str] | None = None,
        dataset: dict[str, Any] | None = None,
        sample_split: str | None = None,
        fewshot_split: str | None = None,
        generation: dict[str, Any] | None = None,
    ) -> None:
        self.name = name or self.NAME
        self.num_fewshot = int(num_fewshot)
        self.limit = limit
        self.fewshot_sampler = fewshot_sampler
        self.fewshot_seed = int(fewshot_seed)
        self.subjects = list(subjects) if subjects else list(self.SUBJECTS)
        unknown = sorted(set(self.subjects) - set(self.SUBJECTS))
        if unknown:
            raise TaskError(f"task {self.name!r}: unknown subjects {unknown}")
        self.sample_split = sample_split or self.SAMPLE_SPLIT
        self.fewshot_split = fewshot_split or self.FEWSHOT_SPLIT
        self.configure(num_fewshot=self.num_fewshot, limit=limit)
        overrides = dict(dataset or {})
        self.dataset = DatasetSpec(
            path=overrides.pop("path", self.DATASET_PATH),
            name=overrides.pop("name", self.DATASET_NAME),
            revision=overrides.pop("revision", self.DATASET_REVISION),
            local_files=dict(overrides.pop("local_files", self.LOCAL_FILES)),
            local_builder=overrides.pop("builder", self.LOCAL_BUILDER),
            builder_kwargs=dict(overrides.pop("builder_kwargs", self.LOCAL_BUILDER_KWARGS)),
            data_files=dict(overrides.pop("data_files", {}) or {}),
        )
        if overrides:
            raise TaskError(f"task {self.name!r}: unknown dataset keys {sorted(overrides)}")
        gen = dict(generation or {})
        if "until" in gen:
            gen["until"] = tuple(gen["until"])
        self.generation = GenerationArgs(**{**self.GENERATION.__dict__, **gen})
        self.origins: dict[str, Any] = {}

    def configure(self, num_fewshot: int | None = None, limit: int | None = None) -> None:
        """Set the few-shot count and/or the doc limit (used by task groups), validated."""
        if num_fewshot is not None:
            if int(num_fewshot) < 0:
                raise TaskError(f"task {self.name!r}: num_fewshot must be >= 0")
            if int(num_fewshot) and not self.fewshot_split:
                raise TaskError(
                    f"task {self.name!r} has no few-shot split; set task.fewshot_split or "
                    "task.num_fewshot=0"
                )
            self.num_fewshot = int(num_fewshot)
        if limit is not None:
            if int(limit) < 1:
                raise TaskError(f"task {self.name!r}: limit must be >= 1 (or null for all)")
            self.limit = int(limit)

    # ----- hooks (seed 001) -------------------------------------------------------------
    def _get_instruction_text(self, item: dict[str, Any]) -> str:
        """The query for one item, without its answer (lm-eval ``doc_to_text``)."""
        raise NotImplementedError

    def _get_ground_truth(self, item: dict[str, Any]) -> str | list[str] | None:
        """The correct answer: the gold choice text, or the reference answer(s)."""
        raise NotImplementedError

    def _get_possible_completions(self, item: dict[str, Any]) -> list[str] | None:
        """LOGPROBS: the candidate answers (without the target delimiter)."""
        return None

    def _get_fewshot_target_text(self, item: dict[str, Any]) -> str:
        """The answer written after a few-shot example's query."""
        truth = self._get_ground_truth(item)
        return truth[0] if isinstance(truth, list) else str(truth)

    def _get_system_prompt_text(self, item: dict[str, Any]) -> str | None:
        """A system prompt (used with chat templates)."""
        return None

    def _get_initial_prompt_text(self, item: dict[str, Any]) -> str | None:
        """Text placed before the few-shot examples (lm-eval ``description``)."""
        return None

    def _get_perplexity_text(self, item: dict[str, Any]) -> str:
        """PERPLEXITY: the text scored as a whole."""
        raise NotImplementedError

    def _get_gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        """LOGPROBS: index of the gold choice (default: position of the ground truth)."""
        truth = self._get_ground_truth(item)
        if truth not in choices:
            raise TaskError(f"task {self.name!r}: gold answer {truth!r} is not among {choices}")
        return choices.index(str(truth))

    def _get_idk_index(self, item: dict[str, Any], choices: list[str]) -> int | None:
        """Index of an explicit "I don't know" choice (IDK variants), else None."""
        return None

    def _adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """Turn a local file's row into the hub's schema (identity by default)."""
        return row

    def _process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Preprocess the rows of a split (lm-eval ``process_docs``); identity by default."""
        return rows

    # ----- machinery ----------------------------------------------------------------------
    def _load_split(self, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
        loaded = load_rows(self.dataset, split, source, subject)
        self.origins[f"{subject}/{split}"] = loaded.origin
        rows = loaded.rows
        if loaded.local:
            rows = []
            for index, row in enumerate(loaded.rows):
                try:
                    rows.append(self._adapt_local_row(row))
                except (KeyError, TypeError) as err:
                    raise TaskError(
                        f"task {self.name!r}, subject {subject!r}, row {index} of "
                        f"{loaded.origin.get('file', split)}: the row lacks field {err} that "
                        "the task needs; fix the file or point the task at the right one"
                    ) from err
        return self._process_docs(rows)

    def _build_context(self, item: dict[str, Any], shots: list[dict[str, Any]]) -> str:
        parts = []
        initial = self._get_initial_prompt_text(item)
        if initial:
            parts.append(initial)
        for shot in shots:
            parts.append(
                self._get_instruction_text(shot)
                + self.TARGET_DELIMITER
                + self._get_fewshot_target_text(shot)
                + self.FEWSHOT_DELIMITER
            )
        parts.append(self._get_instruction_text(item))
        return "".join(parts)

    def _make_doc(
        self,
        subject: str,
        doc_id: int,
        item: dict[str, Any],
        shots: list[int],
        pool: list[dict[str, Any]],
    ) -> Doc:
        common = dict(
            task=self.name, id=doc_id, subject=subject, fewshot_ids=tuple(shots), item=item
        )
        where = f"task {self.name!r}, subject {subject!r}, doc {doc_id}"
        try:
            context = (
                self._build_context(item, [pool[i] for i in shots])
                if self.OUTPUT_TYPE is not OutputType.PERPLEXITY
                else ""
            )
            if self.OUTPUT_TYPE is OutputType.LOGPROBS:
                choices = list(self._get_possible_completions(item) or [])
                if not choices:
                    raise TaskError(f"{where}: the doc has no choices")
                try:
                    gold = self._get_gold_index(item, choices)
                except (ValueError, IndexError) as err:
                    raise TaskError(
                        f"{where}: the gold answer is not among its {len(choices)} choices ({err})"
                    ) from err
                if not 0 <= gold < len(choices):
                    raise TaskError(f"{where}: gold index {gold} outside {len(choices)} choices")
                idk = self._get_idk_index(item, choices)
                return Doc(
                    context=context, choices=tuple(choices), gold=gold, idk_index=idk, **common
                )
            if self.OUTPUT_TYPE is OutputType.GENERATIVE:
                truth = self._get_ground_truth(item)
                gold = tuple(truth) if isinstance(truth, list) else truth
                return Doc(context=context, gold=gold, **common)
            text = self._get_perplexity_text(item)
            counted = self._get_ground_truth(item)
            return Doc(context="", continuation=text, gold=str(counted or text), **common)
        except KeyError as err:
            raise TaskError(
                f"{where} (or one of its few-shot examples {list(shots)}): the doc lacks field "
                f"{err} that the prompt needs"
            ) from err

    def docs(self, source: DataSource) -> Iterator[Doc]:
        """Load the data and yield every evaluated doc with its few-shot context."""
        for subject in self.subjects:
            rows = self._load_split(self.sample_split, source, subject)
            if self.limit is not None:
                rows = rows[: int(self.limit)]
            pool: list[dict[str, Any]] = []
            same_split = self.fewshot_split == self.sample_split
            if self.num_fewshot:
                pool = (
                    rows
                    if same_split and self.limit is None
                    else self._load_split(str(self.fewshot_split), source, subject)
                )
            for doc_id, item in enumerate(rows):
                shots = (
                    choose_shots(
                        self.fewshot_sampler,
                        self.num_fewshot,
                        len(pool),
                        task=self.name,
                        doc_id=doc_id,
                        seed=self.fewshot_seed,
                        exclude=doc_id if same_split else None,
                    )
                    if self.num_fewshot
                    else []
                )
                yield self._make_doc(subject, doc_id, item, shots, pool)

    def requests(self, doc: Doc) -> list[Request]:
        """The model requests one doc needs (one per choice for LOGPROBS)."""
        base = dict(task=self.name, subject=doc.subject, doc_id=doc.id)
        if self.OUTPUT_TYPE is OutputType.LOGPROBS:
            return [
                Request(
                    OutputType.LOGPROBS,
                    index=i,
                    context=doc.context,
                    continuation=self.TARGET_DELIMITER + choice,
                    **base,
                )
                for i, choice in enumerate(doc.choices)
            ]
        if self.OUTPUT_TYPE is OutputType.GENERATIVE:
            return [
                Request(
                    OutputType.GENERATIVE,
                    index=0,
                    context=doc.context,
                    generation=self.generation,
                    **base,
                )
            ]
        return [
            Request(
                OutputType.PERPLEXITY, index=0, context="", continuation=doc.continuation, **base
            )
        ]

    def describe(self) -> dict[str, Any]:
        """Settings that change scores (recorded in results and compared by tools)."""
        return {
            "name": self.name,
            "class": f"{type(self).__module__}.{type(self).__qualname__}",
            "output_type": self.OUTPUT_TYPE.value,
            "num_fewshot": self.num_fewshot,
            "fewshot_sampler": self.fewshot_sampler,
            "fewshot_seed": self.fewshot_seed,
            "limit": self.limit,
            "subjects": self.subjects,
            "sample_split": self.sample_split,
            "fewshot_split": self.fewshot_split,
            "dataset": {
                "path": self.dataset.path,
                "name": self.dataset.name,
                "revision": self.dataset.revision,
            },
            "generation": self.generation.__dict__
            if self.OUTPUT_TYPE is OutputType.GENERATIVE
            else None,
        }


class TaskGroup:
    """Several tasks evaluated together and aggregated (e.g. ``arc`` = easy + challenge).

    ``num_fewshot`` and ``limit``, when set, apply to every member.
    """

    def __init__(
        self,
        name: str,
        tasks: list[Task],
        num_fewshot: int | None = None,
        limit: int | None = None,
    ) -> None:
        if not tasks:
            raise TaskError(f"task group {name!r} has no tasks")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            raise TaskError(f"task group {name!r} lists a task twice: {names}")
        self.name = name
        self.tasks = list(tasks)
        for task in self.tasks:
            task.configure(num_fewshot=num_fewshot, limit=limit)
