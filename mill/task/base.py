"""The task API: class attributes describe a benchmark, public hooks format it.

A subclass sets ``NAME``, ``DATASET_PATH``, ``SAMPLE_SPLIT``, ``FEWSHOT_SPLIT``, ``SUBJECTS``,
``METRICS`` and ``OUTPUT_TYPE`` and implements the hooks it needs, named after
lm-evaluation-harness's where they mean the same (``doc_to_text``, ``doc_to_target``,
``doc_to_choice``, ``process_docs``, ...; the list is docs/writing-tasks.md). Task configs
select a class with ``_target_`` and set its fields (few-shot count, limit, dataset
overrides, ...).

Prompts follow lm-evaluation-harness 0.4.13 (``fewshot_context``/``build_qa_turn``): a
prompt is a list of messages (:mod:`mill.task.chat`) -- an optional system message (system
prompt + ``doc_to_description``, lm-eval's description), per few-shot example a user
turn ``query`` + ``TARGET_DELIMITER`` and an assistant turn ``target`` +
``FEWSHOT_DELIMITER``, then the evaluated query. Plain text joins them; with
``chat_template=true`` the model's chat template renders them, and a LOGPROBS continuation
loses its target delimiter (as lm-eval). A LOGPROBS continuation is
``TARGET_DELIMITER + choice``.

A :class:`Task` is its class (the benchmark's attributes and hooks) and four parts, each in
its module: its specification (:class:`mill.task.spec.TaskSpec`, the config's settings typed
by the schema: ``task.limit`` reads ``task.spec.limit``), loading (:mod:`mill.task.loading`),
prompt rendering and doc building (:mod:`mill.task.prompts`) and request building
(:mod:`mill.task.requests`). Those modules take data (the spec, the class's declarations,
the hooks as functions of a row), never the task: data flows from this class down to them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any, ClassVar

from mill.data.load import DatasetSpec, DataSource
from mill.errors import ConfigError, TaskError
from mill.schema import typed
from mill.task import loading, prompts
from mill.task.prompts import DocBuild
from mill.task.requests import build_requests
from mill.task.rows import SKIP_HINT, BadRow, gold_position
from mill.task.spec import TaskDefaults, TaskSpec
from mill.types import ChatTemplate, Doc, GenerationArgs, OutputType, Request

__all__ = ["SKIP_HINT", "BadRow", "Task", "TaskGroup", "TaskSpec"]


class _FromSpec:
    """A task attribute that is its spec's field (``task.limit`` is ``task.spec.limit``)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.field = name

    def __get__(self, task: Any, owner: type | None = None) -> Any:
        return self if task is None else getattr(task.spec, self.field)

    def __set__(self, task: Any, value: Any) -> None:
        setattr(task.spec, self.field, value)


RENAMED_HOOKS: dict[str, str] = {
    "_get_instruction_text": "doc_to_text",
    "_get_ground_truth": "doc_to_target",
    "_get_possible_completions": "doc_to_choice",
    "_get_fewshot_target_text": "doc_to_fewshot_target",
    "_get_system_prompt_text": "doc_to_system_prompt",
    "_get_initial_prompt_text": "doc_to_description",
    "_get_gen_prefix": "doc_to_prefix",
    "_get_perplexity_text": "doc_to_perplexity_text",
    "_get_gold_index": "gold_index",
    "_get_idk_index": "idk_index",
    "_get_item_id": "item_id",
    "_adapt_local_row": "adapt_local_row",
    "_process_docs": "process_docs",
    "_make_doc": "validate_doc",
}
"""The task hooks of Mill before they became public, and each one's name now. A class that
still defines an old name is refused when it is created (it would be silently ignored)."""


class Task:
    """Base class of every benchmark. Subclasses override class attributes and hooks."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        old = next((name for name in RENAMED_HOOKS if name in vars(cls)), None)
        if old is not None:
            new = RENAMED_HOOKS[old]
            how = (
                "check the built doc there (raise BadRow to refuse it)"
                if old == "_make_doc"
                else "rename the method"
            )
            raise TaskError(
                f"task class {cls.__module__}.{cls.__qualname__} defines {old}, a hook Mill "
                f"no longer calls: it is now {new}; {how} (docs/writing-tasks.md)"
            )

    NAME: ClassVar[str] = ""
    DATASET_PATH: ClassVar[str] = ""
    DATASET_NAME: ClassVar[str | None] = None
    DATASET_REVISION: ClassVar[str | None] = None
    LOCAL_FILES: ClassVar[dict[str, str]] = {}
    LOCAL_BUILDER: ClassVar[str] = "json"
    LOCAL_BUILDER_KWARGS: ClassVar[dict[str, Any]] = {}
    LOCAL_TEXT_COLUMNS: ClassVar[tuple[str, ...]] = ()
    """Local CSV/TSV files: their columns, all read as text as written (see
    :attr:`mill.data.load.DatasetSpec.text_columns`)."""
    LOCAL_SIDE_FILES: ClassVar[dict[str, dict[str, str]]] = {}
    """split -> {field: file}: line-aligned text files whose lines become a field of each
    local row (PIQA's ``valid-labels.lst``). Override one with
    ``task.dataset.data_files.<split>_<field>=/path``."""
    SAMPLE_SPLIT: ClassVar[str] = "test"
    FEWSHOT_SPLIT: ClassVar[str | None] = None
    FEWSHOT_SAMPLES: ClassVar[list[dict[str, Any]]] = []
    """Fixed few-shot examples used instead of a split (lm-eval ``fewshot_config.samples``)."""
    # SUBJECTS, METRICS, OUTPUT_TYPE and the delimiters: class defaults an instance may
    # shadow (a YAML task, a judged task whose subjects are its file's categories)
    SUBJECTS: list[str] = ["default"]
    METRICS: list[str] = []
    """Names of the default metrics (``conf/metrics/<name>.yaml``)."""
    OUTPUT_TYPE: OutputType = OutputType.LOGPROBS
    MULTIPLE_INPUT: ClassVar[bool] = False
    """LOGPROBS: the choices are contexts scored on one shared continuation (WinoGrande)."""
    TARGET_DELIMITER: str = " "
    FEWSHOT_DELIMITER: str = "\n\n"
    GENERATION: ClassVar[GenerationArgs] = GenerationArgs()
    EXECUTES: ClassVar[bool] = False
    """GENERATIVE tasks scored by running programs (:meth:`programs`): the run checks the
    sandbox at start-up and executes each doc's programs after generation."""

    name = _FromSpec()
    num_fewshot = _FromSpec()
    limit = _FromSpec()
    fewshot_sampler = _FromSpec()
    fewshot_seed = _FromSpec()
    subjects = _FromSpec()
    sample_split = _FromSpec()
    fewshot_split = _FromSpec()
    dataset = _FromSpec()
    generation = _FromSpec()
    repeats = _FromSpec()
    chat_template = _FromSpec()
    system_prompt = _FromSpec()
    fewshot_as_multiturn = _FromSpec()

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
        repeats: int = 1,
        chat_template: bool = False,
        system_prompt: str | None = None,
        fewshot_as_multiturn: bool = True,
    ) -> None:
        self.spec = TaskSpec.build(
            self.defaults(),
            name=name,
            num_fewshot=num_fewshot,
            limit=limit,
            fewshot_sampler=fewshot_sampler,
            fewshot_seed=fewshot_seed,
            subjects=subjects,
            dataset=dataset,
            sample_split=sample_split,
            fewshot_split=fewshot_split,
            generation=generation,
            repeats=repeats,
            chat_template=chat_template,
            system_prompt=system_prompt,
            fewshot_as_multiturn=fewshot_as_multiturn,
        )
        """The task's settings, typed (:class:`mill.task.spec.TaskSpec`)."""
        self.origins: dict[str, Any] = {}
        """Where each split came from (``<subject>/<split>``: a file and its digest, or the
        hub's dataset and revision), filled as the splits load (the manifest's)."""
        # what a judged task's conversations read (tasks/judged.py sets them in its docs)
        self._chat: ChatTemplate | None = None
        self._hand_messages = False
        self.skipped: list[dict[str, Any]] = []
        """Bad rows skipped by the last build of the docs (``data.skip_bad_rows=true``)."""
        self._prepared: tuple[DataSource, list[Doc]] | None = None

    def configure(self, num_fewshot: int | None = None, limit: int | None = None) -> None:
        """Set the few-shot count and/or the doc limit (used by task groups), typed by the
        schema."""
        self.spec = self.spec.counted(bool(self.FEWSHOT_SAMPLES), num_fewshot, limit)

    def defaults(self) -> TaskDefaults:
        """What the class declares, as data (an instance may shadow ``SUBJECTS`` and
        ``OUTPUT_TYPE``): the defaults of :attr:`spec`."""
        return TaskDefaults(
            name=self.NAME,
            subjects=list(self.SUBJECTS),
            sample_split=self.SAMPLE_SPLIT,
            fewshot_split=self.FEWSHOT_SPLIT,
            dataset=DatasetSpec(
                path=self.DATASET_PATH,
                name=self.DATASET_NAME,
                revision=self.DATASET_REVISION,
                local_files=dict(self.LOCAL_FILES),
                local_builder=self.LOCAL_BUILDER,
                builder_kwargs=dict(self.LOCAL_BUILDER_KWARGS),
                text_columns=tuple(self.LOCAL_TEXT_COLUMNS),
            ),
            generation=self.GENERATION,
            output_type=self.OUTPUT_TYPE,
            fixed_shots=bool(self.FEWSHOT_SAMPLES),
        )

    # ----- hooks: what a task author overrides -------------------------------------------
    # Each takes a row of the dataset (``item``: a dict that raises MissingField, a
    # KeyError, for a field it lacks; the doc is then a bad row naming the field) and is
    # named after lm-eval 0.4.13's method of the same meaning where there is one.
    def doc_to_text(self, item: dict[str, Any]) -> str:
        """The question of a row, without its answer (lm-eval ``doc_to_text``). For
        MULTIPLE_INPUT tasks: the question completed with the gold choice (few-shot
        turns)."""
        raise NotImplementedError

    def doc_to_target(self, item: dict[str, Any]) -> str | list[str] | None:
        """The correct answer (lm-eval ``doc_to_target``, as text): the gold choice's text,
        or the reference answer(s) of a GENERATIVE task. For MULTIPLE_INPUT tasks: the
        continuation shared by every choice. PERPLEXITY: the text whose words and bytes
        are counted (None: :meth:`doc_to_perplexity_text`'s)."""
        raise NotImplementedError

    def doc_to_choice(self, item: dict[str, Any]) -> list[str] | None:
        """LOGPROBS: the candidate answers, without the target delimiter (lm-eval
        ``doc_to_choice``). For MULTIPLE_INPUT tasks: the candidate contexts."""
        return None

    def doc_to_fewshot_target(self, item: dict[str, Any]) -> str:
        """The answer written after a few-shot example's question (default: the first of
        :meth:`doc_to_target`)."""
        truth = self.doc_to_target(item)
        return truth[0] if isinstance(truth, list) else str(truth)

    def doc_to_system_prompt(self, item: dict[str, Any]) -> str | None:
        """The task's system prompt (``task.system_prompt`` replaces it); None by
        default."""
        return None

    def doc_to_description(self, item: dict[str, Any]) -> str | None:
        """Text placed before the few-shot examples (lm-eval's ``description``); None by
        default."""
        return None

    def doc_to_prefix(self, item: dict[str, Any]) -> str | None:
        """GENERATIVE: the start of the answer written for the model (lm-eval
        ``doc_to_prefix``, its ``gen_prefix``): an assistant turn the model continues;
        None by default."""
        return None

    def doc_to_perplexity_text(self, item: dict[str, Any]) -> str:
        """PERPLEXITY: the text scored as a whole (lm-eval's rolling ``doc_to_target``)."""
        raise NotImplementedError

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        """LOGPROBS: the index of the gold choice among ``choices`` (default: the position
        of :meth:`doc_to_target` among them, refused when absent or repeated)."""
        return gold_position(choices, self.doc_to_target(item), "choices")

    def idk_index(self, item: dict[str, Any], choices: list[str]) -> int | None:
        """LOGPROBS: the index of an explicit "I don't know" choice (IDK variants); None
        by default."""
        return None

    def item_id(self, item: dict[str, Any]) -> str | None:
        """The dataset's own id of a row (``HumanEval/0``), carried by its requests for
        models that replay saved answers (:attr:`mill.types.Request.item_id`); None by
        default."""
        return None

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """A local file's row in the hub's schema, so that the other hooks read one
        layout (identity by default). A KeyError or TypeError names the row as bad."""
        return row

    def process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The rows of a split preprocessed (lm-eval ``process_docs``); identity by
        default. A KeyError names the row it fails on."""
        return rows

    def validate_doc(self, doc: Doc) -> None:
        """Check a built doc (its row is ``doc.item``); raise :class:`BadRow` to refuse it
        (the run stops, or with ``data.skip_bad_rows=true`` skips and counts it). Accepts
        every doc by default."""
        return None

    def programs(self, doc: Doc, texts: list[str]) -> list[str] | None:
        """EXECUTES tasks: one complete program per generation of ``doc`` (in repeat
        order), run in the sandbox after generation; None for every other task."""
        return None

    def subject_groups(self) -> dict[str, list[str]]:
        """Named groups of subjects aggregated micro and macro (e.g. MMLU's categories);
        none by default."""
        return {}

    # ----- loading (mill.task.loading) ----------------------------------------------------
    def load_split(self, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
        """The rows of one split of one subject as the task reads them: loaded from
        ``source``, local rows adapted to the hub's schema (:meth:`adapt_local_row`), then
        processed (:meth:`process_docs`): what the docs are built from; the parity tools
        write them out for lm-eval. Where they came from goes to :attr:`origins`."""
        how = loading.Loading(
            task=self.name,
            dataset=self.dataset,
            side_files=self.LOCAL_SIDE_FILES,
            adapt=self.adapt_local_row,
            process=self.process_docs,
        )
        loaded = loading.load_split(how, split, source, subject)
        self.origins.update(loaded.origins)
        return loaded.rows

    # ----- docs (mill.task.prompts) -------------------------------------------------------
    @property
    def continuation_delimiter(self) -> str:
        """What precedes a LOGPROBS continuation: the target delimiter, or nothing when a
        chat template renders the prompt (lm-eval)."""
        return "" if self.chat_template else self.TARGET_DELIMITER

    def _doc_build(self, chat: ChatTemplate | None = None, messages: bool = False) -> DocBuild:
        """What building this task's docs needs, as data (:class:`mill.task.prompts.DocBuild`):
        its spec as it is now, its declarations, its hooks, the model's chat template."""
        hooks = prompts.RowHooks(
            text=self.doc_to_text,
            target=self.doc_to_target,
            choice=self.doc_to_choice,
            fewshot_target=self.doc_to_fewshot_target,
            system_prompt=self.doc_to_system_prompt,
            description=self.doc_to_description,
            prefix=self.doc_to_prefix,
            perplexity_text=self.doc_to_perplexity_text,
            gold_index=self.gold_index,
            idk_index=self.idk_index,
            check=self.validate_doc,
        )
        return DocBuild(
            spec=replace(self.spec),
            output_type=self.OUTPUT_TYPE,
            multiple_input=self.MULTIPLE_INPUT,
            target_delimiter=self.TARGET_DELIMITER,
            fewshot_delimiter=self.FEWSHOT_DELIMITER,
            fixed_shots=tuple(self.FEWSHOT_SAMPLES),
            hooks=hooks,
            chat=chat,
            hand_messages=messages,
        )

    def prepare(self, source: DataSource) -> None:
        """Load the data and build every doc now, before any model loads, so that a bad
        row stops the run early (or, with ``data.skip_bad_rows=true``, is counted in
        :attr:`skipped`). Without a chat template the docs are kept for :meth:`docs`.
        A subclass that builds its docs itself (overrides :meth:`docs`) checks its own."""
        if type(self).docs is not Task.docs:
            return
        chat_template, self.chat_template = self.chat_template, False
        try:
            built = list(self._build_docs(source, None))
        finally:
            self.chat_template = chat_template
        self._prepared = (source, built) if not chat_template else None

    def docs(
        self, source: DataSource, chat: ChatTemplate | None = None, messages: bool = False
    ) -> Iterator[Doc]:
        """Load the data and yield every evaluated doc with its few-shot context.

        ``chat`` is the model's chat template, used when ``chat_template`` is set.
        ``messages``: GENERATIVE docs carry their prompt as chat turns (:attr:`Doc.messages`)
        for a server that applies its own template; ``context`` is their plain text.
        """
        prepared = self._prepared
        if (
            prepared is not None
            and prepared[0] == source
            and not self.chat_template
            and not messages
        ):
            yield from prepared[1]
            return
        yield from self._build_docs(source, chat, messages)

    def _build_docs(
        self, source: DataSource, chat: ChatTemplate | None, messages: bool = False
    ) -> Iterator[Doc]:
        self.skipped = []
        return prompts.build_docs(
            self._doc_build(chat, messages), self.load_split, source, self.skipped
        )

    # ----- requests (mill.task.requests) --------------------------------------------------
    def requests(self, doc: Doc, unconditioned: bool = False) -> list[Request]:
        """The model requests one doc needs: one per choice for LOGPROBS (plus, with
        ``unconditioned``, one per choice with an empty context, for PMI), one per repeat
        for GENERATIVE, one for PERPLEXITY."""
        generative = self.OUTPUT_TYPE is OutputType.GENERATIVE
        return build_requests(
            doc,
            self.OUTPUT_TYPE,
            self.spec,
            self.continuation_delimiter,
            item_id=self.item_id(doc.item) if generative else None,
            unconditioned=unconditioned,
        )

    def greedy_repeats(self) -> str | None:
        """Why ``repeats`` cannot be generated by a model (greedy generation gives the same
        answer each time), or None. A model that replays saved answers has its repeats
        already: the runner asks this only of models that generate."""
        return self.spec.greedy_repeats()

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
            "fewshot_split": None if self.FEWSHOT_SAMPLES else self.fewshot_split,
            "dataset": {
                "path": self.dataset.path,
                "name": self.dataset.name,
                "revision": self.dataset.revision,
            },
            "generation": self.generation.__dict__
            if self.OUTPUT_TYPE is OutputType.GENERATIVE
            else None,
            "repeats": self.repeats,
            "chat_template": self.chat_template,
            "system_prompt": self.system_prompt,
            "fewshot_as_multiturn": self.fewshot_as_multiturn if self.chat_template else None,
        }


def _member(key: str, member: Any) -> Task:
    """A task of ``task=[...]`` (configured under ``task.<key>``), or ConfigError."""
    if isinstance(member, TaskGroup):
        names = ",".join(t.name for t in member.tasks)
        raise ConfigError(
            f"task {key!r} is a group of tasks ({names}); list its members instead: "
            f"task=[{names},...]"
        )
    if not isinstance(member, Task):
        raise ConfigError(f"task.{key} builds a {type(member).__name__}, not a mill Task")
    return member


class TaskGroup:
    """Several tasks evaluated together and aggregated (e.g. ``arc`` = easy + challenge).

    ``num_fewshot``, ``limit`` and the chat settings, when set, apply to every member.
    """

    def __init__(
        self,
        name: str,
        tasks: list[Task] | None = None,
        num_fewshot: int | None = None,
        limit: int | None = None,
        chat_template: bool | None = None,
        system_prompt: str | None = None,
        fewshot_as_multiturn: bool | None = None,
        **members: Any,
    ) -> None:
        # task=[a,b] on the command line: each member's config is under task.<name>
        tasks = [*(tasks or []), *(_member(key, m) for key, m in members.items())]
        if not tasks:
            raise TaskError(f"task group {name!r} has no tasks")
        names = [t.name for t in tasks]
        if len(set(names)) != len(names):
            raise TaskError(f"task group {name!r} lists a task twice: {names}")
        self.name = name
        self.tasks = list(tasks)
        chat = {  # typed by the schema; null: each member's own
            "chat_template": chat_template,
            "system_prompt": system_prompt,
            "fewshot_as_multiturn": fewshot_as_multiturn,
        }
        shared = typed("task", {k: v for k, v in chat.items() if v is not None})
        for task in self.tasks:
            task.configure(num_fewshot=num_fewshot, limit=limit)
            for key, value in shared.items():
                setattr(task.spec, key, value)
