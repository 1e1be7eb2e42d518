"""The reasoning rule (:class:`mill.types.ReasoningRule`): what of a generation the metrics
read, case by case, and the settings it refuses."""

from __future__ import annotations

import pytest

from mill.errors import ConfigError
from mill.types import THINK_TAGS, GenerationArgs, OutputType, ReasoningRule, Request

THINK = ReasoningRule()


@pytest.mark.parametrize(
    ("text", "answer", "unfinished"),
    [
        # no tag: the text as generated, whitespace included
        (" The answer is 4.", " The answer is 4.", False),
        ("", "", False),
        # a closed block is removed, and the answer's leading whitespace with it
        (
            "<think>2+2=4</think>\n\nThe answer: $\\boxed{4}$.",
            "The answer: $\\boxed{4}$.",
            False,
        ),
        # several blocks; text between them stays
        ("<think>a</think>x<think>b</think>y", "xy", False),
        # text before the block stays (a model that answers, then thinks again, closed)
        ("Answer: 4 <think>check</think> done", "Answer: 4  done", False),
        # a lone closing tag: the chat template opened the block (R1 distills)
        ("Let me think... \\boxed{3}</think>\n\\boxed{4}", "\\boxed{4}", False),
        # a lone closing tag after a closed block: everything before it is reasoning
        ("<think>a</think>b</think>c", "c", False),
        # an opening tag never closed: the budget cut the reasoning, no answer at all,
        # whatever tentative answer it holds
        ("<think>so it is \\boxed{4}, but wait", "", True),
        ("The answer is 4.<think>but maybe", "", True),
        ("<think>a</think>\\boxed{4}<think>hmm", "", True),
        ("reasoning</think>\\boxed{4}<think>more", "", True),
    ],
)
def test_the_rule_reads_each_case(text: str, answer: str, unfinished: bool) -> None:
    assert THINK.apply(text) == (answer, unfinished)


def test_other_tags_and_no_tags() -> None:
    rule = ReasoningRule.parse([["<|begin_of_thought|>", "<|end_of_thought|>"]])
    assert rule.apply("<|begin_of_thought|>x<|end_of_thought|> 5") == ("5", False)
    assert rule.apply("<think>x</think>5") == ("<think>x</think>5", False)  # not its tags
    both = ReasoningRule.parse([["<think>", "</think>"], ["<r>", "</r>"]])
    assert both.apply("<think>a</think><r>b</r> 7") == ("7", False)
    assert both.apply("<think>a</think><r>b") == ("", True)
    keep = ReasoningRule.parse([])
    assert keep.apply("<think>a") == ("<think>a", False)
    assert ReasoningRule.parse(None).tags == THINK_TAGS
    assert both.describe() == [["<think>", "</think>"], ["<r>", "</r>"]]


@pytest.mark.parametrize(
    ("tags", "says"),
    [
        ("<think>", "reasoning.tags='<think>': give a list of [open, close] tag pairs"),
        ({"open": "<think>"}, "give a list of [open, close] tag pairs"),
        ([["<think>"]], "reasoning.tags[0]=['<think>'] is not a tag pair"),
        ([["<think>", ""]], "reasoning.tags[0]=['<think>', ''] is not a tag pair"),
        ([["<t>", "</t>"], ["a", "a"]], "reasoning.tags[1]=['a', 'a'] is not a tag pair"),
        ([["<t>", 3]], "two non-empty, different strings"),
        (["<t>", "</t>"], "reasoning.tags[0]='<t>' is not a tag pair"),
    ],
)
def test_a_bad_tag_setting_is_one_line(tags: object, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        ReasoningRule.parse(tags)
    assert says in str(err.value) and "\n" not in str(err.value)


def _prompt(doc: int, item_id: str | None, task: str = "humaneval") -> Request:
    return Request(
        OutputType.GENERATIVE, task, doc, 0, "def f():", generation=GenerationArgs(),
        item_id=item_id,
    )  # fmt: skip


def test_two_docs_with_one_prompt_are_two_requests_when_answered_by_id() -> None:
    """model=replay answers by the dataset's id: two docs with the same prompt (and so the
    same context) must not collapse into one cached request, or both get the first's
    answer. Without an id, identical prompts stay one request (scored once, cached once)."""
    a, b = _prompt(0, "HumanEval/0"), _prompt(1, "HumanEval/1")
    assert a.content_hash != b.content_hash
    assert _prompt(0, "HumanEval/0").content_hash == a.content_hash  # stable
    assert _prompt(0, None).content_hash == _prompt(1, None, task="other").content_hash
