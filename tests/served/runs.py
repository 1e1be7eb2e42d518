"""Mill runs against the servers of the served-model tests: the command-line arguments, the
samples and the error lines every test in tests/served reads."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

from mill.record import read_sample_rows
from tests.support.servers import SERVED_NAME, STORIES

TOKENS = "runner.sample_tokens=true"
"""Samples keep each prompt's and answer's token ids: the served tests compare them with the
HF backend's (without it, format-2 samples hold none)."""

GSM8K = [
    "task=gsm8k",
    "task.limit=8",
    "task.num_fewshot=0",
    "task.generation.max_gen_toks=96",
    TOKENS,
]
"""The GSM8K sample of the served generation tests (prompt + 96 new tokens fit 512), token
ids kept."""


def completions_args(base_url: str, *extra: str) -> list[str]:
    """``model=openai_completions`` on stories260k served as ``SERVED_NAME`` at ``base_url``."""
    return [
        "model=openai_completions",
        f"model.base_url={base_url}",
        f"model.model={SERVED_NAME}",
        f"model.tokenizer={STORIES}",
        "model.max_length=510",  # the servers' n_ctx is 512: prompt + 1 generated token fit
        *extra,
    ]


def samples(run: Path, task: str) -> dict[int, dict[str, Any]]:
    """The run's per-sample rows of ``task``, by doc id, each with its whole prompt (Mill's
    one reader of samples files)."""
    rows = read_sample_rows(run / "samples" / f"{task}.jsonl")
    return {row["doc_id"]: row for row in rows}


def ok(proc: subprocess.CompletedProcess[str]) -> None:
    """The run succeeded (else: its stderr's tail)."""
    assert proc.returncode == 0, proc.stderr[-3000:]


def error_lines(stderr: str) -> list[str]:
    """Mill's one-line user errors in ``stderr``."""
    return [line for line in stderr.splitlines() if line.startswith("mill: error")]
