"""A deterministic fake model for tests that are about everything but the model.

Like lm-eval's dummy LM and inspect's mock model, it answers every request type without
torch or weights, in microseconds, and always the same way: each answer is a function of
the request's text and ``seed`` only (sha256), so runs, ranks, caches and resumes can be
compared exactly. Its "tokens" are the UTF-8 bytes of the text.

* ``loglikelihood``: ``logprob = -(0.5 + u) * len(continuation bytes)`` with
  ``u = sha256(seed, context, continuation)`` mapped to [0, 1); greedy when ``u < 0.25``.
* ``loglikelihood_rolling``: the same over the whole text with an empty context.
* ``generate_until``: a number (``u`` scaled to 0-99) as text, cut at the first stop
  string, at most ``max_gen_toks`` bytes; ``answer`` replaces it when given, and
  ``replies`` (a scripted judge: {substring: reply}) when a key occurs in the context,
  the first such key in order.

Never use it for a reported number: its scores mean nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from mill.model.base import LanguageModel, answer_each, ignore_response
from mill.schema import typed
from mill.types import OnResponse, Request, Response


class FakeLM(LanguageModel):
    """A torch-free :class:`LanguageModel` with deterministic answers (see module doc)."""

    def __init__(
        self,
        name: str = "fake",
        seed: int = 0,
        answer: str | None = None,
        replies: dict[str, str] | None = None,
    ) -> None:
        settings = typed(
            "model", {"name": name, "seed": seed, "answer": answer, "replies": replies or {}}
        )
        self.name: str = settings["name"]
        self.seed: int = settings["seed"]
        self.answer: str | None = settings["answer"]
        self.replies = dict(settings["replies"])

    def _unit(self, *parts: str) -> float:
        blob = "\x00".join([str(self.seed), *parts]).encode()
        return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") / 2**64

    def _score(self, request: Request, context: str) -> Response:
        u = self._unit(context, request.continuation)
        tokens = list(request.continuation.encode())
        return Response(
            request_id=request.id,
            input_tokens=list(context.encode()),
            output_tokens=tokens,
            logprob=-(0.5 + u) * max(len(tokens), 1),
            is_greedy=u < 0.25,
        )

    def _answer(
        self, requests: Sequence[Request], on_response: OnResponse, fn: Any
    ) -> list[Response]:
        return answer_each(requests, on_response, fn)

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        return self._answer(requests, on_response, lambda r: self._score(r, r.context))

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        return self._answer(requests, on_response, lambda r: self._score(r, ""))

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        def generate(request: Request) -> Response:
            args = request.generation
            text = next(
                (r for key, r in self.replies.items() if key in request.context), self.answer
            )
            if text is None:
                sampled = request.id if args is not None and args.do_sample else ""
                text = f" {int(100 * self._unit(request.context, sampled))}"
            for stop in args.until if args else ():
                if stop and stop in text:
                    text = text[: text.index(stop)]
            hit_max = args is not None and len(text.encode()) > args.max_gen_toks
            if args is not None:
                text = text.encode()[: args.max_gen_toks].decode(errors="ignore")
            return Response(
                request_id=request.id,
                input_tokens=list(request.context.encode()),
                output_tokens=list(text.encode()),
                text=text,
                hit_max_gen_toks=hit_max,
            )

        return self._answer(requests, on_response, generate)

    def identity(self) -> dict[str, Any]:
        out = {"class": "FakeLM", "name": self.name, "seed": self.seed, "answer": self.answer}
        if self.replies:
            out["replies"] = self.replies
        return out
