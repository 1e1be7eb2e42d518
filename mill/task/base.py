"""The task API: class attributes describe a benchmark, ``_get_*`` hooks format it.

A subclass sets ``NAME``, ``DATASET_PATH``, ``SAMPLE_SPLIT``, ``FEWSHOT_SPLIT``, ``SUBJECTS``,
``METRICS`` and ``OUTPUT_TYPE`` and implements the hooks it needs. Task configs select a
class with ``_target_`` and set its fields (few-shot count, limit, dataset overrides, ...).

Prompts follow lm-evaluation-harness 0.4.13 (``fewshot_context``/``build_qa_turn``): a
prompt is a list of messages (:mod:`mill.task.chat`) -- an optional system message (system
prompt + ``_get_initial_prompt_text``, lm-eval's description), per few-shot example a user
turn ``query`` + ``TARGET_DELIMITER`` and an assistant turn ``target`` +
``FEWSHOT_DELIMITER``, then the evaluated query. Plain text joins them; with
``chat_template=true`` the model's chat template renders them, and a LOGPROBS continuation
loses its target delimiter (as lm-eval). A LOGPROBS continuation is
``TARGET_DELIMITER + choice``.

A :class:`Task` is its class (the benchmark's attributes and hooks) and four parts, each in
its module: its specification (:class:`mill.task.spec.TaskSpec`, the config's settings typed
by the schema: ``task.limit`` reads ``task.spec.limit``), loading (:mod:`mill.task.loading`),
prompt rendering and doc building (:mod:`mill.task.prompts`) and request building
(:mod:`mill.task.requests`). The methods below call them; a subclass overrides a method to
change its step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from mill.data.load import DataSource
from mill.errors import ConfigError, TaskError
from mill.schema import typed
from mill.task import loading, prompts
from mill.task.chat import Message
from mill.task.requests import build_requests
from mill.task.rows import SKIP_HINT, BadRow, gold_position
from mill.task.spec import TaskSpec
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


class Task:
    """Base class of every benchmark. Subclasses override class attributes and hooks."""

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
            self,
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
        self._chat: ChatTemplate | None = None
        self._hand_messages = False
        self.skipped: list[dict[str, Any]] = []
        """Bad rows skipped by the last build of the docs (``data.skip_bad_rows=true``)."""
        self._prepared: tuple[DataSource, list[Doc]] | None = None

    def configure(self, num_fewshot: int | None = None, limit: int | None = None) -> None:
        """Set the few-shot count and/or the doc limit (used by task groups), typed by the
        schema."""
        self.spec = self.spec.counted(self, num_fewshot, limit)

    # ----- hooks ----------------------------------------------------------------------
    def _get_instruction_text(self, item: dict[str, Any]) -> str:
        """The query for one item, without its answer (lm-eval ``doc_to_text``). For
        MULTIPLE_INPUT tasks: the query completed with the gold choice (few-shot turns)."""
        raise NotImplementedError

    def _get_ground_truth(self, item: dict[str, Any]) -> str | list[str] | None:
        """The correct answer: the gold choice text, or the reference answer(s). For
        MULTIPLE_INPUT tasks: the continuation shared by every choice."""
        raise NotImplementedError

    def _get_possible_completions(self, item: dict[str, Any]) -> list[str] | None:
        """LOGPROBS: the candidate answers (without the target delimiter). For
        MULTIPLE_INPUT tasks: the candidate contexts."""
        return None

    def _get_fewshot_target_text(self, item: dict[str, Any]) -> str:
        """The answer written after a few-shot example's query."""
        truth = self._get_ground_truth(item)
        return truth[0] if isinstance(truth, list) else str(truth)

    def _get_system_prompt_text(self, item: dict[str, Any]) -> str | None:
        """The task's system prompt (``task.system_prompt`` replaces it)."""
        return None

    def _get_initial_prompt_text(self, item: dict[str, Any]) -> str | None:
        """Text placed before the few-shot examples (lm-eval ``description``)."""
        return None

    def _get_perplexity_text(self, item: dict[str, Any]) -> str:
        """PERPLEXITY: the text scored as a whole."""
        raise NotImplementedError

    def _get_gen_prefix(self, item: dict[str, Any]) -> str | None:
        """GENERATIVE: the start of the answer written for the model (lm-eval
        ``gen_prefix``): an assistant turn the model continues; None by default."""
        return None

    def _get_item_id(self, item: dict[str, Any]) -> str | None:
        """The dataset's own id of an item (``HumanEval/0``), carried by its requests for
        models that replay saved answers (:attr:`mill.types.Request.item_id`)."""
        return None

    def programs(self, doc: Doc, texts: list[str]) -> list[str] | None:
        """EXECUTES tasks: one complete program per generation of ``doc`` (in repeat
        order), run in the sandbox after generation; None for every other task."""
        return None

    def _get_gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        """LOGPROBS: index of the gold choice (default: position of the ground truth)."""
        return gold_position(choices, self._get_ground_truth(item), "choices")

    def _get_idk_index(self, item: dict[str, Any], choices: list[str]) -> int | None:
        """Index of an explicit "I don't know" choice (IDK variants), else None."""
        return None

    def _adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        """Turn a local file's row into the hub's schema (identity by default)."""
        return row

    def _process_docs(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Preprocess the rows of a split (lm-eval ``process_docs``); identity by default."""
        return rows

    def subject_groups(self) -> dict[str, list[str]]:
        """Named groups of subjects aggregated micro and macro (e.g. MMLU's categories);
        none by default."""
        return {}

    # ----- loading (mill.task.loading) ----------------------------------------------------
    def load_split(self, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
        """The rows of one split of one subject as the task reads them: loaded from
        ``source``, local rows adapted to the hub's schema, then processed (what the docs
        are built from; the parity tools write them out for lm-eval)."""
        return loading.load_split(self, split, source, subject)

    def _row_by_row(
        self,
        rows: list[dict[str, Any]],
        adapt: Callable[[dict[str, Any]], list[dict[str, Any]]],
        errors: tuple[type[Exception], ...],
        why: Callable[[Any], str],
        split: str,
        subject: str,
        source: DataSource,
    ) -> list[dict[str, Any]]:
        return loading.row_by_row(self, rows, adapt, errors, why, split, subject, source)

    def _processed(
        self, rows: list[dict[str, Any]], split: str, subject: str, source: DataSource
    ) -> list[dict[str, Any]]:
        return loading.processed(self, rows, split, subject, source)

    def _attach_side_files(
        self, rows: list[dict[str, Any]], split: str, source: DataSource, subject: str
    ) -> list[dict[str, Any]]:
        return loading.attach_side_files(self, rows, split, source, subject)

    # ----- prompts and docs (mill.task.prompts) -------------------------------------------
    def _messages(
        self, item: dict[str, Any], shots: list[dict[str, Any]], query: str
    ) -> list[Message]:
        return prompts.messages(self, item, shots, query)

    def _render(self, messages: list[Message]) -> str:
        return prompts.render(self, messages)

    @property
    def continuation_delimiter(self) -> str:
        """What precedes a LOGPROBS continuation: the target delimiter, or nothing when a
        chat template renders the prompt (lm-eval)."""
        return "" if self.chat_template else self.TARGET_DELIMITER

    def _make_doc(
        self,
        subject: str,
        doc_id: int,
        item: dict[str, Any],
        shots: list[int],
        pool: list[dict[str, Any]],
    ) -> Doc:
        return prompts.make_doc(self, subject, doc_id, item, shots, pool)

    def _bad_doc(
        self,
        subject: str,
        doc_id: int,
        item: dict[str, Any],
        shots: list[int],
        pool: list[dict[str, Any]],
        err: KeyError,
    ) -> BadRow:
        return prompts.bad_doc(self, subject, doc_id, item, shots, pool, err)

    # ----- docs and requests ----------------------------------------------------------------
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
        return prompts.build_docs(self, source, chat, messages)

    # ----- requests (mill.task.requests) --------------------------------------------------
    def requests(self, doc: Doc, unconditioned: bool = False) -> list[Request]:
        """The model requests one doc needs: one per choice for LOGPROBS (plus, with
        ``unconditioned``, one per choice with an empty context, for PMI), one per repeat
        for GENERATIVE, one for PERPLEXITY."""
        return build_requests(self, doc, unconditioned)

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
