"""A task's docs and their prompts: the evaluated rows with their few-shot examples drawn,
each rendered as lm-evaluation-harness 0.4.13 renders it (``fewshot_context`` and
``build_qa_turn``; see :mod:`mill.task.base`) into a :class:`mill.types.Doc`, in plain text,
in the model's chat template, or as chat turns for a server that applies its own.

The functions take data, not the task: a :class:`DocBuild` holds the task's spec, the
declarations that shape its docs, the model's chat template and the task's hooks as
functions of a row (:class:`RowHooks`, the public hooks of :class:`mill.task.Task`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.schema import already_typed
from mill.task.chat import Message, join_delimited, render_chat, render_text, single_turn
from mill.task.fewshot import choose_shots
from mill.task.rows import SKIP_HINT, AmbiguousGold, BadRow, Unusable, explain, strict
from mill.task.spec import TaskSpec
from mill.types import ChatTemplate, Doc, OutputType

Row = dict[str, Any]


@dataclass(frozen=True)
class RowHooks:
    """A task's hooks as functions of a row, each the :class:`mill.task.Task` method named
    in its docstring."""

    text: Callable[[Row], str]
    """``doc_to_text``."""
    target: Callable[[Row], str | list[str] | None]
    """``doc_to_target``."""
    choice: Callable[[Row], list[str] | None]
    """``doc_to_choice``."""
    fewshot_target: Callable[[Row], str]
    """``doc_to_fewshot_target``."""
    system_prompt: Callable[[Row], str | None]
    """``doc_to_system_prompt``."""
    description: Callable[[Row], str | None]
    """``doc_to_description``."""
    prefix: Callable[[Row], str | None]
    """``doc_to_prefix``."""
    perplexity_text: Callable[[Row], str]
    """``doc_to_perplexity_text``."""
    gold_index: Callable[[Row, list[str]], int]
    """``gold_index``."""
    idk_index: Callable[[Row, list[str]], int | None]
    """``idk_index``."""
    check: Callable[[Doc], None]
    """``check_doc``."""


@dataclass(frozen=True)
class DocBuild:
    """What one build of a task's docs needs (:meth:`mill.task.Task.docs` makes it)."""

    spec: TaskSpec
    output_type: OutputType
    multiple_input: bool
    """LOGPROBS: the choices are contexts scored on one shared continuation."""
    target_delimiter: str
    fewshot_delimiter: str
    fixed_shots: tuple[Row, ...]
    """The class's own few-shot examples (``FEWSHOT_SAMPLES``), used instead of a split."""
    hooks: RowHooks
    chat: ChatTemplate | None = None
    """The model's chat template (used when ``spec.chat_template`` is set)."""
    hand_messages: bool = False
    """GENERATIVE docs carry their prompt as chat turns for a server's own template."""


def messages(build: DocBuild, item: Row, shots: list[Row], query: str) -> list[Message]:
    """The prompt of ``item`` asking ``query``, after the few-shot examples ``shots``."""
    hooks, spec = build.hooks, build.spec
    out = []
    system = join_delimited(
        spec.system_prompt or hooks.system_prompt(item),
        hooks.description(item),
        build.fewshot_delimiter,
    )
    if system:
        # plain text: lm-eval 0.4.13 glues a bare system prompt to the first question;
        # Mill separates them with the few-shot delimiter (a description already ends
        # with whitespace, so lm-eval's default prompts are unchanged)
        out.append(
            Message("system", system, "" if system[-1].isspace() else build.fewshot_delimiter)
        )
    for shot in shots:
        question = hooks.text(shot)
        answer = hooks.fewshot_target(shot)
        out.append(Message("user", question, build.target_delimiter))
        out.append(Message("assistant", answer, build.fewshot_delimiter))
    prefix = hooks.prefix(item)
    if not prefix:
        out.append(Message("user", query))
        return out
    # lm-eval build_qa_turn: the target delimiter only where neither side has whitespace
    joined = join_delimited(query, prefix, build.target_delimiter)
    out.append(Message("user", query, joined[len(query) : len(joined) - len(prefix)]))
    out.append(Message("assistant", prefix))
    return out


def render(build: DocBuild, prompt: list[Message]) -> str:
    """The prompt as the model reads it: plain text, or through its chat template."""
    spec = build.spec
    if spec.chat_template:
        if build.chat is None:
            raise TaskError(
                f"task {spec.name!r}: chat_template=true but the model has no chat "
                "template; drop task.chat_template or use a chat model"
            )
        return render_chat(prompt, build.chat, spec.fewshot_as_multiturn)
    return render_text(prompt)


def make_doc(
    build: DocBuild, subject: str, doc_id: int, item: Row, shots: list[int], pool: list[Row]
) -> Doc:
    """The doc of row ``doc_id`` with the few-shot examples ``shots`` (indices into
    ``pool``), checked by the task's ``check_doc``; a row that lacks a field is a
    :class:`BadRow` naming it (:func:`bad_doc`)."""
    if isinstance(item, Unusable):
        raise item.error
    for shot in shots:
        unusable = pool[shot]
        if isinstance(unusable, Unusable):
            raise unusable.error
    common: dict[str, Any] = dict(
        task=build.spec.name, id=doc_id, subject=subject, fewshot_ids=tuple(shots), item=item
    )
    shot_items = [pool[i] for i in shots]
    try:
        if build.output_type is OutputType.LOGPROBS:
            doc = _choice_doc(build, item, shot_items, common)
        elif build.output_type is OutputType.GENERATIVE:
            doc = _generative_doc(build, item, shot_items, common)
        else:
            text = build.hooks.perplexity_text(item)
            counted = build.hooks.target(item)
            doc = Doc(context="", continuation=text, gold=str(counted or text), **common)
    except KeyError as err:
        raise bad_doc(build, subject, doc_id, item, shots, pool, err) from err
    build.hooks.check(doc)
    return doc


def _choice_doc(build: DocBuild, item: Row, shots: list[Row], common: dict[str, Any]) -> Doc:
    """A LOGPROBS doc: its choices, the gold and IDK indices checked, its context(s)."""
    hooks = build.hooks
    where = (
        f"task {build.spec.name!r}, split {build.spec.sample_split!r}, subject "
        f"{common['subject']!r}, doc {common['id']}"
    )

    def bad(message: str) -> BadRow:
        return BadRow(f"{where}: {message}", split=build.spec.sample_split, row=common["id"])

    choices = list(hooks.choice(item) or [])
    if not choices:
        raise bad("the doc has no choices; fix the data" + SKIP_HINT)
    try:
        gold = hooks.gold_index(item, choices)
    except AmbiguousGold as err:
        raise bad(f"{err}; fix the data" + SKIP_HINT) from err
    except (ValueError, IndexError) as err:
        raise bad(
            f"the gold answer is not among its {len(choices)} choices ({err}); fix "
            "the data" + SKIP_HINT
        ) from err
    if not 0 <= gold < len(choices):
        raise bad(f"gold index {gold} outside {len(choices)} choices" + SKIP_HINT)
    idk = hooks.idk_index(item, choices)
    if idk is not None and not 0 <= idk < len(choices):
        raise TaskError(f"{where}: IDK index {idk} outside {len(choices)} choices")
    if build.multiple_input:
        contexts = tuple(render(build, messages(build, item, shots, c)) for c in choices)
        return Doc(
            context=contexts[gold],
            contexts=contexts,
            continuation=str(hooks.target(item)),
            choices=tuple(choices),
            gold=gold,
            idk_index=idk,
            **common,
        )
    context = render(build, messages(build, item, shots, hooks.text(item)))
    return Doc(context=context, choices=tuple(choices), gold=gold, idk_index=idk, **common)


def _generative_doc(build: DocBuild, item: Row, shots: list[Row], common: dict[str, Any]) -> Doc:
    """A GENERATIVE doc: its prompt rendered, or as chat turns for a server's template."""
    prompt = messages(build, item, shots, build.hooks.text(item))
    truth = build.hooks.target(item)
    answer = tuple(truth) if isinstance(truth, list) else truth
    if build.hand_messages:  # the server applies its own chat template
        turns = (
            [m.to_dict() for m in prompt]
            if build.spec.fewshot_as_multiturn
            else single_turn(prompt)
        )
        return Doc(
            context=render_text(prompt),
            gold=answer,
            messages=tuple((t["role"], t["content"]) for t in turns),
            **common,
        )
    return Doc(context=render(build, prompt), gold=answer, **common)


def bad_doc(
    build: DocBuild,
    subject: str,
    doc_id: int,
    item: Row,
    shots: list[int],
    pool: list[Row],
    err: KeyError,
) -> BadRow:
    """The error for a doc that could not be built: which row (the doc's own or one of
    its few-shot examples') lacks which field."""
    spec = build.spec
    split, row, what = spec.sample_split, doc_id, explain(err, "the doc")
    if shots:  # blame a few-shot example only if the doc alone builds
        try:
            make_doc(build, subject, doc_id, item, [], pool)
            alone = True
        except (KeyError, TaskError):
            alone = False
        for shot in shots if alone else []:
            try:
                build.hooks.text(pool[shot])
                build.hooks.fewshot_target(pool[shot])
            except KeyError as shot_err:
                split, row = str(spec.fewshot_split), shot
                whose = f"its few-shot example (row {shot} of split {split!r})"
                what = explain(shot_err, whose)
                break
    return BadRow(
        f"task {spec.name!r}, split {spec.sample_split!r}, subject {subject!r}, doc "
        f"{doc_id}: {what}; fix the data{SKIP_HINT}",
        split=split,
        row=row,
    )


def build_docs(
    build: DocBuild,
    load: Callable[[str, DataSource, str], list[Row]],
    source: DataSource,
    skipped: list[dict[str, Any]],
) -> Iterator[Doc]:
    """Every evaluated doc of every subject, its rows read by ``load(split, source,
    subject)`` (:meth:`mill.task.Task.load_split`); with ``data.skip_bad_rows`` a bad row
    is appended to ``skipped`` instead of raised."""
    spec = build.spec
    if spec.chat_template and build.chat is None and not build.hand_messages:
        render(build, [])  # raises the explanatory error
    for subject in spec.subjects:
        rows = load(spec.sample_split, source, subject)
        if spec.limit is not None:
            rows = rows[: int(spec.limit)]
        rows = [strict(r) for r in rows]
        same_split = not build.fixed_shots and spec.fewshot_split == spec.sample_split
        pool = _shot_pool(build, load, source, subject, rows, same_split)
        for doc_id, item in enumerate(rows):
            shots = _shots(spec, len(pool), doc_id, same_split) if spec.num_fewshot else []
            try:
                yield make_doc(build, subject, doc_id, item, shots, pool)
            except BadRow as err:
                if not source.skip_bad_rows:
                    raise
                skipped.append(
                    {"subject": subject, "split": err.split, "row": err.row, "error": str(err)}
                )


def _shots(spec: TaskSpec, pool_size: int, doc_id: int, same_split: bool) -> list[int]:
    """The few-shot examples of doc ``doc_id``, drawn by the spec's sampler (typed when the
    spec was built: not checked again per doc)."""
    with already_typed():
        return choose_shots(
            spec.fewshot_sampler,
            spec.num_fewshot,
            pool_size,
            task=spec.name,
            doc_id=doc_id,
            seed=spec.fewshot_seed,
            exclude=doc_id if same_split else None,
        )


def _shot_pool(
    build: DocBuild,
    load: Callable[[str, DataSource, str], list[Row]],
    source: DataSource,
    subject: str,
    rows: list[Row],
    same_split: bool,
) -> list[Row]:
    """The rows few-shot examples are drawn from: the class's own, the evaluated rows
    themselves (same split, no limit), or the few-shot split's."""
    spec = build.spec
    if not spec.num_fewshot:
        return []
    if build.fixed_shots:
        return [strict(dict(s)) for s in build.fixed_shots]
    if same_split and spec.limit is None:
        return rows
    return [strict(r) for r in load(str(spec.fewshot_split), source, subject)]
