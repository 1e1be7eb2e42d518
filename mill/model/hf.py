"""Hugging Face transformers causal LMs, scored with lm-evaluation-harness 0.4.13 semantics.

Only this module (and the scoring/generation helpers it drives) imports torch and
transformers, and only when a model is instantiated.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mill.errors import ModelError
from mill.model.base import ignore_response, request_seed
from mill.model.identity import start_weights_identity
from mill.model.tokenizing import GenerationJob, RollingPlan, TokenizingLM, WindowDone
from mill.schema import typed
from mill.types import ChatTemplate, OnResponse, Request, Response

log = logging.getLogger(__name__)


CPU_PREFILL_TOKENS = 1024
"""Generation's prefill chunk on CPU when ``token_budget`` is not set. Measured on 2 cores
(gpt2_bench, GSM8K 8-shot): prefill runs at the same ~6,000 tokens/s in chunks of 768 or
3,072 tokens, while the chunk's transient memory (its attention over padded rows, its
cache before the merge) took ~200 MiB more at 4,096 tokens than at 1,024; the decode
batch's KV cache can use that memory instead (:mod:`mill.model.engine.memory`)."""


def _sampler(requests: Sequence[Request], sampling: tuple[float, int, float] | None) -> Any:
    """A seeded sampler for a batch of sampled generations (None: greedy), each row's
    generator seeded with its request's :func:`~mill.model.base.request_seed`."""
    if sampling is None:
        return None
    from mill.model.engine.generation import SeededSampler

    temperature, seed, top_p = sampling
    seeds = [request_seed(seed, r.id) for r in requests]
    return SeededSampler(seeds, temperature, top_p)


def _check_budgets(
    batch_size: int | str, token_budget: int | None, cache_budget: int | None, max_gen_toks: int
) -> None:
    """Refuse a KV cache that cannot hold one generation row (before the weights load);
    each setting's own range is the schema's (:func:`mill.schema.typed`)."""
    if cache_budget is not None and cache_budget <= max_gen_toks:
        raise ModelError(
            f"model.cache_budget={cache_budget} cannot hold one generation row (a context "
            f"token and max_gen_toks={max_gen_toks} new ones); use more tokens than "
            "max_gen_toks, or null (chosen from memory)"
        )


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


def resolve_device(device: str) -> Any:
    """``model.device`` as a torch device: ``auto`` is CUDA where there is one, else the CPU."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(device)


def load_placement(device: Any, placement: dict[str, Any]) -> dict[str, Any]:
    """``from_pretrained``'s placement arguments: the dispatch the user asked for, else, on
    one accelerator, its weights loaded straight onto it (``device_map={"": device}``, as
    lm-eval does). Loading on the CPU and then moving the model held a whole host copy of
    it next to the mapped checkpoint: a 1.1B model peaked at 7.3 GiB of RSS on an H100
    machine, against lm-eval's 5.5 GiB."""
    if placement or device.type == "cpu":
        return placement
    return {"device_map": {"": str(device)}}


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


def _check_local(setting: str, value: str | None) -> None:
    """ModelError when ``value`` is written as a path (``/``, ``./``, ``../``, ``~`` or more
    than one ``/``: never a hub id, which is ``name`` or ``org/name``) and no such folder
    exists, instead of a failed hub download."""
    if value is None:
        return
    text = str(value)
    if not (text.startswith(("/", "./", "../", "~")) or text.count("/") > 1):
        return
    folder = Path(os.path.expanduser(text))
    if not folder.is_dir():
        what = "is a file, not a folder" if folder.exists() else "does not exist"
        raise ModelError(
            f"model.{setting}={text!r}: the folder {folder} {what}; give the folder of a saved "
            "model (config.json, weights, tokenizer files) or a hub id (org/name)"
        )


def _tokenizer_identity(tokenizer: str) -> dict[str, Any]:
    """model.tokenizer in the model's identity: the id or folder and its files' digest (a
    folder) or its hub commit, so a cached score is never served for another tokenizer."""
    from mill.model.identity import weights_identity

    found = weights_identity(tokenizer, None, None)
    return {"source": tokenizer, "fingerprint": found.get("weights_fingerprint")}


def _load_hint(local: bool, offline: bool, tokenizer: str | None) -> str:
    """How to fix a failed load: the folder's files, the offline hub cache, or the hub."""
    if local:
        return " Check that the folder holds config.json, weights and tokenizer files" + (
            " (a checkpoint saved without its tokenizer: model.tokenizer=<folder or hub id>)."
            if tokenizer is None
            else f", and model.tokenizer={tokenizer!r} a tokenizer."
        )
    if offline:
        return (
            " HF_HUB_OFFLINE is set and the model is not in the Hugging Face cache: "
            "download it once with network, or point model.pretrained at a local "
            "folder."
        )
    return (
        " The hub was unreachable, or the id/revision is wrong, or the model is "
        "gated (accept its license and run `hf auth login`). Offline, point "
        "model.pretrained at a local folder."
    )


def _load_files(
    pretrained: str,
    revision: str | None,
    tokenizer: str | None,
    dtype: str,
    trust_remote_code: bool,
    loading: dict[str, Any],
) -> tuple[Any, Any]:
    """The model and its tokenizer from a local folder or the hub (``tokenizer``: another
    folder or hub id for the tokenizer); a failed load is one ``ModelError`` line."""
    import torch
    import transformers

    from mill.progress import loading_step

    local = Path(os.path.expanduser(pretrained))
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    try:
        # model.tokenizer: a checkpoint saved without its tokenizer (lm-eval's
        # tokenizer=); the hub revision is the model's, so it applies to neither
        loading_step("tokenizer")
        own = tokenizer is None
        source = pretrained if own else str(tokenizer)
        where_tok = Path(os.path.expanduser(source))
        tok = transformers.AutoTokenizer.from_pretrained(
            str(where_tok) if where_tok.is_dir() else source,
            revision=revision if own else None,
            trust_remote_code=trust_remote_code,
        )
        loading_step("weights")
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(local) if local.is_dir() else pretrained,
            revision=revision,
            dtype=getattr(torch, dtype) if dtype != "auto" else "auto",
            trust_remote_code=trust_remote_code,
            **loading,
        )
    except (OSError, ValueError) as err:
        where = "local folder" if local.is_dir() else "hub model"
        raise ModelError(
            f"cannot load {where} {pretrained!r} (revision {revision}): {type(err).__name__}."
            + _load_hint(local.is_dir(), offline, tokenizer)
        ) from err
    return model, tok


def _typed_settings(**given: Any) -> dict[str, Any]:
    """The constructor's settings checked and typed by their declarations (mill.schema);
    null: the default (the paths are checked as paths, apart: a pathlib.Path is one too)."""
    settings = typed("model", {k: v for k, v in given.items() if v is not None})
    _check_budgets(
        settings["batch_size"],
        settings.get("token_budget"),
        settings.get("cache_budget"),
        settings["max_gen_toks"],
    )
    return settings


class HFCausalLM(TokenizingLM):
    """A ``transformers`` causal LM from the hub (id + revision) or a local folder.

    Args:
        pretrained: hub id or local folder.
        revision: hub revision (branch, tag or commit).
        dtype: float32, float16, bfloat16 or auto.
        device: ``auto`` (CUDA if present, else CPU), ``cpu``, ``cuda:0``, ...
        batch_size: ``auto`` (batches by ``token_budget``) or a maximum number of rows.
        token_budget: padded tokens per forward pass when ``batch_size=auto`` (default:
            4096 on CPU, where smaller blocks stay in cache and peak memory stays low,
            16384 on GPUs; generation's prefill chunks default to 1024 on CPU).
        cache_budget: generation: rows x (context + new tokens) held in one decode batch's
            KV cache when ``batch_size=auto`` (default: from the model's shape and the
            memory available, :mod:`mill.model.engine.memory`).
        max_length: context window; default from the model config (as lm-eval).
        max_gen_toks: default generation length when a request does not set one.
        share_prefix: run each shared context once for all its choices; in generation,
            keep a prefix every row of a decode batch shares (fixed few-shot exemplars)
            once for all rows (:mod:`mill.model.engine.prefix_attention`).
        trust_remote_code: passed to transformers.
        name: short name for experiment folders and reports.
        device_map: ``auto``/``balanced``/``sequential`` or an explicit map: spread one
            model that does not fit on one GPU over several (and CPU/disk), passed to
            ``from_pretrained``; ``device`` is then ignored. Layers run one GPU at a time.
        max_memory: per-device budget for ``device_map``, e.g. ``{0: 70GiB, 1: 70GiB,
            cpu: 200GiB}``.
        offload_folder: where ``device_map`` may put weights that fit nowhere else.
        fused_gelu: run tanh-GELU activations (GPT-2 family) with torch's fused kernel
            (:mod:`mill.model.engine.kernels`; equal to rounding); false keeps the model's modules.
        batch_invariant: score each context's requests in forward passes of their own, so a
            log-likelihood's bits do not depend on its batch (batch size, token budget, a
            resume, data parallel; docs/resume.md); false batches contexts together.
        tokenizer: the tokenizer's folder or hub id when ``pretrained`` has none (a
            Trainer checkpoint saved without ``processing_class``; lm-eval's ``tokenizer=``);
            it is part of the model's identity.
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
        batch_invariant: bool = True,
        tokenizer: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        _loaded: tuple[Any, Any] | None = None,
    ) -> None:
        from mill.progress import loading_step

        loading_step("importing torch and transformers")
        import torch  # noqa: F401  (imported under its own progress step)
        import transformers

        transformers.utils.logging.disable_progress_bar()
        settings = _typed_settings(
            revision=revision, dtype=dtype, device=device, batch_size=batch_size,
            token_budget=token_budget, cache_budget=cache_budget, max_length=max_length,
            max_gen_toks=max_gen_toks, share_prefix=share_prefix, name=name,
            fused_gelu=fused_gelu, batch_invariant=batch_invariant,
            chat_template_kwargs=chat_template_kwargs,
        )  # fmt: skip
        if _loaded is None:  # a path that is no folder: said before anything loads
            for setting, value in (("pretrained", pretrained), ("tokenizer", tokenizer)):
                _check_local(setting, value)
        self.pretrained = str(pretrained)
        self.revision = revision
        self.name = name or Path(self.pretrained).name
        self._take_settings(settings, device)
        dtype = settings["dtype"]
        identity = self._load_model(
            tokenizer, dtype, trust_remote_code, (device_map, max_memory, offload_folder), _loaded
        )
        self._ready(settings, identity, trust_remote_code, tokenizer)

    def _take_settings(self, settings: dict[str, Any], device: str) -> None:
        """The typed settings that shape batching and generation, and the device."""
        token_budget, cache_budget = settings.get("token_budget"), settings.get("cache_budget")
        self.chat_template_kwargs = dict(settings.get("chat_template_kwargs") or {})
        self.batch_size = settings["batch_size"]
        self.max_gen_toks = settings["max_gen_toks"]
        self.share_prefix = settings["share_prefix"]
        self.batch_invariant = bool(settings["batch_invariant"])
        self.device = resolve_device(device)
        on_cpu = self.device.type == "cpu"
        self.token_budget = int(token_budget or (4096 if on_cpu else 16384))
        # generation's prefill chunks: on CPU the default is smaller (see _prefill_budget)
        self._prefill_tokens = int(token_budget or (CPU_PREFILL_TOKENS if on_cpu else 16384))
        self.cache_budget: int = int(cache_budget or 0)  # 0: chosen later, from memory

    def _ready(
        self,
        settings: dict[str, Any],
        identity: Callable[[str | None], dict[str, Any]],
        trust_remote_code: bool,
        tokenizer: str | None,
    ) -> None:
        """After loading: the fused kernels, the lengths and budgets the model's shape
        sets, the tokenizer's settings, the identity and the forward pass."""
        from mill.model.engine.kernels import fuse_gelu

        fused = fuse_gelu(self.model) if settings["fused_gelu"] else 0
        self.dtype = str(self.model.dtype).removeprefix("torch.")
        max_length = settings.get("max_length")
        self.max_length = max_length if max_length is not None else int(self._default_max_length())
        if not self.cache_budget:
            self.cache_budget = self._auto_cache_budget()
        self._init_tokenizer()
        from mill.progress import loading_step

        loading_step("fingerprint of the weights")
        self._identity = self._make_identity(
            identity(getattr(self.model.config, "_commit_hash", None)),
            trust_remote_code,
            fused > 0,
            tokenizer,
        )
        from mill.model.engine.hf_forward import HFForward

        self._forward = HFForward(self.model, self.device, share_prefix=self.share_prefix)

    def _load_model(
        self,
        tokenizer: str | None,
        dtype: str,
        trust_remote_code: bool,
        placing: tuple[Any, Any, Any],
        loaded: tuple[Any, Any] | None,
    ) -> Callable[[str | None], dict[str, Any]]:
        """Loads (or takes, ``loaded``) the model and tokenizer onto their devices
        (``placing``: ``device_map``, ``max_memory``, ``offload_folder``); returns the
        weights' identity, by commit, while a local folder's files are hashed on another
        core (objects already in memory have no files: from_transformers says so)."""
        revision = self.revision
        placement = _placement(*placing)
        loading = load_placement(self.device, placement)
        identity = (
            start_weights_identity(self.pretrained, revision)
            if loaded is None
            else (lambda commit: {"commit": commit, "weights_fingerprint": None})
        )
        if loaded is not None:  # from_transformers: objects the caller already holds
            self.model, self.tokenizer = loaded
        else:
            self.model, self.tokenizer = _load_files(
                self.pretrained, revision, tokenizer, dtype, trust_remote_code, loading
            )
        if placement:  # dispatched over devices by accelerate: never .to() it
            self.device = _input_device(self.model)
        elif not loading:  # on the CPU; a model loaded onto its accelerator stays put
            self.model.to(self.device)
        self.model.eval()
        return identity

    def _make_identity(
        self,
        weights: dict[str, Any],
        trust_remote_code: bool,
        fused_gelu: bool,
        tokenizer: str | None,
    ) -> dict[str, Any]:
        """What the scores depend on: ``weights`` (the commit and every byte of the weights,
        tokenizer files and generation config, or None for objects held in memory) and the
        settings that change a number."""
        return {
            "backend": "hf",
            "pretrained": self.pretrained,
            "revision": self.revision,
            **weights,
            "dtype": self.dtype,
            "max_length": self.max_length,
            "max_gen_toks": self.max_gen_toks,
            "trust_remote_code": bool(trust_remote_code),
            "fused_gelu": fused_gelu,
            # the bits of a score: a context's own passes, or batched with others (left out
            # when batched, so identities and caches from before the setting are unchanged)
            **({} if self.batch_invariant else {"batch_invariant": False}),
            **({} if tokenizer is None else {"tokenizer": _tokenizer_identity(str(tokenizer))}),
            "class": type(self.model).__name__,
            "num_parameters": sum(p.numel() for p in self.model.parameters()),
            # the chat template's own arguments (enable_thinking=false): left out when none,
            # so identities (and the caches keyed by them) from before it are unchanged
            **(
                {"chat_template_kwargs": self.chat_template_kwargs}
                if self.chat_template_kwargs
                else {}
            ),
        }

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

    def _auto_cache_budget(self) -> int:
        from mill.model.engine.memory import auto_cache_budget, available_bytes, kv_bytes_per_token

        weights = sum(p.numel() * p.element_size() for p in self.model.parameters())
        try:
            per_token = kv_bytes_per_token(self.model.config, self.model.dtype.itemsize)
        except (AttributeError, TypeError, ValueError):  # an unusual config: the old default
            return 65536
        budget = auto_cache_budget(per_token, weights, available_bytes(self.device))
        log.info("generation's KV-cache budget: %d tokens (model.cache_budget=null)", budget)
        return budget

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

    def release(self) -> None:
        """Drop the weights and the forward's references to them; empty the CUDA cache."""
        import gc

        self.model = None
        self._forward = None  # type: ignore[assignment]
        gc.collect()
        if self.device.type == "cuda":
            import torch

            torch.cuda.empty_cache()

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def chat_template(self) -> ChatTemplate | None:
        from mill.model.chat import tokenizer_chat_template

        return tokenizer_chat_template(self.tokenizer, self.chat_template_kwargs)

    # ----- request methods --------------------------------------------------------------
    def _max_rows(self) -> int | None:
        return None if self.batch_size == "auto" else int(self.batch_size)

    def _budget(self) -> int | None:
        return self.token_budget if self.batch_size == "auto" else None

    def _prefill_budget(self) -> int | None:
        """Tokens per prefill chunk of generation (``token_budget`` when set)."""
        return self._prefill_tokens if self.batch_size == "auto" else None

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        from mill.model.engine.scoring import score_continuations

        pairs = self.encode_requests(requests)
        responses: list[Response | None] = [None] * len(requests)

        def done(i: int, scored: Any) -> None:
            response = self._check(
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
            responses[i] = response
            on_response(requests[i], response)

        score_continuations(
            self._forward,
            pairs,
            self.max_length,
            self._budget(),
            self._max_rows(),
            self.share_prefix,
            done,
            invariant=self.batch_invariant,
        )
        return [r for r in responses if r is not None]

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        from mill.model.engine.scoring import score_continuations

        def score(plan: RollingPlan, done: WindowDone) -> None:
            # windows never share contexts: each takes one full pass, all docs batched together
            score_continuations(
                self._forward,
                plan.pairs,
                self.max_length,
                self._budget(),
                self._max_rows(),
                share_prefix=False,
                on_done=lambda w, scored: done(w, scored.logprob, scored.padded),
                greedy=False,
                invariant=self.batch_invariant,
            )

        return self.score_rolling(requests, on_response, score)

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        from mill.model.engine.generation import generate_batch, prefix_parts, shared_prefix_length

        eos_ids = self._eos_ids()
        responses: list[Response | None] = [None] * len(requests)
        groups: dict[tuple[tuple[str, ...], int, Any], list[GenerationJob]] = {}
        for job in self.plan_generation(requests):
            groups.setdefault((job.until, job.max_gen_toks, job.sampling), []).append(job)
        # continuous batching: a decode batch of `slots` rows, each holding its context and
        # new tokens, within the cache budget (or batch_size rows); prefill chunks within
        # token_budget
        # several prompts' contexts (the tasks of a few-shot suite) generate prompt by prompt
        parts = [
            ((until, max_gen, sampling), [group[i] for i in part])
            for (until, max_gen, sampling), group in groups.items()
            for part in prefix_parts(self._forward, [j.tokens for j in group])
        ]
        for (until, max_gen, sampling), group in parts:
            # a prefix every context shares is held once, not per row
            shared = shared_prefix_length(self._forward, [j.tokens for j in group])
            if shared:
                log.info("generation: %d contexts share their first %d tokens", len(group), shared)
            slots = self._slots(group, shared, max_gen)

            def done(row: int, out: Any, group: list[GenerationJob] = group) -> None:
                for i in group[row].copies:
                    response = Response(
                        request_id=requests[i].id,
                        input_tokens=out.input_tokens,
                        output_tokens=out.tokens,
                        text=out.text,
                        hit_max_gen_toks=out.hit_max,
                        truncated_tokens_count=out.truncated,
                        padded_tokens_count=out.padded,
                    )
                    responses[i] = response
                    on_response(requests[i], response)

            generate_batch(
                self._forward,
                [j.tokens for j in group],
                [j.truncated for j in group],
                until,
                max_gen,
                eos_ids,
                self._decode,
                token_budget=self._prefill_budget(),
                max_rows=self._max_rows(),
                choose=_sampler([requests[j.index] for j in group], sampling),
                slots=slots,
                on_done=done,
            )
        return [r for r in responses if r is not None]

    def _slots(self, group: list[GenerationJob], shared: int, max_gen: int) -> int:
        """Rows of one decode batch: as few waves of rows as the cache budget (or
        ``batch_size``) allows, evenly split: 200 rows under a bound of 63 decode 4 x 50, not
        63, 63, 63 and 11 (the same steps when rows run to the limit, 13 fewer rows' memory
        held)."""
        row_tokens = max(len(j.tokens) for j in group) - shared + max_gen
        most = self._max_rows() or max(1, self.cache_budget // row_tokens)
        waves = -(-len(group) // most)
        return -(-len(group) // waves)

    def _eos_ids(self) -> set[int]:
        ids: set[int] = set()
        config_eos = getattr(self.model.generation_config, "eos_token_id", None)
        for value in (config_eos, self.tokenizer.eos_token_id):
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, list):
                ids.update(int(v) for v in value)
        return ids
