"""What reproduces a run: argv, git sha, package versions, seeds, device, model, data."""

from __future__ import annotations

import platform
import subprocess
import sys
import traceback
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mill.errors import MillError
from mill.results.format import Manifest

if TYPE_CHECKING:
    from mill.experiment.folder import ExperimentFolder

PACKAGES = (
    "mill-eval",
    "torch",
    "transformers",
    "accelerate",
    "datasets",
    "hydra-core",
    "omegaconf",
    "tokenizers",
    "numpy",
)


def git_sha(cwd: Path) -> str | None:
    """Commit of the Mill source checkout (None when installed without git)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def device_info() -> dict[str, Any]:
    info: dict[str, Any] = {"platform": platform.platform(), "python": sys.version.split()[0]}
    if "torch" in sys.modules:
        import torch

        info["cuda"] = torch.cuda.is_available()
        if torch.cuda.is_available():
            info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["torch_threads"] = torch.get_num_threads()
    return info


def base_manifest(argv: list[str], seeds: dict[str, int]) -> Manifest:
    """The part known before anything is loaded."""
    return Manifest(
        status="running",
        started=datetime.now(timezone.utc).isoformat(),
        argv=list(argv),
        git_sha=git_sha(Path(__file__).resolve().parent),
        versions=versions(),
        seeds=seeds,
    )


def record_failure(manifest: Manifest, err: BaseException) -> None:
    """The one way a failure enters a manifest: ``status`` failed, the error's first line
    (the first recorded error wins) and, for Mill's own bugs (an ``Exception`` that is not
    a :class:`~mill.errors.MillError`), the traceback. An interruption (SIGINT, SIGTERM:
    a KeyboardInterrupt) makes the status ``interrupted``."""
    manifest.status = "interrupted" if isinstance(err, KeyboardInterrupt) else "failed"
    if manifest.error is None:
        manifest.error = f"{type(err).__name__}: {err}".splitlines()[0]
    if isinstance(err, Exception) and not isinstance(err, MillError) and manifest.traceback is None:
        trace = traceback.format_exception(type(err), err, err.__traceback__)
        manifest.traceback = "".join(trace)


def mark_failed(folder: ExperimentFolder, err: BaseException) -> None:
    """A crash outside the evaluation (bad settings, workers died, Ctrl-C): a manifest still
    saying ``running`` records ``err`` and becomes failed (or interrupted). A finished or
    unreadable
    manifest is left as it is."""
    try:
        manifest = folder.read_manifest()
    except (OSError, ValueError, MillError):
        return
    if manifest.status == "running":
        record_failure(manifest, err)
        folder.write_manifest(manifest)
