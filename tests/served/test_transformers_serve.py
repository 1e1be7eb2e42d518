"""``transformers serve`` started by the tests answers /v1/chat/completions with the model's own
greedy continuation of the chat-templated prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from tests.helpers import run_mill
from tests.served.runs import error_lines
from tests.support.servers import STORIES, ServerProcess, http_json

pytestmark = pytest.mark.slow

MESSAGES = [
    {"role": "system", "content": "Tell a short story."},
    {"role": "user", "content": "Once upon a time, there was a little dog named Max."},
]


def test_models_endpoint_lists_the_pinned_model(
    transformers_chat_server: ServerProcess, chat_model_dir: Path
) -> None:
    status, body = http_json(transformers_chat_server.base_url + "/models")
    assert status == 200
    assert [m["id"] for m in body["data"]] == [str(chat_model_dir)]


def test_chat_completion_equals_local_greedy_generation(
    transformers_chat_server: ServerProcess, chat_model_dir: Path
) -> None:
    tok = AutoTokenizer.from_pretrained(chat_model_dir)
    model = AutoModelForCausalLM.from_pretrained(chat_model_dir, dtype=torch.float32).eval()
    ids = tok.apply_chat_template(MESSAGES, add_generation_prompt=True, return_dict=True)[
        "input_ids"
    ]
    prompt = torch.tensor([ids])
    with torch.no_grad():
        out = model.generate(prompt, max_new_tokens=24, do_sample=False)
    expected = tok.decode(out[0, prompt.shape[1] :], skip_special_tokens=True)

    status, body = http_json(
        transformers_chat_server.base_url + "/chat/completions",
        {
            "model": str(chat_model_dir),
            "messages": MESSAGES,
            "max_tokens": 24,
            "temperature": 0.0,
            "seed": 0,
        },
        timeout=120,
    )
    assert status == 200, body
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == expected
    assert len(expected) > 20
    assert body["usage"]["prompt_tokens"] == len(ids)
    assert body["usage"]["completion_tokens"] == 24


def test_completions_endpoint_does_not_echo_logprobs(
    transformers_chat_server: ServerProcess, chat_model_dir: Path
) -> None:
    """Why Mill's LOGPROBS tasks need a llama.cpp or vLLM server: no prompt log-probs here."""
    status, body = http_json(
        transformers_chat_server.base_url + "/completions",
        {
            "model": str(chat_model_dir),
            "prompt": "Once upon a time",
            "echo": True,
            "logprobs": 1,
            "max_tokens": 1,
            "temperature": 0.0,
        },
        timeout=120,
    )
    assert status == 200, body  # accepted, but echo and logprobs are ignored
    choice = body["choices"][0]
    assert choice.get("logprobs") is None
    assert not choice["text"].startswith("Once upon a time")  # the prompt is not echoed
    assert body["usage"]["completion_tokens"] == 1


def test_logprobs_task_on_a_server_without_prompt_logprobs_stops_with_one_line(
    transformers_chat_server: ServerProcess, chat_model_dir: Path, tmp_path: Path
) -> None:
    """docs/served.md: a /v1/completions server that does not echo prompt log-probs cannot
    score a LOGPROBS task; the run stops at the first request, naming it, with exit 2."""
    proc = run_mill(
        "task=arc_easy",
        "++task.limit=1",
        "model=openai_completions",
        f"model.base_url={transformers_chat_server.base_url}",
        f"model.model={chat_model_dir}",
        f"model.tokenizer={STORIES}",
        f"hydra.run.dir={tmp_path / 'run'}",
        env={"MILL_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = error_lines(proc.stderr)
    assert len(errors) == 1, proc.stderr[-2000:]
    assert "request arc_easy/0/choice/" in errors[0]
    assert "returned no prompt log-probabilities" in errors[0] and "model=hf" in errors[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run" / "results.json").exists()
