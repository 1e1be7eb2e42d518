"""What a served model answered, and what Mill says it asked (issue 53, class 3): a choice
that holds no answer is refused, never scored as an empty one; ``model.sampling`` holds only
fields that every generation request sends as given, so what results.json records as the
sampling is what was sent. The server is a real HTTP server in this process."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mill.errors import ConfigError, ModelError
from mill.model.served.openai_api import OpenAIChat, OpenAICompletions
from mill.model.served.openai_protocol import REQUEST_FIELDS, generated_text
from mill.types import GenerationArgs, OutputType, Request
from tests.support.json_server import JSONHandler, JSONServer, json_server


def gpt2() -> str:
    """A tokenizer folder for the completions client (the cached random GPT-2's)."""
    from mill.model.random import random_gpt2_dir

    return str(random_gpt2_dir())


class _Handler(JSONHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        with self.server.lock:
            self.server.seen.append({"GET": self.path})
        super().do_GET()

    def do_POST(self) -> None:  # noqa: N802
        body = self.read_json()
        prompts = body.get("prompt")
        count = (
            len(prompts)
            if isinstance(prompts, list) and prompts and not isinstance(prompts[0], int)
            else 1
        )
        choices = [{"index": i, **self.server.state["choice"]} for i in range(count)]
        self.send_json({"choices": choices, "usage": {"prompt_tokens": 1, "completion_tokens": 1}})


@contextmanager
def server(choice: dict[str, Any]) -> Iterator[JSONServer]:
    """A server answering every POST with ``choice`` (one per prompt)."""
    with json_server(_Handler, choice=choice) as httpd:
        yield httpd


def _request() -> Request:
    args = GenerationArgs(until=("\n",), max_gen_toks=8)
    return Request(OutputType.GENERATIVE, "gsm8k", 0, 0, "Q: 2+2?\nA:", generation=args)


def _model(chat: bool, url: str, **kwargs: Any) -> OpenAIChat | OpenAICompletions:
    if chat:
        return OpenAIChat(base_url=url, max_retries=0, **kwargs)
    return OpenAICompletions(
        base_url=url, tokenizer=gpt2(), prompt_ids=False, max_retries=0, **kwargs
    )


# name: (chat?, the choice the server answers, what the line names)
NO_ANSWER: dict[str, tuple[bool, dict[str, Any], str]] = {
    "chat: no message": (True, {"finish_reason": "stop"}, "without a message"),
    "chat: message null": (True, {"message": None}, "without a message"),
    "chat: message a string": (True, {"message": "4"}, "whose message is not an object"),
    "chat: message without content": (
        True,
        {"message": {"role": "assistant"}},
        "without message.content",
    ),
    "chat: content a number": (True, {"message": {"content": 4}}, "whose message.content is 4"),
    "chat: content a list": (True, {"message": {"content": ["4"]}}, 'message.content is ["4"]'),
    "completions: no text": (False, {"finish_reason": "stop"}, "without text"),
    "completions: text null": (False, {"text": None}, "whose text is null"),
    "completions: text a number": (False, {"text": 4}, "whose text is 4"),
}


@pytest.mark.parametrize("case", NO_ANSWER)
def test_a_choice_without_an_answer_is_refused_not_scored_empty(case: str) -> None:
    chat, choice, named = NO_ANSWER[case]
    with pytest.raises(ModelError) as direct:
        generated_text(choice, chat, "request gsm8k/0", "http://h/v1")
    assert named in str(direct.value)
    with server(choice) as httpd:
        model = _model(chat, httpd.url)
        with pytest.raises(ModelError) as served:
            model.generate_until([_request()])
    line = str(served.value)
    assert "\n" not in line and named in line, line
    assert f"model.base_url={httpd.url}" in line and "request gsm8k/0" in line, line


@pytest.mark.parametrize(
    ("chat", "choice", "text"),
    [
        (True, {"message": {"role": "assistant", "content": " 4\nQ:"}}, " 4"),
        (True, {"message": {"role": "assistant", "content": None}}, ""),  # no text answered
        (False, {"text": " 4\nQ:"}, " 4"),
        (False, {"text": ""}, ""),
    ],
)
def test_a_choice_with_its_answer_is_scored(chat: bool, choice: dict[str, Any], text: str) -> None:
    with server(choice) as httpd:
        (response,) = _model(chat, httpd.url).generate_until([_request()])
    assert response.text == text


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
@pytest.mark.parametrize("field", sorted(REQUEST_FIELDS))
def test_a_sampling_field_mill_sets_per_request_is_refused_before_any_request(
    field: str, chat: bool
) -> None:
    with server({"text": "x"}) as httpd:
        with pytest.raises(ConfigError) as caught:
            _model(chat, httpd.url, sampling={"top_p": 1.0, field: 0.7})
    line = str(caught.value)
    assert line.startswith(f"model.sampling.{field}=0.7 would not be sent") and "\n" not in line
    assert httpd.seen == []  # refused before the server is asked anything


@pytest.mark.parametrize("chat", [True, False], ids=["chat", "completions"])
@pytest.mark.parametrize(
    "sampling", [None, {}, {"top_p": 0.9, "top_k": 5}], ids=["default", "none", "own"]
)
def test_the_recorded_sampling_is_what_every_generation_request_sent(
    chat: bool, sampling: dict[str, Any] | None, tmp_path: Path, compose: Any
) -> None:
    """Through a whole run: results.json's model identity records ``sampling``, and every
    generation request the server saw carries exactly those fields with those values."""
    from mill.runner.job import run_job

    content = {"message": {"role": "assistant", "content": " 4"}} if chat else {"text": " 4"}
    with server(content) as httpd:
        model = "openai_chat" if chat else "openai_completions"
        extra = [] if chat else [f"model.tokenizer={gpt2()}", "model.prompt_ids=false"]
        if sampling is not None:
            fields = ",".join(f"{k}:{v}" for k, v in sampling.items())
            extra.append(f"model.sampling={{{fields}}}")
        cfg = compose(
            "task=gsm8k", "task.limit=2", f"model={model}", f"model.base_url={httpd.url}",
            "model.max_retries=0", "report.progress=never", *extra,
        )  # fmt: skip
        run_job(cfg, tmp_path / "run")
        posts = [b for b in httpd.seen if "GET" not in b]
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    recorded = results["model"]["sampling"]
    if sampling is not None:
        assert recorded == sampling
    assert posts
    for body in posts:
        sent = {k: v for k, v in body.items() if k not in REQUEST_FIELDS}
        assert sent == recorded
