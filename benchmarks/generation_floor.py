"""The least time this machine needs for a generation workload, whatever the harness.

Reads a Mill run folder of a generative task (its manifest and per-sample dumps: each
row's prompt tokens after truncation and its generated tokens) and counts the work that
any harness must do for the same answers with the model in fp32:

* **prefill products**: every prompt token through the model's body once (a prefix every
  row shares, and a prompt its sampled repeats share, counted once), plus the prompt's
  causal attention;
* **decoding products**: the body and the LM head for every generated token;
* **decoding reads**: at every step, each row's own keys and values (its prompt part that
  no other row shares, and the tokens generated so far). A shared prefix or prompt is read
  once per step for all its rows and is left out: the count stays a lower bound.

It then measures this machine: the fp32 matrix-product rate of the model's own shapes
(the best of ``x @ W.T`` and ``W @ x.T``, at 50 to 1,024 rows for decoding and 1,024 for
prefill: the best at any row count, so no batching choice could beat it), the read
bandwidth (a reduction over 1 GiB, both threads), and the start-up floor
(``floor_driver``: import torch and ``transformers``, load the tokenizer and the model,
exit). The floor is products / rate + reads / bandwidth + start-up, with nothing else
counted (no sampling, stop checks, metrics or report). With ``--lmeval SECONDS`` it prints
the largest whole-process ratio any harness built on ``transformers``' model classes could
reach against that wall time, and the largest with no start-up cost at all.

    python -m benchmarks.generation_floor RUN_DIR [--lmeval SECONDS] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.driver_common import REPO, best_seconds, child_env, timed_run
from benchmarks.whole_process import floor_cmd
from mill.model.engine.memory import kv_bytes_per_token
from mill.model.engine.prefix_attention import common_prefix


@dataclass
class Shape:
    """What the counts need from a decoder's config."""

    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    gated: bool
    vocab: int
    kv_bytes: int
    """Bytes of keys and values of one token over all layers, fp32."""

    @classmethod
    def of(cls, config: Any) -> Shape:
        config = getattr(config, "text_config", None) or config
        hidden = int(config.hidden_size)
        heads = int(config.num_attention_heads)
        ffn = getattr(config, "intermediate_size", None) or getattr(config, "n_inner", None)
        return cls(
            layers=int(config.num_hidden_layers),
            hidden=hidden,
            heads=heads,
            kv_heads=int(getattr(config, "num_key_value_heads", None) or heads),
            head_dim=int(getattr(config, "head_dim", None) or hidden // heads),
            ffn=int(ffn or 4 * hidden),
            gated=config.model_type != "gpt2",
            vocab=int(config.vocab_size),
            kv_bytes=kv_bytes_per_token(config, 4),
        )

    def linears(self) -> list[tuple[int, int]]:
        """(in, out) of one layer's products (attention projections, then the MLP's)."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        mlp = [(self.hidden, self.ffn)] * (2 if self.gated else 1) + [(self.ffn, self.hidden)]
        return [(self.hidden, q + 2 * kv), (q, self.hidden), *mlp]

    def body_flops(self) -> int:
        """FLOPs of one token through the body's products."""
        return self.layers * sum(2 * i * o for i, o in self.linears())

    def head_flops(self) -> int:
        return 2 * self.hidden * self.vocab


@dataclass
class Work:
    """A workload's counts."""

    rows: int
    generated: int
    prefill_tokens: int
    prefill_flops: float
    decode_flops: float
    read_bytes: float


def count(run: Path, shape: Shape) -> Work:
    """The work of the run folder's samples (see the module docs)."""
    prompts: list[list[int]] = []
    outputs: list[list[list[int]]] = []
    for path in sorted((run / "samples").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            response = json.loads(line)["response"]
            out = response["output_tokens"]
            prompts.append(list(response["input_tokens"]))
            outputs.append(out if out and isinstance(out[0], list) else [out])
    if not prompts:
        raise SystemExit(f"{run}: no samples with prompt tokens (a generative task's run)")
    # one row shares nothing: its whole prompt is its own, read at every step
    shared = common_prefix(prompts) if len(prompts) > 1 else 0
    attention = 4 * shape.heads * shape.head_dim * shape.layers  # per query-key pair
    prefill_tokens = shared
    prefill_flops = shared * shape.body_flops() + attention * shared * shared / 2
    decode_flops = read = 0.0
    generated = rows = 0
    per_token = shape.body_flops() + shape.head_flops()
    for prompt, outs in zip(prompts, outputs, strict=True):
        own = len(prompt) - shared
        prefill_tokens += own
        prefill_flops += own * shape.body_flops() + attention * (own * shared + own * own / 2)
        # a prompt shared by its repeats is read once per step for all of them: not counted
        own_read = own if len(outs) == 1 else 0
        for out in outs:
            g = len(out)
            rows, generated = rows + 1, generated + g
            decode_flops += g * per_token
            read += (own_read * g + g * (g - 1) / 2) * shape.kv_bytes
    return Work(rows, generated, prefill_tokens, prefill_flops, decode_flops, read)


def product_rate(shape: Shape, rows: int, repeat: int, head: bool) -> float:
    """Best fp32 FLOP/s of the body's products (and the head's) on ``rows`` rows."""
    import torch

    gen = torch.Generator().manual_seed(0)
    dims = list(shape.linears()) + ([(shape.hidden, shape.vocab)] if head else [])
    flops = seconds = 0.0
    for i, o in dims:
        w = torch.randn(o, i, generator=gen)
        x = torch.randn(rows, i, generator=gen)
        t = min(
            best_seconds(lambda w=w, x=x: torch.nn.functional.linear(x, w), repeat),
            best_seconds(lambda w=w, x=x: torch.mm(w, x.t()), repeat),
        )
        flops, seconds = flops + 2 * rows * i * o, seconds + t
    return flops / seconds


def read_bandwidth(repeat: int) -> float:
    """Best bytes/s of a reduction over 1 GiB of fp32 (both threads)."""
    import torch

    x = torch.ones(1 << 28)
    return x.numel() * 4 / best_seconds(lambda: x.sum(), repeat)


def startup_floor(model: str, threads: int, repeat: int) -> float:
    """Best wall time of ``floor_driver`` on ``model`` (start, imports, load, exit), run
    as ``whole_process`` runs it."""
    times = []
    with tempfile.TemporaryDirectory(prefix="mill-floor-") as work:
        log = Path(work) / "floor_driver.log"
        for _ in range(max(1, repeat // 2)):
            wall, code, _rss = timed_run(
                floor_cmd(Path(model), "cpu", "float32"), log, child_env(threads), REPO
            )
            if code != 0:
                raise SystemExit(f"floor_driver failed (exit {code}):\n{log.read_text()[-3000:]}")
            times.append(wall)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a Mill run folder of a generative task")
    parser.add_argument("--lmeval", type=float, help="lm-eval's whole-process wall, seconds")
    parser.add_argument("--repeat", type=int, default=5, help="timings per measurement")
    parser.add_argument("--decode-rows", type=int, nargs="+", default=[50, 100, 200, 1024])
    args = parser.parse_args(argv)
    import torch
    import transformers

    manifest = json.loads((args.run / "manifest.json").read_text())
    model = manifest["model"]["pretrained"]
    shape = Shape.of(transformers.AutoConfig.from_pretrained(model))
    work = count(args.run, shape)
    decode_rate = max(product_rate(shape, m, args.repeat, True) for m in args.decode_rows)
    prefill_rate = product_rate(shape, 1024, args.repeat, False)
    bandwidth = read_bandwidth(args.repeat)
    start = startup_floor(model, torch.get_num_threads(), args.repeat)
    t_prefill = work.prefill_flops / prefill_rate
    t_decode = work.decode_flops / decode_rate
    t_read = work.read_bytes / bandwidth
    floor = t_prefill + t_decode + t_read + start
    print(f"run: {args.run} ({Path(model).name}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads)")  # fmt: skip
    print(f"rows {work.rows}, generated tokens {work.generated:,}, "
          f"prefill tokens {work.prefill_tokens:,}")  # fmt: skip
    print(f"prefill products {work.prefill_flops / 1e12:.3f} TFLOP at "
          f"{prefill_rate / 1e9:.1f} GFLOP/s: {t_prefill:.1f} s")  # fmt: skip
    print(f"decoding products {work.decode_flops / 1e12:.3f} TFLOP at "
          f"{decode_rate / 1e9:.1f} GFLOP/s (best of {args.decode_rows} rows): "
          f"{t_decode:.1f} s")  # fmt: skip
    print(f"decoding reads {work.read_bytes / 1e9:.1f} GB at {bandwidth / 1e9:.1f} GB/s: "
          f"{t_read:.1f} s")  # fmt: skip
    print(f"start-up floor (floor_driver): {start:.1f} s")
    print(f"floor: {floor:.1f} s (Mill's run: {manifest.get('seconds', float('nan')):.1f} s "
          "in-process, without the interpreter's start)")  # fmt: skip
    if args.lmeval:
        print(f"lm-eval {args.lmeval:.1f} s: at most {args.lmeval / floor:.2f}x for any harness")
        work_only = floor - start
        print(f"without the start-up floor: at most {args.lmeval / work_only:.2f}x "
              "(a harness that starts in no time)")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
