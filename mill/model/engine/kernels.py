"""Fused kernels for activations that ``transformers`` writes as chains of elementwise ops.

GPT-2, GPT-J, GPT-Neo, CodeGen and Phi-1 use the tanh approximation of GELU, which
``transformers`` implements in Python (``NewGELUActivation``, ``FastGELUActivation``): five
or six passes over the ``[tokens, 4 x width]`` MLP activations, a fifth of the forward pass
of a small GPT-2 on CPU. ``torch.nn.functional.gelu(x, approximate="tanh")`` computes the
same function in one pass (``transformers``' own ``GELUTanh``, documented there as
equivalent "but not an exact numerical match due to rounding errors"): log-probabilities
move by a few 1e-6, far inside the 1e-4 parity tolerance (docs/parity.md).
``model.fused_gelu=false`` keeps the model's own modules.
"""

from __future__ import annotations

import torch


def fuse_gelu(model: torch.nn.Module) -> int:
    """Replace Python tanh-GELU modules in ``model`` by the fused kernel; returns how many."""
    from transformers.activations import FastGELUActivation, GELUTanh, NewGELUActivation

    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) in (NewGELUActivation, FastGELUActivation):
                setattr(parent, name, GELUTanh())
                replaced += 1
    return replaced
