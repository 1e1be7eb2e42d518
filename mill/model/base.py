"""The model interface: one method per output type (log-likelihood, rolling, generation)."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any

from mill.types import ChatTemplate, OnResponse, OutputType, Request, Response


def ignore_response(request: Request, response: Response) -> None:
    """The default ``on_response`` of every backend: a finished response nobody watches."""
    return None


def request_seed(seed: int, request_id: str) -> int:
    """The sampling seed of one sampled request, the same in every backend: the first
    8 bytes (big-endian) of ``sha256(f"{seed}\\0{request_id}")``, in ``[0, 2**64)``.
    ``seed`` is ``task.generation.seed``; the id holds the repeat index, so repeats differ,
    and a rerun, a resume or another batch size draws the same samples. The HF backend
    seeds each row's generator with it; servers get :func:`server_seed`."""
    digest = hashlib.sha256(f"{seed}\x00{request_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


SERVER_SEED_BITS = 31
"""Servers take smaller seeds than :func:`request_seed`'s 64 bits: llama.cpp's
``llama-server`` and llama-cpp-python a uint32 (``0xFFFFFFFF`` meaning "pick one at
random"), vLLM a signed int64. 31 bits fit every one of them."""


def server_seed(seed: int, request_id: str) -> int:
    """The seed an OpenAI-compatible server gets for a sampled request: the top
    :data:`SERVER_SEED_BITS` bits of :func:`request_seed` (``request_seed >> 33``), one
    mapping for every server, so a served and an HF run of a request share its seed."""
    return request_seed(seed, request_id) >> (64 - SERVER_SEED_BITS)


def answer_each(
    requests: Sequence[Request], on_response: OnResponse, answer: Callable[[Request], Response]
) -> list[Response]:
    """Answer requests one at a time, in order, calling ``on_response`` as each finishes."""
    out = []
    for request in requests:
        response = answer(request)
        on_response(request, response)
        out.append(response)
    return out


class LanguageModel(ABC):
    """A model that answers requests. Each method returns responses in request order and
    calls ``on_response`` as each one finishes."""

    @abstractmethod
    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        """LOGPROBS: (log P(continuation | context), is_greedy) per request."""

    @abstractmethod
    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        """PERPLEXITY: total log-probability of each request's whole text."""

    @abstractmethod
    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        """GENERATIVE: greedy continuation of each context until a stop string or EOS."""

    def chat_template(self) -> ChatTemplate | None:
        """The model's chat template (messages, add_generation_prompt) -> prompt, or None
        when it has none. Tasks with ``chat_template=true`` render prompts through it."""
        return None

    def takes_messages(self) -> bool:
        """Whether GENERATIVE requests should carry the prompt as chat messages
        (:attr:`Request.messages`) for a server that applies its own chat template."""
        return False

    def refusal(self, output_type: OutputType) -> str | None:
        """Why this model cannot answer ``output_type`` (one line: why, and what to use
        instead), or None when it can. Checked before any request is sent."""
        return None

    def release(self) -> None:
        """Free what the model holds (weights, device memory) once the run needs it no
        more: the candidate model before a judge loads. The model answers nothing after."""
        return None

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """What identifies this model's scores: weights, revision, dtype, scoring options."""
