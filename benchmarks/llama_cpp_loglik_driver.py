"""llama.cpp's own arithmetic on a GGUF, in process: per request, the log-likelihood of a
continuation after its context, from the logits llama.cpp computes at each position.

``MILL_LLAMA_PYTHON -m benchmarks.llama_cpp_loglik_driver MODEL.gguf REQUESTS.json OUT.json
--threads 2 --n-ctx 8192``: runs under llama-cpp-python's interpreter (its own virtualenv;
this file imports nothing of Mill's), loads the GGUF with ``logits_all`` (the logits of
every position kept), and for each request of REQUESTS (``{"requests": [[context ids,
continuation ids], ...]}``, the token ids Mill scored, so both sides see the same tokens)
evaluates ``context + continuation``, reusing the positions it shares with the previous
request (a multiple-choice doc's choices share their context), and sums the continuation's
log-probabilities (log-softmax of the logits at the position before each token, in float64).
Writes OUT: ``{"logprobs": [...], "is_greedy": [...], "seconds": ..., "peak_rss_kib": ...}``
(``seconds``: the scoring alone, after the load).

This is the log-likelihood side that neither llama.cpp server can give for a tokenizer
without BOS (``llama-server`` ignores ``echo``; llama-cpp-python's server pairs each token
with the next position's distribution): the same library, called directly.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path


def common_prefix(a: list[int], b: list[int]) -> int:
    """How many leading ids ``a`` and ``b`` share (the driver imports nothing of Mill's,
    whose ``mill.model.engine.scoring`` has its own)."""
    pairs = enumerate(zip(a, b, strict=False))
    return next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("gguf")
    parser.add_argument("requests", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-ctx", type=int, default=8192)
    args = parser.parse_args(argv)
    import numpy as np
    from llama_cpp import Llama

    requests = json.loads(args.requests.read_text())["requests"]
    longest = max(len(c) + len(t) for c, t in requests)
    llm = Llama(
        model_path=args.gguf,
        n_ctx=min(args.n_ctx, max(longest, 64)),
        n_batch=512,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        logits_all=True,
        verbose=False,
    )
    start = time.perf_counter()
    logprobs: list[float] = []
    greedy: list[bool] = []
    held: list[int] = []  # the ids whose logits llm.scores holds, in order
    for context, continuation in requests:
        if not context or not continuation:
            raise SystemExit("a request with an empty context or continuation")
        seq = context + continuation
        keep = min(common_prefix(held, seq), len(seq) - 1)
        llm.n_tokens = keep  # eval() drops the cache past this position
        llm.eval(seq[keep:])
        held = seq
        rows = llm.scores[len(context) - 1 : len(seq) - 1].astype(np.float64)
        top = rows.max(axis=1, keepdims=True)
        norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
        ids = np.asarray(continuation)
        picked = rows[np.arange(len(ids)), ids]
        logprobs.append(float((picked - norm).sum()))
        greedy.append(bool((rows.argmax(axis=1) == ids).all()))
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    args.out.write_text(
        json.dumps(
            {"logprobs": logprobs, "is_greedy": greedy, "seconds": seconds, "peak_rss_kib": peak}
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
