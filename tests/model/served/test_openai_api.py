"""Pieces of the API backends that need no server: reasoning stripping, the echo window,
the checks that refuse impossible echoed log-probabilities."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mill.errors import ModelError
from mill.model.served.openai_api import OpenAICompletions
from mill.model.served.openai_protocol import echo_window as _echo_window
from mill.model.served.openai_protocol import echoed as _echoed
from mill.model.tokenizing import scoring_window
from mill.types import OutputType, Request


def test_hit_max_is_the_servers_finish_reason_length() -> None:
    hit = OpenAICompletions._hit_max
    assert hit({"finish_reason": "length"}) is True
    assert hit({"finish_reason": "stop"}) is False
    assert hit({}) is None


def test_echo_window_scores_each_token_on_the_hf_backends_context() -> None:
    ctx, cont = list(range(10)), [10, 11, 12]
    for max_length in (20, 12, 8, 5):
        inp, truncated = scoring_window(ctx, cont, max_length)
        prompt, cut = _echo_window(ctx, cont, max_length)
        # the prompt is the HF input plus the last continuation token: echoed log-probs of
        # the last len(cont) positions are the HF backend's predictions
        assert prompt == inp + [12] and cut == truncated
        assert prompt[-len(cont) :] == cont


def test_requests_hold_up_to_batch_prompts_prompts_of_one_task_and_payload() -> None:
    model = OpenAICompletions.__new__(OpenAICompletions)
    model.batch_prompts = 2
    echo, gen = {"echo": True}, {"stop": ["Q:"], "seed": 0}
    items = [
        ("a", "p1", echo, 1),
        ("b", "p2", echo, 2),
        ("a", "p3", echo, 3),
        ("a", "p4", echo, 4),
        ("b", "p5", echo, 5),
        ("a", "p6", gen, 6),
        ("a", "p7", {"stop": ["Q:"], "seed": 7}, 7),  # a sampled job: its own seed
        ("a", "p8", dict(gen), 8),
    ]
    calls = model._calls(items)
    assert [(c.task, c.prompts, c.items, c.payload) for c in calls] == [
        ("a", ["p1", "p3"], [1, 3], echo),
        ("b", ["p2", "p5"], [2, 5], echo),
        ("a", ["p4"], [4], echo),
        ("a", ["p6", "p8"], [6, 8], gen),
        ("a", ["p7"], [7], {"stop": ["Q:"], "seed": 7}),
    ]


def _choice(lps: Any, tops: Any = None) -> dict[str, Any]:
    return {"logprobs": {"token_logprobs": lps, "top_logprobs": tops}}


REQUEST = Request(OutputType.LOGPROBS, "arc", 3, 1, "Q", " A")
URL = "http://***@127.0.0.1:9/v1"
GOOD = [None, -1.5, -0.25, -2.0]  # 3 prompt tokens + the generated one

IMPOSSIBLE: dict[str, tuple[dict[str, Any], str]] = {
    "above 0": (_choice([None, -1.5, 50.0, -2.0]), "probability 50.0 at prompt token 2"),
    "just above the allowance": (_choice([None, -1.5, 2e-6, -2.0]), "probability 2e-06"),
    "a string": (_choice([None, "-1.5", -0.25, -2.0]), 'probability "-1.5" at prompt token 1'),
    "a boolean": (_choice([None, True, -0.25, -2.0]), "impossible log-probability true"),
    "NaN": (_choice([None, -1.5, math.nan, -2.0]), "impossible log-probability NaN"),
    "infinite": (_choice([None, -math.inf, -0.25, -2.0]), "log-probability -Infinity"),
    "a top log-probability above 0": (
        _choice(GOOD, [None, {"a": -1.5}, {"b": 3.0}, {"c": -2.0}]),
        "impossible log-probability 3.0 at prompt token 2",
    ),
    "top log-probs not aligned": (
        _choice(GOOD, [None, {"a": -1.5}]),
        "not two lists of the same length",
    ),
    "top log-prob not an object": (
        _choice(GOOD, [None, 5, None, None]),
        "top_logprobs[1] that is not an object",
    ),
    "logprobs not an object": ({"logprobs": [1, 2]}, "logprobs that are not an object"),
    "fewer tokens": (
        _choice([None, -2.0]),
        "echoed 1 prompt tokens where the local tokenizer has 3",
    ),
    "more tokens": (_choice([None, -1.0, -1.0, -1.0, -1.0, -2.0]), "echoed 5 prompt tokens where"),
}


@pytest.mark.parametrize("name", IMPOSSIBLE)
def test_impossible_echoed_log_probabilities_name_the_request_and_server(name: str) -> None:
    choice, fragment = IMPOSSIBLE[name]
    with pytest.raises(ModelError) as err:
        _echoed(choice, 3, REQUEST, URL)
    message = str(err.value)
    assert message.startswith(f"request {REQUEST.id}: ") and f"model.base_url={URL}" in message
    assert fragment in message, message


def test_possible_echoed_log_probabilities_pass() -> None:
    # 0 itself, the rounding allowance above it, a server that does not list its BOS
    lps, tops = _echoed(
        _choice([None, 0.0, 1e-7, -2.0], [None, {"a": 0}, None, None]), 3, REQUEST, URL
    )
    assert lps == [None, 0.0, 1e-7] and tops == [None, {"a": 0}, None]
    assert _echoed(_choice([-1.0, -0.5, -2.0]), 3, REQUEST, URL)[0] == [-1.0, -0.5]


def test_one_entry_fewer_without_a_bos_is_one_position_off() -> None:
    # a prompt of 3 tokens that does not start with BOS, echoed as 2 + the generated one:
    # nothing was left out, so the entries are shifted (llama-cpp-python, no-BOS models)
    with pytest.raises(ModelError) as err:
        _echoed(_choice([-1.0, -0.5, -2.0]), 3, REQUEST, URL, starts_with_bos=False)
    message = str(err.value)
    assert message.startswith(f"request {REQUEST.id}: ") and f"model.base_url={URL}" in message
    assert "echoed 2 prompt tokens where the local tokenizer has 3 and adds no BOS" in message
    assert "one position off" in message and "llama-cpp-python#1983" in message
    # every token echoed: fine with or without a BOS
    assert _echoed(_choice(GOOD), 3, REQUEST, URL, starts_with_bos=False)[0] == GOOD[:3]


def test_chat_refuses_the_completions_settings_it_inherits_but_cannot_use(compose) -> None:
    """openai_chat's config extends openai_completions'; batch_prompts and prompt_ids come
    along at their defaults, and any other value is refused before a request is sent."""
    import pytest

    from mill.errors import ConfigError
    from mill.model.served.openai_api import OpenAIChat

    model = compose("model=openai_chat", "model.base_url=http://127.0.0.1:9/v1").model
    assert (model.batch_prompts, model.prompt_ids) == (1, "auto")
    for key, value in (("batch_prompts", 4), ("prompt_ids", True), ("prompt_ids", "false")):
        with pytest.raises(ConfigError, match=f"model.{key}=.* means nothing to model=openai_chat"):
            OpenAIChat(base_url="http://127.0.0.1:9/v1", **{key: value})
