"""``model=openai_chat`` against a real ``transformers serve`` (stories260k with a chat
template): the task's messages reach the server, which applies its own template, and greedy
generations equal the HF backend rendering the same messages with ``task.chat_template=true``;
a LOGPROBS task is refused before any request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import error_lines, ok, samples
from tests.support.servers import ServerProcess

pytestmark = pytest.mark.slow


def _rows(run: Path) -> list[dict[str, Any]]:
    return [row for _, row in sorted(samples(run, "gsm8k").items())]


def _chat(server: ServerProcess, model_dir: Path, base_url: str | None = None) -> list[str]:
    return [
        "model=openai_chat",
        f"model.base_url={base_url or server.base_url}",
        f"model.model={model_dir}",
        f"model.tokenizer={model_dir}",
    ]


def test_chat_generations_equal_the_hf_backend_with_the_same_template(
    transformers_chat_server: ServerProcess, chat_model_dir: Path, tmp_path: Path
) -> None:
    common = [
        "task=gsm8k",
        "task.limit=4",
        "task.num_fewshot=0",  # prompts within the model's 512 positions (no truncation)
        "task.system_prompt=Solve it.",  # a system message and a user message
        "task.generation.max_gen_toks=40",
    ]
    with FaultProxy(transformers_chat_server.root_url) as proxy:
        api = run_mill(
            *common,
            *_chat(transformers_chat_server, chat_model_dir, proxy.base_url),
            f"hydra.run.dir={tmp_path / 'api'}",
        )
        posts = [p for m, p, _ in proxy.log if m == "POST"]
    ok(api)
    assert posts == ["/v1/chat/completions"] * 4
    hf = run_mill(
        *common,
        "model=hf",
        f"model.pretrained={chat_model_dir}",
        "task.chat_template=true",
        f"hydra.run.dir={tmp_path / 'hf'}",
    )
    ok(hf)
    a, h = _rows(tmp_path / "api"), _rows(tmp_path / "hf")
    assert [r["doc_id"] for r in a] == [r["doc_id"] for r in h] == [0, 1, 2, 3]
    for x, y in zip(a, h, strict=True):
        assert x["response"]["text"] == y["response"]["text"], x["doc_id"]
        assert len(x["response"]["text"][0]) > 20
        assert x["prediction"] == y["prediction"] and x["metrics"] == y["metrics"]
    usage = json.loads((tmp_path / "api" / "results.json").read_text())["usage"]["gsm8k"]
    assert usage["requests"] == 4 and usage["completion_tokens"] > 0


def test_logprobs_task_is_refused_before_any_request(
    transformers_chat_server: ServerProcess, chat_model_dir: Path, tmp_path: Path
) -> None:
    with FaultProxy(transformers_chat_server.root_url) as proxy:
        proc = run_mill(
            "task=arc_easy",
            "task.limit=2",
            *_chat(transformers_chat_server, chat_model_dir, proxy.base_url),
            f"hydra.run.dir={tmp_path / 'run'}",
        )
        posts = [p for m, p, _ in proxy.log if m == "POST"]
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr[-2000:]
    assert "generative tasks only" in lines[0] and "model=openai_completions" in lines[0]
    assert posts == []
