"""What every backend that tokenizes locally shares: request semantics, written once.

lm-evaluation-harness 0.4.13 semantics (``TemplateLM``), independent of how a backend
computes: the HF backend runs the model in-process, the API backends send the same
token sequences to a server.

* Context/continuation encoding (:meth:`TokenizingLM.encode_pairs`): trailing whitespace
  of the context moves to the continuation, continuation tokens are those of
  context+continuation after the context's, an empty context becomes the prefix token.
* Left truncation for scoring (:func:`scoring_window`): the model sees
  ``(context + continuation)[-(L+1):][:-1]``.
* Rolling windows for perplexity and their regrouping per document (:class:`RollingPlan`).
* Generation planning (:meth:`TokenizingLM.plan_generation`): stop strings (plus the EOS
  text), left-truncated contexts, identical requests generated once, as
  :class:`GenerationJob` records.
* Stop handling (:func:`cut_at_stop`).

Nothing here imports torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mill.errors import ModelError
from mill.model.base import LanguageModel, OnResponse
from mill.model.rolling import rolling_windows
from mill.types import GenerationArgs, Request, Response


def generation_args(request: Request) -> GenerationArgs:
    """A GENERATIVE request's arguments, checked: every generating backend reads them here."""
    args = request.generation
    if args is None:
        raise ModelError(f"request {request.id}: no generation arguments")
    if args.do_sample and args.temperature <= 0:
        raise ModelError(
            f"request {request.id}: do_sample needs temperature > 0; set "
            "task.generation.temperature"
        )
    return args


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """Text before the first occurrence of each stop string, applied in order (lm-eval)."""
    for stop in until:
        if stop:
            text = text.split(stop)[0]
    return text


def scoring_window(
    context: Sequence[int], continuation: Sequence[int], max_length: int
) -> tuple[list[int], int]:
    """The tokens a model is fed to score ``continuation`` after ``context`` (lm-eval's
    ``(context + continuation)[-(max_length + 1):][:-1]``) and how many leading tokens
    were cut. The last ``len(continuation)`` predictions of that input are scored."""
    whole = list(context) + list(continuation)
    return whole[-(max_length + 1) :][:-1], max(0, len(whole) - max_length - 1)


@dataclass(frozen=True)
class GenerationJob:
    """One planned ``generate_until`` request (identical requests share one job)."""

    index: int
    """Position of the (first) request in the batch handed to the backend."""
    tokens: list[int]
    """Context tokens after left truncation to ``max_length - max_gen_toks``."""
    truncated: int
    """Context tokens cut from the left."""
    until: tuple[str, ...]
    """Stop strings, the EOS text included."""
    max_gen_toks: int
    sampling: tuple[float, int, float] | None
    """(temperature, seed, top_p) for sampled generation; None: greedy."""
    copies: tuple[int, ...] = ()
    """Positions of every request this job answers (``index`` included)."""


WindowDone = Callable[..., None]
"""``done(window, logprob, padded=0)``: one rolling window scored (see
:meth:`TokenizingLM.score_rolling`)."""


class RollingPlan:
    """Rolling windows of many texts, scored in any order and regrouped per text.

    ``pairs[w]`` is window ``w`` as (context, continuation) tokens, ``owner[w]`` the text it
    belongs to. :meth:`add` takes each window's log-probability as it finishes and returns
    the text's index once all its windows are in; :meth:`total` then sums them in
    document order, in float64 (as lm-eval does).
    """

    def __init__(self, texts: list[list[int]], prefix_token: int, max_length: int) -> None:
        self.texts = texts
        self.pairs: list[tuple[list[int], list[int]]] = []
        self.owner: list[int] = []
        for i, tokens in enumerate(texts):
            windows = rolling_windows(tokens, prefix_token, max_length)
            self.pairs.extend(windows)
            self.owner.extend([i] * len(windows))
        self.remaining = [0] * len(texts)
        for i in self.owner:
            self.remaining[i] += 1
        self.padded = [0] * len(texts)
        self._lls: dict[int, float] = {}
        self._totals: dict[int, float] = {}

    def add(self, window: int, logprob: float, padded: int = 0) -> int | None:
        """Record one window's log-probability; the text's index when it is complete."""
        i = self.owner[window]
        self._lls[window] = logprob
        self.padded[i] += padded
        self.remaining[i] -= 1
        if self.remaining[i]:
            return None
        self._totals[i] = sum(
            self._lls.pop(j) for j in sorted(j for j in self._lls if self.owner[j] == i)
        )
        return i

    def total(self, i: int) -> float:
        """Summed log-probability of text ``i`` (after :meth:`add` returned ``i``)."""
        return self._totals[i]

    def empty(self) -> list[int]:
        """Texts without tokens: nothing to score, log-probability 0."""
        return [i for i, tokens in enumerate(self.texts) if not tokens]


class TokenizingLM(LanguageModel):
    """A backend with a local ``transformers`` tokenizer and lm-eval's request semantics.

    Subclasses set ``tokenizer``, ``max_length`` and ``max_gen_toks``, call
    :meth:`_init_tokenizer`, and compute log-probabilities / generations their own way.
    """

    tokenizer: Any
    max_length: int
    max_gen_toks: int
    prefix_token_id: int
    _prefix_text: str

    def _init_tokenizer(self) -> None:
        # Mill truncates to max_length itself (counted per request, one warning per run);
        # the tokenizer's own per-sequence length warning would only repeat that
        self.tokenizer.model_max_length = int(1e30)
        self.prefix_token_id = (
            self.tokenizer.bos_token_id
            if self.tokenizer.bos_token_id is not None
            else self.tokenizer.eos_token_id
        )
        if self.prefix_token_id is None:
            name = getattr(self.tokenizer, "name_or_path", "") or type(self.tokenizer).__name__
            raise ModelError(
                f"model.tokenizer: the tokenizer {name!r} has neither a BOS nor an EOS token; "
                "Mill (as lm-eval) starts a context with one of them: give the model's own "
                "tokenizer (model.tokenizer=<its Hugging Face id or folder>)"
            )
        # lm-eval skips special tokens for a text that already starts with the prefix token
        self._prefix_text = self.tokenizer.decode([int(self.prefix_token_id)])

    # ----- tokenization (lm-eval TemplateLM semantics) --------------------------------------
    def _encode(self, text: str, add_special_tokens: bool | None = None) -> list[int]:
        return self._encode_many([text], add_special_tokens)[0]

    def _encode_many(
        self, texts: list[str], add_special_tokens: bool | None = None
    ) -> list[list[int]]:
        """Tokenize several texts in one call. ``None``: the tokenizer's default special
        tokens (BOS), except for a text that already starts with the BOS token (lm-eval)."""
        out: list[list[int]] = [[] for _ in texts]
        flags: dict[bool | None, list[int]] = {}
        bos = self._prefix_text
        for i, text in enumerate(texts):
            flag = add_special_tokens
            if flag is None and bos and text.startswith(bos):
                flag = False
            flags.setdefault(flag, []).append(i)
        for flag, idx in flags.items():
            kwargs: dict[str, bool] = {"verbose": False}  # Mill counts truncation itself
            if flag is not None:
                kwargs["add_special_tokens"] = flag
            encoded = self.tokenizer([texts[i] for i in idx], **kwargs)["input_ids"]
            for i, ids in zip(idx, encoded, strict=True):
                out[i] = list(ids)
        return out

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """Context and continuation tokens: trailing whitespace of the context moves to the
        continuation; continuation tokens are those of context+continuation after the
        context's; an empty context becomes the prefix (BOS, else EOS) token."""
        return self.encode_pairs([(context, continuation)])[0]

    def encode_pairs(self, pairs: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        """:meth:`encode_pair` for many pairs, each distinct text tokenized once."""
        texts: dict[tuple[str, bool | None], int] = {}

        def want(text: str, special: bool | None = None) -> tuple[str, bool | None]:
            texts.setdefault((text, special), len(texts))
            return (text, special)

        plans: list[tuple[str, tuple[str, bool | None], tuple[str, bool | None] | None]] = []
        for context, continuation in pairs:
            if context == "":
                plans.append(("empty", want(continuation, False), None))
                continue
            n_spaces = len(context) - len(context.rstrip())
            if n_spaces:
                continuation = context[-n_spaces:] + continuation
                context = context[:-n_spaces]
            plans.append(("pair", want(context + continuation), want(context)))
        keys = list(texts)
        encoded: dict[tuple[str, bool | None], list[int]] = {}
        for special in {k[1] for k in keys}:
            group = [k for k in keys if k[1] == special]
            for key, ids in zip(
                group, self._encode_many([k[0] for k in group], special), strict=True
            ):
                encoded[key] = ids
        out = []
        for kind, a, b in plans:
            if kind == "empty":
                cont = encoded[a]
                if cont and cont[0] == self.prefix_token_id:
                    out.append((cont[:1], cont[1:]))
                else:
                    out.append(([int(self.prefix_token_id)], cont))
            else:
                whole, ctx = encoded[a], encoded[b]  # type: ignore[index]
                out.append((ctx, whole[len(ctx) :]))
        return out

    def encode_requests(self, requests: Sequence[Request]) -> list[tuple[list[int], list[int]]]:
        """LOGPROBS requests as (context, continuation) tokens, each checked to be
        scorable: a continuation with tokens, no longer than ``max_length``."""
        pairs = self.encode_pairs([(r.context, r.continuation) for r in requests])
        for request, (_, cont) in zip(requests, pairs, strict=True):
            if not cont:
                raise ModelError(f"request {request.id}: the continuation has no tokens")
            if len(cont) > self.max_length:
                raise ModelError(
                    f"request {request.id}: continuation of {len(cont)} tokens exceeds "
                    f"model.max_length={self.max_length}"
                )
        return pairs

    def rolling_plan(self, requests: Sequence[Request]) -> RollingPlan:
        """PERPLEXITY requests as rolling windows of ``max_length`` (lm-eval's)."""
        texts = self._encode_many([r.continuation for r in requests])
        return RollingPlan(texts, int(self.prefix_token_id), self.max_length)

    def score_rolling(
        self,
        requests: Sequence[Request],
        on_response: OnResponse,
        score: Callable[[RollingPlan, WindowDone], None],
    ) -> list[Response]:
        """PERPLEXITY requests, whatever computes the windows: ``score(plan, done)`` scores
        ``plan.pairs`` in any order and calls ``done(window, logprob, padded)`` as each
        finishes; each text's response goes to ``on_response`` once its windows are in
        (an empty text scores 0 without a window)."""
        plan = self.rolling_plan(requests)
        responses: list[Response | None] = [None] * len(requests)

        def done(window: int, logprob: float, padded: int = 0) -> None:
            i = plan.add(window, logprob, padded)
            if i is None:
                return
            response = self._check(
                requests[i],
                Response(
                    request_id=requests[i].id,
                    output_tokens=plan.texts[i],
                    logprob=plan.total(i),
                    padded_tokens_count=plan.padded[i],
                ),
            )
            responses[i] = response
            on_response(requests[i], response)

        if plan.pairs:
            score(plan, done)
        for i in plan.empty():  # empty text: nothing to score
            response = Response(request_id=requests[i].id, logprob=0.0)
            responses[i] = response
            on_response(requests[i], response)
        return [r for r in responses if r is not None]

    # ----- generation planning --------------------------------------------------------------
    def eos_text(self) -> str | None:
        """The EOS token's text, added to every request's stop strings (lm-eval)."""
        eos = self.tokenizer.eos_token_id
        return self.tokenizer.decode([eos]) if eos is not None else None

    def plan_generation(self, requests: Sequence[Request]) -> list[GenerationJob]:
        """One :class:`GenerationJob` per distinct generation, longest context first.

        Identical requests (same tokens, stops and length) are generated once; sampled ones
        never are (each repeat draws its own sample)."""
        eos_text = self.eos_text()
        jobs: list[GenerationJob] = []
        contexts = self._encode_many([r.context for r in requests])
        for i, (request, tokens) in enumerate(zip(requests, contexts, strict=True)):
            args = generation_args(request)
            max_gen = args.max_gen_toks or self.max_gen_toks
            until = list(args.until)
            if eos_text and eos_text not in until:
                until.append(eos_text)
            keep = self.max_length - max_gen
            if keep <= 0:
                raise ModelError(
                    f"request {request.id}: max_gen_toks={max_gen} leaves no room "
                    f"for context in max_length={self.max_length}"
                )
            sampling = (args.temperature, args.seed, args.top_p) if args.do_sample else None
            jobs.append(
                GenerationJob(
                    i, tokens[-keep:], max(0, len(tokens) - keep), tuple(until), max_gen, sampling
                )
            )
        copies: dict[tuple[Any, ...], list[int]] = {}
        unique: dict[tuple[Any, ...], GenerationJob] = {}
        for job in jobs:
            sampled = requests[job.index].id if job.sampling is not None else None
            key = (tuple(job.tokens), job.until, job.max_gen_toks, job.sampling, sampled)
            unique.setdefault(key, job)
            copies.setdefault(key, []).append(job.index)
        planned = [
            GenerationJob(
                job.index,
                job.tokens,
                job.truncated,
                job.until,
                job.max_gen_toks,
                job.sampling,
                tuple(copies[key]),
            )
            for key, job in unique.items()
        ]
        planned.sort(key=lambda j: (-len(j.tokens), j.index))
        return planned

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    @staticmethod
    def _check(request: Request, response: Response) -> Response:
        if response.logprob is not None and not math.isfinite(response.logprob):
            raise ModelError(f"request {request.id}: non-finite log-probability {response.logprob}")
        return response
