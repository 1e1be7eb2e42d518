"""``model=openai_completions`` against llama.cpp's own ``llama-server`` (stories260K as GGUF,
F32 KV cache, flash attention off, two slots): the server that takes token-id prompts and
several prompts per request, where llama-cpp-python's takes one text prompt.

* What its ``/v1/completions`` accepts, asked directly: token ids, a list of prompts (ids or
  text), one choice per prompt by ``index``; ``echo`` ignored (no prompt log-probs).
* GSM8K sent as token ids, ``model.batch_prompts=4``: the greedy generations of the HF backend
  (and of the text-prompt path), in a quarter of the requests (``usage`` in results.json).
* ARC-Easy (LOGPROBS) and WikiText (PERPLEXITY) stop before anything is written, with one
  line naming the request, what the server did not return and where to score it instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import GSM8K, completions_args, error_lines, ok, samples
from tests.support.servers import SERVED_NAME, STORIES, ServerProcess, http_json

pytestmark = pytest.mark.slow

GREEDY = {"model": SERVED_NAME, "max_tokens": 8, "temperature": 0.0, "top_k": 0, "min_p": 0.0}


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(STORIES)


def test_token_ids_and_prompt_lists_are_accepted(
    native_llama_server: ServerProcess, tokenizer: Any
) -> None:
    url = native_llama_server.base_url + "/completions"
    texts = ["Once upon a time", "The little dog"]
    ids = [tokenizer(t)["input_ids"] for t in texts]  # BOS included, as Mill sends them
    one = [http_json(url, {**GREEDY, "prompt": t}) for t in texts]
    assert [status for status, _ in one] == [200, 200]
    singles = [body["choices"][0]["text"] for _, body in one]
    assert all(len(t) > 5 for t in singles)
    # the token ids of a text (its BOS included) continue it exactly as the text does
    for prompt, text in zip(ids, singles, strict=True):
        status, body = http_json(url, {**GREEDY, "prompt": prompt})
        assert status == 200 and body["choices"][0]["text"] == text
        assert body["usage"]["prompt_tokens"] == len(prompt)
    # several prompts, ids or text: one choice per prompt, by index
    for prompts in (ids, texts, [ids[0], texts[1]]):
        status, body = http_json(url, {**GREEDY, "prompt": prompts})
        assert status == 200, body
        choices = sorted(body["choices"], key=lambda c: c["index"])
        assert [c["index"] for c in choices] == [0, 1]
        assert [c["text"] for c in choices] == singles


def test_echo_is_ignored(native_llama_server: ServerProcess) -> None:
    """Why LOGPROBS and PERPLEXITY tasks cannot be scored here: no prompt log-probs (``echo``
    is ignored; ``logprobs`` covers the generated token only)."""
    status, body = http_json(
        native_llama_server.base_url + "/completions",
        {**GREEDY, "prompt": "Once upon a time", "echo": True, "logprobs": 1, "max_tokens": 1},
    )
    assert status == 200, body
    (choice,) = body["choices"]
    assert not choice["text"].startswith("Once upon a time")
    assert "token_logprobs" not in choice["logprobs"]
    assert len(choice["logprobs"]["content"]) == 1  # the one generated token


def test_usage_of_a_prompt_list_covers_its_first_prompt_only(
    native_llama_server: ServerProcess, tokenizer: Any
) -> None:
    """docs/served.md: with several prompts per request, llama-server's ``usage`` counts the
    first prompt only (request and prompt counts in Mill's usage are Mill's own)."""
    url = native_llama_server.base_url + "/completions"
    ids = [tokenizer(t)["input_ids"] for t in ("Once upon a time", "The dog ran")]
    status, body = http_json(url, {**GREEDY, "prompt": ids, "cache_prompt": False})
    assert status == 200 and len(body["choices"]) == 2
    assert body["usage"]["prompt_tokens"] == len(ids[0])
    assert body["usage"]["completion_tokens"] == GREEDY["max_tokens"]


@pytest.fixture(scope="module")
def gsm8k_runs(
    native_llama_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    """GSM8K through a recording proxy, 4 prompts per request: token-id prompts (found by
    Mill's probe), text prompts, and token ids from the server's own tokenizer."""
    root = tmp_path_factory.mktemp("native-gsm8k")
    out: dict[str, Any] = {}
    variants = {
        "ids": [],
        "text": ["model.prompt_ids=false"],
        "remote": ["model.tokenizer=remote"],  # llama-server's own /tokenize, /detokenize
    }
    for name, extra in variants.items():
        with FaultProxy(native_llama_server.root_url) as proxy:
            ok(
                run_mill(
                    *GSM8K,
                    *completions_args(proxy.base_url, "model.batch_prompts=4", *extra),
                    f"hydra.run.dir={root / name}",
                )
            )
        out[name] = (root / name, list(proxy.bodies))
    return out


def _generations(bodies: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """The generation requests among the proxy's ``(path, body)`` records."""
    return [b for path, b in bodies if path == "/v1/completions" and b.get("max_tokens") == 96]


def test_gsm8k_sent_as_token_ids_four_per_request_equals_the_hf_backend(
    gsm8k_runs: dict[str, Any], gsm8k_hf_run: Path
) -> None:
    run, bodies = gsm8k_runs["ids"]
    sent = _generations(bodies)
    # 8 docs, one greedy setting: 2 requests of 4 prompts, each a list of token ids
    assert [len(b["prompt"]) for b in sent] == [4, 4]
    assert all(isinstance(t, int) for b in sent for p in b["prompt"] for t in p)
    hf, api = samples(gsm8k_hf_run, "gsm8k"), samples(run, "gsm8k")
    assert sorted(hf) == sorted(api) and len(hf) == 8
    for doc_id, row in hf.items():
        ours = api[doc_id]
        assert ours["response"]["text"] == row["response"]["text"], doc_id
        assert len(ours["response"]["text"][0]) > 20, doc_id
        assert ours["response"]["input_tokens"] == row["response"]["input_tokens"], doc_id
        assert ours["prediction"] == row["prediction"] and ours["metrics"] == row["metrics"]
    results = json.loads((run / "results.json").read_text())
    usage = results["usage"]["gsm8k"]
    assert usage["requests"] == 2 and usage["prompts"] == 8
    assert usage["completion_tokens"] > 0
    metrics = json.loads((gsm8k_hf_run / "results.json").read_text())["tasks"]["gsm8k"]
    assert results["tasks"]["gsm8k"]["metrics"] == metrics["metrics"]


def test_text_prompts_four_per_request_give_the_same_generations(
    gsm8k_runs: dict[str, Any],
) -> None:
    (ids_run, _), (text_run, bodies) = gsm8k_runs["ids"], gsm8k_runs["text"]
    sent = _generations(bodies)
    assert [len(b["prompt"]) for b in sent] == [4, 4]
    assert all(isinstance(p, str) for b in sent for p in b["prompt"])
    by_ids, by_text = samples(ids_run, "gsm8k"), samples(text_run, "gsm8k")
    assert sorted(by_ids) == sorted(by_text)
    for doc_id, row in by_ids.items():
        assert by_text[doc_id]["response"]["text"] == row["response"]["text"], doc_id
    usage = json.loads((text_run / "results.json").read_text())["usage"]["gsm8k"]
    assert usage["requests"] == 2 and usage["prompts"] == 8


def test_the_servers_own_tokenizer_gives_the_same_requests_and_generations(
    gsm8k_runs: dict[str, Any],
) -> None:
    (ids_run, ids_bodies), (remote_run, bodies) = gsm8k_runs["ids"], gsm8k_runs["remote"]
    assert _generations(bodies) == _generations(ids_bodies)  # the same token ids, batched
    tokenized = [b for path, b in bodies if path == "/tokenize"]
    # vLLM's fields tried first (no tokens back), then llama-server's for every text
    assert "prompt" in tokenized[0] and len(tokenized) > 2
    assert all("content" in b for b in tokenized[1:])
    by_ids, by_remote = samples(ids_run, "gsm8k"), samples(remote_run, "gsm8k")
    for doc_id, row in by_ids.items():
        ours = by_remote[doc_id]
        assert ours["response"]["output_tokens"] == row["response"]["output_tokens"], doc_id
        # the server's /detokenize keeps the leading space a SentencePiece decode drops
        (text,), (local,) = ours["response"]["text"], row["response"]["text"]
        assert text == " " + local, doc_id
        assert ours["prediction"] == row["prediction"], doc_id
    model = json.loads((remote_run / "results.json").read_text())["model"]
    assert model["tokenizer"] == "remote" and model["tokenizer_sha256"] is None


@pytest.mark.parametrize("task", ["arc_easy", "wikitext"])  # LOGPROBS, PERPLEXITY
def test_scoring_task_stops_with_one_line_and_writes_no_results(
    native_llama_server: ServerProcess, tmp_path: Path, task: str
) -> None:
    run = tmp_path / "run"
    proc = run_mill(
        f"task={task}",
        "task.limit=2",
        *completions_args(native_llama_server.base_url, "model.batch_prompts=4"),
        f"hydra.run.dir={run}",
        env={"MILL_CACHE": str(tmp_path / "cache")},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = error_lines(proc.stderr)
    assert f"request {task}/" in line and "returned no prompt log-probabilities" in line
    assert f"model.base_url={native_llama_server.base_url}" in line
    assert "model=hf" in line and "llama-cpp-python" in line
    assert "Traceback" not in proc.stderr
    assert not (run / "results.json").exists()
