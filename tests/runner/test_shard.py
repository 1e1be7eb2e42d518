"""Sharding by doc across ranks, the request fingerprint, and the one truncation warning."""

from __future__ import annotations

from collections import Counter

import pytest

from mill.runner.dist import Dist
from mill.runner.run import truncation_warning
from mill.runner.shard import ShardedDispatch, doc_key, fingerprint, shard
from mill.types import OutputType, Request, Response


def _requests() -> list[Request]:
    reqs = []
    for task, n_docs, n_choices in (("a", 7, 4), ("b", 5, 2)):
        for doc in range(n_docs):
            for choice in range(n_choices):
                reqs.append(
                    Request(OutputType.LOGPROBS, task, doc, choice, f"q{doc}", f" c{choice}")
                )
    return reqs


@pytest.mark.parametrize("world", [1, 2, 3, 5, 16])
def test_shards_partition_requests_by_whole_docs(world: int) -> None:
    reqs = _requests()
    shards = [shard(reqs, rank, world) for rank in range(world)]
    ids = [r.id for part in shards for r in part]
    assert sorted(ids) == sorted(r.id for r in reqs) and len(ids) == len(set(ids))
    owner = {doc_key(r): rank for rank, part in enumerate(shards) for r in part}
    for rank, part in enumerate(shards):  # every choice of a doc sits on one rank
        assert all(owner[doc_key(r)] == rank for r in part)
    docs_per_rank = Counter(owner.values())
    n_docs = len(owner)
    assert (
        max(docs_per_rank.values(), default=0)
        - min((docs_per_rank.get(r, 0) for r in range(world)), default=0)
        <= 1
    )
    assert sum(docs_per_rank.values()) == n_docs == 12


def test_shards_are_stable_across_calls_and_keep_request_order() -> None:
    reqs = _requests()
    first = [r.id for r in shard(reqs, 1, 3)]
    assert first == [r.id for r in shard(list(reqs), 1, 3)]
    positions = [reqs.index(r) for r in shard(reqs, 1, 3)]
    assert positions == sorted(positions)


def test_fingerprint_sees_content_and_ids() -> None:
    reqs = _requests()
    changed = list(reqs)
    changed[3] = Request(OutputType.LOGPROBS, "a", 0, 3, "q0", " other")
    assert fingerprint(reqs) == fingerprint(list(reqs))
    assert fingerprint(reqs) != fingerprint(changed)


def test_single_process_dispatch_counts_truncation_once() -> None:
    from mill.model.random import random_gpt2

    model = random_gpt2(max_length=16)
    long_context = "Question: " + " ".join(f"word{i}" for i in range(30)) + "\nAnswer:"
    reqs = [
        Request(OutputType.LOGPROBS, "t", doc, i, long_context if doc % 2 else "Q: hi\nA:", c)
        for doc in range(4)
        for i, c in enumerate([" yes", " no"])
    ]
    seen: dict[str, Response] = {}
    dispatcher = ShardedDispatch(Dist())
    dispatcher(model, reqs, lambda req, resp: seen.__setitem__(req.id, resp))
    assert sorted(seen) == sorted(r.id for r in reqs)
    cut = {k: v.truncated_tokens_count for k, v in seen.items() if v.truncated_tokens_count}
    assert sorted(cut) == sorted(r.id for r in reqs if r.doc_id % 2)  # only the long ones
    t = dispatcher.truncation
    assert (t.total, t.requests, t.tokens) == (8, 4, sum(cut.values()))
    message = truncation_warning(t.summary(), t.total, model.max_length)
    assert message is not None and "\n" not in message
    assert "4 of 8 requests (t: 4)" in message and f"{t.tokens} tokens" in message
    assert "max_length=16" in message
    assert truncation_warning({"requests": 0}, 8, 16) is None
