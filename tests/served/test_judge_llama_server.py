"""A served judge: stories260k behind llama.cpp's ``llama-server`` through
``judge=openai_completions`` with token-id prompts, against the same judge in process (the
HF backend). Its replies are nonsense (``judge.max_invalid=1.0``): the tests prove that both
backends send the same judge prompts token for token, that served judgments go through the
response cache under the served judge's identity, and the invalid-reply count."""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.runs import ok
from tests.served.servers import SERVED_NAME, STORIES, ServerProcess

pytestmark = pytest.mark.slow

COMMON = (
    "task=judged",  # the bundled example: 5 answers, 5 judge calls
    "model=fake",
    "judge.max_invalid=1.0",
    "judge.generation.max_gen_toks=8",
    "report.progress=never",
)


def _judge_prompts(cache: Path, backend: str) -> dict[str, list[int]]:
    """request content hash -> the judge's input token ids, from the run's response cache."""
    out: dict[str, list[int]] = {}
    for path in cache.glob("responses-*.sqlite"):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            keys = [
                key
                for key, identity in conn.execute("SELECT model, identity FROM models")
                if json.loads(identity).get("backend") == backend
            ]
            for key in keys:
                for request, blob in conn.execute(
                    "SELECT request, response FROM responses WHERE model = ?", (key,)
                ):
                    out[request] = json.loads(zlib.decompress(blob))["input_tokens"]
        finally:
            conn.close()
    return out


def test_served_judge_sends_the_hf_judges_prompts_token_for_token(
    native_llama_server: ServerProcess, tmp_path: Path
) -> None:
    hf = run_mill(
        *COMMON, "judge=stories260k", "judge.max_length=510", f"hydra.run.dir={tmp_path / 'hf'}"
    )
    ok(hf)
    served_args = (
        "judge=openai_completions",
        f"judge.base_url={native_llama_server.base_url}",
        f"judge.model={SERVED_NAME}",
        f"judge.tokenizer={STORIES}",
        "judge.max_length=510",
        "judge.prompt_ids=true",
        "judge.num_concurrent=4",
    )
    served = run_mill(*COMMON, *served_args, f"hydra.run.dir={tmp_path / 'served'}")
    ok(served)
    hf_prompts = _judge_prompts(tmp_path / "hf" / "cache", "hf")
    served_prompts = _judge_prompts(tmp_path / "served" / "cache", "openai_completions")
    assert len(hf_prompts) == len(served_prompts) == 5
    assert served_prompts == hf_prompts  # same requests (content hashes), same token ids
    manifest = json.loads((tmp_path / "served" / "manifest.json").read_text())
    judge = manifest["judge"]
    assert judge["identity"]["base_url"] == native_llama_server.base_url
    assert judge["settings"]["num_concurrent"] == 4
    assert judge["cache"]["computed"] == 5
    results = json.loads((tmp_path / "served" / "results.json").read_text())
    row = results["tasks"]["judged"]["metrics"]["judge_score"]
    assert row["details"]["n_invalid"] == judge["judgments"]["invalid"]
    # the same judging again on that cache: no call reaches the server
    again = run_mill(
        *COMMON, *served_args, f"runner.cache={tmp_path / 'served' / 'cache'}",
        f"hydra.run.dir={tmp_path / 'again'}",
    )  # fmt: skip
    ok(again)
    second = json.loads((tmp_path / "again" / "manifest.json").read_text())["judge"]["cache"]
    assert (second["hits"], second["computed"]) == (5, 0)
