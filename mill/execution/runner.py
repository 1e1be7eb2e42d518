"""Run many programs, each in its own sandbox, in parallel over the cores, with a verdict cache.

A verdict is stored under ``<cache_dir>/verdicts/<key[:2]>/<key>.json``, where ``key`` is the
SHA-256 of the program and :meth:`ExecutionSettings.identity`, so a resumed or repeated run
executes nothing twice. Each file is sealed (:func:`mill.files.write_sealed_json`): it holds
what the verdict was made from (the program's SHA-256 and the settings) and a checksum; a
verdict that fails it (edited: a failed program marked passed) or that was made from
another program is refused, one line naming the file; one from before seals runs again.

The pool is threads, each waiting on one sandbox process: the work happens in the
sandboxes, separately from model inference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mill.execution.sandbox import find_bwrap, remove_leftover_cgroups, run_one
from mill.execution.settings import ExecutionSettings, Verdict
from mill.files import as_json, corrupt_cache, read_sealed_json, sha256_json, write_sealed_json

FIX = "delete it (a cached verdict: the program runs again) or run with runner.cache=false"


def verdict_key(program: str, settings: ExecutionSettings) -> str:
    """The verdict cache key of ``program`` under ``settings``."""
    return sha256_json([program, settings.identity()])


def made_from(program: str, settings: ExecutionSettings) -> dict[str, Any]:
    """What a verdict is made from, stored with it: the program's SHA-256 and the settings."""
    return {"program_sha256": sha256_json(program), "execution": settings.identity()}


def _cache_path(cache_dir: Path, key: str) -> Path:
    return Path(cache_dir) / "verdicts" / key[:2] / f"{key}.json"


def _cached(cache_dir: Path | None, key: str, source: dict[str, Any]) -> Verdict | None:
    """The cached verdict of ``key`` made from ``source``; None when there is none (or one
    from before seals); ConfigError naming the file when it fails its check."""
    if cache_dir is None:
        return None
    path = _cache_path(cache_dir, key)
    sealed = read_sealed_json(path, FIX)
    if sealed is None:
        return None
    stored, data = sealed
    if stored != as_json(source):
        raise corrupt_cache(path, "made from another program or other execution settings", FIX)
    try:
        return Verdict.from_dict(data)
    except (KeyError, TypeError, ValueError) as err:
        raise corrupt_cache(path, f"not a verdict: {err}", FIX) from None


def _store(cache_dir: Path | None, key: str, source: dict[str, Any], verdict: Verdict) -> None:
    if cache_dir is None:
        return
    path = _cache_path(cache_dir, key)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_sealed_json(path, verdict.to_dict(), source)


@contextmanager
def _cleanup() -> Iterator[None]:
    try:
        yield
    finally:
        remove_leftover_cgroups()


def run_programs(
    programs: Sequence[str],
    settings: ExecutionSettings,
    *,
    cache_dir: Path | None = None,
    on_verdict: Callable[[int, Verdict], None] | None = None,
) -> list[Verdict]:
    """Run each complete Python program in its own sandbox, ``settings.worker_count`` at
    once; return their verdicts in input order. ``on_verdict(index, verdict)`` is called as
    each one is known (cached ones first). Identical programs run once."""
    bwrap = find_bwrap() if settings.sandbox == "bwrap" else None
    verdicts: list[Verdict | None] = [None] * len(programs)
    keys = [verdict_key(program, settings) for program in programs]
    sources = {
        key: made_from(program, settings) for key, program in zip(keys, programs, strict=True)
    }
    pending: dict[str, list[int]] = {}
    for index, key in enumerate(keys):
        if key in pending:
            pending[key].append(index)
            continue
        cached = _cached(cache_dir, key, sources[key])
        if cached is not None:
            verdicts[index] = cached
            if on_verdict is not None:
                on_verdict(index, cached)
        else:
            pending[key] = [index]
    # indices that repeat a cached program
    for index, key in enumerate(keys):
        if verdicts[index] is None and key not in pending:
            verdicts[index] = verdicts[keys.index(key)]
            if on_verdict is not None:
                on_verdict(index, verdicts[index])  # type: ignore[arg-type]
    if pending:
        workers = min(settings.worker_count, len(pending))
        with (
            ThreadPoolExecutor(max_workers=workers, thread_name_prefix="mill-sandbox") as pool,
            _cleanup(),
        ):
            futures = {
                pool.submit(run_one, programs[indices[0]], settings, bwrap): key
                for key, indices in pending.items()
            }
            for future in as_completed(futures):
                key = futures[future]
                verdict = future.result()
                _store(cache_dir, key, sources[key], verdict)
                for index in pending[key]:
                    verdicts[index] = verdict
                    if on_verdict is not None:
                        on_verdict(index, verdict)
    return verdicts  # type: ignore[return-value]
