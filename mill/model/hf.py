"""Hugging Face transformers causal LMs, scored with lm-evaluation-harness 0.4.13 semantics.

Only this module (and the scoring/generation helpers it drives) imports torch and
transformers, and only when a model is instantiated.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mill.errors import ModelError
from mill.model.base import LanguageModel, OnResponse, _ignore
from mill.task.chat import ChatTemplate
from mill.types import Request, Response

log = logging.getLogger(__name__)

_DTYPES = ("float32", "float16", "bfloat16", "auto")


def _fingerprint(directory: Path) -> str:
    """sha256 over the weight and config files of a model folder (name, size, content of
    files up to 64 MiB; name and size beyond, to keep start-up fast for big models)."""
    digest = hashlib.sha256()
    for path in sorted(directory.iterdir()):
        if not path.is_file() or path.suffix not in {".safetensors", ".bin", ".json", ".model"}:
            continue
        size = path.stat().st_size
        digest.update(f"{path.name}:{size}".encode())
        if size <= 64 << 20:
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _sampler(requests: Sequence[Request], sampling: tuple[float, int] | None) -> Any:
    """A seeded sampler for a batch of sampled generations (None: greedy). Each request's
    seed is derived from the generation seed and the request id (which includes the
    repeat index), so repeats differ and reruns repeat."""
    if sampling is None:
        return None
    from mill.model.generation import SeededSampler

    temperature, seed = sampling
    seeds = [
        int.from_bytes(hashlib.sha256(f"{seed}\x00{r.id}".encode()).digest()[:8], "big")
        for r in requests
    ]
    return SeededSampler(seeds, temperature)


def _placement(device_map: Any, max_memory: Any, offload_folder: str | None) -> dict[str, Any]:
    """``from_pretrained`` arguments that dispatch the model over devices (empty: none)."""
    if device_map is None:
        if max_memory or offload_folder:
            raise ModelError("model.max_memory and model.offload_folder need model.device_map")
        return {}
    kwargs: dict[str, Any] = {"device_map": device_map}
    if isinstance(device_map, dict):
        kwargs["device_map"] = dict(device_map)
    if max_memory:
        # Hydra/YAML keys arrive as strings: GPU indices become ints, as accelerate expects
        kwargs["max_memory"] = {
            int(k) if str(k).isdigit() else str(k): v for k, v in dict(max_memory).items()
        }
    if offload_folder:
        kwargs["offload_folder"] = str(offload_folder)
    return kwargs


def _input_device(model: Any) -> Any:
    """Where input ids go for a dispatched model: its embedding's device (accelerate's
    hooks move them further when the embedding itself is offloaded)."""
    import torch

    device = model.get_input_embeddings().weight.device
    if device.type != "meta":
        return device
    first = next(iter(getattr(model, "hf_device_map", {}).values()), "cpu")
    if isinstance(first, int):
        return torch.device("cuda", first)
    return torch.device("cpu" if first in ("cpu", "disk") else str(first))


class HFCausalLM(LanguageModel):
    """A ``transformers`` causal LM from the hub (id + revision) or a local folder.

    Args:
        pretrained: hub id or local folder.
        revision: hub revision (branch, tag or commit).
        dtype: float32, float16, bfloat16 or auto.
        device: ``auto`` (CUDA if present, else CPU), ``cpu``, ``cuda:0``, ...
        batch_size: ``auto`` (batches by ``token_budget``) or a maximum number of rows.
        token_budget: padded tokens per forward pass when ``batch_size=auto`` (default:
            4096 on CPU, where smaller blocks stay in cache and peak memory stays low,
            16384 on GPUs).
        cache_budget: generation: rows x (context + new tokens) held in one decode batch's
            KV cache when ``batch_size=auto`` (default 65536).
        max_length: context window; default from the model config (as lm-eval).
        max_gen_toks: default generation length when a request does not set one.
        share_prefix: run each shared context once for all its choices.
        trust_remote_code: passed to transformers.
        name: short name for experiment folders and reports.
        device_map: ``auto``/``balanced``/``sequential`` or an explicit map: spread one
            model that does not fit on one GPU over several (and CPU/disk), passed to
            ``from_pretrained``; ``device`` is then ignored. Layers run one GPU at a time.
        max_memory: per-device budget for ``device_map``, e.g. ``{0: 70GiB, 1: 70GiB,
            cpu: 200GiB}``.
        offload_folder: where ``device_map`` may put weights that fit nowhere else.
        fused_gelu: run tanh-GELU activations (GPT-2 family) with torch's fused kernel
            (:mod:`mill.model.kernels`; equal to rounding); false keeps the model's modules.
    """

    def __init__(
        self,
        pretrained: str,
        revision: str | None = None,
        dtype: str = "float32",
        device: str = "auto",
        batch_size: int | str = "auto",
        token_budget: int | None = None,
        cache_budget: int | None = None,
        max_length: int | None = None,
        max_gen_toks: int = 256,
        share_prefix: bool = True,
        trust_remote_code: bool = False,
        name: str | None = None,
        device_map: str | dict[str, Any] | None = None,
        max_memory: dict[Any, str] | None = None,
        offload_folder: str | None = None,
        fused_gelu: bool = True,
        _loaded: tuple[Any, Any] | None = None,
    ) -> None:
        import torch
        import transformers

        transformers.utils.logging.disable_progress_bar()
        if dtype not in _DTYPES:
            raise ModelError(f"model.dtype={dtype!r} is unknown; choose one of {_DTYPES}")
        self.pretrained = str(pretrained)
        self.revision = revision
        self.name = name or Path(self.pretrained).name
        self.batch_size = batch_size
        self.max_gen_toks = int(max_gen_toks)
        self.share_prefix = bool(share_prefix)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.device = torch.device(device)
        on_cpu = self.device.type == "cpu"
        self.token_budget = int(token_budget or (4096 if on_cpu else 16384))
        self.cache_budget = int(cache_budget or 65536)
        local = Path(os.path.expanduser(self.pretrained))
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
        placement = _placement(device_map, max_memory, offload_folder)
        if _loaded is not None:  # from_transformers: objects the caller already holds
            self.model, self.tokenizer = _loaded
        else:
            try:
                self.tokenizer = transformers.AutoTokenizer.from_pretrained(
                    str(local) if local.is_dir() else self.pretrained,
                    revision=revision,
                    trust_remote_code=trust_remote_code,
                )
                self.model = transformers.AutoModelForCausalLM.from_pretrained(
                    str(local) if local.is_dir() else self.pretrained,
                    revision=revision,
                    dtype=getattr(torch, dtype) if dtype != "auto" else "auto",
                    trust_remote_code=trust_remote_code,
                    **placement,
                )
            except (OSError, ValueError) as err:
                where = "local folder" if local.is_dir() else "hub model"
                if local.is_dir():
                    hint = " Check that the folder holds config.json, weights and tokenizer files."
                elif offline:
                    hint = (
                        " HF_HUB_OFFLINE is set and the model is not in the Hugging Face cache: "
                        "download it once with network, or point model.pretrained at a local "
                        "folder."
                    )
                else:
                    hint = (
                        " The hub was unreachable, or the id/revision is wrong, or the model is "
                        "gated (accept its license and run `hf auth login`). Offline, point "
                        "model.pretrained at a local folder."
                    )
                raise ModelError(
                    f"cannot load {where} {self.pretrained!r} (revision {revision}): "
                    f"{type(err).__name__}.{hint}"
                ) from err
        if placement:  # dispatched over devices by accelerate: never .to() it
            self.device = _input_device(self.model)
        else:
            self.model.to(self.device)
        self.model.eval()
        fused = 0
        if fused_gelu:
            from mill.model.kernels import fuse_gelu

            fused = fuse_gelu(self.model)
        self.dtype = str(self.model.dtype).removeprefix("torch.")
        self.max_length = int(max_length or self._default_max_length())
        # Mill truncates to max_length itself (counted per request, one warning per run);
        # the tokenizer's own per-sequence length warning would only repeat that
        self.tokenizer.model_max_length = int(1e30)
        self.prefix_token_id = (
            self.tokenizer.bos_token_id
            if self.tokenizer.bos_token_id is not None
            else self.tokenizer.eos_token_id
        )
        # lm-eval skips special tokens for a text that already starts with the prefix token
        self._prefix_text = self.tokenizer.decode([int(self.prefix_token_id)])
        commit = getattr(self.model.config, "_commit_hash", None)
        self._identity = {
            "backend": "hf",
            "pretrained": self.pretrained,
            "revision": revision,
            "commit": commit,
            "weights_fingerprint": _fingerprint(local) if local.is_dir() else commit,
            "dtype": self.dtype,
            "max_length": self.max_length,
            "max_gen_toks": self.max_gen_toks,
            "trust_remote_code": bool(trust_remote_code),
            "fused_gelu": fused > 0,
            "class": type(self.model).__name__,
            "num_parameters": sum(p.numel() for p in self.model.parameters()),
        }
        from mill.model.hf_forward import HFForward

        self._forward = HFForward(self.model, self.device)

    @classmethod
    def from_transformers(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "in_memory",
        batch_size: int | str = "auto",
        token_budget: int | None = None,
        max_length: int | None = None,
        max_gen_toks: int = 256,
        share_prefix: bool = True,
    ) -> HFCausalLM:
        """Wrap a ``transformers`` causal LM and tokenizer already in memory (a checkpoint
        inside a training loop, a notebook's model). The model stays on its device and
        keeps its modules (no fused kernels); :meth:`identity` says ``in_memory`` (no
        files to fingerprint), so no response cache ever serves its scores."""
        model_max_length = getattr(tokenizer, "model_max_length", None)
        obj = cls(
            pretrained=name,
            name=name,
            device=str(_input_device(model)),
            batch_size=batch_size,
            token_budget=token_budget,
            max_length=max_length,
            max_gen_toks=max_gen_toks,
            share_prefix=share_prefix,
            fused_gelu=False,
            _loaded=(model, tokenizer),
        )
        if model_max_length is not None:  # the caller's tokenizer stays as it was
            tokenizer.model_max_length = model_max_length
        obj._identity.update(
            pretrained=None, revision=None, commit=None, weights_fingerprint=None, in_memory=True
        )
        return obj

    def _default_max_length(self) -> int:
        config = self.model.config
        config = getattr(config, "text_config", None) or config
        for attr in ("n_positions", "max_position_embeddings", "n_ctx"):
            if getattr(config, attr, None):
                return int(getattr(config, attr))
        limit = getattr(self.tokenizer, "model_max_length", None)
        if limit and limit < 1_000_000_000:
            return int(limit)
        return 2048

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def chat_template(self) -> ChatTemplate | None:
        from mill.task.chat import tokenizer_chat_template

        return tokenizer_chat_template(self.tokenizer)

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
            kwargs = {} if flag is None else {"add_special_tokens": flag}
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

        plans = []
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

    # ----- request methods --------------------------------------------------------------
    def _max_rows(self) -> int | None:
        return None if self.batch_size == "auto" else int(self.batch_size)

    def _budget(self) -> int | None:
        return self.token_budget if self.batch_size == "auto" else None

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = _ignore
    ) -> list[Response]:
        from mill.model.scoring import score_continuations

        pairs = self.encode_pairs([(r.context, r.continuation) for r in requests])
        for request, (_, cont) in zip(requests, pairs, strict=True):
            if not cont:
                raise ModelError(f"request {request.id}: the continuation has no tokens")
            if len(cont) > self.max_length:
                raise ModelError(
                    f"request {request.id}: continuation of {len(cont)} tokens exceeds "
                    f"model.max_length={self.max_length}"
                )
        responses: list[Response | None] = [None] * len(requests)

        def done(i: int, scored: Any) -> None:
            responses[i] = self._check(
                requests[i],
                Response(
                    request_id=requests[i].id,
                    input_tokens=scored.input_tokens,
                    output_tokens=pairs[i][1],
                    logprob=scored.logprob,
                    is_greedy=scored.is_greedy,
                    truncated_tokens_count=scored.truncated,
                    padded_tokens_count=scored.padded,
                ),
            )
            on_response(requests[i], responses[i])

        score_continuations(
            self._forward,
            pairs,
            self.max_length,
            self._budget(),
            self._max_rows(),
            self.share_prefix,
            done,
        )
        return [r for r in responses if r is not None]

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = _ignore
    ) -> list[Response]:
        from mill.model.rolling import rolling_windows
        from mill.model.scoring import score_continuations

        pairs: list[tuple[list[int], list[int]]] = []
        owner: list[int] = []
        texts = self._encode_many([r.continuation for r in requests])
        for i, tokens in enumerate(texts):
            windows = rolling_windows(tokens, int(self.prefix_token_id), self.max_length)
            pairs.extend(windows)
            owner.extend([i] * len(windows))
        remaining = [0] * len(requests)
        for i in owner:
            remaining[i] += 1
        window_lls: dict[int, float] = {}
        padded = [0] * len(requests)
        responses: list[Response | None] = [None] * len(requests)

        def done(w: int, scored: Any) -> None:
            i = owner[w]
            window_lls[w] = scored.logprob
            padded[i] += scored.padded
            remaining[i] -= 1
            if remaining[i] == 0:
                tokens = texts[i]
                # windows in document order, summed in float64 (as lm-eval does)
                total = sum(
                    window_lls.pop(j) for j in sorted(j for j in window_lls if owner[j] == i)
                )
                responses[i] = self._check(
                    requests[i],
                    Response(
                        request_id=requests[i].id,
                        output_tokens=tokens,
                        logprob=total,
                        padded_tokens_count=padded[i],
                    ),
                )
                on_response(requests[i], responses[i])

        # windows never share contexts, so each takes one full pass, all docs batched together
        score_continuations(
            self._forward,
            pairs,
            self.max_length,
            self._budget(),
            self._max_rows(),
            share_prefix=False,
            on_done=done,
            greedy=False,
        )
        for i, request in enumerate(requests):
            if responses[i] is None:  # empty text: nothing to score
                responses[i] = Response(request_id=request.id, logprob=0.0)
                on_response(request, responses[i])
        return [r for r in responses if r is not None]

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = _ignore
    ) -> list[Response]:
        from mill.model.batching import budget_batches
        from mill.model.generation import generate_batch

        eos_ids = self._eos_ids()
        eos_text = (
            self.tokenizer.decode([self.tokenizer.eos_token_id])
            if (self.tokenizer.eos_token_id is not None)
            else None
        )
        jobs = []
        contexts = self._encode_many([r.context for r in requests])
        for i, (request, tokens) in enumerate(zip(requests, contexts, strict=True)):
            args = request.generation
            if args is None:
                raise ModelError(f"request {request.id}: no generation arguments")
            if args.do_sample and args.temperature <= 0:
                raise ModelError(
                    f"request {request.id}: do_sample needs temperature > 0; set "
                    "task.generation.temperature"
                )
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
            sampling = (args.temperature, args.seed) if args.do_sample else None
            jobs.append(
                (i, tokens[-keep:], max(0, len(tokens) - keep), tuple(until), max_gen, sampling)
            )
        # identical requests (same tokens, stops and length) are generated once; sampled
        # ones never are (each repeat draws its own sample)
        copies: dict[tuple[Any, ...], list[int]] = {}
        unique_jobs = []
        for job in jobs:
            key = self._job_key(job, requests)
            if key not in copies:
                copies[key] = []
                unique_jobs.append(job)
            copies[key].append(job[0])
        unique_jobs.sort(key=lambda j: (-len(j[1]), j[0]))
        responses: list[Response | None] = [None] * len(requests)
        groups: dict[tuple[tuple[str, ...], int, Any], list[Any]] = {}
        for job in unique_jobs:
            groups.setdefault((job[3], job[4], job[5]), []).append(job)
        # a decode batch holds rows x (context + new tokens) <= the cache budget; its
        # prefill runs in chunks of at most token_budget tokens (or batch_size rows)
        cache_budget = None if self._budget() is None else self.cache_budget
        for (until, max_gen, sampling), group in groups.items():
            for batch in budget_batches(
                group, lambda j: (1, len(j[1]) + j[4]), cache_budget, self._max_rows()
            ):
                outputs = generate_batch(
                    self._forward,
                    [j[1] for j in batch],
                    [j[2] for j in batch],
                    until,
                    max_gen,
                    eos_ids,
                    self._decode,
                    token_budget=self._budget(),
                    max_rows=self._max_rows(),
                    choose=_sampler([requests[j[0]] for j in batch], sampling),
                )
                for job, out in zip(batch, outputs, strict=True):
                    for i in copies[self._job_key(job, requests)]:
                        responses[i] = Response(
                            request_id=requests[i].id,
                            input_tokens=out.input_tokens,
                            output_tokens=out.tokens,
                            text=out.text,
                            truncated_tokens_count=out.truncated,
                            padded_tokens_count=out.padded,
                        )
                        on_response(requests[i], responses[i])
        return [r for r in responses if r is not None]

    @staticmethod
    def _job_key(job: tuple[Any, ...], requests: Sequence[Request]) -> tuple[Any, ...]:
        """Identity of a generation job: sampled jobs are unique per request."""
        sampled = requests[job[0]].id if job[5] is not None else None
        return (tuple(job[1]), job[3], job[4], job[5], sampled)

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=True)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        config_eos = getattr(self.model.generation_config, "eos_token_id", None)
        for value in (config_eos, self.tokenizer.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list):
                ids.update(int(v) for v in value)
        return ids

    @staticmethod
    def _check(request: Request, response: Response) -> Response:
        import math

        if response.logprob is not None and not math.isfinite(response.logprob):
            raise ModelError(f"request {request.id}: non-finite log-probability {response.logprob}")
        return response
