"""``mill``: the Hydra entry point. Thin: compose the config, run one job, report errors.

``mill report|compare|judge|runs|view ...`` are the commands of the other primary configs
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
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, NoReturn, cast

import hydra
from omegaconf import DictConfig, OmegaConf

from mill.files import register_resource_resolver
from mill.redact import redact_console, redact_logs, redact_text, redacted_console, sweep_job_config
from mill.runner.dist import launched_rank, launched_world_size
from mill.runner.logs import to_file
from mill.schema import SETTINGS, check_number

COMMANDS = ("report", "compare", "judge", "runs", "view")
"""``mill <command> ...`` is ``mill -cn <command> ...`` (conf/<command>.yaml); any other
first word is an override of a run (``report=console`` is the ``report`` config group)."""

HELP_WITHOUT: dict[str, tuple[str, ...]] = {"judge": ("judge",)}
"""The config groups a command needs (``judge: ???``) that its ``--help`` composes without
when the command line chooses none (``mill judge --help``)."""

INTERNAL_OPTIONS: dict[str, tuple[str, ...]] = {"task": ("tasks", "judged")}
"""Options of a config group that ``--help`` and completion do not offer: ``task=tasks`` is
what ``task=[a,b]`` becomes (:func:`task_lists`); ``task=judged`` is no benchmark but the
reader of your own question files, which wants ``task.questions=`` (docs/judging.md). Both
still run when typed."""

_failures: list[str] = []
_sweeps: dict[Path, Any] = {}  # multirun folder -> report.progress as given, used at the end
log = logging.getLogger("mill")


def _path_name(value: str, setting: str) -> str:
    """``${mill_name:${task.name},task.name}``: a name checked before it becomes part of a
    folder name (Hydra makes the run folder before Mill's code runs)."""
    from mill.experiment.folder import check_name

    return check_name(value, setting)


register_resource_resolver()
if not OmegaConf.has_resolver("mill_name"):
    OmegaConf.register_new_resolver("mill_name", _path_name)


def one_line(message: str) -> str:
    """``message`` as one line: a message of several lines (a library's, quoted in a
    Mill error) has its lines joined with ``; `` and blank ones dropped."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


def _say(message: str) -> None:
    """One line on stderr (:func:`one_line`), from global rank 0 only (a URL's credentials
    masked)."""
    if launched_rank() == 0:
        print(f"mill: error: {one_line(redact_text(message))}", file=sys.stderr)


def _hydra_cfg() -> DictConfig | None:
    """Hydra's config of the running job (a DictConfig; Hydra's stubs say HydraConf)."""
    from hydra.core.hydra_config import HydraConfig

    return cast(DictConfig | None, HydraConfig.instance().cfg)


@hydra.main(version_base="1.3", config_path="pkg://mill.conf", config_name="mill")
def _job(cfg: DictConfig) -> float | None:
    from hydra.core.hydra_config import HydraConfig

    from mill.runner.job import run_job

    hydra_cfg = HydraConfig.get()
    output_dir = Path(hydra_cfg.runtime.output_dir)
    multirun = str(hydra_cfg.mode) == "RunMode.MULTIRUN"
    if multirun and "command" not in cfg:
        # as given: each job's RunConfig checks it (a refused value fails each job in one
        # line, as any other setting does); the sweep's report types it once, at the end
        _sweeps[Path(str(hydra_cfg.sweep.dir))] = OmegaConf.select(
            cfg, "report.progress", default="auto"
        )
    try:
        if multirun:  # the sweep's credentials, kept out of what the launcher wrote
            redact_logs()  # a job in a process of its own (SLURM) logs no credential either
            cfg = sweep_job_config(cfg)
        if cfg.get("command") == "judge":  # mill judge: a finished run's answers judged
            from mill.judging import judge_job
            from mill.report.load import RunFolder

            results = run_job(judge_job(cfg, RunFolder.open), output_dir, _hydra_cfg())
            return None if results is None else _first_value(results)
        if "command" in cfg:  # mill compare / mill report (mill.report.command)
            from mill.report.command import run_command

            run_command(cfg)
            return None
        results = run_job(cfg, output_dir, _hydra_cfg())
    except KeyboardInterrupt as err:
        _interrupted(err)
    except Exception as err:
        if not _job_failed(err, output_dir, multirun):
            raise
        return None
    if results is None:  # a rank other than 0 under the user's own launcher
        return None
    # where the run went, the last thing it says (mill runs lists it later)
    print(
        f"[mill] results: {output_dir}\n[mill] report: {output_dir / 'report.html'}",
        file=sys.stderr,
    )
    return _first_value(results)


def _interrupted(err: KeyboardInterrupt) -> NoReturn:
    """SIGINT/SIGTERM: the manifest says interrupted; say how to finish the run."""
    from mill.runner.job import Interrupted

    signum = err.signum if isinstance(err, Interrupted) else 2
    if launched_rank() == 0:
        how = err.advice() if isinstance(err, Interrupted) else ""
        print(f"mill: interrupted{how}", file=sys.stderr)
    raise SystemExit(128 + signum) from None


def _job_failed(err: Exception, output_dir: Path, multirun: bool) -> bool:
    """Say why a job failed: one line and exit 2 (1 when workers failed) for a single run,
    recorded in :data:`_failures` for a sweep, which goes on. False for a bug in a single
    run (logged to mill.log with its traceback): the caller raises it."""
    from mill.errors import ExperimentExists, MillError, storage_error
    from mill.runner.launch import WorkersFailed

    if isinstance(err, MillError):
        refused = not multirun and _drop_unclaimed(output_dir)
        if not (refused or isinstance(err, ExperimentExists)):  # not its folder: its log kept
            to_file(logging.ERROR, str(err))
    elif isinstance(err, WorkersFailed):
        to_file(logging.ERROR, str(err))
    else:
        storage = storage_error(err, output_dir)  # a full disk or read-only folder is not a bug
        if storage is None:
            if not multirun:
                to_file(
                    logging.ERROR, "Mill failed (a bug: report it with this log)", exc_info=True
                )
                return False
            # a bug or a crash in one job must not stop the sweep: record it and go on
            log.exception("job failed")
            line = f"mill: job {output_dir.name} failed: {type(err).__name__}: {err}"
            print(redact_text(line), file=sys.stderr)
            _failures.append(f"{output_dir}: {type(err).__name__}: {err}")
            return True
        err = storage
    _say(str(err))
    if not multirun:
        raise SystemExit(1 if isinstance(err, WorkersFailed) else 2) from None
    _failures.append(f"{output_dir}: {err}")
    return True


def _drop_unclaimed(output_dir: Path) -> bool:
    """Remove the folder Hydra made for a run refused before it claimed it (bad input found
    before ``manifest.json`` was written: nothing in it but the log Hydra opened), and the
    parents that this left empty inside the working folder. True when it was removed.
    """
    if not output_dir.is_dir() or {p.name for p in output_dir.iterdir()} - {"mill.log"}:
        return False
    root = logging.getLogger()
    for handler in list(root.handlers):  # Hydra's file handler: closed before its file goes
        if isinstance(handler, logging.FileHandler) and Path(handler.baseFilename).parent == (
            output_dir.resolve()
        ):
            root.removeHandler(handler)
            handler.close()
    try:  # another rank of a launcher may be removing the same folder
        (output_dir / "mill.log").unlink(missing_ok=True)
        output_dir.rmdir()
        cwd, parent = Path.cwd().resolve(), output_dir.resolve().parent
        while parent != cwd and parent.is_relative_to(cwd) and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    except OSError:
        pass
    return True


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

    if any(a.split("=", 1)[0] in LM_EVAL_FLAGS for a in argv):
        raise ConfigError(lm_eval_flags(argv))
    first = argv[0] if argv else ""
    if first in COMMANDS:
        rest = argv[1:]
        if first == "view" and rest and "=" not in rest[0] and not rest[0].startswith("-"):
            rest[0] = f"run={rest[0]}"  # mill view <folder>
        if {"--help", "-h"} & set(rest):  # the help of a command whose group is not chosen:
            for group in HELP_WITHOUT.get(first, ()):  # shown without it, not refused
                if not any(a.lstrip("+").startswith(f"{group}=") for a in rest):
                    rest.append(f"~{group}")
        return ["-cn", first, *rest]
    if first and not first.startswith(("-", "~", "+")) and "=" not in first:
        raise ConfigError(_unknown_command(first))
    return task_lists(metric_selection(argv))


def metric_selection(argv: list[str]) -> list[str]:
    """``metrics=[pass_at_k]`` as ``+metrics=[pass_at_k]``: no config chooses metrics by
    default (a task's own are its defaults), so a selection is always an addition, and
    Hydra refuses the form without ``+``."""
    return [f"+{a}" if a.startswith("metrics=") else a for a in argv]


def task_lists(argv: list[str]) -> list[str]:
    """``task=[arc_easy,piqa,gsm8k]``, several tasks in one run, as the overrides Hydra
    composes: ``task=tasks`` (conf/task/tasks.yaml, a :class:`mill.task.TaskGroup`) with
    each member's own config under ``task.<name>`` (``+task@task.<name>=<name>``). A
    ``task.<key>=...`` for no member (``task.limit=5``) becomes ``task.<name>.<key>=...``
    for every member, ahead of the ``task.<name>.*`` ones, so ``task.piqa.limit=3`` beats
    it whatever the order. Hydra alone would merge the listed configs into one (the last
    one wins); a sweep over lists (``-m task=[a,b],[c]``) is refused for the same reason.
    A list of one name is ``task=<name>``; argv without a task list is returned as it is."""
    from mill.errors import ConfigError

    at = next((i for i, a in enumerate(argv) if a.startswith("task=") and "[" in a), None)
    if at is None:
        return argv
    from hydra.core.override_parser.overrides_parser import OverridesParser

    arg = argv[at]
    value = OverridesParser.create().parse_overrides([arg])[0].value()
    if not isinstance(value, list):
        raise ConfigError(
            f"{arg}: a sweep over lists of tasks is not supported; sweep single tasks "
            "(mill -m task=arc_easy,piqa: a folder each) or run each list as its own "
            "mill task=[...]"
        )
    names = [str(n) for n in value]
    if not names or len(set(names)) != len(names):
        raise ConfigError(f"{arg}: list each task once, at least one (task=[arc_easy,piqa])")
    if len(names) == 1:
        return [*argv[:at], f"task={names[0]}", *argv[at + 1 :]]
    rest = [a for i, a in enumerate(argv) if i != at]
    every, own, other = [], [], []
    for a in rest:
        plus, key = a[: len(a) - len(a.lstrip("+"))], a.lstrip("+")
        if not key.startswith("task.") or "=" not in key:
            other.append(a)
        elif key.split("=")[0].split(".")[1] in [*names, "name"]:
            own.append(a)
        else:  # a setting of every member
            every += [f"{plus}task.{n}.{key[5:]}" for n in names]
    members = ["task=tasks", *(f"+task@task.{n}={n}" for n in names)]
    return [*other, *members, f"task.name={'+'.join(names)}", *every, *own]


def completion(argv: list[str], env: dict[str, str] | Any) -> list[str]:
    """Shell completion (``mill -sc query=bash``, which Hydra's installed completion runs
    with the line typed so far in ``COMP_LINE``): after a command's name (``mill report
    ru<TAB>``, ``mill compare <TAB>``) the keys of that command's config, as
    ``-cn <command>`` with the name taken off the line; at the first word, the commands
    too (printed here, beside Hydra's group and key suggestions). Other argv unchanged."""
    if not any(a.startswith("query=") for a in argv) or "COMP_LINE" not in env:
        return argv
    line = str(env["COMP_LINE"])
    program, _, rest = line.partition(" ")
    words = rest.split(" ")
    if len(words) > 1 and words[0] in COMMANDS:  # the command's name is complete
        cut = len(words[0]) + 1
        env["COMP_LINE"] = f"{program} {rest[cut:]}"
        if str(env.get("COMP_POINT", "")).isdigit():
            env["COMP_POINT"] = str(max(0, int(env["COMP_POINT"]) - cut))
        return ["-cn", words[0], *argv]
    if len(words) == 1 and "=" not in words[0]:  # the first word: a command, or a key
        matching = [c for c in COMMANDS if c.startswith(words[0])]
        if matching:
            print(" ".join(matching), end=" ")
    return argv


def command_words(command: str) -> tuple[set[str], set[str]]:
    """What completion offers after ``mill <command>``: the keys of the command's own
    config (``conf/<command>.yaml``, less ``command``, ``hydra`` and ``defaults``), and the
    config groups its defaults choose (``mill judge``: judge, runner, report)."""
    from importlib import resources

    import yaml

    text = resources.files("mill.conf").joinpath(f"{command}.yaml").read_text(encoding="utf-8")
    node = yaml.safe_load(text) or {}
    keys = {str(k) for k in node} - {"command", "hydra", "defaults"}
    groups = {
        str(k)
        for entry in node.get("defaults") or []
        if isinstance(entry, dict)
        for k in entry
        if not str(k).startswith("override ")
    }
    return keys, groups


def offered(words: list[str], command: str | None, typed: str = "") -> list[str]:
    """Hydra's completion words less what is not Mill's to offer: an internal option
    (``task=tasks``), and after ``mill <command>`` anything but that command's settings,
    its own keys offered (``typed``: the word so far) even where Hydra, which cannot
    compose the command's config before its required group is chosen (``mill judge``),
    has none."""
    internal = {f"{g}={o}" for g, options in INTERNAL_OPTIONS.items() for o in options}
    kept = [w for w in words if w.lstrip("+~") not in internal]
    if command is None:
        return kept
    keys, groups = command_words(command)

    def key(word: str) -> str:
        return word.lstrip("+~").split("=")[0].split(".")[0]

    kept = [w for w in kept if key(w) in keys | groups]
    if "=" not in typed:
        have = {key(w) for w in kept}
        kept += [f"{k}=" for k in sorted(keys - have) if k.startswith(typed)]
    return kept


@contextmanager
def _offering() -> Iterator[None]:
    """While ``--help`` or shell completion runs: Hydra's list of a group's options without
    :data:`INTERNAL_OPTIONS` (the groups ``--help`` prints, completion's ``task=...``), and
    completion's words through :func:`offered`."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.plugins.completion_plugin import CompletionPlugin

    options, query = ConfigLoaderImpl.get_group_options, CompletionPlugin._query

    def get_group_options(self: Any, group_name: str, *args: Any, **kw: Any) -> list[str]:
        hidden = INTERNAL_OPTIONS.get(group_name, ())
        return [o for o in options(self, group_name, *args, **kw) if o not in hidden]

    def _query(self: Any, config_name: str | None, line: str) -> list[str]:
        command = config_name if config_name in COMMANDS else None
        typed = "" if not line or line.endswith(" ") else line.split()[-1]
        return offered(query(self, config_name, line), command, typed)

    ConfigLoaderImpl.get_group_options = get_group_options  # type: ignore[method-assign]
    CompletionPlugin._query = _query  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConfigLoaderImpl.get_group_options = options  # type: ignore[method-assign]
        CompletionPlugin._query = query  # type: ignore[method-assign]


LM_EVAL_FLAGS = (
    "--tasks",
    "--model",
    "--model_args",
    "--limit",
    "--num_fewshot",
    "--output_path",
    "--batch_size",
    "--device",
)
"""lm-eval's flags, typed out of habit: answered with the equivalent Mill command."""


def lm_eval_flags(argv: list[str]) -> str:
    """The one line for lm-eval's flags (``--tasks arc_easy --limit 10``): Mill's command
    with the same settings (Mill's own task configs where every task is one, else the
    lm-eval bridge ``task=lm_eval task.tasks=[...]``); other words are kept as they are."""
    from mill.runner.config_errors import group_options

    words: list[str] = []
    i = 0
    while i < len(argv):
        flag, eq, value = argv[i].partition("=")
        if flag in LM_EVAL_FLAGS and not eq and i + 1 < len(argv):
            i, value = i + 1, argv[i + 1]
        i += 1
        if flag not in LM_EVAL_FLAGS:
            words.append(argv[i - 1])
        elif flag == "--tasks":
            names = [n for n in value.split(",") if n]
            if set(names) <= set(group_options("task", [])) - {"tasks", "lm_eval"}:
                words.append(f"task={names[0]}" if len(names) == 1 else f"task=[{value}]")
            else:
                words += ["task=lm_eval", f"task.tasks=[{value}]"]
        elif flag == "--model_args":
            for pair in value.split(","):
                key, _, v = pair.partition("=")
                words.append(f"model.{key}={v}")
        else:
            key = {
                "--model": "model",
                "--limit": "task.limit",
                "--num_fewshot": "task.num_fewshot",
                "--output_path": "hydra.run.dir",
                "--batch_size": "model.batch_size",
                "--device": "model.device",
            }[flag]
            words.append(f"{key}={value}")
    import shlex

    return (
        "mill takes Hydra overrides (key=value), not lm-eval's flags; the same run is: "
        f"{shlex.join(['mill', *words])} (mill --help lists the settings)"
    )


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
    the console script wraps it in :func:`run`. Everything it prints (Hydra's ``--cfg``,
    ``--help`` and ``--info`` too) passes through :func:`mill.redact.redact_text`, the
    credentials of the run's config registered (:func:`mill.redact.redacted_console`)."""
    with redacted_console():
        _main()


def _main() -> None:
    import yaml
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from mill.errors import MillError
    from mill.files import contain_library_caches
    from mill.instantiate import checked_composition

    try:
        sys.argv[1:] = argv = command_line(completion(sys.argv[1:], os.environ))
        contain_library_caches()  # matplotlib's cache into Mill's (MILL_CACHE writable)
    except MillError as err:  # `mill comapre ...`: one line, before Hydra says more
        _say(str(err))
        raise SystemExit(2) from None
    # composition errors reach this function as exceptions, printed below as one line
    os.environ["HYDRA_FULL_ERROR"] = "1"
    redact_logs()  # mill.log and the console: no credential of a URL (Hydra's lines too)
    if launched_world_size() > 1:
        _under_launcher(argv)
    asks = {"--help", "-h", "-sc", "--shell-completion"} & {a.split("=")[0] for a in argv}
    try:
        with checked_composition(), _offering() if asks else nullcontext():
            _job()  # Hydra's own hooks pass the allow-list first
    except (HydraException, yaml.YAMLError, OmegaConfBaseException, MillError) as err:
        from mill.runner.config_errors import describe

        # a Mill check inside an interpolation (${mill_name:...} in the run folder's name)
        cause: BaseException | None = err
        while cause is not None and not isinstance(cause, MillError):
            cause = cause.__cause__ or cause.__context__
        _say(str(cause) if cause is not None else describe(err, argv))
        raise SystemExit(2) from None
    except (OSError, ValueError) as err:
        line = _setup_error(err, argv)
        if line is None:
            raise
        _say(line)
        raise SystemExit(2) from None
    _end_sweeps()


def _setup_error(err: OSError | ValueError, argv: list[str]) -> str | None:
    """The one line for an OSError or ValueError out of Hydra making the run folder or
    opening mill.log in it: a full disk or a read-only folder, a file where the folder goes,
    ``model=null`` (Hydra's bare ValueError). None: none of these (a bug)."""
    from mill.errors import MillError, storage_error
    from mill.runner.config_errors import null_group

    null = null_group(err, argv)  # `model=null`: Hydra's bare ValueError
    if null is not None:
        return null
    storage: MillError | None = storage_error(err)
    if storage is None and isinstance(err, (FileExistsError, NotADirectoryError)):
        from mill.files import check_folder_path

        try:
            swept = any(a in ("-m", "--multirun") for a in argv)
            key = f"hydra.{'sweep' if swept else 'run'}.dir"
            check_folder_path(Path(str(err.filename)), key)
        except MillError as refused:
            storage = refused
    return None if storage is None else str(storage)


def _end_sweeps() -> None:
    """After the jobs: each sweep's report, then the failed jobs listed and exit 2."""
    if _sweeps:
        from mill.errors import ConfigError
        from mill.report.rebuild import report_after_sweep

        for sweep_dir, given in _sweeps.items():
            try:  # a value the jobs refused (each said so in one line) shows as auto
                mode = str(check_number("report.progress", given, SETTINGS["report.progress"]))
            except ConfigError:
                mode = "auto"
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
    exit (:func:`_exit_now`). A traceback (Mill's own bug) exits the ordinary way, printed
    through the same redacting stream as everything else."""
    redact_console()
    try:
        main()
    except SystemExit as done:
        _exit_now(done.code)
    _exit_now(0)


if __name__ == "__main__":
    run()
