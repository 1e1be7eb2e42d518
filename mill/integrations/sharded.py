"""A whole copy of a model whose weights are sharded over the ranks (FSDP, DeepSpeed ZeRO-3),
built on every rank for one evaluation during training.

Why a copy, and not the sharded model's own forward: FSDP (and ZeRO-3) all-gather a layer's
weights inside each forward call, a collective every rank must enter the same number of
times. Mill's ranks do not run the same number of forwards: the runner deals whole docs
round-robin (:mod:`mill.runner.shard`), each rank batches its own requests by length, a
response cache serves some of them, a generation stops at its own length; and the HF
engine calls the model's body and its LM head separately (:mod:`mill.model.engine.hf_forward`),
which an FSDP root's hooks do not see. Making every rank take the same steps would mean
teaching the engine about ranks (which only :mod:`mill.runner.shard` knows). So the
weights are gathered once, in the training's own dtype, into a plain module of the same
class; each rank then evaluates its share of the docs on that copy, as under DDP, and the
copy is dropped when the evaluation ends. The cost: one full copy of the weights per rank
during the evaluation (not of the gradients or the optimizer state, which stay sharded),
on the device the gathered weights come to. A model too large for that cannot be
evaluated in the loop; evaluate its saved checkpoints with ``mill model=hf``.

Gathering: FSDP1 and FSDP2 through ``torch.distributed.checkpoint.state_dict``'s
``get_model_state_dict(..., full_state_dict=True)`` (every rank gets the whole state dict);
ZeRO-3 a parameter at a time under ``deepspeed.zero.GatheredParameters``, each cloned (the
gathered storage is released when its block ends). The training model, its optimizer and
its RNG streams are not touched.
"""

from __future__ import annotations

import copy
import sys
from typing import Any


def deepspeed_engine() -> type | None:
    """DeepSpeed's engine class if DeepSpeed is already imported (a model it wraps implies
    it is): importing it only to look costs seconds (21 s on the project machine)."""
    module = sys.modules.get("deepspeed")
    return getattr(module, "DeepSpeedEngine", None) if module is not None else None


def unwrap(model: Any) -> Any:
    """The module behind DDP, DataParallel, an FSDP1 root, a DeepSpeed engine or
    ``torch.compile`` (the weights are the same tensors). FSDP2 changes a module's class
    in place and wraps nothing."""
    import torch
    from torch.distributed.fsdp import FullyShardedDataParallel

    wrappers: tuple[type[Any], ...] = (
        torch.nn.parallel.DistributedDataParallel,
        torch.nn.DataParallel,
        FullyShardedDataParallel,
    )
    engine = deepspeed_engine()
    if engine is not None:
        wrappers = (*wrappers, engine)
    while True:
        compiled = getattr(model, "_orig_mod", None)
        if isinstance(compiled, torch.nn.Module):
            model = compiled
        elif isinstance(model, wrappers):
            model = model.module
        else:
            return model


def sharding(model: Any) -> str | None:
    """``"fsdp"`` (FSDP1 or FSDP2 anywhere in the model), ``"zero3"`` (DeepSpeed ZeRO-3
    partitioned parameters) or None (every rank holds the whole model)."""
    from torch.distributed.fsdp import FSDPModule, FullyShardedDataParallel

    for module in (model, unwrap(model)):
        if any(isinstance(m, (FullyShardedDataParallel, FSDPModule)) for m in module.modules()):
            return "fsdp"
    if any(hasattr(p, "ds_id") for p in unwrap(model).parameters()):
        return "zero3"
    return None


def gathered_state_dict(model: Any, kind: str) -> dict[str, Any]:
    """The whole state dict (names as in the unwrapped model's) on every rank; every rank
    must call it together."""
    if kind == "fsdp":
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=False)
        return dict(get_model_state_dict(model, options=options))
    import deepspeed

    out: dict[str, Any] = {}
    seen: dict[int, Any] = {}  # a tied weight is gathered once
    for name, tensor in unwrap(model).state_dict(keep_vars=True).items():
        if id(tensor) in seen:
            out[name] = seen[id(tensor)]
        elif hasattr(tensor, "ds_id"):
            with deepspeed.zero.GatheredParameters([tensor], modifier_rank=None):
                out[name] = seen[id(tensor)] = tensor.detach().clone()
        else:
            out[name] = seen[id(tensor)] = tensor.detach().clone()
    return out


def whole_copy(model: Any, state: dict[str, Any]) -> Any:
    """A plain module of the model's class holding ``state`` (no copy of the tensors), its
    non-persistent buffers built from the config as ``from_pretrained`` builds them, on
    the device of the weights, in ``eval`` mode."""
    import torch
    from accelerate import init_empty_weights
    from torch.distributed.fsdp import FSDPModule

    inner = unwrap(model)
    cls: Any = next(c for c in type(inner).__mro__ if not issubclass(c, FSDPModule))
    with init_empty_weights(include_buffers=False):
        whole = cls(copy.deepcopy(inner.config))
    whole.load_state_dict(state, strict=True, assign=True)
    devices = {t.device for t in state.values() if isinstance(t, torch.Tensor)}
    if len(devices) == 1:
        whole.to(devices.pop())
    if getattr(inner, "generation_config", None) is not None:
        whole.generation_config = copy.deepcopy(inner.generation_config)
    return whole.eval()
