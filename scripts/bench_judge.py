"""Judgments per second against a local llama.cpp ``llama-server`` at 1, 4 and 16 judge
calls in flight (``judge.num_concurrent``), whole ``mill judge`` processes.

One source run (MT-Bench on the fake model: 80 questions, 160 answers) is judged again and
again by stories260k served by ``llama-server`` (GGUF, 16 slots so 16 calls can decode
together) through ``judge=openai_completions`` with token-id prompts, a fresh folder and
no response cache each time (``runner.cache=false``: every call reaches the server). The
judging phase's wall time comes from the run's own phase line (``judging X s`` in
mill.log); judgments/s = 160 / that time. The machine's load (``os.getloadavg``) is
printed beside each row.

    python scripts/bench_judge.py [--in-flight 1 4 16] [--max-gen-toks 32] [--keep DIR]

The server binary is found as the served tests find it (``$MILL_LLAMA_SERVER`` or
``.llama-server/bin/llama-server``; ``bash scripts/build_llama_server.sh`` builds it).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.served.servers import (  # noqa: E402
    SERVED_NAME,
    STORIES,
    convert_stories_gguf,
    native_llama_server,
)


def mill(*args: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "CI": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "mill", *args], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"mill {' '.join(args)} failed:\n{proc.stderr[-3000:]}")


def judging_seconds(folder: Path) -> float:
    line = [x for x in (folder / "mill.log").read_text().splitlines() if "phases:" in x][-1]
    return float(re.search(r"judging ([\d.]+) s", line).group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--max-gen-toks", type=int, default=32)
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-judge-"))
    work.mkdir(parents=True, exist_ok=True)
    source = work / "source"
    if not (source / "results.json").exists():
        mill(
            "task=mt_bench", "model=fake", "judge=fake", "judge.max_invalid=1.0",
            "report.progress=never", f"hydra.run.dir={source}",
        )  # fmt: skip
    gguf = convert_stories_gguf(work / "stories260k.gguf")
    slots = max(args.in_flight)
    with native_llama_server(gguf, work / "server.log", slots=slots, n_ctx=512 * slots) as server:
        print("| in flight | judgments | judging s | judgments/s | load (1 min) |")
        print("|---:|---:|---:|---:|---:|")
        for n in args.in_flight:
            out = work / f"judge-{n}"
            mill(
                "judge", f"run={source}", "judge=openai_completions",
                f"judge.base_url={server.base_url}", f"judge.model={SERVED_NAME}",
                f"judge.tokenizer={STORIES}", "judge.max_length=510", "judge.prompt_ids=true",
                f"judge.num_concurrent={n}", f"judge.generation.max_gen_toks={args.max_gen_toks}",
                "judge.max_invalid=1.0", "runner.cache=false", "report.progress=never",
                f"hydra.run.dir={out}",
            )  # fmt: skip
            seconds = judging_seconds(out)
            print(
                f"| {n} | 160 | {seconds:.2f} | {160 / seconds:.1f} | {os.getloadavg()[0]:.2f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
