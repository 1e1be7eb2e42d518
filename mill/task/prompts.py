"""A task's docs and their prompts: the evaluated rows with their few-shot examples drawn,
each rendered as lm-evaluation-harness 0.4.13 renders it (``fewshot_context`` and
``build_qa_turn``; see :mod:`mill.task.base`) into a :class:`mill.types.Doc`, in plain text,
in the model's chat template, or as chat turns for a server that applies its own.

The functions take the task (its spec and its ``_get_*`` hooks); :class:`mill.task.Task`
calls them from its methods of the same names (``_messages``, ``_render``, ``_make_doc``,
``_build_docs``), which a subclass may override.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.task.chat import Message, join_delimited, render_chat, render_text, single_turn
from mill.task.fewshot import choose_shots
from mill.task.rows import SKIP_HINT, AmbiguousGold, BadRow, Unusable, explain, strict
from mill.types import ChatTemplate, Doc, OutputType

if TYPE_CHECKING:
    from mill.task.base import Task


def messages(
    task: Task, item: dict[str, Any], shots: list[dict[str, Any]], query: str
) -> list[Message]:
    messages = []
    system = join_delimited(
        task.system_prompt or task._get_system_prompt_text(item),
        task._get_initial_prompt_text(item),
        task.FEWSHOT_DELIMITER,
    )
    if system:
        # plain text: lm-eval 0.4.13 glues a bare system prompt to the first question;
        # Mill separates them with the few-shot delimiter (a description already ends
        # with whitespace, so lm-eval's default prompts are unchanged)
        messages.append(
            Message("system", system, "" if system[-1].isspace() else task.FEWSHOT_DELIMITER)
        )
    for shot in shots:
        question = task._get_instruction_text(shot)
        answer = task._get_fewshot_target_text(shot)
        messages.append(Message("user", question, task.TARGET_DELIMITER))
        messages.append(Message("assistant", answer, task.FEWSHOT_DELIMITER))
    prefix = task._get_gen_prefix(item)
    if not prefix:
        messages.append(Message("user", query))
        return messages
    # lm-eval build_qa_turn: the target delimiter only where neither side has whitespace
    joined = join_delimited(query, prefix, task.TARGET_DELIMITER)
    messages.append(Message("user", query, joined[len(query) : len(joined) - len(prefix)]))
    messages.append(Message("assistant", prefix))
    return messages


def render(task: Task, messages: list[Message]) -> str:
    if task.chat_template:
        if task._chat is None:
            raise TaskError(
                f"task {task.name!r}: chat_template=true but the model has no chat "
                "template; drop task.chat_template or use a chat model"
            )
        return render_chat(messages, task._chat, task.fewshot_as_multiturn)
    return render_text(messages)


def make_doc(
    task: Task,
    subject: str,
    doc_id: int,
    item: dict[str, Any],
    shots: list[int],
    pool: list[dict[str, Any]],
) -> Doc:
    common = dict(task=task.name, id=doc_id, subject=subject, fewshot_ids=tuple(shots), item=item)
    where = f"task {task.name!r}, split {task.sample_split!r}, subject {subject!r}, doc {doc_id}"
    if isinstance(item, Unusable):
        raise item.error
    for shot in shots:
        unusable = pool[shot]
        if isinstance(unusable, Unusable):
            raise unusable.error
    shot_items = [pool[i] for i in shots]

    def bad(message: str) -> BadRow:
        return BadRow(f"{where}: {message}", split=task.sample_split, row=doc_id)

    try:
        if task.OUTPUT_TYPE is OutputType.LOGPROBS:
            choices = list(task._get_possible_completions(item) or [])
            if not choices:
                raise bad("the doc has no choices; fix the data" + SKIP_HINT)
            try:
                gold = task._get_gold_index(item, choices)
            except AmbiguousGold as err:
                raise bad(f"{err}; fix the data" + SKIP_HINT) from err
            except (ValueError, IndexError) as err:
                raise bad(
                    f"the gold answer is not among its {len(choices)} choices ({err}); fix "
                    "the data" + SKIP_HINT
                ) from err
            if not 0 <= gold < len(choices):
                raise bad(f"gold index {gold} outside {len(choices)} choices" + SKIP_HINT)
            idk = task._get_idk_index(item, choices)
            if idk is not None and not 0 <= idk < len(choices):
                raise TaskError(f"{where}: IDK index {idk} outside {len(choices)} choices")
            if task.MULTIPLE_INPUT:
                contexts = tuple(task._render(task._messages(item, shot_items, c)) for c in choices)
                return Doc(
                    context=contexts[gold],
                    contexts=contexts,
                    continuation=str(task._get_ground_truth(item)),
                    choices=tuple(choices),
                    gold=gold,
                    idk_index=idk,
                    **common,
                )
            context = task._render(
                task._messages(item, shot_items, task._get_instruction_text(item))
            )
            return Doc(context=context, choices=tuple(choices), gold=gold, idk_index=idk, **common)
        if task.OUTPUT_TYPE is OutputType.GENERATIVE:
            prompt = task._messages(item, shot_items, task._get_instruction_text(item))
            truth = task._get_ground_truth(item)
            answer = tuple(truth) if isinstance(truth, list) else truth
            if task._hand_messages:  # the server applies its own chat template
                turns = (
                    [m.to_dict() for m in prompt]
                    if task.fewshot_as_multiturn
                    else single_turn(prompt)
                )
                return Doc(
                    context=render_text(prompt),
                    gold=answer,
                    messages=tuple((t["role"], t["content"]) for t in turns),
                    **common,
                )
            return Doc(context=task._render(prompt), gold=answer, **common)
        text = task._get_perplexity_text(item)
        counted = task._get_ground_truth(item)
        return Doc(context="", continuation=text, gold=str(counted or text), **common)
    except KeyError as err:
        raise task._bad_doc(subject, doc_id, item, shots, pool, err) from err


def bad_doc(
    task: Task,
    subject: str,
    doc_id: int,
    item: dict[str, Any],
    shots: list[int],
    pool: list[dict[str, Any]],
    err: KeyError,
) -> BadRow:
    """The error for a doc that could not be built: which row (the doc's own or one of
    its few-shot examples') lacks which field."""
    split, row, what = task.sample_split, doc_id, explain(err, "the doc")
    if shots:  # blame a few-shot example only if the doc alone builds
        try:
            task._make_doc(subject, doc_id, item, [], pool)
            alone = True
        except (KeyError, TaskError):
            alone = False
        for shot in shots if alone else []:
            try:
                task._get_instruction_text(pool[shot])
                task._get_fewshot_target_text(pool[shot])
            except KeyError as shot_err:
                split, row = str(task.fewshot_split), shot
                whose = f"its few-shot example (row {shot} of split {split!r})"
                what = explain(shot_err, whose)
                break
    return BadRow(
        f"task {task.name!r}, split {task.sample_split!r}, subject {subject!r}, doc "
        f"{doc_id}: {what}; fix the data{SKIP_HINT}",
        split=split,
        row=row,
    )


def build_docs(
    task: Task, source: DataSource, chat: ChatTemplate | None, messages: bool = False
) -> Iterator[Doc]:
    task._chat = chat
    task._hand_messages = messages
    task.skipped = []
    if task.chat_template and chat is None and not messages:
        task._render([])  # raises the explanatory error
    for subject in task.subjects:
        rows = task.load_split(task.sample_split, source, subject)
        if task.limit is not None:
            rows = rows[: int(task.limit)]
        rows = [strict(r) for r in rows]
        pool: list[dict[str, Any]] = []
        same_split = not task.FEWSHOT_SAMPLES and task.fewshot_split == task.sample_split
        if task.num_fewshot:
            if task.FEWSHOT_SAMPLES:
                pool = [strict(dict(s)) for s in task.FEWSHOT_SAMPLES]
            elif same_split and task.limit is None:
                pool = rows
            else:
                loaded = task.load_split(str(task.fewshot_split), source, subject)
                pool = [strict(r) for r in loaded]
        for doc_id, item in enumerate(rows):
            shots = (
                choose_shots(
                    task.fewshot_sampler,
                    task.num_fewshot,
                    len(pool),
                    task=task.name,
                    doc_id=doc_id,
                    seed=task.fewshot_seed,
                    exclude=doc_id if same_split else None,
                )
                if task.num_fewshot
                else []
            )
            try:
                yield task._make_doc(subject, doc_id, item, shots, pool)
            except BadRow as err:
                if not source.skip_bad_rows:
                    raise
                task.skipped.append(
                    {"subject": subject, "split": err.split, "row": err.row, "error": str(err)}
                )
