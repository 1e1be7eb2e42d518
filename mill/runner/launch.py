"""The driver's side of data parallelism: start N workers on this machine and wait.

The Hydra process stays the only owner of the experiment folder and Hydra's outputs; it
has already written ``resolved.yaml`` and the manifest. It starts
``accelerate launch --multi_gpu`` on GPUs, or ``torchrun --standalone`` on CPU (Accelerate's
launcher runs a single process on CPU unless MPI is set up), with
``-m mill.runner.worker <folder>``. Workers never run Hydra: they read the resolved config.
A user error in a worker is recorded in the manifest (rank 0) and the workers exit 0; the
driver turns it back into the same one-line error.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.results import Manifest, Results
from mill.runner.dist import decode_error
from mill.runner.settings import RunnerSettings


class WorkersFailed(RuntimeError):
    """The workers crashed (not a user error): their own output says why."""


def worker_command(folder: Path, n: int, launcher: str, cpu: bool) -> list[str]:
    """The launcher command line for ``n`` local workers evaluating ``folder``."""
    if launcher == "auto":
        launcher = "torchrun" if cpu else "accelerate"
    target = ["-m", "mill.runner.worker", str(folder)]
    if launcher == "torchrun":
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={n}",
            *target,
        ]
    if cpu:
        raise ConfigError(
            "accelerate launch starts a single process on CPU; use runner.launcher=torchrun "
            "(or auto) for CPU workers"
        )
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        f"--num_processes={n}",
        "--num_machines=1",
        "--mixed_precision=no",
        "--dynamo_backend=no",
        *target,
    ]


def _same_imports() -> dict[str, str]:
    """Environment that makes workers import exactly what the driver imports.

    ``python -m`` puts the working directory first on ``sys.path``: started from a folder
    holding another ``mill`` (a source checkout, say), workers would run other code than
    the driver. Workers get the driver's ``sys.path`` instead (PYTHONSAFEPATH drops the
    working directory on Python >= 3.11; it is on the driver's path when it should be).
    """
    paths = [os.path.abspath(p) if p else os.getcwd() for p in sys.path]
    return {
        "PYTHONSAFEPATH": "1",
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(p for p in paths if os.path.isdir(p))),
    }


def _die_with_parent() -> None:
    """In the launcher's process (Linux): get SIGTERM when the driver dies, so a killed
    driver never leaves workers writing into a folder that a resumed run takes over."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return


SECRETS_ENV = "MILL_CONFIG_SECRETS"
"""The settings ``resolved.yaml`` holds redacted (:func:`mill.redact.secrets_of`), as JSON,
handed to the workers in their environment."""


def launch_workers(
    folder: Path, n: int, settings: RunnerSettings, secrets: list[Any] | None = None
) -> Results:
    """Run ``n`` workers over ``folder``; return the results rank 0 wrote. ``secrets``:
    the credentials that ``resolved.yaml`` holds redacted (the workers put them back)."""
    cpu = settings.use_cpu()
    cmd = worker_command(folder, n, settings.launcher, cpu)
    env = {**os.environ, "MILL_WORKER": "1", **_same_imports()}
    if secrets:
        env[SECRETS_ENV] = json.dumps(secrets)
    if cpu and "OMP_NUM_THREADS" not in env:  # share the cores instead of oversubscribing
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // n))
    proc = subprocess.Popen(
        cmd, env=env, preexec_fn=_die_with_parent if sys.platform == "linux" else None
    )
    try:
        proc.wait()
    except BaseException:
        # SIGINT/SIGTERM in the driver: stop the launcher with SIGTERM (it passes it on to
        # the workers) and wait, so no worker writes into a folder marked interrupted
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        raise
    manifest = Manifest.read(folder / "manifest.json")
    if manifest.status == "succeeded" and (folder / "results.json").is_file():
        return Results.read(folder / "results.json")
    error = manifest.error
    if proc.returncode == 0 and error and not manifest.traceback:
        name, _, message = str(error).partition(": ")
        raise decode_error((name, message))
    raise WorkersFailed(
        f"the {n} workers exited with code {proc.returncode}"
        + (f" ({error})" if error else "")
        + f"; their output above and {folder / 'mill.log'} say why"
    )
