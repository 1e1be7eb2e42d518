"""Task API: prompts as lm-eval builds them, few-shot sampling, bad docs, local data."""

from __future__ import annotations

import pytest
from mill.tasks.arc import ArcEasy
from mill.tasks.gsm8k import GSM8K
from mill.tasks.wikitext import WikiText, split_pages, wikitext_detokenizer

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.task import Task
from mill.task.base import RENAMED_HOOKS
from mill.task.fewshot import choose_shots
from mill.types import OutputType

BUNDLED = DataSource("bundled")


def test_arc_prompt_and_requests() -> None:
    task = ArcEasy(limit=2)
    doc = next(task.docs(BUNDLED))
    assert doc.context == (
        "Question: Which statement best explains why photosynthesis is the foundation of "
        "most food webs?\nAnswer:"
    )
    assert doc.gold == 0 and len(doc.choices) == 4
    reqs = task.requests(doc)
    assert [r.continuation for r in reqs] == [" " + c for c in doc.choices]
    assert len({r.id for r in reqs}) == 4 and all(
        r.output_type is OutputType.LOGPROBS for r in reqs
    )


def test_fewshot_context_layout() -> None:
    task = GSM8K(num_fewshot=2, limit=1, fewshot_sampler="first_n")
    doc = next(task.docs(BUNDLED))
    shots = doc.context.split("\n\n")
    assert doc.fewshot_ids == (0, 1)
    assert shots[0].startswith("Question: ") and "\nAnswer: " in shots[0]
    assert doc.context.endswith("\nAnswer:") and doc.context.count("Question:") == 3


def test_random_shots_depend_only_on_doc_and_seed() -> None:
    a = choose_shots("random", 3, 50, task="t", doc_id=7, seed=1)
    assert a == choose_shots("random", 3, 50, task="t", doc_id=7, seed=1)
    assert a != choose_shots("random", 3, 50, task="t", doc_id=7, seed=2)
    assert 7 not in choose_shots("random", 49, 50, task="t", doc_id=7, seed=1, exclude=7)
    # limit does not change a doc's shots
    first = [d.fewshot_ids for d in GSM8K(num_fewshot=3, limit=4).docs(BUNDLED)]
    assert first[:2] == [d.fewshot_ids for d in GSM8K(num_fewshot=3, limit=2).docs(BUNDLED)]


def test_doc_missing_a_field_names_it() -> None:
    class Broken(ArcEasy):
        def doc_to_text(self, item):  # type: ignore[override]
            return item["no_such_field"]

    with pytest.raises(TaskError, match=r"no_such_field.*|doc 0"):
        next(Broken().docs(BUNDLED))


@pytest.mark.parametrize("old", sorted(RENAMED_HOOKS))
def test_a_class_that_defines_an_old_hook_is_refused_naming_the_new_one(old: str) -> None:
    """A task written for the underscore hooks would be silently ignored: its class is
    refused when it is created, in one line naming the hook's name now."""
    with pytest.raises(TaskError) as caught:
        type("Old", (ArcEasy,), {old: lambda self, item: "x"})
    message = str(caught.value)
    assert "\n" not in message and f"defines {old}," in message
    assert f"it is now {RENAMED_HOOKS[old]};" in message
    assert RENAMED_HOOKS[old] in vars(Task)  # the new name is a hook of the base class
    assert not hasattr(Task, old)


def test_the_hooks_are_public_typed_and_documented() -> None:
    """Every hook a task author overrides is a public method of Task with a docstring and
    annotations (its arguments, its result)."""
    for name in {*RENAMED_HOOKS.values(), "programs"}:
        hook = vars(Task)[name]
        assert not name.startswith("_") and hook.__doc__, name
        assert "return" in hook.__annotations__ and len(hook.__annotations__) >= 2, name


def test_wikitext_pages_and_detokenizer() -> None:
    pages = split_pages(" \n = A = \n \n text @-@ here , ok . \n = B = \n more \n")
    assert pages == [" = A = \n \n text @-@ here , ok . \n", " = B = \n more \n"]
    assert wikitext_detokenizer(" text @-@ here , ok . ") == " text-here, ok. "
    docs = list(WikiText().docs(BUNDLED))
    assert len(docs) == 3 and docs[0].gold.startswith(" = Robert <unk> = ")
    assert "@-@" not in docs[0].continuation
