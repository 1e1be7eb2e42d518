"""Models behind an OpenAI-compatible server: ``/v1/completions`` and ``/v1/chat/completions``.

Request semantics are the HF backend's (:mod:`mill.model.tokenizing`), computed from a
local tokenizer: the same (context, continuation) split, truncation and rolling windows.

* LOGPROBS: one completion per distinct prompt with ``echo=true, logprobs=1,
  max_tokens=1``; the continuation's log-likelihood is the sum of the echoed prompt
  log-probabilities of its tokens, ``is_greedy`` whether each is the top log-prob at its
  position. The echoed token count is checked against the local tokenizer's: a
  tokenization mismatch is an error naming the request, never a shifted score.
* PERPLEXITY: the HF backend's rolling windows, each scored as above (needs token-id
  prompts: a server that adds BOS to a text prompt cannot score a window without it).
* GENERATIVE: ``stop``, ``max_tokens``, ``temperature``, ``seed``
  (:func:`~mill.model.base.server_seed`; 0 when greedy) and neutral sampling
  settings (``model.sampling``: servers differ in defaults, llama.cpp's repeat penalty is
  1.1); the text is cut at the stop strings again locally.

Prompts go as token ids where the server takes them (vLLM, SGLang) and as text where it
does not (llama-cpp-python: ``model.prompt_ids=auto`` finds out with one small request,
retried through transient failures; only a definite refusal, a 4xx or a 500/501, means
text prompts).

The models here are what a task sees; what they ask the server and how they read its answers
is :mod:`mill.model.served.openai_protocol`, how the requests travel (grouped, concurrent,
retried, checked, counted) :mod:`mill.model.served.openai_transport` over
:mod:`mill.model.served.api_client`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mill.errors import ConfigError, ModelError
from mill.model.base import OnResponse, ignore_response, server_seed
from mill.model.served.api_client import JSONClient
from mill.model.served.openai_protocol import (
    CHAT_SAMPLING,
    NEUTRAL_SAMPLING,
    SCORING_PAYLOAD,
    VOLATILE,
    accepts_token_ids,
    check_sampling,
    echo_window,
    echoed,
    generated_text,
    generation_payload,
    model_entry,
)
from mill.model.served.openai_transport import Call, CompletionsTransport, group_calls
from mill.model.served.remote_tokenizer import RemoteTokenizer
from mill.model.tokenizing import (
    GenerationJob,
    RollingPlan,
    TokenizingLM,
    WindowDone,
    cut_at_stop,
    generation_args,
)
from mill.schema import typed, typed_one
from mill.types import OutputType, Request, Response

_TOKENIZER_SUFFIXES = {".json", ".model", ".txt", ".tiktoken", ".jinja"}


def _tokenizer_digest(tokenizer: str, revision: str | None) -> str:
    """SHA-256 over the tokenizer's files (a local folder, or the hub cache's snapshot)."""
    from mill.model.identity import folder_digest

    local = Path(os.path.expanduser(tokenizer))
    if local.is_dir():
        return folder_digest(local, _TOKENIZER_SUFFIXES)
    try:
        from huggingface_hub import snapshot_download

        folder = snapshot_download(tokenizer, revision=revision, local_files_only=True)
        return folder_digest(Path(folder), _TOKENIZER_SUFFIXES)
    except Exception as err:  # noqa: BLE001 - the tokenizer loaded, so this is only identity
        raise ModelError(
            f"model.tokenizer={tokenizer!r}: cannot find its files to fingerprint "
            f"({type(err).__name__}); point model.tokenizer at a local folder"
        ) from err


class OpenAICompletions(TokenizingLM):
    """A model served behind an OpenAI-compatible ``/v1/completions`` endpoint.

    Args:
        base_url: the API root, e.g. ``http://127.0.0.1:8080/v1``.
        model: the served model name (``model`` field of each request); default: the
            server's only model.
        tokenizer: a Hugging Face tokenizer id or folder matching the served model.
        num_concurrent: requests in flight at once.
        max_retries: retries of a request after a connection error, timeout, 429 or 5xx.
        timeout_s: seconds one whole answer may take (connecting, waiting, reading it).
        api_key_env: name of the environment variable holding the API key (the key itself
            is never part of the config).
        max_length: context window in tokens (default: the server's ``max_model_len``
            where it reports one, else 2048, as lm-eval).
        batch_prompts: prompts per completions request, for servers that take a list.
        max_gen_toks: default generation length when a request does not set one.
        prompt_ids: send token ids (true), text (false), or find out (auto).
        sampling: extra fields of every generation request (neutral by default).
        revision: a label pinning what the server serves (servers can swap weights
            behind one name); part of the cache identity.
        backoff_s: first retry delay; it doubles per retry (a 429's Retry-After wins).
        max_response_mb: the largest answer read from the server (a larger one ends the
            run with one line).
        name: short name for experiment folders and reports.
    """

    endpoint = "/completions"
    backend = "openai_completions"
    needs_tokenizer = True
    default_sampling = NEUTRAL_SAMPLING

    def __init__(
        self,
        base_url: str,
        tokenizer: str | None = None,
        model: str | None = None,
        num_concurrent: int = 1,
        max_retries: int = 5,
        timeout_s: float = 300.0,
        api_key_env: str = "OPENAI_API_KEY",
        max_length: int | None = None,
        batch_prompts: int = 1,
        max_gen_toks: int = 256,
        prompt_ids: bool | str = "auto",
        sampling: dict[str, Any] | None = None,
        revision: str | None = None,
        backoff_s: float = 1.0,
        name: str | None = None,
        max_response_mb: float = 64.0,
    ) -> None:
        self._check_settings(base_url, batch_prompts, prompt_ids)
        values = typed("model", {"batch_prompts": batch_prompts, "max_gen_toks": max_gen_toks})
        self.batch_prompts = int(values["batch_prompts"])
        api_key = os.environ.get(api_key_env) if api_key_env else None
        self.client = JSONClient(
            base_url,
            api_key=api_key,
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            num_concurrent=num_concurrent,
            max_response_mb=max_response_mb,
        )
        self.base_url = self.client.base_url  # credentials masked: for messages
        self.max_gen_toks = int(values["max_gen_toks"])
        # only what every generation request sends as given: recorded in the identity
        self.sampling = check_sampling(self.default_sampling if sampling is None else sampling)
        self._prompt_ids: bool | None = (
            None if str(prompt_ids) == "auto" else str(prompt_ids).lower() == "true"
        )
        self.transport = CompletionsTransport(self.client, self.endpoint)

        entry = model_entry(self.client, model)
        self.model = str(entry["id"])
        self.name = name or self.model
        reported = entry.get("max_model_len")
        self.max_length = int(max_length if max_length is not None else reported or 2048)
        self._start_tokenizer(tokenizer, revision)
        self._identity = self._make_identity(entry, tokenizer, revision)

    # ----- start-up ---------------------------------------------------------------------
    def _make_identity(
        self, entry: dict[str, Any], tokenizer: str | None, revision: str | None
    ) -> dict[str, Any]:
        """Everything that changes the scores, for the response cache and the manifest."""
        return {
            "backend": self.backend,
            "base_url": self.client.identity_url,  # without credentials
            "model": self.model,
            "server_model": {k: v for k, v in entry.items() if k not in VOLATILE},
            "tokenizer": str(tokenizer),
            "tokenizer_sha256": (
                _tokenizer_digest(str(tokenizer), revision)
                if tokenizer and str(tokenizer) != "remote"
                else None
            ),
            "revision": revision,
            "max_length": self.max_length,
            "max_gen_toks": self.max_gen_toks,
            "sampling": self.sampling,
        }

    def _check_settings(self, base_url: str, batch_prompts: int, prompt_ids: bool | str) -> None:
        """Refuse a missing ``base_url``, a bad ``prompt_ids``, and the settings a chat
        backend (one conversation per request, sent as messages) has no use for."""
        if not base_url:
            raise ConfigError(
                "model.base_url is not set; give the server's API root, e.g. "
                "model.base_url=http://127.0.0.1:8080/v1"
            )
        typed_one("model.prompt_ids", prompt_ids)
        if self.takes_messages():  # one conversation per request, sent as messages
            for key, value, default in (
                ("batch_prompts", batch_prompts, 1),
                ("prompt_ids", prompt_ids, "auto"),
            ):
                if str(value) != str(default):
                    raise ConfigError(
                        f"model.{key}={value!r} means nothing to model={self.backend} (one "
                        "conversation per request, sent as messages); drop it, or use "
                        "model=openai_completions"
                    )

    def _start_tokenizer(self, tokenizer: str | None, revision: str | None) -> None:
        """The tokenizer: the server's own (``remote``), a Hugging Face id or folder, or
        none where the backend needs none."""
        if str(tokenizer) == "remote":
            self.tokenizer = RemoteTokenizer(self.client, self.model)
            self._init_tokenizer()
        elif tokenizer:
            self._load_tokenizer(str(tokenizer), revision)
        elif self.needs_tokenizer:
            raise ConfigError(
                "model.tokenizer is not set; give the served model's Hugging Face tokenizer "
                "id or folder: Mill computes every request's tokens with it"
            )
        else:
            self.tokenizer = None

    def _load_tokenizer(self, tokenizer: str, revision: str | None) -> None:
        import transformers

        transformers.utils.logging.disable_progress_bar()
        local = Path(os.path.expanduser(str(tokenizer)))
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                str(local) if local.is_dir() else str(tokenizer), revision=revision
            )
        except (OSError, ValueError) as err:
            raise ModelError(
                f"cannot load model.tokenizer={tokenizer!r} ({type(err).__name__}); give the "
                "served model's Hugging Face tokenizer id or a local folder"
            ) from err
        self._init_tokenizer()

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def usage_summary(self) -> dict[str, dict[str, int]]:
        """Per task: HTTP requests, prompts, prompt and completion tokens (this process)."""
        return self.transport.usage_summary()

    # ----- prompts ----------------------------------------------------------------------
    def _ids_accepted(self) -> bool:
        """Whether the server takes token-id prompts (asked once, with a tiny request)."""
        if self._prompt_ids is None:
            self._prompt_ids = accepts_token_ids(
                self.client, self.endpoint, self.model, self.prefix_token_id
            )
        return self._prompt_ids

    def _body(self, call: Call) -> dict[str, Any]:
        prompt = call.prompts[0] if len(call.prompts) == 1 else call.prompts
        return {"model": self.model, "prompt": prompt, **call.payload}

    def _send(self, calls: list[Call], finish: Any) -> None:
        self.transport.send(calls, self._body, finish)

    def _calls(self, items: list[tuple[str, Any, dict[str, Any], Any]]) -> list[Call]:
        """Requests of up to ``batch_prompts`` prompts (:func:`group_calls`)."""
        return group_calls(items, self.batch_prompts)

    # ----- LOGPROBS / PERPLEXITY ----------------------------------------------------------
    def _score(
        self,
        pairs: list[tuple[list[int], list[int]]],
        owners: list[Request],
        texts: list[str] | None,
        on_done: Any,
        greedy: bool = True,
    ) -> None:
        """Score (context, continuation) token pairs from echoed prompt log-probs.

        ``texts[i]`` is the text whose tokenization is ``context + continuation`` (None:
        token-id prompts are required). ``on_done(i, logprob, is_greedy, input_tokens,
        truncated)`` runs as each finishes."""
        use_ids = texts is None or self._ids_accepted()
        prompts, windows = self._score_prompts(pairs, owners, texts, use_ids)
        payload = dict(SCORING_PAYLOAD)
        items = [
            (owners[idx[0]].task, list(key) if use_ids else key, payload, idx)
            for key, idx in prompts.items()
        ]
        calls = self._calls(items)
        for call in calls:
            more = sum(len(x) for x in call.items) - 1
            call.label = f"request {owners[call.items[0][0]].id}" + (
                f" (+{more} more)" if more > 0 else ""
            )

        bos = getattr(self.tokenizer, "bos_token_id", None)

        def finish(call: Call, choices: list[dict[str, Any]]) -> None:
            for idx, choice in zip(call.items, choices, strict=True):
                inp, truncated = windows[idx[0]]
                lps, tops = echoed(
                    choice, len(inp), owners[idx[0]], self.base_url, bool(inp) and inp[0] == bos
                )
                for i in idx:
                    n = len(pairs[i][1])
                    scored = lps[-n:]
                    if any(v is None for v in scored):
                        raise ModelError(
                            f"request {owners[i].id}: the server returned no log-probability "
                            f"for a scored token (server model.base_url={self.base_url})"
                        )
                    total = sum(float(v) for v in scored)
                    flag = greedy and all(
                        top is not None and float(v) >= max(float(x) for x in top.values())
                        for v, top in zip(scored, tops[-n:], strict=True)
                    )
                    on_done(i, total, flag, windows[i][0][: len(windows[i][0]) - n], truncated)

        self._send(calls, finish)

    def _score_prompts(
        self,
        pairs: list[tuple[list[int], list[int]]],
        owners: list[Request],
        texts: list[str] | None,
        use_ids: bool,
    ) -> tuple[dict[Any, list[int]], list[tuple[list[int], int]]]:
        """The prompts that score ``pairs`` (token ids, or ``texts`` where the server takes
        text only), each with the pairs it scores, and every pair's echo window."""
        prompts: dict[Any, list[int]] = {}
        windows: list[tuple[list[int], int]] = []
        for i, (ctx, cont) in enumerate(pairs):
            inp, truncated = echo_window(ctx, cont, self.max_length)
            windows.append((inp, truncated))
            if use_ids:
                key: Any = tuple(inp)
            else:
                if truncated:
                    raise ModelError(
                        f"request {owners[i].id}: {len(ctx) + len(cont)} tokens exceed "
                        f"model.max_length={self.max_length}, and the server at "
                        f"model.base_url={self.base_url} takes text prompts, which cannot be "
                        "cut exactly at a token; raise model.max_length (the server's context "
                        "allowing) or serve the model where token-id prompts are accepted"
                    )
                if len(ctx) == 1 and ctx[0] == self.prefix_token_id:
                    raise ModelError(
                        f"request {owners[i].id}: its context is empty, and the server at "
                        f"model.base_url={self.base_url} takes text prompts and reports no "
                        "log-probability for the first token after its BOS; score it where "
                        "token-id prompts are accepted (vLLM, SGLang) or with model=hf"
                    )
                key = texts[i]  # type: ignore[index]
            prompts.setdefault(key, []).append(i)
        return prompts, windows

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        pairs = self.encode_requests(requests)
        # the text the server tokenizes: context + continuation as the task wrote them
        texts = [r.context + r.continuation for r in requests]
        responses: list[Response | None] = [None] * len(requests)

        def done(i: int, logprob: float, flag: bool, inp: list[int], truncated: int) -> None:
            response = self._check(
                requests[i],
                Response(
                    request_id=requests[i].id,
                    input_tokens=inp,
                    output_tokens=pairs[i][1],
                    logprob=logprob,
                    is_greedy=flag,
                    truncated_tokens_count=truncated,
                ),
            )
            responses[i] = response
            on_response(requests[i], response)

        self._score(pairs, list(requests), texts, done)
        return [r for r in responses if r is not None]

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        def score(plan: RollingPlan, done: WindowDone) -> None:
            if not self._ids_accepted():
                raise ModelError(
                    f"request {requests[plan.owner[0]].id}: PERPLEXITY scores rolling windows "
                    f"of token ids, and the server at model.base_url={self.base_url} takes "
                    "text prompts only (it adds BOS to every prompt and reports no "
                    "log-probability for the token after it); serve the model where token-id "
                    "prompts are accepted (vLLM, SGLang) or use model=hf"
                )
            owners = [requests[i] for i in plan.owner]
            self._score(plan.pairs, owners, None, lambda w, lp, *_: done(w, lp), greedy=False)

        return self.score_rolling(requests, on_response, score)

    # ----- GENERATIVE -----------------------------------------------------------------------
    def _generation_payload(self, job: GenerationJob, request: Request) -> dict[str, Any]:
        return generation_payload(self.sampling, job, request)

    @staticmethod
    def _hit_max(choice: dict[str, Any]) -> bool | None:
        """Did the server stop this generation at ``max_tokens``? (its ``finish_reason``:
        ``length``; None when it gives none)."""
        reason = choice.get("finish_reason")
        return None if reason is None else reason == "length"

    def _generated_tokens(
        self, request: Request, job: GenerationJob, choice: dict[str, Any]
    ) -> list[int]:
        """The generated tokens, recovered by tokenizing context + generated text (the
        server's text keeps the leading space a SentencePiece decode of the new tokens
        alone drops: decoding these tokens gives the HF backend's text)."""
        raw = generated_text(choice, False, f"request {request.id}", self.base_url)
        if not raw:
            return []
        n_ctx = len(job.tokens) + job.truncated
        whole = self._encode(request.context + raw)
        if len(whole) > n_ctx and whole[:n_ctx][-len(job.tokens) :] == job.tokens:
            return whole[n_ctx:]
        return self._encode(raw, add_special_tokens=False)  # a token spans the boundary

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        jobs = self.plan_generation(requests)
        use_ids = bool(jobs) and self._ids_accepted()
        responses: list[Response | None] = [None] * len(requests)
        items = []
        for job in jobs:
            request = requests[job.index]
            if job.truncated and not use_ids:
                raise ModelError(
                    f"request {request.id}: its context exceeds model.max_length="
                    f"{self.max_length} - max_gen_toks={job.max_gen_toks} tokens, and the "
                    f"server at model.base_url={self.base_url} takes text prompts, which "
                    "cannot be cut exactly at a token; raise model.max_length or lower "
                    "task.generation.max_gen_toks"
                )
            prompt: Any = job.tokens if use_ids else request.context
            items.append((request.task, prompt, self._generation_payload(job, request), job))
        # jobs with the same settings (stops, length, greedy) share a request of up to
        # batch_prompts prompts; sampled jobs have their own seeds, hence their own requests
        calls = self._calls(items)
        for call in calls:
            call.label = f"request {requests[call.items[0].index].id}" + (
                f" (+{len(call.items) - 1} more)" if len(call.items) > 1 else ""
            )

        def finish(call: Call, choices: list[dict[str, Any]]) -> None:
            for job, choice in zip(call.items, choices, strict=True):
                tokens = self._generated_tokens(requests[job.index], job, choice)
                text = cut_at_stop(self._decode(tokens), job.until)
                for i in job.copies:
                    responses[i] = Response(
                        request_id=requests[i].id,
                        input_tokens=job.tokens,
                        output_tokens=tokens,
                        text=text,
                        hit_max_gen_toks=self._hit_max(choice),
                        truncated_tokens_count=job.truncated,
                    )
                    on_response(requests[i], responses[i])

        self._send(calls, finish)
        return [r for r in responses if r is not None]


class OpenAIChat(OpenAICompletions):
    """A model behind an OpenAI-compatible ``/v1/chat/completions`` endpoint: GENERATIVE
    only. Tasks hand it their messages (system, few-shot turns, question) and the server
    applies its own chat template. ``tokenizer`` is optional: with one, the EOS text joins
    the stop strings and generated tokens are recorded."""

    endpoint = "/chat/completions"
    backend = "openai_chat"
    needs_tokenizer = False
    default_sampling = CHAT_SAMPLING
    MAX_STOPS = 4
    """Stop strings sent (the OpenAI API's limit); all of them cut the text locally."""

    def takes_messages(self) -> bool:
        return True

    def refusal(self, output_type: OutputType) -> str | None:
        if output_type is OutputType.GENERATIVE:
            return None
        return (
            f"model=openai_chat answers generative tasks only: a chat endpoint returns no "
            f"log-probabilities of a given text, which {output_type.value} tasks score; use "
            "model=openai_completions (the /v1/completions endpoint) or model=hf"
        )

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ModelError(str(self.refusal(OutputType.LOGPROBS)))

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ModelError(str(self.refusal(OutputType.PERPLEXITY)))

    def _body(self, call: Call) -> dict[str, Any]:
        return {"model": self.model, "messages": call.prompts[0], **call.payload}

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        eos = self.eos_text() if self.tokenizer is not None else None
        unique: dict[str, Call] = {}
        for i, request in enumerate(requests):
            args = generation_args(request)
            turns = request.messages or (("user", request.context),)
            messages = [{"role": role, "content": content} for role, content in turns]
            until = list(args.until)
            if eos and eos not in until:
                until.append(eos)
            payload: dict[str, Any] = {
                **self.sampling,
                "max_tokens": args.max_gen_toks or self.max_gen_toks,
                "temperature": float(args.temperature) if args.do_sample else 0.0,
                "seed": server_seed(args.seed, request.id) if args.do_sample else 0,
            }
            if args.do_sample and args.top_p < 1.0:
                payload["top_p"] = float(args.top_p)
            stops = [s for s in until if s][: self.MAX_STOPS]
            if stops:
                payload["stop"] = stops
            key = json.dumps(
                [messages, payload, request.id if args.do_sample else None], sort_keys=True
            )
            call = unique.get(key)
            if call is None:
                call = unique[key] = Call(
                    request.task, [messages], payload, f"request {request.id}", [until]
                )
            call.items.append(i)
        responses: list[Response | None] = [None] * len(requests)

        def finish(call: Call, choices: list[dict[str, Any]]) -> None:
            raw = generated_text(choices[0], True, call.label, self.base_url)
            until = call.items[0]
            text = cut_at_stop(raw, until)
            tokens = (
                self._encode(raw, add_special_tokens=False)
                if self.tokenizer is not None and raw
                else []
            )
            for i in call.items[1:]:
                responses[i] = Response(
                    request_id=requests[i].id,
                    output_tokens=tokens,
                    text=text,
                    hit_max_gen_toks=self._hit_max(choices[0]),
                )
                on_response(requests[i], responses[i])

        self._send(list(unique.values()), finish)
        return [r for r in responses if r is not None]
