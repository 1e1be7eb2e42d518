"""Run Mill on one workload and dump what it computed as JSON (the twin of ``lmeval_driver``).

``python -m benchmarks.mill_driver SPEC.json OUT.json`` with SPEC ``{"overrides": [...Hydra
overrides, as on the mill command line...], "threads": 2}``.

The run goes through the public API: :func:`mill.compose` composes the config exactly as
the ``mill`` CLI does and :func:`mill.evaluate` runs it without an experiment folder
(records are kept in memory through ``on_sample``). The driver builds the model itself, to
time its loading apart and to count the tokens its transformer body sees. OUT holds
every per-doc record, the aggregated metrics, timings (``task_build``: composing the
config; building tasks and loading data count in ``evaluate``), the tokens fed through
the transformer body, the unique tokens of the workload and this process's peak RSS.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

T_START = time.perf_counter()

import torch  # noqa: E402

import mill  # noqa: E402
from benchmarks.driver_common import TokenCounter, import_model_code, peak_rss_kib  # noqa: E402
from mill.instantiate import instantiate  # noqa: E402
from mill.model.rolling import rolling_windows  # noqa: E402
from mill.record import SampleRecord  # noqa: E402
from mill.types import OutputType  # noqa: E402


def _trie_size(sequences: list[list[int]]) -> int:
    root: dict[int, Any] = {}
    count = 0
    for seq in sequences:
        node = root
        for token in seq:
            if token not in node:
                node[token] = {}
                count += 1
            node = node[token]
    return count


def unique_tokens(record: SampleRecord, output_type: OutputType, model: Any) -> int:
    """Positions a perfect per-doc prefix cache would run: the context once, then each
    continuation's own tokens (LOGPROBS); every rolling window (PERPLEXITY); the prompt
    and the generated tokens (GENERATIVE)."""
    response = record.response
    if output_type is OutputType.LOGPROBS:
        ctx = response.input_tokens
        return len(ctx) + _trie_size([out[:-1] for out in response.output_tokens])
    if output_type is OutputType.PERPLEXITY:
        tokens = response.output_tokens[0] if response.output_tokens else []
        windows = rolling_windows(tokens, int(model.prefix_token_id), model.max_length)
        return sum(len(c) + len(k) - 1 for c, k in windows)
    generated = response.output_tokens[0] if response.output_tokens else []
    return len(response.input_tokens) + max(0, len(generated) - 1)


def unique_tokens_across_docs(records: list[SampleRecord], types: dict[str, OutputType]) -> int:
    """Like :func:`unique_tokens` but with one prefix tree over all docs' LOGPROBS inputs,
    so prefixes shared by different docs (few-shot examples placed first_n) count once."""
    root: dict[int, Any] = {}
    count = 0
    for record in records:
        if types[record.task] is not OutputType.LOGPROBS:
            continue
        ctx = record.response.input_tokens
        for out in record.response.output_tokens:
            node = root
            for token in ctx + out[:-1]:
                if token not in node:
                    node[token] = {}
                    count += 1
                node = node[token]
    return count


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    out_path = Path(sys.argv[2])
    torch.set_num_threads(int(spec.get("threads", 2)))
    import_model_code(spec["model"])
    import datasets  # noqa: F401  (loaded by lm-eval's imports too)

    t_imported = time.perf_counter()
    rss = {"imports": peak_rss_kib()}
    cfg = mill.compose([*spec["overrides"], "report.progress=never"])
    allow = [str(a) for a in cfg.get("allow_targets", [])]
    t_ready = time.perf_counter()
    rss["task_build"] = peak_rss_kib()
    model = instantiate(cfg.model, allow)
    counter = TokenCounter(model.model.base_model)
    t_model = time.perf_counter()
    rss["model_load"] = peak_rss_kib()
    records: list[SampleRecord] = []
    results = mill.evaluate(config=cfg, model=model, on_sample=records.append)
    t_done = time.perf_counter()
    rss["evaluate"] = peak_rss_kib()
    types = {name: OutputType(task.output_type) for name, task in results.tasks.items()}
    unique = sum(unique_tokens(r, types[r.task], model) for r in records)
    unique_all = unique_tokens_across_docs(records, types) + sum(
        unique_tokens(r, types[r.task], model)
        for r in records
        if types[r.task] is not OutputType.LOGPROBS
    )
    records.sort(key=lambda r: (r.task, r.subject, r.doc_id))
    out = {
        "side": "mill",
        "identity": model.identity(),
        "device": str(model.device),
        "tasks": {
            name: {"metrics": {k: v.value for k, v in result.metrics.items()}}
            for name, result in results.tasks.items()
        },
        "samples": [
            {
                "task": r.task,
                "subject": r.subject,
                "doc_id": r.doc_id,
                "fewshot_ids": r.fewshot_ids,
                "logprobs": r.response.logprobs,
                "is_greedy": r.response.argmax_logits_eq_gold,
                "text": r.response.text,
                "metrics": r.metrics,
                "truncated": r.response.truncated_tokens_count,
            }
            for r in records
        ],
        "seconds": {
            "imports": t_imported - T_START,
            "task_build": t_ready - t_imported,
            "model_load": t_model - t_ready,
            "evaluate": t_done - t_model,
            "work": t_done - t_imported,
        },
        "tokens_fed": counter.tokens,
        "forward_calls": counter.calls,
        "unique_tokens": unique,
        "unique_tokens_across_docs": unique_all,
        "peak_rss_kib": peak_rss_kib(),
        "peak_rss_kib_after": rss,
    }
    out_path.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
