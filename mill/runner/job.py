"""One experiment, from a composed config to a finished folder (the driver).

The Hydra process is the driver and the only owner of the experiment folder: it claims
the folder (or reopens an interrupted one with ``runner.resume=true``), writes Hydra's
configs, ``resolved.yaml`` and the manifest, then evaluates in process
(``runner.num_processes=1``) or starts data-parallel workers (:mod:`mill.runner.launch`).
Under a user's own launcher (``accelerate launch -m mill ...``, ``torchrun -m mill ...``)
every rank runs this function; only global rank 0 touches the folder and the other ranks
learn its path from rank 0.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mill.errors import ConfigError, MillError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import base_manifest
from mill.model.base import LanguageModel
from mill.results import Results
from mill.runner.dist import Dist, agree, init_dist, launched_world_size
from mill.runner.settings import RunnerSettings

log = logging.getLogger("mill")

RESUME_MAY_CHANGE = (
    "runner.resume",
    "runner.num_processes",
    "runner.launcher",
    "runner.cpu",
    "runner.timeout_s",
    "model.device",
    "model.batch_size",
    "model.token_budget",
)
"""Settings a resumed run may change: they decide where and how fast, never the scores."""


def _save_hydra(folder: Path, cfg: DictConfig, hydra_cfg: DictConfig | None) -> None:
    out = folder / ".hydra"
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(OmegaConf.to_yaml(cfg))
    if hydra_cfg is not None:
        (out / "hydra.yaml").write_text(OmegaConf.to_yaml(hydra_cfg))
        overrides = OmegaConf.to_container(hydra_cfg.hydra.overrides.task)
        (out / "overrides.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(overrides)))


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): node}


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Keys whose values differ between two resolved configs, except RESUME_MAY_CHANGE,
    the report settings and the result sinks."""
    a, b = _flatten(old), _flatten(new)
    changed = []
    for key in sorted(set(a) | set(b)):
        if key in RESUME_MAY_CHANGE or key.startswith(("report.", "sink.")):
            continue
        if a.get(key) != b.get(key):
            changed.append(key)
    return changed


def _resolve(cfg: DictConfig) -> dict[str, Any]:
    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as err:
        raise ConfigError(f"config is incomplete: {err}".splitlines()[0]) from err
    assert isinstance(resolved, dict)
    return resolved


def _prepare(
    folder: ExperimentFolder,
    cfg: DictConfig,
    hydra_cfg: DictConfig | None,
    resolved: dict[str, Any],
    settings: RunnerSettings,
) -> None:
    """Claim (or, resuming, reopen) the folder and write what is known before loading."""
    previous: dict[str, Any] | None = None
    if settings.resume:
        if settings.cache is None:
            raise ConfigError(
                "runner.resume=true needs the response cache; drop runner.cache=false"
            )
        if folder.manifest_path.exists() or folder.results_path.exists():
            previous = folder.reopen()
            old = OmegaConf.to_container(OmegaConf.load(folder.path / "resolved.yaml"))
            assert isinstance(old, dict)
            changed = config_changes(old, resolved)
            if changed:
                folder.unlock()
                raise ConfigError(
                    f"cannot resume {folder.path}: these settings differ from the "
                    f"interrupted run: {', '.join(changed[:8])}; rerun with the original "
                    "settings or choose a new folder"
                )
    if previous is None:
        folder.claim()
    _save_hydra(folder.path, cfg, hydra_cfg)
    folder.write_text("resolved.yaml", OmegaConf.to_yaml(OmegaConf.create(resolved)))
    manifest = base_manifest(sys.argv, {"seed": settings.seed, "bootstrap_seed": settings.seed})
    if previous is not None:
        manifest["attempts"] = int(previous.get("attempts", 1)) + 1
        manifest["first_started"] = previous.get("first_started", previous.get("started"))
    folder.write_manifest(manifest)


def _mark_failed(folder: ExperimentFolder, err: BaseException) -> None:
    """A crash outside the evaluation (workers died, Ctrl-C): the manifest must not say
    ``running`` forever."""
    try:
        manifest = folder.read_manifest()
    except (OSError, ValueError):
        return
    if manifest.get("status") == "running":
        manifest["status"] = "failed"
        manifest.setdefault("error", f"{type(err).__name__}: {err}".splitlines()[0])
        folder.write_manifest(manifest)


def run_job(
    cfg: DictConfig,
    output_dir: Path,
    hydra_cfg: DictConfig | None = None,
    model: LanguageModel | None = None,
) -> Results | None:
    """Evaluate the configured task(s) on the configured model into ``output_dir``.

    Returns the results (also in ``results.json``); None on ranks other than 0 under a
    user's launcher. Raises MillError on bad input, after marking the manifest failed and
    leaving no ``results.json``. ``model``: an already-built model to evaluate in this
    process instead of ``cfg.model`` (:func:`mill.evaluate`).
    """
    from mill.runner.execute import execute
    from mill.runner.launch import launch_workers

    resolved = _resolve(cfg)
    settings = RunnerSettings.parse(resolved.get("runner"))
    dist = Dist()
    if launched_world_size() > 1:
        if settings.num_processes not in (None, 1):
            raise ConfigError(
                f"mill was started by a launcher with {launched_world_size()} processes and "
                f"runner.num_processes={settings.num_processes}; use one or the other"
            )
        if model is not None:
            raise ConfigError(
                "an in-memory model is evaluated in the process that holds it; call "
                "mill.evaluate outside a multi-process launcher"
            )
        dist = init_dist(settings.use_cpu(), settings.timeout_s)
    folder = ExperimentFolder(output_dir)
    owned = False  # only a folder this process claimed is ever marked failed

    def prepare() -> None:
        nonlocal owned
        if dist.is_main:
            _prepare(folder, cfg, hydra_cfg, resolved, settings)
            owned = True

    try:
        agree(dist, prepare)
        path = Path(dist.broadcast(str(folder.path.resolve())))
        if dist.world_size > 1:  # under the user's launcher: this process is one rank
            results = execute(resolved, path, dist)
            dist.close()
            return results
        n = 1 if model is not None else settings.processes()
        if n == 1:
            return execute(resolved, path, dist, model)
        if (resolved.get("model") or {}).get("device_map"):
            raise ConfigError(
                "model.device_map spreads one model over all GPUs; run it as one process "
                "(runner.num_processes=1), not under data parallelism"
            )
        return launch_workers(path, n, settings)
    except MillError as err:
        if owned:
            _mark_failed(folder, err)
        dist.close()  # every rank raised the same error: leave the group together
        raise
    except BaseException as err:
        if owned:
            _mark_failed(folder, err)
        raise
    finally:
        folder.unlock()
