"""``python -m mill.runner.worker <folder>``: one data-parallel worker (started by the driver).

Reads ``<folder>/resolved.yaml`` (written by the Hydra driver, every interpolation already
resolved; the credentials it holds redacted come from the driver's environment) back as
the driver's :class:`mill.runner.run_config.RunConfig`, joins the
launcher's process group and evaluates its shard. Rank 0 merges the shards and writes the
results; a user error is recorded in the manifest by rank 0 and every worker exits 0, so
the driver can report it as one line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from mill.errors import MillError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import mark_failed
from mill.redact import redact_logs, redacted_console
from mill.runner.dist import Dist, init_dist, launched_rank
from mill.runner.execute import execute
from mill.runner.launch import SECRETS_ENV
from mill.runner.logs import RunLog
from mill.runner.run_config import RunConfig

FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] %(message)s"


def _logging(folder: Path, rank: int) -> None:
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING if rank == 0 else logging.ERROR)
    console.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(console)
    if rank == 0:
        handler = RunLog(folder / "mill.log", mode="a")
        handler.setFormatter(logging.Formatter(FORMAT))
        root.addHandler(handler)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m mill.runner.worker <experiment folder>", file=sys.stderr)
        return 2
    folder = Path(args[0]).resolve()
    rank = launched_rank()
    redact_logs()
    with redacted_console():
        return _work(folder, rank)


def _work(folder: Path, rank: int) -> int:
    _logging(folder, rank)
    dist = Dist(rank=rank)
    try:  # the driver's object, read back, its credentials from the driver's environment
        config = RunConfig.read(folder, json.loads(os.environ.get(SECRETS_ENV) or "[]"))
        dist = init_dist(config.runner.use_cpu(), config.runner.timeout_s)
        execute(config, folder, dist)
    except MillError as err:
        if dist.is_main:
            mark_failed(ExperimentFolder(folder), err)
    dist.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
