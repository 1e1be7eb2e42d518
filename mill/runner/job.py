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
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mill.dotted import flatten
from mill.errors import ConfigError, MillError
from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import base_manifest, mark_failed
from mill.model.base import LanguageModel
from mill.record import SampleRecord
from mill.redact import redact, redact_text, register_config_secrets, secrets_of
from mill.results import Manifest, Results
from mill.runner.dist import Dist, agree, init_dist, launched_world_size
from mill.runner.faults import fault
from mill.runner.logs import to_file
from mill.runner.run_config import RunConfig, read_resolved
from mill.runner.settings import RunnerSettings, refuse_device_map
from mill.schema import check_config

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
    "model.cache_budget",
    "model.max_memory",
    "model.offload_folder",
)
"""Settings a resumed run may change: they decide where and how fast (and how much memory a
batch takes), never the scores. A dict-valued one (``model.max_memory``) covers its keys."""


def _save_hydra(folder: ExperimentFolder, cfg: DictConfig, hydra_cfg: DictConfig | None) -> None:
    folder.write_text(".hydra/config.yaml", OmegaConf.to_yaml(cfg))
    if hydra_cfg is not None:
        folder.write_text(".hydra/hydra.yaml", OmegaConf.to_yaml(hydra_cfg))
        overrides = OmegaConf.to_container(hydra_cfg.hydra.overrides.task)
        folder.write_text(".hydra/overrides.yaml", OmegaConf.to_yaml(OmegaConf.create(overrides)))


def config_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Keys whose values differ between two resolved configs, except RESUME_MAY_CHANGE,
    the report settings and the result sinks."""
    a, b = flatten(old), flatten(new)
    changed = []
    for key in sorted(set(a) | set(b)):
        if key.startswith(("report.", "sink.")) or any(
            key == k or key.startswith(k + ".") for k in RESUME_MAY_CHANGE
        ):
            continue
        if a.get(key) != b.get(key):
            changed.append(key)
    return changed


def earlier_config(folder: Path) -> dict[str, Any]:
    """The ``resolved.yaml`` of the run in ``folder``, typed as this run's config is
    (:func:`mill.schema.check_config`: a file written before the values were typed may say
    ``AUTO`` or ``8.0``); as written when today's rules refuse one of its values (which then
    differs from this run's, and the resume says so)."""
    old = read_resolved(folder)
    try:
        return check_config(old)
    except ConfigError:
        return old


def _resolve(cfg: DictConfig) -> dict[str, Any]:
    from omegaconf.errors import MissingMandatoryValue

    try:
        resolved = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as err:  # named by its full key, and what needs it
        key = str(getattr(err, "full_key", "") or "")
        group = key.split(".")[0]
        node = cfg._get_node(group) if "." in key and group in cfg else None
        # the option that needs it, by the name its config gives (model=replay: replay)
        option = node.get("name") if isinstance(node, DictConfig) else None
        needs = f" ({group}={option} needs it)" if option else ""
        raise ConfigError(
            f"{key or 'a setting'} has no value{needs}: set {key or 'it'}=<value> on the "
            "command line"
        ) from None
    except OmegaConfBaseException as err:
        raise ConfigError(f"config is incomplete: {err}".splitlines()[0]) from err
    assert isinstance(resolved, dict)
    return cast(dict[str, Any], resolved)


def _prepare(
    folder: ExperimentFolder, cfg: DictConfig, hydra_cfg: DictConfig | None, config: RunConfig
) -> None:
    """Claim (or, resuming, reopen) the folder and write what is known before loading:
    Hydra's files, ``resolved.yaml`` (:meth:`RunConfig.to_yaml`) and the manifest."""
    settings = config.runner
    previous: Manifest | None = None
    if settings.resume:
        if settings.cache is None:
            raise ConfigError(
                "runner.resume=true needs the response cache; drop runner.cache=false"
            )
        if folder.manifest_path.exists() or folder.results_path.exists():
            previous = folder.reopen()
            # the file is redacted
            changed = config_changes(earlier_config(folder.path), redact(config.values))
            if changed:
                folder.unlock()
                raise ConfigError(
                    f"cannot resume {folder.path}: these settings differ from the "
                    f"interrupted run: {', '.join(changed[:8])}; rerun with the original "
                    "settings or choose a new folder"
                )
    if previous is None:
        folder.claim()
    _save_hydra(folder, cfg, hydra_cfg)
    folder.write_text("resolved.yaml", config.to_yaml())
    manifest = base_manifest(sys.argv, {"seed": settings.seed, "bootstrap_seed": settings.seed})
    if previous is not None:
        manifest.attempts = (previous.attempts or 1) + 1
        manifest.first_started = previous.first_started or previous.started
    folder.write_manifest(manifest)


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM stopped the run in ``folder``; ``resumable`` False: it ran without
    the response cache (``runner.cache=false``), so nothing was kept to resume from."""

    def __init__(self, signum: int, folder: Path | None = None) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.folder = folder
        self.resumable = True

    def advice(self) -> str:
        """What to do next, for the one line that reports the interruption."""
        if self.folder is None:
            return ""
        if not self.resumable:
            return (
                "; it ran with runner.cache=false, so no response was kept to resume from: "
                "run it again into a new folder"
            )
        return f"; resume it with: {resume_command(sys.argv[1:], self.folder)}"


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise Interrupted(signum)


@contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM (a scheduler's stop, ``kill``) and SIGINT (Ctrl-C) raise
    :class:`Interrupted` in the main thread, so the run unwinds and marks its manifest."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    for signum in previous:
        signal.signal(signum, _raise_interrupted)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def resume_command(argv: list[str], folder: Path) -> str:
    """The command line that resumes ``folder``: the same overrides plus
    ``runner.resume=true`` and the folder (a URL's credentials masked: they are typed
    again, never printed or logged)."""
    keep = [a for a in argv if not a.startswith(("hydra.run.dir=", "runner.resume="))]
    line = shlex.join(["mill", *keep, "runner.resume=true", f"hydra.run.dir={folder}"])
    return redact_text(line)  # a credential in a URL is given again by hand


def run_job(
    cfg: DictConfig,
    output_dir: Path | None,
    hydra_cfg: DictConfig | None = None,
    model: LanguageModel | None = None,
    dist: Dist | None = None,
    *,
    on_sample: Callable[[SampleRecord], None] | None = None,
    show: bool = True,
) -> Results | None:
    """Evaluate the configured task(s) on the configured model into ``output_dir``.

    Returns the results (also in ``results.json``); None on ranks other than 0 under a
    user's launcher. Raises MillError on bad input, after marking the manifest failed and
    leaving no ``results.json``. ``model``: an already-built model to evaluate in this
    process instead of ``cfg.model`` (:func:`mill.evaluate`). ``dist``: the process group
    of a caller that joined one (a training job, :mod:`mill.integrations`): every rank
    evaluates its own copy of ``model`` on its share of the docs, and the group stays open.
    ``output_dir`` None (:func:`mill.evaluate` without one): the same evaluation in this
    process, nothing written; each doc's record goes to ``on_sample``, and ``show`` False
    keeps the terminal quiet (:func:`mill.runner.execute.execute`).
    """
    from mill.data.hub import check_hub
    from mill.runner.execute import execute

    resolved = _resolve(cfg)
    register_config_secrets(resolved)  # masked in every sink from here on
    config = RunConfig.from_resolved(resolved)  # typed once, before any data or model loads
    check_hub(config.values, with_model=model is None)  # a hub id without the hub: one line
    if output_dir is None:  # no folder to share with workers or ranks: this process
        return execute(config, None, dist or Dist(), model, on_sample=on_sample, show=show)
    own_group = dist is None
    dist = dist or _launched_group(config.runner, model)
    folder = ExperimentFolder(output_dir)
    owned = False  # only a folder this process claimed is ever marked failed

    def prepare() -> None:
        nonlocal owned
        if dist.is_main:
            _prepare(folder, cfg, hydra_cfg, config)
            owned = True

    try:
        with _interruptible():
            agree(dist, prepare)
            if dist.is_main:
                fault("prepared")
            return _evaluate_in(folder, config, dist, model, own_group)
    except BaseException as err:
        raised = _failed(
            err,
            folder if owned else None,
            dist if own_group else None,
            resumable=config.runner.cache is not None,
        )
        if raised is err:
            raise
        raise raised from err
    finally:
        folder.unlock()


def _launched_group(settings: RunnerSettings, model: LanguageModel | None) -> Dist:
    """This process's group when it is one of a launcher's ranks (torchrun, accelerate
    launch: ``runner.num_processes`` and an in-memory model are refused there), else alone."""
    if launched_world_size() <= 1:
        return Dist()
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
    return init_dist(settings.use_cpu(), settings.timeout_s)


def _evaluate_in(
    folder: ExperimentFolder,
    config: RunConfig,
    dist: Dist,
    model: LanguageModel | None,
    own_group: bool,
) -> Results | None:
    """The evaluation into the claimed ``folder``: this process (one rank of a launched
    group, or alone), or the data-parallel workers it starts."""
    from mill.runner.execute import execute
    from mill.runner.launch import launch_workers

    path = Path(dist.broadcast(str(folder.path.resolve())))
    if dist.world_size > 1:  # under the user's launcher: this process is one rank
        results = execute(config, path, dist, model)
        if own_group:
            dist.close()
        return results
    n = 1 if model is not None else config.runner.processes()
    if n == 1:
        return execute(config, path, dist, model)
    refuse_device_map(config.values.get("model"), n)
    # resolved.yaml, which the workers read, is redacted: they get the credentials it
    # lacks from the driver's environment, never from a file
    return launch_workers(path, n, config.runner, secrets_of(config.values))


def _failed(
    err: BaseException,
    folder: ExperimentFolder | None,
    group: Dist | None,
    *,
    resumable: bool,
) -> BaseException:
    """What a run that raised ``err`` leaves, and what it raises: an interruption as
    :class:`Interrupted` (:func:`_interrupted`; ``resumable``: the run kept its responses
    in the cache); otherwise ``folder`` (one this process claimed) marked failed, and after
    a MillError, which every rank raised alike, the process ``group`` this run opened
    closed together."""
    if isinstance(err, KeyboardInterrupt):
        return _interrupted(err, folder, resumable)
    if folder is not None:
        mark_failed(folder, err)
    if isinstance(err, MillError) and group is not None:
        group.close()
    return err


def _interrupted(
    err: KeyboardInterrupt, folder: ExperimentFolder | None, resumable: bool
) -> Interrupted:
    """The interruption ``err`` as an :class:`Interrupted`; a folder this process claimed
    is marked failed and the log says how to resume it (or, without the cache, that it
    cannot be)."""
    interrupted = err if isinstance(err, Interrupted) else Interrupted(signal.SIGINT)
    if folder is not None:
        mark_failed(folder, interrupted)
        interrupted.folder, interrupted.resumable = folder.path, resumable
        to_file(logging.WARNING, f"interrupted by {interrupted}{interrupted.advice()}")
    return interrupted
