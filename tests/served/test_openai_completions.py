"""``model=openai_completions`` against a real llama.cpp server (llama-cpp-python, stories260K
as GGUF, F32 KV cache) versus ``model=stories260k`` in-process: the same per-request
log-likelihoods (1e-4), the same acc/acc_norm and is_greedy, the same greedy generations; the
API key never written or printed; a dead server fails fast naming model.base_url; a run whose
server died resumes with only the missing requests."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from mill.model.base import request_seed, server_seed
from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import GSM8K, TOKENS, completions_args, error_lines, ok, samples
from tests.support.servers import SERVED_NAME, STORIES, ServerProcess, free_port, http_json

pytestmark = pytest.mark.slow

SECRET = "sk-mill-served-test-7f3e9a2b41"


def _api(server: ServerProcess, *extra: str) -> list[str]:
    return completions_args(server.base_url, *extra)


@pytest.fixture(scope="module")
def arc_runs(llama_server: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("arc")
    common = ["task=arc_easy", "task.limit=25", TOKENS]
    hf = run_mill(*common, "model=stories260k", f"hydra.run.dir={root / 'hf'}")
    ok(hf)
    api = run_mill(
        *common,
        *_api(llama_server, "model.num_concurrent=2"),
        f"hydra.run.dir={root / 'api'}",
        env={"OPENAI_API_KEY": SECRET},
    )
    ok(api)
    return root / "hf", root / "api", api


def test_arc_easy_loglikelihoods_and_metrics_equal_the_hf_backend(arc_runs: Any) -> None:
    hf_dir, api_dir, _ = arc_runs
    hf, api = samples(hf_dir, "arc_easy"), samples(api_dir, "arc_easy")
    assert sorted(hf) == sorted(api) and len(hf) == 25
    worst = 0.0
    for doc_id, row in hf.items():
        a, h = api[doc_id]["response"], row["response"]
        assert len(a["logprobs"]) == len(h["logprobs"]) >= 2
        worst = max(worst, *(abs(x - y) for x, y in zip(a["logprobs"], h["logprobs"], strict=True)))
        assert a["argmax_logits_eq_gold"] == h["argmax_logits_eq_gold"], doc_id
        assert a["output_tokens"] == h["output_tokens"], doc_id
        assert api[doc_id]["metrics"] == row["metrics"], doc_id
    assert worst < 1e-4
    hf_res = json.loads((hf_dir / "results.json").read_text())["tasks"]["arc_easy"]["metrics"]
    api_res = json.loads((api_dir / "results.json").read_text())["tasks"]["arc_easy"]["metrics"]
    for metric in ("acc", "acc_norm"):
        assert api_res[metric]["value"] == hf_res[metric]["value"]


def test_usage_per_task_in_results_and_report(arc_runs: Any) -> None:
    _, api_dir, proc = arc_runs
    results = json.loads((api_dir / "results.json").read_text())
    usage = results["usage"]["arc_easy"]
    n_requests = sum(len(r["choices"]) for r in samples(api_dir, "arc_easy").values())
    # one echo request per distinct prompt, one prompt per request (llama-cpp-python)
    assert usage["requests"] == usage["prompts"] == n_requests
    assert usage["completion_tokens"] == n_requests  # max_tokens=1
    assert usage["prompt_tokens"] > 10 * n_requests
    assert "served model usage" in (api_dir / "report.txt").read_text()
    assert results["model"]["backend"] == "openai_completions"
    assert results["model"]["server_model"]["id"] == SERVED_NAME
    assert len(results["model"]["tokenizer_sha256"]) == 64


def test_api_key_is_never_written_or_printed(arc_runs: Any) -> None:
    _, api_dir, proc = arc_runs
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    files = [p for p in api_dir.rglob("*") if p.is_file()]
    assert any(p.name == "resolved.yaml" for p in files)
    for path in files:
        assert SECRET.encode() not in path.read_bytes(), path
    resolved = (api_dir / "resolved.yaml").read_text()
    assert "api_key_env: OPENAI_API_KEY" in resolved


def test_gsm8k_greedy_generations_equal_the_hf_backend(
    llama_server: ServerProcess, gsm8k_hf_run: Path, tmp_path: Path
) -> None:
    ok(run_mill(*GSM8K, *_api(llama_server), f"hydra.run.dir={tmp_path / 'api'}"))
    hf, api = samples(gsm8k_hf_run, "gsm8k"), samples(tmp_path / "api", "gsm8k")
    assert sorted(hf) == sorted(api) and len(hf) == 8
    for doc_id, row in hf.items():
        text = api[doc_id]["response"]["text"]
        assert text == row["response"]["text"] and len(text[0]) > 20, doc_id
        assert api[doc_id]["prediction"] == row["prediction"]
        assert api[doc_id]["metrics"] == row["metrics"]


def test_sampled_requests_send_the_server_seed_and_the_server_follows_it(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    sampled = ["task.generation.do_sample=true", "task.generation.temperature=1.0"]
    with FaultProxy(llama_server.root_url) as proxy:  # records every request body
        args = [*GSM8K, "task.limit=1", "task.repeats=3", "task.generation.max_gen_toks=24"]
        ok(run_mill(*args, *sampled, *_api(proxy), f"hydra.run.dir={tmp_path / 'run'}"))
    bodies = [body for path, body in proxy.bodies if path.endswith("/completions")]
    sent = sorted(b["seed"] for b in bodies if b.get("temperature"))
    ids = [f"gsm8k/0/choice/{i}" for i in range(3)]  # one request per repeat
    assert sent == sorted(server_seed(1234, rid) for rid in ids)
    assert all(request_seed(1234, rid) >> 33 == server_seed(1234, rid) for rid in ids)
    # the server samples with that seed: the same body again gives the run's text, and the
    # repeats (three seeds) are not all alike
    (row,) = samples(tmp_path / "run", "gsm8k").values()
    texts = row["response"]["text"]
    assert len(set(texts)) > 1, texts
    for body in (b for b in bodies if b.get("temperature")):
        status, answer = http_json(f"{llama_server.base_url}/completions", body)
        assert status == 200, answer
        again = answer["choices"][0]["text"]
        rid = ids[[server_seed(1234, r) for r in ids].index(body["seed"])]
        mine = texts[int(rid.rsplit("/", 1)[1])]
        # (Mill decodes the generated tokens alone: SentencePiece drops the leading space)
        assert mine and again.lstrip().startswith(mine.lstrip()), (rid, mine, again)


def test_dead_server_fails_fast_with_one_line_naming_base_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    start = time.monotonic()
    proc = run_mill(
        "task=arc_easy",
        "task.limit=2",
        "model=openai_completions",
        f"model.base_url={url}",
        f"model.tokenizer={STORIES}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and f"model.base_url={url}" in lines[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - start < 60


def test_text_only_server_refuses_perplexity_before_scoring(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    proc = run_mill(
        "task=wikitext", "task.limit=1", *_api(llama_server), f"hydra.run.dir={tmp_path / 'r'}"
    )
    assert proc.returncode == 2
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "token-id prompts" in lines[0], proc.stderr[-2000:]


def test_remote_tokenizer_gives_the_same_requests_and_scores(
    llama_server: ServerProcess, arc_runs: Any, tmp_path: Path
) -> None:
    hf_dir, _, _ = arc_runs
    args = [a for a in _api(llama_server) if not a.startswith("model.tokenizer=")]
    proc = run_mill(
        "task=arc_easy",
        "task.limit=25",
        TOKENS,
        *args,
        "model.tokenizer=remote",  # llama-cpp-python's /extras/tokenize
        f"hydra.run.dir={tmp_path / 'remote'}",
    )
    ok(proc)
    hf, api = samples(hf_dir, "arc_easy"), samples(tmp_path / "remote", "arc_easy")
    assert sorted(hf) == sorted(api)
    for doc_id, row in hf.items():
        a, h = api[doc_id]["response"], row["response"]
        assert a["output_tokens"] == h["output_tokens"]
        assert max(abs(x - y) for x, y in zip(a["logprobs"], h["logprobs"], strict=True)) < 1e-4
        assert a["argmax_logits_eq_gold"] == h["argmax_logits_eq_gold"]
        assert api[doc_id]["metrics"] == row["metrics"]
    model = json.loads((tmp_path / "remote" / "results.json").read_text())["model"]
    assert model["tokenizer"] == "remote" and model["tokenizer_sha256"] is None


def test_cache_identity_reuses_responses_until_the_revision_label_changes(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    common = ["task=arc_easy", "task.limit=3", *_api(llama_server), f"runner.cache={cache}"]
    for name, extra in (("a", []), ("b", []), ("c", ["model.revision=retrained"])):
        ok(run_mill(*common, *extra, f"hydra.run.dir={tmp_path / name}"))
    stats = {k: json.loads((tmp_path / k / "manifest.json").read_text())["cache"] for k in "abc"}
    results = {k: json.loads((tmp_path / k / "results.json").read_text()) for k in "abc"}
    usage = {k: results[k].get("usage") for k in "abc"}
    assert stats["a"]["computed"] == 12 and usage["a"]["arc_easy"]["requests"] == 12
    # the same server, name, /v1/models entry and tokenizer: every answer from the cache
    assert stats["b"]["hits"] == 12 and stats["b"]["computed"] == 0 and not usage["b"]
    assert results["b"]["tasks"] == results["a"]["tasks"]
    # a new revision label is another model: nothing reused
    assert stats["c"]["hits"] == 0 and stats["c"]["computed"] == 12
