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
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from mill.data.load import DatasetSpec, DataSource, load_rows
from mill.errors import ConfigError, TaskError
from mill.task.chat import Message, join_delimited, render_chat, render_text, single_turn
from mill.task.fewshot import choose_shots
from mill.task.rows import Unusable, explain, strict
from mill.types import ChatTemplate, Doc, GenerationArgs, OutputType, Request

SKIP_HINT = " (or skip such rows with data.skip_bad_rows=true)"


class BadRow(TaskError):
    """A row lacks what the task needs (a field, a choice, a gold answer among the
    choices). Stops the run, or with ``data.skip_bad_rows=true`` the row is skipped and
    counted (:attr:`Task.skipped`)."""

    def __init__(self, message: str, split: str, row: int) -> None:
        super().__init__(message)
        self.split = split
        self.row = row


def whole_number(setting: str, value: Any) -> int:
    """``value`` as an int, or a TaskError naming ``setting`` (``2.5``, ``abc`` and
    ``true`` are refused, never truncated)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise TaskError(f"{setting}={value!r} is not a whole number; give an integer ({setting}=10)")


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
    SUBJECTS: ClassVar[list[str]] = ["default"]
    METRICS: ClassVar[list[str]] = []
    """Names of the default metrics (``conf/metrics/<name>.yaml``)."""
    OUTPUT_TYPE: ClassVar[OutputType] = OutputType.LOGPROBS
    MULTIPLE_INPUT: ClassVar[bool] = False
    """LOGPROBS: the choices are contexts scored on one shared continuation (WinoGrande)."""
    TARGET_DELIMITER: ClassVar[str] = " "
    FEWSHOT_DELIMITER: ClassVar[str] = "\n\n"
    GENERATION: ClassVar[GenerationArgs] = GenerationArgs()
    EXECUTES: ClassVar[bool] = False
    """GENERATIVE tasks scored by running programs (:meth:`programs`): the run checks the
    sandbox at start-up and executes each doc's programs after generation."""

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
        self.name = name or self.NAME
        self.fewshot_sampler = fewshot_sampler
        self.fewshot_seed = whole_number("task.fewshot_seed", fewshot_seed)
        self.subjects = list(subjects) if subjects else list(self.SUBJECTS)
        unknown = sorted(set(self.subjects) - set(self.SUBJECTS))
        if unknown:
            raise TaskError(f"task {self.name!r}: unknown subjects {unknown}")
        self.sample_split = sample_split or self.SAMPLE_SPLIT
        self.fewshot_split = fewshot_split or self.FEWSHOT_SPLIT
        self.num_fewshot = 0
        self.limit: int | None = None
        self.configure(num_fewshot=num_fewshot, limit=limit)
        self.chat_template = bool(chat_template)
        self.system_prompt = system_prompt
        self.fewshot_as_multiturn = bool(fewshot_as_multiturn)
        # null values mean "the task's default" (configs list the keys so they can be set)
        overrides = {k: v for k, v in (dataset or {}).items() if v is not None}
        self.dataset = DatasetSpec(
            path=overrides.pop("path", self.DATASET_PATH),
            name=overrides.pop("name", self.DATASET_NAME),
            revision=overrides.pop("revision", self.DATASET_REVISION),
            local_files=dict(overrides.pop("local_files", self.LOCAL_FILES)),
            local_builder=overrides.pop("builder", self.LOCAL_BUILDER),
            builder_kwargs=dict(overrides.pop("builder_kwargs", self.LOCAL_BUILDER_KWARGS)),
            text_columns=tuple(self.LOCAL_TEXT_COLUMNS),
            data_files={
                k: v for k, v in (overrides.pop("data_files", {}) or {}).items() if v is not None
            },
        )
        if overrides:
            raise TaskError(f"task {self.name!r}: unknown dataset keys {sorted(overrides)}")
        gen = dict(generation or {})
        if "until" in gen:
            gen["until"] = tuple(gen["until"])
        self.generation = GenerationArgs(**{**self.GENERATION.__dict__, **gen})
        self.repeats = whole_number("task.repeats", repeats)
        if self.repeats < 1:
            raise TaskError(f"task {self.name!r}: repeats must be >= 1")
        if self.repeats > 1 and self.OUTPUT_TYPE is not OutputType.GENERATIVE:
            raise TaskError(f"task {self.name!r}: repeats apply to generative tasks only")
        if self.generation.do_sample and not self.generation.temperature > 0:
            raise TaskError(
                f"task {self.name!r}: task.generation.do_sample=true needs a temperature > 0 "
                f"(got {self.generation.temperature}); set task.generation.temperature, e.g. 0.8"
            )
        self.origins: dict[str, Any] = {}
        self._chat: ChatTemplate | None = None
        self._hand_messages = False
        self.skipped: list[dict[str, Any]] = []
        """Bad rows skipped by the last build of the docs (``data.skip_bad_rows=true``)."""
        self._prepared: tuple[DataSource, list[Doc]] | None = None

    def configure(self, num_fewshot: int | None = None, limit: int | None = None) -> None:
        """Set the few-shot count and/or the doc limit (used by task groups), validated."""
        if num_fewshot is not None:
            num_fewshot = whole_number("task.num_fewshot", num_fewshot)
            if int(num_fewshot) < 0:
                raise TaskError(f"task {self.name!r}: num_fewshot must be >= 0")
            if int(num_fewshot) and not (self.fewshot_split or self.FEWSHOT_SAMPLES):
                raise TaskError(
                    f"task {self.name!r} has no few-shot split; set task.fewshot_split or "
                    "task.num_fewshot=0"
                )
            self.num_fewshot = int(num_fewshot)
        if limit is not None:
            limit = whole_number("task.limit", limit)
            if int(limit) < 1:
                raise TaskError(f"task {self.name!r}: limit must be >= 1 (or null for all)")
            self.limit = int(limit)

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
        truth = self._get_ground_truth(item)
        if truth not in choices:
            raise ValueError(f"gold answer {truth!r} is not among {choices}")
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

    def subject_groups(self) -> dict[str, list[str]]:
        """Named groups of subjects aggregated micro and macro (e.g. MMLU's categories);
        none by default."""
        return {}

    # ----- loading ------------------------------------------------------------------------
    def load_split(self, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
        """The rows of one split of one subject as the task reads them: loaded from
        ``source``, local rows adapted to the hub's schema, then processed (what the docs
        are built from; the parity tools write them out for lm-eval)."""
        loaded = load_rows(self.dataset, split, source, subject)
        self.origins[f"{subject}/{split}"] = loaded.origin
        rows: list[dict[str, Any]] = [strict(r) for r in loaded.rows]
        if loaded.local:
            rows = self._attach_side_files(rows, split, source, subject)
            file = loaded.origin.get("file", split)

            def why(err: Exception) -> str:
                what = (
                    explain(err, "the row")
                    if isinstance(err, KeyError)
                    else f"the row does not fit the task ({err})"
                )
                return f" of {file}: {what}; fix the file or point the task at the right one"

            rows = self._row_by_row(
                rows,
                lambda row: [strict(self._adapt_local_row(row))],
                (KeyError, TypeError),
                why,
                split,
                subject,
                source,
            )
        return self._processed(rows, split, subject, source)

    def _row_by_row(
        self,
        rows: list[dict[str, Any]],
        adapt: Callable[[dict[str, Any]], list[dict[str, Any]]],
        errors: tuple[type[Exception], ...],
        why: Callable[[Any], str],  # called with an exception of `errors`
        split: str,
        subject: str,
        source: DataSource,
    ) -> list[dict[str, Any]]:
        """``adapt`` each row (to its rows); a row it fails on with one of ``errors`` is a
        :class:`BadRow` naming the task, split, subject, row and ``why(err)``: raised, or with
        ``data.skip_bad_rows`` kept as :class:`Unusable` in its place (as are rows already
        unusable)."""
        out: list[dict[str, Any]] = []
        for index, row in enumerate(rows):
            if isinstance(row, Unusable):
                out.append(row)
                continue
            try:
                out.extend(adapt(row))
            except errors as err:
                bad = BadRow(
                    f"task {self.name!r}, split {split!r}, subject {subject!r}, row {index}"
                    f"{why(err)}{SKIP_HINT}",
                    split=split,
                    row=index,
                )
                if not source.skip_bad_rows:
                    raise bad from err
                out.append(Unusable(bad))
        return out

    def _processed(
        self, rows: list[dict[str, Any]], split: str, subject: str, source: DataSource
    ) -> list[dict[str, Any]]:
        """``_process_docs`` on the usable rows, with a bad row named (or, skipping, kept
        as unusable in its place when the processing maps rows one to one)."""
        usable = [r for r in rows if not isinstance(r, Unusable)]
        try:
            processed = self._process_docs(usable)
        except KeyError:
            bad = self._row_by_row(
                rows,
                lambda row: self._process_docs([row]),
                (KeyError,),
                lambda err: f": {explain(err, 'the row')}; fix the data",
                split,
                subject,
                source,
            )
            return [r if isinstance(r, Unusable) else strict(r) for r in bad]
        if len(processed) == len(usable) and len(usable) < len(rows):
            it = iter(processed)
            return [r if isinstance(r, Unusable) else strict(next(it)) for r in rows]
        return [strict(r) for r in processed]

    def _attach_side_files(
        self, rows: list[dict[str, Any]], split: str, source: DataSource, subject: str
    ) -> list[dict[str, Any]]:
        for column, relpath in self.LOCAL_SIDE_FILES.get(split, {}).items():
            key = f"{split}_{column}"
            spec = DatasetSpec(
                path=f"{self.dataset.path} ({column})",
                local_files={split: relpath},
                local_builder="text",
                data_files={split: self.dataset.data_files[key]}
                if key in self.dataset.data_files
                else {},
            )
            if source.root is None and not spec.data_files:
                raise TaskError(
                    f"task {self.name!r}: split {split!r} comes from your own file; give its "
                    f"{column} file too: task.dataset.data_files.{key}=/path/to/file"
                )
            side = load_rows(spec, split, source, subject)
            self.origins[f"{subject}/{split}/{column}"] = side.origin
            values = [r["text"] for r in side.rows]
            if len(values) != len(rows):
                raise TaskError(
                    f"task {self.name!r}: {side.origin.get('file')} has {len(values)} lines "
                    f"but the {split} file has {len(rows)} rows; they must be line-aligned"
                )
            rows = [{**row, column: value} for row, value in zip(rows, values, strict=True)]
        return rows

    # ----- prompts ------------------------------------------------------------------------
    def _messages(
        self, item: dict[str, Any], shots: list[dict[str, Any]], query: str
    ) -> list[Message]:
        messages = []
        system = join_delimited(
            self.system_prompt or self._get_system_prompt_text(item),
            self._get_initial_prompt_text(item),
            self.FEWSHOT_DELIMITER,
        )
        if system:
            # plain text: lm-eval 0.4.13 glues a bare system prompt to the first question;
            # Mill separates them with the few-shot delimiter (a description already ends
            # with whitespace, so lm-eval's default prompts are unchanged)
            messages.append(
                Message("system", system, "" if system[-1].isspace() else self.FEWSHOT_DELIMITER)
            )
        for shot in shots:
            question = self._get_instruction_text(shot)
            answer = self._get_fewshot_target_text(shot)
            messages.append(Message("user", question, self.TARGET_DELIMITER))
            messages.append(Message("assistant", answer, self.FEWSHOT_DELIMITER))
        prefix = self._get_gen_prefix(item)
        if not prefix:
            messages.append(Message("user", query))
            return messages
        # lm-eval build_qa_turn: the target delimiter only where neither side has whitespace
        joined = join_delimited(query, prefix, self.TARGET_DELIMITER)
        messages.append(Message("user", query, joined[len(query) : len(joined) - len(prefix)]))
        messages.append(Message("assistant", prefix))
        return messages

    def _render(self, messages: list[Message]) -> str:
        if self.chat_template:
            if self._chat is None:
                raise TaskError(
                    f"task {self.name!r}: chat_template=true but the model has no chat "
                    "template; drop task.chat_template or use a chat model"
                )
            return render_chat(messages, self._chat, self.fewshot_as_multiturn)
        return render_text(messages)

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
        common = dict(
            task=self.name, id=doc_id, subject=subject, fewshot_ids=tuple(shots), item=item
        )
        where = (
            f"task {self.name!r}, split {self.sample_split!r}, subject {subject!r}, doc {doc_id}"
        )
        if isinstance(item, Unusable):
            raise item.error
        for shot in shots:
            if isinstance(pool[shot], Unusable):
                raise pool[shot].error
        shot_items = [pool[i] for i in shots]

        def bad(message: str) -> BadRow:
            return BadRow(f"{where}: {message}", split=self.sample_split, row=doc_id)

        try:
            if self.OUTPUT_TYPE is OutputType.LOGPROBS:
                choices = list(self._get_possible_completions(item) or [])
                if not choices:
                    raise bad("the doc has no choices; fix the data" + SKIP_HINT)
                try:
                    gold = self._get_gold_index(item, choices)
                except (ValueError, IndexError) as err:
                    raise bad(
                        f"the gold answer is not among its {len(choices)} choices ({err}); fix "
                        "the data" + SKIP_HINT
                    ) from err
                if not 0 <= gold < len(choices):
                    raise bad(f"gold index {gold} outside {len(choices)} choices" + SKIP_HINT)
                idk = self._get_idk_index(item, choices)
                if idk is not None and not 0 <= idk < len(choices):
                    raise TaskError(f"{where}: IDK index {idk} outside {len(choices)} choices")
                if self.MULTIPLE_INPUT:
                    contexts = tuple(
                        self._render(self._messages(item, shot_items, c)) for c in choices
                    )
                    return Doc(
                        context=contexts[gold],
                        contexts=contexts,
                        continuation=str(self._get_ground_truth(item)),
                        choices=tuple(choices),
                        gold=gold,
                        idk_index=idk,
                        **common,
                    )
                context = self._render(
                    self._messages(item, shot_items, self._get_instruction_text(item))
                )
                return Doc(
                    context=context, choices=tuple(choices), gold=gold, idk_index=idk, **common
                )
            if self.OUTPUT_TYPE is OutputType.GENERATIVE:
                prompt = self._messages(item, shot_items, self._get_instruction_text(item))
                truth = self._get_ground_truth(item)
                gold = tuple(truth) if isinstance(truth, list) else truth
                if self._hand_messages:  # the server applies its own chat template
                    turns = (
                        [m.to_dict() for m in prompt]
                        if self.fewshot_as_multiturn
                        else single_turn(prompt)
                    )
                    return Doc(
                        context=render_text(prompt),
                        gold=gold,
                        messages=tuple((t["role"], t["content"]) for t in turns),
                        **common,
                    )
                return Doc(context=self._render(prompt), gold=gold, **common)
            text = self._get_perplexity_text(item)
            counted = self._get_ground_truth(item)
            return Doc(context="", continuation=text, gold=str(counted or text), **common)
        except KeyError as err:
            raise self._bad_doc(subject, doc_id, item, shots, pool, err) from err

    def _bad_doc(
        self,
        subject: str,
        doc_id: int,
        item: dict[str, Any],
        shots: list[int],
        pool: list[dict[str, Any]],
        err: KeyError,
    ) -> BadRow:
        """The error for a doc that could not be built: which row (the doc's own or one of
        its few-shot examples') lacks which field."""
        split, row, what = self.sample_split, doc_id, explain(err, "the doc")
        if shots:  # blame a few-shot example only if the doc alone builds
            try:
                self._make_doc(subject, doc_id, item, [], pool)
                alone = True
            except (KeyError, TaskError):
                alone = False
            for shot in shots if alone else []:
                try:
                    self._get_instruction_text(pool[shot])
                    self._get_fewshot_target_text(pool[shot])
                except KeyError as shot_err:
                    split, row = str(self.fewshot_split), shot
                    whose = f"its few-shot example (row {shot} of split {split!r})"
                    what = explain(shot_err, whose)
                    break
        return BadRow(
            f"task {self.name!r}, split {self.sample_split!r}, subject {subject!r}, doc "
            f"{doc_id}: {what}; fix the data{SKIP_HINT}",
            split=split,
            row=row,
        )

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
        self._chat = chat
        self._hand_messages = messages
        self.skipped = []
        if self.chat_template and chat is None and not messages:
            self._render([])  # raises the explanatory error
        for subject in self.subjects:
            rows = self.load_split(self.sample_split, source, subject)
            if self.limit is not None:
                rows = rows[: int(self.limit)]
            rows = [strict(r) for r in rows]
            pool: list[dict[str, Any]] = []
            same_split = not self.FEWSHOT_SAMPLES and self.fewshot_split == self.sample_split
            if self.num_fewshot:
                if self.FEWSHOT_SAMPLES:
                    pool = [strict(dict(s)) for s in self.FEWSHOT_SAMPLES]
                elif same_split and self.limit is None:
                    pool = rows
                else:
                    loaded = self.load_split(str(self.fewshot_split), source, subject)
                    pool = [strict(r) for r in loaded]
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
                try:
                    yield self._make_doc(subject, doc_id, item, shots, pool)
                except BadRow as err:
                    if not source.skip_bad_rows:
                        raise
                    self.skipped.append(
                        {"subject": subject, "split": err.split, "row": err.row, "error": str(err)}
                    )

    def requests(self, doc: Doc, unconditioned: bool = False) -> list[Request]:
        """The model requests one doc needs: one per choice for LOGPROBS (plus, with
        ``unconditioned``, one per choice with an empty context, for PMI), one per repeat
        for GENERATIVE, one for PERPLEXITY."""
        base = dict(task=self.name, subject=doc.subject, doc_id=doc.id)
        if self.OUTPUT_TYPE is OutputType.LOGPROBS:
            delim = self.continuation_delimiter
            if doc.contexts:
                out = [
                    Request(
                        OutputType.LOGPROBS,
                        index=i,
                        context=ctx,
                        continuation=delim + doc.continuation,
                        **base,
                    )
                    for i, ctx in enumerate(doc.contexts)
                ]
                scored = [doc.continuation] * len(doc.contexts)
            else:
                out = [
                    Request(
                        OutputType.LOGPROBS,
                        index=i,
                        context=doc.context,
                        continuation=delim + choice,
                        **base,
                    )
                    for i, choice in enumerate(doc.choices)
                ]
                scored = list(doc.choices)
            if unconditioned:
                out += [
                    Request(
                        OutputType.LOGPROBS,
                        index=i,
                        context="",
                        continuation=delim + text,
                        role="unconditioned",
                        **base,
                    )
                    for i, text in enumerate(scored)
                ]
            return out
        if self.OUTPUT_TYPE is OutputType.GENERATIVE:
            return [
                Request(
                    OutputType.GENERATIVE,
                    index=i,
                    context=doc.context,
                    generation=self.generation,
                    messages=doc.messages,
                    item_id=self._get_item_id(doc.item),
                    **base,
                )
                for i in range(self.repeats)
            ]
        return [
            Request(
                OutputType.PERPLEXITY, index=0, context="", continuation=doc.continuation, **base
            )
        ]

    def greedy_repeats(self) -> str | None:
        """Why ``repeats`` cannot be generated by a model (greedy generation gives the same
        answer each time), or None. A model that replays saved answers has its repeats
        already: the runner asks this only of models that generate."""
        if self.repeats > 1 and not self.generation.do_sample:
            return (
                f"task {self.name!r}: repeats={self.repeats} with greedy generation gives "
                "identical answers; add task.generation.do_sample=true (and a temperature)"
            )
        return None

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
        for task in self.tasks:
            task.configure(num_fewshot=num_fewshot, limit=limit)
            if chat_template is not None:
                task.chat_template = bool(chat_template)
            if system_prompt is not None:
                task.system_prompt = system_prompt
            if fewshot_as_multiturn is not None:
                task.fewshot_as_multiturn = bool(fewshot_as_multiturn)
