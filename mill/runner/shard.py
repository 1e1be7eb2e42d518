"""Requests across data-parallel ranks: sharded by stable id, scored locally, merged exactly.

Every rank builds the same request list (tasks and few-shot choices are deterministic; a
fingerprint of the ids and contents checks it). Requests are assigned by doc: the doc key
``task/subject/doc_id`` (the stable prefix of :attr:`Request.id`) of the k-th distinct doc
goes to rank ``k % world_size``, so all choices of a question stay together and share one
context pass. Rank 0 folds its own responses as they finish, then every other rank's
responses arrive in one gather; the evaluator's aggregates do not depend on that order.
Every other rank receives every response too, after the gather, so that the evaluator's
next round (a multi-turn task's next turn, a judge's prompts) is built alike on all ranks.
Models and tasks never see ranks: this is the only place that does.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

from mill.errors import MillError
from mill.evaluator import dispatch
from mill.model.base import LanguageModel
from mill.runner.dist import Dist, decode_error, encode_error
from mill.types import OnResponse, Request, Response


def doc_key(request: Request) -> tuple[str, str, int]:
    return (request.task, request.subject, request.doc_id)


def shard(requests: Sequence[Request], rank: int, world_size: int) -> list[Request]:
    """The requests of ``rank``: docs dealt round-robin in request order, whole docs only."""
    if world_size == 1:
        return list(requests)
    ordinal: dict[tuple[str, str, int], int] = {}
    mine = []
    for request in requests:
        key = doc_key(request)
        if key not in ordinal:
            ordinal[key] = len(ordinal)
        if ordinal[key] % world_size == rank:
            mine.append(request)
    return mine


def fingerprint(requests: Sequence[Request]) -> str:
    """sha256 over every request's id and content (equal on every rank, or sharding lies)."""
    digest = hashlib.sha256()
    for request in requests:
        digest.update(f"{request.id}\0{request.content_hash}\n".encode())
    return digest.hexdigest()


@dataclass
class Truncation:
    """Requests whose input was cut to the model's context window, counted for one warning."""

    requests: int = 0
    tokens: int = 0
    total: int = 0
    by_task: dict[str, int] = field(default_factory=dict)

    def add(self, request: Request, response: Response) -> None:
        self.total += 1
        if response.truncated_tokens_count > 0:
            self.requests += 1
            self.tokens += response.truncated_tokens_count
            self.by_task[request.task] = self.by_task.get(request.task, 0) + 1

    def summary(self) -> dict[str, object]:
        return {"requests": self.requests, "tokens": self.tokens, "by_task": self.by_task}


class ShardedDispatch:
    """The evaluator's ``dispatch_fn`` for one rank of ``dist`` (one process: no-op shard)."""

    def __init__(self, dist: Dist) -> None:
        self.dist = dist
        self.truncation = Truncation()
        self.local_requests = 0

    def __call__(
        self, model: LanguageModel, requests: Sequence[Request], on_response: OnResponse
    ) -> None:
        dist = self.dist
        if dist.world_size > 1:
            prints = set(dist.all_gather(fingerprint(requests)))
            if len(prints) != 1:
                raise MillError(
                    "ranks built different request lists (non-deterministic task or data); "
                    "run with runner.num_processes=1"
                )
        mine = shard(requests, dist.rank, dist.world_size)
        self.local_requests = len(mine)
        kept: list[Response] = []

        def local(request: Request, response: Response) -> None:
            if dist.is_main:
                self.truncation.add(request, response)
                on_response(request, response)
            if dist.world_size > 1:
                kept.append(response)

        failure = None
        try:
            dispatch(model, mine, local)
        except MillError as err:
            if dist.world_size == 1:
                raise
            failure = encode_error(err)
        if dist.world_size == 1:
            return
        gathered = dist.all_gather((failure, kept))
        failures = [f for f, _ in gathered if f is not None]
        if failures:
            raise decode_error(failures[0])
        by_id = {r.id: r for r in requests}
        for _, responses in gathered if not dist.is_main else gathered[1:]:
            for response in responses:
                request = by_id[response.request_id]
                if dist.is_main:
                    self.truncation.add(request, response)
                on_response(request, response)
