"""``mill``: the Hydra entry point. Thin: compose the config, run one job, report errors.

``mill report|compare|judge ...`` are the commands of the other primary configs
(``conf/<command>.yaml``), the same as Hydra's ``mill -cn <command> ...``; ``mill --help``
is ``conf/hydra/help/mill.yaml``.

Errors a user can fix (MillError, and Hydra's composition errors) print as one line on
stderr; a single run then exits 2. In a multirun sweep a failing job, whatever the error,
is recorded (its manifest says failed) and the sweep goes on; the sweep summary marks it
and ``mill`` exits 2 at the end.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from mill.files import register_resource_resolver
from mill.redact import redact_logs, redact_text, sweep_job_config
from mill.runner.dist import launched_rank, launched_world_size
from mill.runner.logs import to_file

COMMANDS = ("report", "compare", "judge")
"""``mill <command> ...`` is ``mill -cn <command> ...`` (conf/<command>.yaml); any other
first word is an override of a run (``report=console`` is the ``report`` config group)."""

HELP_WITHOUT: dict[str, tuple[str, ...]] = {"judge": ("judge",)}
"""The config groups a command needs (``judge: ???``) that its ``--help`` composes without
when the command line chooses none (``mill judge --help``)."""

_failures: list[str] = []
_sweeps: dict[Path, str] = {}  # multirun folder -> progress mode, reported at the end
log = logging.getLogger("mill")


def _path_name(value: str, setting: str) -> str:
    """``${mill_name:${task.name},task.name}``: a name checked before it becomes part of a
    folder name (Hydra makes the run folder before Mill's code runs)."""
    from mill.experiment.folder import check_name

    return check_name(value, setting)


register_resource_resolver()
if not OmegaConf.has_resolver("mill_name"):
    OmegaConf.register_new_resolver("mill_name", _path_name)


def _say(message: str) -> None:
    """One line on stderr, from global rank 0 only (a URL's credentials masked)."""
    if launched_rank() == 0:
        print(f"mill: error: {redact_text(message)}", file=sys.stderr)


@hydra.main(version_base="1.3", config_path="pkg://mill.conf", config_name="mill")
def _job(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    from mill.errors import ExperimentExists, MillError, storage_error
    from mill.runner.job import run_job
    from mill.runner.launch import WorkersFailed

    hydra_cfg = HydraConfig.get()
    output_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    if multirun and "command" not in cfg:
        _sweeps[Path(str(hydra_cfg.sweep.dir))] = str(
            OmegaConf.select(cfg, "report.progress", default="auto")
        )
    try:
        if multirun:  # the sweep's credentials, kept out of what the launcher wrote
            redact_logs()  # a job in a process of its own (SLURM) logs no credential either
            cfg = sweep_job_config(cfg)
        if cfg.get("command") == "judge":  # mill judge: a finished run's answers judged
            from mill.runner.rejudge import judge_command

            results = judge_command(cfg, output_dir, HydraConfig.instance().cfg)
            return None if results is None else _first_value(results)
        if "command" in cfg:  # mill compare / mill report (mill.report.command)
            from mill.report.command import run_command

            return run_command(cfg)
        results = run_job(cfg, output_dir, HydraConfig.instance().cfg)
    except KeyboardInterrupt as err:
        # SIGINT/SIGTERM: the manifest says interrupted; say how to finish the run
        from mill.runner.job import Interrupted, resume_command

        signum = err.signum if isinstance(err, Interrupted) else 2
        folder = err.folder if isinstance(err, Interrupted) else None
        if launched_rank() == 0:
            how = (
                f"; resume it with: {resume_command(sys.argv[1:], folder)}"
                if folder is not None
                else ""
            )
            print(f"mill: interrupted{how}", file=sys.stderr)
        raise SystemExit(128 + signum) from None
    except MillError as err:
        if not isinstance(err, ExperimentExists):  # not this run's folder: leave its log
            to_file(logging.ERROR, str(err))
        _say(str(err))
        if not multirun:
            raise SystemExit(2) from None
        _failures.append(f"{output_dir}: {err}")
        return None
    except WorkersFailed as err:
        to_file(logging.ERROR, str(err))
        _say(str(err))
        if not multirun:
            raise SystemExit(1) from None
        _failures.append(f"{output_dir}: {err}")
        return None
    except Exception as err:
        storage = storage_error(err, output_dir)  # a full disk or read-only folder is not a bug
        if storage is not None:
            _say(str(storage))
            if not multirun:
                raise SystemExit(2) from None
            _failures.append(f"{output_dir}: {storage}")
            return None
        if not multirun:
            to_file(logging.ERROR, "Mill failed (a bug: report it with this log)", exc_info=True)
            raise
        # a bug or a crash in one job must not stop the sweep: record it and go on
        log.exception("job failed")
        line = f"mill: job {output_dir.name} failed: {type(err).__name__}: {err}"
        print(redact_text(line), file=sys.stderr)
        _failures.append(f"{output_dir}: {type(err).__name__}: {err}")
        return None
    if results is None:  # a rank other than 0 under the user's own launcher
        return None
    return _first_value(results)


def _first_value(results: Any) -> Any:
    """The first metric's value (Hydra's return value of a job, for sweepers)."""
    first = next(iter(results.tasks.values())).metrics
    return next(iter(first.values())).value if first else None


def _under_launcher(argv: list[str]) -> None:
    """Under ``accelerate launch``/``torchrun -m mill``: one folder, owned by rank 0."""
    if any(a in ("-m", "--multirun") or a == "hydra.mode=MULTIRUN" for a in argv):
        _say(
            "a sweep (-m) under a multi-process launcher would run once per rank; run the "
            "sweep from one process and set runner.num_processes=N for its jobs"
        )
        raise SystemExit(2)
    if launched_rank() != 0:
        # rank 0 owns the folder and the logs; the others create nothing and learn the
        # folder from rank 0 (their own ${now:} could differ)
        sys.argv += ["hydra.run.dir=.", "hydra/job_logging=none", "hydra/hydra_logging=none"]


def command_line(argv: list[str]) -> list[str]:
    """``mill``'s arguments as Hydra reads them: a first word that names a command
    (``compare a=... b=...``) becomes ``-cn compare a=... b=...``; anything else is left as
    it is, but a first word that is neither a command, a flag (``-m``, ``--help``) nor an
    override (``key=value``, ``+key=...``, ``~key``) is a ConfigError (one line naming the
    commands). ``report=console`` is an override: the ``report`` config group of a run."""
    from mill.errors import ConfigError

    first = argv[0] if argv else ""
    if first in COMMANDS:
        rest = argv[1:]
        if {"--help", "-h"} & set(rest):  # the help of a command whose group is not chosen:
            for group in HELP_WITHOUT.get(first, ()):  # shown without it, not refused
                if not any(a.lstrip("+").startswith(f"{group}=") for a in rest):
                    rest.append(f"~{group}")
        return ["-cn", first, *rest]
    if first and not first.startswith(("-", "~", "+")) and "=" not in first:
        raise ConfigError(_unknown_command(first))
    return argv


def _unknown_command(word: str) -> str:
    """The one line for ``mill <word> ...`` when ``word`` is no command: the commands, and
    the closest command, or how to choose an option when ``word`` is a config group."""
    import difflib

    from mill.runner.config_errors import group_options

    said = [f"{word!r} is neither a command nor an override (key=value)"]
    options = group_options(word, [])
    if options:  # `mill task arc`: a config group without its option
        said.append(f"to choose a {word}, write {word}=<option> ({', '.join(options)})")
    else:
        close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
        said += [f"did you mean 'mill {close[0]}'"] if close else []
    commands = ", ".join(f"mill {c}" for c in COMMANDS)
    said.append(f"the commands are {commands} (mill <command> --help); mill --help says more")
    return "; ".join(said)


def main() -> None:
    """Run ``mill`` with ``sys.argv`` (returns, or raises SystemExit with the status);
    the console script wraps it in :func:`run`."""
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from mill.errors import MillError, storage_error
    from mill.files import contain_library_caches
    from mill.instantiate import checked_composition

    try:
        sys.argv[1:] = argv = command_line(sys.argv[1:])
        contain_library_caches()  # matplotlib's cache into Mill's (MILL_CACHE writable)
    except MillError as err:  # `mill comapre ...`: one line, before Hydra says more
        _say(str(err))
        raise SystemExit(2) from None
    # composition errors reach this function as exceptions, printed below as one line
    os.environ["HYDRA_FULL_ERROR"] = "1"
    redact_logs()  # mill.log and the console: no credential of a URL (Hydra's lines too)
    if launched_world_size() > 1:
        _under_launcher(argv)
    try:
        with checked_composition():  # Hydra's own hooks pass the allow-list first
            _job()
    except (HydraException, yaml.YAMLError, OmegaConfBaseException, MillError) as err:
        from mill.runner.config_errors import describe

        # a Mill check inside an interpolation (${mill_name:...} in the run folder's name)
        cause: BaseException | None = err
        while cause is not None and not isinstance(cause, MillError):
            cause = cause.__cause__ or cause.__context__
        _say(str(cause) if cause is not None else describe(err, argv))
        raise SystemExit(2) from None
    except (OSError, ValueError) as err:
        # Hydra making the run folder or opening mill.log in it: a full disk or a
        # read-only folder gets one line too, and so does a file where the folder goes
        from mill.runner.config_errors import null_group

        null = null_group(err, argv)  # `model=null`: Hydra's bare ValueError
        if null is not None:
            _say(null)
            raise SystemExit(2) from None
        storage = storage_error(err)
        if storage is None and isinstance(err, (FileExistsError, NotADirectoryError)):
            from mill.experiment.folder import check_folder

            try:
                sweep = any(a in ("-m", "--multirun") for a in argv)
                check_folder(Path(str(err.filename)), f"hydra.{'sweep' if sweep else 'run'}.dir")
            except MillError as refused:
                storage = refused
        if storage is None:
            raise
        _say(str(storage))
        raise SystemExit(2) from None
    if _sweeps:
        from mill.report.rebuild import report_after_sweep

        for sweep_dir, mode in _sweeps.items():
            report_after_sweep(sweep_dir, mode)
    from mill.runner import sweep

    failed = sweep.LAST["failed"] if sweep.LAST is not None else len(_failures)
    if failed or _failures:
        print(f"mill: {max(failed, len(_failures))} job(s) failed:", file=sys.stderr)
        for line in _failures:
            print(f"  {redact_text(line)}", file=sys.stderr)
        raise SystemExit(2)


def _exit_now(code: object) -> None:
    """End the process with ``code`` as ``sys.exit`` would, without the interpreter's
    teardown: the atexit handlers run (logging's flush, libraries' own), the standard
    streams are flushed, and the heap of torch/transformers/datasets modules is left to the
    kernel instead of being freed object by object (about a third of the import time,
    seconds on a 2-core machine). Only when no non-daemon thread is still running."""
    import atexit
    import threading

    others = [t for t in threading.enumerate() if t is not threading.main_thread()]
    if any(not t.daemon for t in others):
        raise SystemExit(code)
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): the message goes to stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more to say
            pass
    os._exit(status)


def run() -> None:
    """Console-script entry point (``mill``, ``python -m mill``): :func:`main`, then a fast
    exit (:func:`_exit_now`). A traceback (Mill's own bug) exits the ordinary way."""
    try:
        main()
    except SystemExit as done:
        _exit_now(done.code)
    _exit_now(0)


if __name__ == "__main__":
    run()
