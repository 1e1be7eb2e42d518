"""llama-cpp-python's echoed prompt log-probabilities are one position off for a model whose
tokenizer adds no BOS (SmolLM2): its echo drops a leading BOS that is not there and pairs
each token with the next position's distribution (abetlen/llama-cpp-python#1983, 0.3.36
here). Mill's served client must refuse such a server, not score with it; on stories260k
(BOS added) the same server is right, and the other tests of tests/served score with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mill.model.gguf import gguf_path, prepare
from tests.helpers import run_mill
from tests.model.test_gguf import smollm2_source
from tests.served.runs import error_lines
from tests.support.servers import (
    SERVED_NAME,
    ServerUnavailable,
    echo_logprobs,
    llama_python,
    llama_server,
)

pytestmark = pytest.mark.slow


def test_a_server_whose_echo_is_one_position_off_is_refused(tmp_path: Path) -> None:
    try:
        llama_python()
    except ServerUnavailable as e:
        pytest.skip(str(e))
    source = smollm2_source()
    folder = prepare(source)
    with llama_server(gguf_path(source, tmp_path), tmp_path / "server.log", n_ctx=512) as server:
        # the server's own answer: one entry per prompt token, none for the generated one
        text = "The capital of France is Paris."
        entries = echo_logprobs(server, text)["token_logprobs"]
        from transformers import AutoTokenizer

        ids = AutoTokenizer.from_pretrained(folder)(text)["input_ids"]
        assert len(entries) == len(ids)

        run = tmp_path / "run"
        proc = run_mill(
            "task=arc_easy",
            "data=bundled",
            "task.limit=1",
            "model=openai_completions",
            f"model.base_url={server.base_url}",
            f"model.model={SERVED_NAME}",
            f"model.tokenizer={folder}",
            "model.max_length=510",
            f"hydra.run.dir={run}",
        )
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = error_lines(proc.stderr)
    assert "one position off" in line and "llama-cpp-python#1983" in line, line
    assert not (run / "results.json").exists()
