"""Few-shot samplers: which examples of the few-shot split precede a doc.

The random sampler seeds one generator per (task, doc id, seed), so a doc's shots never
depend on the order of evaluation, ``limit`` or the number of processes (unlike a single
sequential generator, which is what makes lm-eval's scores depend on the GPU count).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence

from mill.errors import ConfigError
from mill.schema import typed_one


def _doc_rng(task: str, doc_id: int, seed: int) -> random.Random:
    digest = hashlib.sha256(f"{task}\x00{doc_id}\x00{seed}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def choose_shots(
    sampler: str,
    k: int,
    pool_size: int,
    *,
    task: str,
    doc_id: int,
    seed: int,
    exclude: int | None = None,
) -> list[int]:
    """Return ``k`` indices into the few-shot pool for one doc.

    Args:
        sampler: ``random`` (seeded per doc) or ``first_n`` (the first k of the pool).
        k: number of shots.
        pool_size: size of the few-shot split.
        task: task name (part of the seed).
        doc_id: the evaluated doc (part of the seed).
        seed: the run's few-shot seed.
        exclude: a pool index never to use (the doc itself when the few-shot split is the
            evaluated split).
    """
    if k == 0:
        return []
    candidates: Sequence[int] = [i for i in range(pool_size) if i != exclude]
    if k > len(candidates):
        raise ConfigError(
            f"task {task!r}: num_fewshot={k} but the few-shot split has only "
            f"{len(candidates)} usable examples; lower task.num_fewshot"
        )
    if typed_one("task.fewshot_sampler", sampler) == "first_n":
        return list(candidates[:k])
    return _doc_rng(task, doc_id, seed).sample(list(candidates), k)  # random
