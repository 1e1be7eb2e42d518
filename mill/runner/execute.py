"""The evaluation itself, on one rank: build, score this rank's shard, merge on rank 0.

Called in the Hydra process for a single-process run (or under a user's own launcher),
by :mod:`mill.runner.worker` in each worker the driver starts, and by :func:`mill.evaluate`
(with or without an experiment folder: the one execution path of every run). Only rank 0
writes to the experiment folder (samples, results, report, manifest); other ranks write
only their finished responses to the response cache. The phases are in
:mod:`mill.runner.run`, what they share in :mod:`mill.runner.context`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from mill.model.base import LanguageModel
from mill.record import SampleRecord
from mill.results import Results
from mill.runner import run as phase
from mill.runner.context import RunContext
from mill.runner.dist import Dist
from mill.runner.run_config import RunConfig

log = logging.getLogger("mill")


def execute(
    config: RunConfig,
    folder_path: Path | None,
    dist: Dist,
    model: LanguageModel | None = None,
    *,
    on_sample: Callable[[SampleRecord], None] | None = None,
    show: bool = True,
) -> Results | None:
    """Run the experiment ``config`` describes (typed once, by the driver or the worker
    that read it back) on this rank.

    ``model``: an already-built model (``mill.evaluate(model=...)``) instead of
    ``config``'s ``model``; its identity must say ``in_memory`` when it has no files, and
    the response cache is then off (no identity to key scores by).
    ``folder_path`` None (``mill.evaluate`` without ``output_dir``): the same evaluation,
    the same log lines and warnings, but nothing written anywhere (no folder, no response
    or verdict cache, no report); each doc's record goes to ``on_sample``. ``show`` False:
    nothing on the terminal (no progress, no loading line).
    Rank 0 returns the results (also written to ``results.json``); other ranks return None.
    Raises MillError on bad input (the same error on every rank), after rank 0 marked the
    manifest failed.
    """
    run = RunContext.open(config, folder_path, dist, on_sample=on_sample, show=show)
    try:
        plan = phase.build(run)
        loaded = phase.load(run, plan, model)
        per_task = phase.score(run, plan, loaded)
        per_rank = phase.gather(run, loaded)
        if not run.main:
            return run.succeed(None)
        results = phase.collect(run, plan, loaded, per_task)
        if run.folder is None:  # mill.evaluate without output_dir: nothing to write
            run.clock.mark("metrics")
        else:
            phase.write(run, run.folder, plan, loaded, results, per_rank)
        return run.succeed(results)
    except BaseException as caught:
        err = run.fail(caught)
        if err is caught:
            raise
        raise err from caught
    finally:
        run.finish()
