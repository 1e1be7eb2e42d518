"""Generation requests whose outputs from the static engine (before continuous batching,
commit e947840) are kept in ``data/generation_before_cb.json``: the continuous engine must
give the same tokens (``test_continuous_batching.py``). Rerun :func:`record` only to add
cases, with the engine the file names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mill.types import GenerationArgs, OutputType, Request

GOLDEN = Path(__file__).parent / "data" / "generation_before_cb.json"

STORY = [
    "Once upon a time",
    "The little dog",
    "Lily and Tom went to the park. They saw a big tree and",
    "One day, a girl named Sue found a shiny",
    "Tim",
    "The sun was hot. The cat wanted to",
    "Ben had a red ball. He",
    "Mom said, \"Let's go",
    "There was a big bear in the woods who liked honey and",
    "Sara",
]
SHOTS = "".join(f"Q: {s}?\nA: {s.lower()}.\n\n" for s in STORY[:4])
"""A few-shot prefix every request of the second workload shares (shared-prefix path)."""

SETTINGS: list[dict[str, Any]] = [
    {"batch_size": "auto", "token_budget": 4096, "cache_budget": 65536},
    {"batch_size": "auto", "token_budget": 24, "cache_budget": 120},
    {"batch_size": 3, "token_budget": None, "cache_budget": None},
]


def requests() -> list[Request]:
    """Plain prompts with an early stop string, and few-shot prompts sharing a prefix."""
    out = []
    stop = GenerationArgs(until=(".",), max_gen_toks=40)
    run = GenerationArgs(until=("Q:",), max_gen_toks=24)
    for i, p in enumerate(STORY):
        out.append(Request(OutputType.GENERATIVE, "plain", i, 0, p, generation=stop))
        out.append(
            Request(OutputType.GENERATIVE, "shots", i, 0, f"{SHOTS}Q: {p}?\nA:", generation=run)
        )
    return out


def apply(model: Any, setting: dict[str, Any]) -> None:
    """Set a model's batching knobs as its constructor would."""
    model.batch_size = setting["batch_size"]
    if setting["token_budget"] is not None:
        model.token_budget = model._prefill_tokens = setting["token_budget"]
    if setting["cache_budget"] is not None:
        model.cache_budget = setting["cache_budget"]


def outputs(model: Any) -> dict[str, list[list[int]]]:
    """Output tokens of :func:`requests` under each of :data:`SETTINGS`."""
    saved = (model.batch_size, model.token_budget, model._prefill_tokens, model.cache_budget)
    got = {}
    try:
        for i, setting in enumerate(SETTINGS):
            apply(model, setting)
            got[str(i)] = [list(r.output_tokens) for r in model.generate_until(requests())]
    finally:
        model.batch_size, model.token_budget, model._prefill_tokens, model.cache_budget = saved
    return got


def record() -> None:
    from importlib import resources

    from mill.model.hf import HFCausalLM
    from mill.model.random import random_gpt2

    stories = HFCausalLM(str(resources.files("mill.resources").joinpath("models/stories260k")))
    gpt2 = random_gpt2(n_layer=2, n_embd=64, seed=0)
    GOLDEN.write_text(json.dumps({"stories260k": outputs(stories), "gpt2_random": outputs(gpt2)}))


if __name__ == "__main__":
    record()
