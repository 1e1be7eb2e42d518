"""What reproduces a run: argv, git sha, package versions, seeds, device, model, data."""

from __future__ import annotations

import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any

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


def base_manifest(argv: list[str], seeds: dict[str, int]) -> dict[str, Any]:
    """The part known before anything is loaded."""
    return {
        "status": "running",
        "started": datetime.now(timezone.utc).isoformat(),
        "argv": list(argv),
        "git_sha": git_sha(Path(__file__).resolve().parent),
        "versions": versions(),
        "seeds": seeds,
    }
