"""The served client's protocol: what Mill asks an OpenAI-compatible server and how it reads
the answers. The served model's ``/v1/models`` entry, the capability probe (whether the
completions endpoint takes token-id prompts), the bodies of scoring (echoed prompt
log-probs) and generation requests with their neutral sampling settings, and the checks that
turn an impossible answer into one line naming the request and the server. How requests
travel is the transport's (:mod:`mill.model.served.openai_transport`)."""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from mill.errors import ConfigError, ModelError
from mill.model.base import server_seed
from mill.model.served.api_client import Failure, JSONClient
from mill.model.tokenizing import GenerationJob, scoring_window
from mill.types import Request

log = logging.getLogger(__name__)

NEUTRAL_SAMPLING: dict[str, Any] = {
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "repeat_penalty": 1.0,  # llama.cpp (default 1.1)
    "repetition_penalty": 1.0,  # vLLM, SGLang, TGI
    "min_p": 0.0,  # llama.cpp (default 0.05), vLLM
    "top_k": 0,  # llama.cpp (default 40; 0 disables), vLLM (0 disables)
}
"""Sampling settings sent with every generation: no penalty, no truncation of the
distribution, whatever the server's defaults. Greedy decoding then equals argmax."""

CHAT_SAMPLING: dict[str, Any] = {"top_p": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
"""Neutral sampling fields of the OpenAI chat schema (servers that validate requests, such
as ``transformers serve``, refuse fields outside it)."""

VOLATILE = ("created", "status")
"""Fields of a ``/v1/models`` entry that change with the server's state (not identity)."""

SCORING_PAYLOAD: dict[str, Any] = {"max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0.0}
"""The fields of a scoring request: the prompt echoed with its log-probs, one token generated."""


REQUEST_FIELDS: dict[str, str] = {
    "model": "model.model",
    "prompt": "the task's prompt",
    "messages": "the task's prompt",
    "max_tokens": "task.generation.max_gen_toks (or model.max_gen_toks)",
    "max_completion_tokens": "task.generation.max_gen_toks (or model.max_gen_toks)",
    "stop": "the task's stop strings (task.generation.until)",
    "temperature": "task.generation.temperature and do_sample (0 when greedy)",
    "seed": "task.generation.seed (0 when greedy)",
    "echo": "the scoring requests",
    "logprobs": "the scoring requests",
    "n": "one choice per prompt",
    "stream": "one whole answer per request",
}
"""Fields of a request body that Mill sets per request, and where each comes from: a
``model.sampling`` naming one would be recorded as used and never sent as given."""


def check_sampling(sampling: dict[str, Any]) -> dict[str, Any]:
    """``model.sampling`` as sent with every generation request; a ``ConfigError`` for a
    field Mill sets per request itself (:data:`REQUEST_FIELDS`): it would be replaced in the
    request while the run's identity and results recorded it as used."""
    for key, value in sampling.items():
        if key in REQUEST_FIELDS:
            raise ConfigError(
                f"model.sampling.{key}={value!r} would not be sent: Mill sets {key} on each "
                f"request from {REQUEST_FIELDS[key]}; drop it from model.sampling"
            )
    return dict(sampling)


def generated_text(choice: dict[str, Any], chat: bool, label: str, base_url: str) -> str:
    """The text of a generation choice: a chat choice's ``message.content`` (null: the model
    answered no text, as a reasoning model that spent its tokens thinking), a completions
    choice's ``text``. A choice without that field, or with a value that is not text, is
    not an answer Mill can score as the model's: a ``ModelError`` naming the request, the
    server and the field, never an empty answer."""
    where = f"{label}: the server at model.base_url={base_url} returned a choice"
    field = "message.content" if chat else "text"
    holder: Any = choice.get("message") if chat else choice
    if chat and not isinstance(holder, dict):
        what = "without a message" if holder is None else "whose message is not an object"
        raise ModelError(
            f"{where} {what} (keys: {', '.join(sorted(choice)) or 'none'}); not an "
            "OpenAI-compatible chat answer, and it would be scored as an empty answer"
        )
    if field.split(".")[-1] not in holder:
        raise ModelError(
            f"{where} without {field} (keys: {', '.join(sorted(holder)) or 'none'}); not an "
            "OpenAI-compatible answer, and it would be scored as an empty answer"
        )
    content = holder[field.split(".")[-1]]
    if content is None and chat:
        return ""
    if not isinstance(content, str):
        raise ModelError(
            f"{where} whose {field} is {json.dumps(content)[:60]}, not text; not an "
            "OpenAI-compatible answer"
        )
    return content


def model_entry(client: JSONClient, model: str | None) -> dict[str, Any]:
    """The server's ``/v1/models`` entry of the served model; fails fast on a dead or
    wrong URL."""
    result = client.attempt("GET", "/models")
    if isinstance(result, Failure):
        raise client.error(result, "listing the served models (GET /models)", 1)
    entries = result.get("data") if isinstance(result, dict) else None
    if not isinstance(entries, list):
        raise ModelError(
            f"model.base_url={client.base_url}: GET /models did not return an OpenAI model "
            "list; is this the API root (usually ending in /v1)?"
        )
    ids = [str(e.get("id")) for e in entries if isinstance(e, dict)]
    if model is None:
        if len(ids) != 1:
            raise ConfigError(
                f"model.model is not set and the server serves {len(ids)} models "
                f"({', '.join(ids[:5])}); set model.model to one of them"
            )
        return dict(entries[0])
    for e in entries:
        if isinstance(e, dict) and str(e.get("id")) == str(model):
            return dict(e)
    if len(ids) == 1 and not entries[0].get("max_model_len"):
        # llama-cpp-python answers to any name; its list holds the file it serves
        return {**entries[0], "id": str(model), "listed_as": ids[0]}
    raise ConfigError(
        f"model.model={model!r} is not served at model.base_url={client.base_url} "
        f"(it serves: {', '.join(ids[:5])})"
    )


def accepts_token_ids(client: JSONClient, endpoint: str, model: str, token_id: int) -> bool:
    """Whether the server's completions ``endpoint`` takes token-id prompts, asked with one
    tiny request (``model.prompt_ids=auto``)."""
    probe = {"model": model, "prompt": [int(token_id)], "max_tokens": 1, "temperature": 0.0}
    # retried through transient failures like every request: only the server's
    # definite refusal (a 4xx, or a 500/501: llama-cpp-python's answer to a body it
    # cannot validate) says it takes text prompts
    what = "model.prompt_ids=auto: a one-token token-id prompt"
    result, _ = client.settle("POST", endpoint, probe, what, probe=True)
    accepted = not isinstance(result, Failure)
    log.info("%s takes %s prompts", client.base_url, "token-id" if accepted else "text")
    return accepted


def generation_payload(
    sampling: dict[str, Any], job: GenerationJob, request: Request
) -> dict[str, Any]:
    """The fields of a completions generation request: neutral ``sampling``, the length and
    stops of ``job``, greedy (seed 0) or sampled at the request's server seed."""
    payload: dict[str, Any] = {
        **sampling,
        "max_tokens": job.max_gen_toks,
        "stop": [s for s in job.until if s],
        "temperature": 0.0,
    }
    if job.sampling is not None:
        temperature, seed, top_p = job.sampling
        payload["temperature"] = float(temperature)
        if top_p < 1.0:
            payload["top_p"] = float(top_p)
        payload["seed"] = server_seed(seed, request.id)
    else:
        payload["seed"] = 0
    if not payload["stop"]:
        del payload["stop"]
    return payload


def echo_window(ctx: list[int], cont: list[int], max_length: int) -> tuple[list[int], int]:
    """The prompt that scores ``cont`` after ``ctx`` from echoed log-probs: the HF
    backend's input (:func:`mill.model.tokenizing.scoring_window`) plus the last
    continuation token, so that every scored token is conditioned on what it is in the
    HF backend."""
    inp, truncated = scoring_window(ctx, cont, max_length)
    return inp + [cont[-1]], truncated


LOGPROB_SLACK = 1e-6
"""A log-probability may exceed 0 by this much (a server's rounding); more is impossible."""


def _impossible(value: Any) -> bool:
    """Whether ``value`` cannot be a log-probability: not a JSON number (a string, a
    boolean, a list), not finite, or above 0 beyond :data:`LOGPROB_SLACK`. None (no value
    for this position) is left to the caller."""
    if value is None:
        return False
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return not math.isfinite(value) or value > LOGPROB_SLACK


def echoed(
    choice: dict[str, Any],
    n_prompt: int,
    request: Request,
    base_url: str,
    starts_with_bos: bool = True,
) -> tuple[list[Any], list[Any]]:
    """Echoed prompt log-probs and top log-probs of one choice, aligned to end with the
    prompt's last token. An impossible answer is an error naming the request and the
    server: a log-probability that is not a number or above 0, top log-probs that do not
    line up with the tokens, a token count that does not match the local tokenization.

    A server may leave out the BOS it adds to a text prompt (one entry fewer), but only
    where the prompt starts with one (``starts_with_bos``): without a BOS, one entry fewer
    means the entries are one position off. llama-cpp-python (0.3.36 here) does that for a
    model whose tokenizer adds no BOS (SmolLM2): its echo drops a first token it takes for
    the BOS and pairs every token with the next position's distribution
    (abetlen/llama-cpp-python#1983), so each score would be a token's log-probability given
    itself."""
    where = f"request {request.id}: the server at model.base_url={base_url}"
    lps, tops = _checked_logprobs(choice, where)
    if not lps:
        raise ModelError(
            f"request {request.id}: the server at model.base_url={base_url} returned no prompt "
            "log-probabilities (it ignores echo/logprobs); score this task on a server whose "
            "/v1/completions echoes them (vLLM, SGLang, llama-cpp-python) or with model=hf"
        )
    # the generated token follows the echoed prompt
    n_echo = len(lps) - 1
    if n_echo == n_prompt - 1 and not starts_with_bos:
        raise ModelError(
            f"request {request.id}: the server at model.base_url={base_url} echoed "
            f"{n_echo} prompt tokens where the local tokenizer has {n_prompt} and adds no "
            "BOS: its log-probabilities are one position off (llama-cpp-python does this for "
            "a model whose tokenizer adds no BOS, abetlen/llama-cpp-python#1983) and every "
            "score would be wrong; score this task on a server that echoes every prompt "
            "token (vLLM, SGLang) or with model=hf"
        )
    # a server that adds BOS to a text prompt does not list it: one token fewer
    if n_echo not in (n_prompt, n_prompt - 1):
        raise ModelError(
            f"request {request.id}: the server echoed {n_echo} prompt tokens where the local "
            f"tokenizer has {n_prompt}: model.tokenizer does not match the model served at "
            f"model.base_url={base_url} (or the server does not echo prompt log-probs)"
        )
    return lps[:n_echo], tops[:n_echo]


def _checked_logprobs(choice: dict[str, Any], where: str) -> tuple[list[Any], list[Any]]:
    """A choice's echoed ``token_logprobs`` and ``top_logprobs``, refused (``where``: the
    request and the server) unless they are two lists of the same length whose entries are
    objects and possible log-probabilities."""
    logprobs = choice.get("logprobs") or {}
    if not isinstance(logprobs, dict):
        raise ModelError(f"{where} returned logprobs that are not an object")
    lps = logprobs.get("token_logprobs") or []
    tops = logprobs.get("top_logprobs") or [None] * len(lps)
    if not isinstance(lps, list) or not isinstance(tops, list) or len(tops) != len(lps):
        raise ModelError(
            f"{where} returned token_logprobs and top_logprobs that are not two lists of "
            "the same length"
        )
    values = list(enumerate(lps))
    for k, top in enumerate(tops):
        if top is not None and not isinstance(top, dict):
            raise ModelError(f"{where} returned top_logprobs[{k}] that is not an object")
        values += [(k, v) for v in (top or {}).values()]
    bad = next(((k, v) for k, v in values if _impossible(v)), None)
    if bad is not None:
        raise ModelError(
            f"{where} returned an impossible log-probability {json.dumps(bad[1])} at prompt "
            f"token {bad[0]} (a log-probability is a number <= 0); the server is broken or "
            "not an OpenAI-compatible completions endpoint"
        )
    return lps, tops
