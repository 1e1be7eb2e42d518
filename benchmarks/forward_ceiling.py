"""How much of a Llama forward pass is matrix products, and what fusing the rest buys.

Mill's likelihood speed comes from running fewer positions than lm-eval
(docs/benchmark.md, "The likelihood targets are bounds"); past that, a position costs what
``transformers``' forward costs. This script measures how much of that forward is left to
win, on one ``transformers`` Llama model (SmolLM2, stories260k, or a folder), in-process,
eager fp32 on CPU:

1. the CPU time of the forward by kind of op (torch's profiler, self time): matrix
   products, attention (SDPA), and the rest (RMSNorm, the rotary embedding, the SiLU gate,
   residual adds, copies), with the products' achieved GFLOP/s beside those of one large
   square fp32 product on the same threads (what this CPU's BLAS reaches at best);
2. the same forward with those elementwise chains fused by ``torch.compile`` (inductor;
   three small functions, dynamic shapes, patched into the loaded model): the first
   call's seconds (the compile), each shape's best of ``--rounds`` against eager's, and
   the largest difference in the last hidden states.

    python -m benchmarks.forward_ceiling --model smollm2 --shapes 4x400 16x90 3x512
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.driver_common import best_seconds
from benchmarks.side_by_side import model_dir

PRODUCTS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})


def kind(op: str) -> str:
    """``products``, ``attention`` or ``rest`` for a profiler op name."""
    if op in PRODUCTS:
        return "products"
    if "scaled_dot_product" in op:
        return "attention"
    return "rest"


def shares(self_seconds: dict[str, float]) -> dict[str, float]:
    """Each kind's fraction of the total self CPU time of ``{op name: seconds}``."""
    total = sum(self_seconds.values()) or 1.0
    out = dict.fromkeys(("products", "attention", "rest"), 0.0)
    for op, seconds in self_seconds.items():
        out[kind(op)] += seconds / total
    return out


def shape(text: str) -> tuple[int, int]:
    """``4x400`` -> (4, 400): rows by tokens."""
    rows, _, tokens = text.partition("x")
    try:
        return int(rows), int(tokens)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a shape is ROWSxTOKENS, e.g. 4x400") from None


def product_macs_per_token(model: Any) -> int:
    """Multiply-adds per token of the body's linear layers (the LM head is not run)."""
    import torch

    return sum(
        m.in_features * m.out_features
        for m in model.model.modules()
        if isinstance(m, torch.nn.Linear)
    )


@contextmanager
def fused(model: Any) -> Iterator[None]:
    """The model with RMSNorm, the rotary embedding and the SiLU gate each one compiled
    function (inductor, dynamic shapes); the model's own code back afterwards."""
    import torch
    import torch.nn.functional as F
    from transformers.models.llama import modeling_llama as ml

    def rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        xf = x.to(torch.float32)
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        return weight * xf.to(x.dtype)

    def gate(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return F.silu(a) * b

    def rotary(
        q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        return q * cos + ml.rotate_half(q) * sin, k * cos + ml.rotate_half(k) * sin

    c_rms, c_gate, c_rotary = (torch.compile(f, dynamic=True) for f in (rms, gate, rotary))
    patched = []
    for module in model.modules():
        if isinstance(module, ml.LlamaRMSNorm):
            patched.append(module)
            module.forward = lambda h, m=module: c_rms(h, m.weight, m.variance_epsilon)
        elif isinstance(module, ml.LlamaMLP):
            patched.append(module)
            module.forward = lambda x, m=module: m.down_proj(c_gate(m.gate_proj(x), m.up_proj(x)))
    own_rotary = ml.apply_rotary_pos_emb
    ml.apply_rotary_pos_emb = lambda q, k, cos, sin, unsqueeze_dim=1: c_rotary(q, k, cos, sin)
    try:
        yield
    finally:
        ml.apply_rotary_pos_emb = own_rotary
        for module in patched:
            del module.forward  # the class's forward again


def square_gflops(n: int = 2048, rounds: int = 3) -> float:
    """GFLOP/s of the best of ``rounds`` fp32 ``n x n`` products."""
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    return 2 * n**3 / best_seconds(lambda: torch.mm(a, b), rounds) / 1e9


def best_forward(model: Any, inputs: list[Any], rounds: int) -> tuple[list[float], list[Any]]:
    """Each input's best wall seconds over ``rounds`` body forwards, and its hidden states."""
    times, outs = [], []
    for ids in inputs:
        best = float("inf")
        for _ in range(rounds):
            start = time.perf_counter()
            hidden = model.model(ids).last_hidden_state
            best = min(best, time.perf_counter() - start)
        times.append(best)
        outs.append(hidden)
    return times, outs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2", help="smollm2, stories260k or a folder")
    parser.add_argument("--shapes", nargs="+", type=shape, default=[(4, 400), (16, 90), (3, 512)])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    folder = model_dir(args.model)
    # the compiled kernels go to Mill's cache, as a Mill run's would (before torch loads)
    from mill.files import contain_library_caches

    contain_library_caches()
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(args.threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="sdpa"
    ).eval()
    if model.config.model_type != "llama":
        raise SystemExit(f"{folder}: a {model.config.model_type} model; this measures Llama's")
    vocab = int(model.config.vocab_size)
    generator = torch.Generator().manual_seed(0)
    inputs = [torch.randint(0, vocab, s, generator=generator) for s in args.shapes]
    macs = product_macs_per_token(model)
    with torch.inference_mode():
        eager_s, eager_out = best_forward(model, inputs, args.rounds)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for ids in inputs:
                model.model(ids)
        self_s = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages()}
        with fused(model):
            start = time.perf_counter()
            model.model(inputs[0])
            first = time.perf_counter() - start
            fused_s, fused_out = best_forward(model, inputs, args.rounds)
    square = square_gflops()
    tokens = sum(r * t for r, t in args.shapes)
    product_s = sum(s for op, s in self_s.items() if kind(op) == "products")
    split = shares(self_s)
    print(f"{args.model}: {macs / 1e6:.1f}M multiply-adds per token in the body's products")
    print(
        f"eager forward, CPU time: products {split['products']:.0%} "
        f"({2 * macs * tokens / product_s / 1e9:.0f} GFLOP/s; a 2048 x 2048 product: "
        f"{square:.0f} GFLOP/s), attention "
        f"{split['attention']:.0%}, the rest {split['rest']:.0%}"
    )
    print(f"fused (torch.compile): first call {first:.1f} s (the compile and one forward)")
    print("| rows x tokens | eager s | fused s | eager / fused | max abs diff, hidden |")
    print("|---|---|---|---|---|")
    for (rows, length), e, f, a, b in zip(
        args.shapes, eager_s, fused_s, eager_out, fused_out, strict=True
    ):
        diff = float((a - b).abs().max())
        print(f"| {rows} x {length} | {e:.3f} | {f:.3f} | {e / f:.2f} | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
