"""No code from config: every place of the composed config that Hydra itself acts on
(callbacks, launcher and sweeper plugins, its two logging configs, the job's environment)
passes the allow-list before Hydra sees it, in ``mill``, ``mill -m`` and ``mill.evaluate``.

Every target below names ``evilpkg``, a package on the path whose import makes a marker
folder (and whose ``hook`` makes another when called): a refusal must leave both absent,
so nothing of it was imported, let alone run.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from mill.errors import ConfigError
from tests.helpers import run_mill

EVIL = """\
import os, pathlib
pathlib.Path(os.environ["EVIL_MARKER"]).mkdir(exist_ok=True)
def hook(*args, **kwargs):
    pathlib.Path(os.environ["EVIL_MARKER"] + "-called").mkdir(exist_ok=True)
class Thing:
    def __init__(self, *args, **kwargs):
        hook()
"""

# (case, overrides, the key the one-line refusal names). One row per kind of hook.
HOOKS: list[tuple[str, list[str], str]] = [
    ("callback", ["+hydra.callbacks.evil._target_=evilpkg.hook"], "hydra.callbacks.evil._target_"),
    (
        "callback argument",  # Hydra instantiates a callback's arguments recursively
        [
            "+hydra.callbacks.s._target_=mill.runner.sweep.SweepSummary",
            "+hydra.callbacks.s.x._target_=evilpkg.hook",
        ],
        "hydra.callbacks.s.x._target_",
    ),
    ("launcher", ["hydra.launcher._target_=evilpkg.Thing"], "hydra.launcher._target_"),
    ("sweeper", ["hydra.sweeper._target_=evilpkg.Thing"], "hydra.sweeper._target_"),
    (
        "plugin argument",
        ["+hydra.launcher.x._target_=evilpkg.hook"],
        "hydra.launcher.x._target_",
    ),
    (
        "job_logging handler class",
        ["hydra.job_logging.handlers.console.class=evilpkg.Thing"],
        "hydra.job_logging.handlers.console.class",
    ),
    (  # a '()' key cannot be written as an override: it comes from a logging config file
        "job_logging handler factory",
        ["hydra/job_logging=evil", "EVIL_LOGGING=handlers: {evil: {'()': evilpkg.hook}}"],
        "hydra.job_logging.handlers.evil.()",
    ),
    (
        "job_logging formatter factory",
        ["hydra/job_logging=evil", "EVIL_LOGGING=formatters: {evil: {'()': evilpkg.hook}}"],
        "hydra.job_logging.formatters.evil.()",
    ),
    (
        "job_logging formatter class",
        ["+hydra.job_logging.formatters.simple.class=evilpkg.Thing"],
        "hydra.job_logging.formatters.simple.class",
    ),
    (
        "job_logging filter factory",
        ["hydra/job_logging=evil", "EVIL_LOGGING=filters: {evil: {'()': evilpkg.hook}}"],
        "hydra.job_logging.filters.evil.()",
    ),
    (
        "hydra_logging handler factory",
        ["hydra/hydra_logging=evil", "EVIL_LOGGING=handlers: {evil: {'()': evilpkg.hook}}"],
        "hydra.hydra_logging.handlers.evil.()",
    ),
    (
        "job_logging ext:// import",
        ["hydra.job_logging.handlers.console.stream=ext://evilpkg.Thing"],
        "hydra.job_logging.handlers.console.stream",
    ),
    (
        "hydra_logging handler class",
        ["hydra.hydra_logging.handlers.console.class=evilpkg.Thing"],
        "hydra.hydra_logging.handlers.console.class",
    ),
    (
        "hydra_logging ext:// import",
        ["hydra.hydra_logging.handlers.console.stream=ext://evilpkg.Thing"],
        "hydra.hydra_logging.handlers.console.stream",
    ),
    (
        "job environment",  # LD_PRELOAD/PYTHONPATH make every process Mill starts load code
        ["+hydra.job.env_set.PYTHONSTARTUP=/tmp/evil.py"],
        "hydra.job.env_set.PYTHONSTARTUP",
    ),
    (  # Hydra imports a pkg:// search path's package while it composes
        "searchpath package",
        ["hydra.searchpath=[pkg://evilpkg]"],
        "hydra.searchpath='pkg://evilpkg'",
    ),
    ("any other _target_ under hydra", ["+hydra.job.x._target_=evilpkg.hook"], "hydra.job.x"),
    (
        "non-plugin launcher inside mill",  # allowed package, but not a Launcher
        ["hydra.launcher._target_=mill.runner.sweep.SweepSummary"],
        "hydra.launcher._target_='mill.runner.sweep.SweepSummary' is not a Hydra launcher",
    ),
    (
        "non-plugin sweeper inside mill",
        ["hydra.sweeper._target_=mill.runner.sweep.SweepSummary"],
        "hydra.sweeper._target_='mill.runner.sweep.SweepSummary' is not a Hydra sweeper",
    ),
]


def _materialize(overrides: list[str], tmp_path: Path) -> list[str]:
    """``EVIL_LOGGING=<yaml>`` becomes a logging config file ``evil`` in a searchpath folder
    (as hydra/job_logging and hydra/hydra_logging); the other overrides stay."""
    out = []
    for override in overrides:
        if override.startswith("EVIL_LOGGING="):
            conf = tmp_path / "conf"
            for group in ("job_logging", "hydra_logging"):
                (conf / "hydra" / group).mkdir(parents=True, exist_ok=True)
                (conf / "hydra" / group / "evil.yaml").write_text(
                    "version: 1\n" + override.removeprefix("EVIL_LOGGING=") + "\n"
                )
            out.append(f"hydra.searchpath=[file://{conf}]")
        else:
            out.append(override)
    return out


def _searchpath_task(tmp_path: Path, body: str) -> list[str]:
    """A downloaded task config, ``# @package _global_``, found through hydra.searchpath."""
    (tmp_path / "conf" / "task").mkdir(parents=True, exist_ok=True)
    (tmp_path / "conf" / "task" / "evil.yaml").write_text(
        "# @package _global_\n"
        "defaults:\n  - /task/arc_easy@task\n  - _self_\n"
        "task:\n  name: evil\n" + body
    )
    return [f"hydra.searchpath=[file://{tmp_path / 'conf'}]", "task=evil"]


SEARCHPATH_CALLBACK = "hydra:\n  callbacks:\n    evil:\n      _target_: evilpkg.hook\n"
SELF_ALLOWING = "allow_targets: [evilpkg.]\n" + SEARCHPATH_CALLBACK


@pytest.fixture()
def evil(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``evilpkg`` importable in this process and in the ``mill`` it starts; the marker."""
    pkg = tmp_path / "lib" / "evilpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(EVIL)
    marker = tmp_path / "imported"
    monkeypatch.setenv("EVIL_MARKER", str(marker))
    monkeypatch.setenv(
        "PYTHONPATH", f"{tmp_path / 'lib'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    yield marker
    sys.modules.pop("evilpkg", None)


def _untouched(marker: Path) -> None:
    assert not marker.exists(), "evilpkg was imported"
    assert not Path(f"{marker}-called").exists(), "evilpkg.hook was called"


@pytest.mark.parametrize(("case", "overrides", "key"), HOOKS, ids=[h[0] for h in HOOKS])
def test_api_refuses_every_hydra_hook(case, overrides, key, evil: Path, tmp_path: Path) -> None:
    import mill

    with pytest.raises(ConfigError) as info:
        mill.evaluate(task="arc_easy", model="fake", overrides=_materialize(overrides, tmp_path))
    message = str(info.value)
    assert key in message and "\n" not in message, message
    _untouched(evil)


def test_api_refuses_a_searchpath_task_that_sets_a_callback(evil: Path, tmp_path: Path) -> None:
    import mill

    with pytest.raises(ConfigError, match=r"hydra\.callbacks\.evil\._target_='evilpkg\.hook'"):
        mill.compose(_searchpath_task(tmp_path, SEARCHPATH_CALLBACK))
    _untouched(evil)


def test_a_config_file_cannot_allow_its_own_code(evil: Path, tmp_path: Path) -> None:
    import mill

    with pytest.raises(ConfigError, match="allow_targets=.* is set by a config file"):
        mill.compose(_searchpath_task(tmp_path, SELF_ALLOWING))
    _untouched(evil)


def test_shipped_configs_pass(tmp_path: Path) -> None:
    """What Mill ships composes: its logging, its callback, the basic and SLURM plugins."""
    import mill
    from mill.instantiate import check_composed

    mill.compose(["task=arc_easy", "model=fake"])
    mill.compose(["hydra/job_logging=default", "hydra/hydra_logging=default"])
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    from hydra import compose, initialize_config_module

    with initialize_config_module("mill.conf", version_base="1.3"):
        cfg = compose("mill", ["hydra/launcher=slurm"], return_hydra_config=True)
    check_composed(cfg, ["hydra/launcher=slurm"])


def test_the_command_line_allow_list_admits_a_package(evil: Path) -> None:
    import mill

    cfg = mill.compose(["+hydra.callbacks.ok._target_=evilpkg.hook", "+allow_targets=[evilpkg.]"])
    assert list(cfg.allow_targets) == ["evilpkg."]


# --- the real command: nothing imported, nothing run, no folder, exit 2 ----------------


def _refused(proc, key: str, marker: Path, run_dir: Path) -> None:
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mill: error: ")]
    assert len(errors) == 1 and key in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    _untouched(marker)
    assert not run_dir.exists(), "the run folder was made"


@pytest.mark.slow
def test_issue_repro_callback_makedirs_is_refused(tmp_path: Path) -> None:
    made = tmp_path / "x"
    run_dir = tmp_path / "run"
    proc = run_mill(
        "task.limit=2",
        "+hydra.callbacks.evil._target_=os.makedirs",
        f"+hydra.callbacks.evil.name={made}",
        f"hydra.run.dir={run_dir}",
    )
    _refused(proc, "hydra.callbacks.evil._target_='os.makedirs'", tmp_path / "none", run_dir)
    assert not made.exists()


@pytest.mark.slow
@pytest.mark.parametrize(("case", "overrides", "key"), HOOKS, ids=[h[0] for h in HOOKS])
def test_cli_refuses_every_hydra_hook(case, overrides, key, evil: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    overrides = _materialize(overrides, tmp_path)
    proc = run_mill("model=fake", "task.limit=2", *overrides, f"hydra.run.dir={run_dir}")
    _refused(proc, key, evil, run_dir)


@pytest.mark.slow
@pytest.mark.parametrize(
    "body", [SEARCHPATH_CALLBACK, SELF_ALLOWING], ids=["hook", "self-allowing"]
)
def test_cli_refuses_a_searchpath_task_yaml(body: str, evil: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    proc = run_mill("model=fake", *_searchpath_task(tmp_path, body), f"hydra.run.dir={run_dir}")
    _refused(
        proc,
        "is set by a config file" if "allow" in body else "hydra.callbacks.evil",
        evil,
        run_dir,
    )


@pytest.mark.slow
def test_sweep_refuses_before_its_first_job(evil: Path, tmp_path: Path) -> None:
    """-m: the master config's hooks, and a hook only one job's config has (the second
    task of the sweep), are refused before any job runs or the sweep folder is made."""
    sweep = tmp_path / "sweep"
    common = ["model=fake", "task.limit=2", f"hydra.sweep.dir={sweep}"]
    proc = run_mill(
        "-m", *common, "task=arc_easy,boolq", "+hydra.callbacks.e._target_=evilpkg.hook"
    )
    _refused(proc, "hydra.callbacks.e._target_", evil, sweep)
    search = _searchpath_task(
        tmp_path,
        "hydra:\n  job_logging:\n    handlers:\n      console:\n        class: evilpkg.Thing\n",
    )
    proc = run_mill("-m", *common, search[0], "task=arc_easy,evil")
    _refused(proc, "hydra.job_logging.handlers.console.class", evil, sweep)


@pytest.mark.slow
def test_cli_runs_an_allowed_hook(evil: Path, tmp_path: Path) -> None:
    """The other side: with the package on the command line's allow_targets, Hydra runs
    the callback (so the cases above would have run it too)."""
    proc = run_mill(
        "model=fake",
        "task.limit=2",
        "+hydra.callbacks.ok._target_=evilpkg.Thing",
        "+allow_targets=[evilpkg.]",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert proc.returncode == 0, proc.stderr
    assert Path(f"{evil}-called").exists()


@pytest.mark.slow
def test_sweep_overrides_keep_their_interpolations_for_each_job(tmp_path: Path) -> None:
    """The up-front check composes every job from the overrides as written: an override
    whose value is an interpolation Hydra resolves per job (``${hydra.job.num}``, Hydra's
    own default subdir) is not resolved by the check (it was: MissingMandatoryValue)."""
    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m",
        "model=fake",
        "task.limit=2",
        "task=arc_easy,boolq",
        f"hydra.sweep.dir={sweep}",
        "hydra.sweep.subdir=${hydra.job.num}",
        "task.name=${model.name}_${task._target_}",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (sweep / "0" / "results.json").is_file() and (sweep / "1" / "results.json").is_file()


# --- a primary config of the user's own (-cd/-cn) whose hydra.searchpath lists packages --


def _primary(tmp_path: Path, searchpath: str = "pkg://evilpkg") -> Path:
    """A primary config (for ``-cd <dir> -cn exp``) built on Mill's, whose own
    ``hydra.searchpath`` names a package: Hydra imports it while it composes."""
    conf = tmp_path / "myconf"
    conf.mkdir(exist_ok=True)
    (conf / "exp.yaml").write_text(
        "defaults:\n  - mill\n  - _self_\n"
        f"hydra:\n  searchpath:\n    - pkg://mill.conf\n    - {searchpath}\n"
    )
    return conf


def test_a_primary_configs_searchpath_package_is_refused_before_import(
    evil: Path, tmp_path: Path
) -> None:
    from hydra import compose, initialize_config_dir

    from mill.instantiate import checked_composition

    conf = _primary(tmp_path)
    with pytest.raises(ConfigError) as info:
        with checked_composition(), initialize_config_dir(str(conf), version_base="1.3"):
            compose("exp", ["model=fake"], return_hydra_config=True)
    message = str(info.value)
    assert "hydra.searchpath='pkg://evilpkg'" in message and "exp" in message, message
    assert "\n" not in message
    _untouched(evil)


def test_a_primary_configs_searchpath_of_allowed_packages_composes(tmp_path: Path) -> None:
    """``pkg://mill.conf`` (an allowed package) and a ``file://`` folder pass; the command
    line's ``hydra.searchpath`` replaces the primary's (Hydra reads one or the other)."""
    from hydra import compose, initialize_config_dir

    from mill.instantiate import checked_composition

    conf = _primary(tmp_path, f"file://{tmp_path}")
    with checked_composition(), initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose("exp", ["model=fake"], return_hydra_config=True)
    assert cfg.model.name == "fake"
    conf = _primary(tmp_path)  # replaced on the command line: evilpkg is not read
    with checked_composition(), initialize_config_dir(str(conf), version_base="1.3"):
        cfg = compose("exp", ["model=fake", "hydra.searchpath=[pkg://mill.conf]"])
    assert cfg.model.name == "fake"


@pytest.mark.slow
def test_cli_refuses_a_primary_configs_searchpath_package(evil: Path, tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    conf = _primary(tmp_path)
    proc = run_mill("-cd", str(conf), "-cn", "exp", "model=fake", f"hydra.run.dir={run_dir}")
    _refused(proc, "hydra.searchpath='pkg://evilpkg'", evil, run_dir)


# --- a sweeper whose jobs are not known up front ------------------------------------------

BATCH_SWEEPER = """\
from hydra.core.plugins import Plugins
from hydra.plugins.sweeper import Sweeper


class BatchSweeper(Sweeper):
    \"\"\"Launches its batches one after the other, as an adaptive sweeper (Optuna, Ax)
    launches the trials it proposes from the results so far: Mill learns a batch's jobs
    only when the sweeper launches it.\"\"\"

    def __init__(self, batches):
        self.batches = batches

    def setup(self, *, hydra_context, task_function, config):
        self.config = config
        self.launcher = Plugins.instance().instantiate_launcher(
            hydra_context=hydra_context, task_function=task_function, config=config
        )

    def sweep(self, arguments):
        done = []
        for batch in self.batches:
            jobs = [list(arguments) + list(job) for job in batch]
            done += self.launcher.launch(jobs, initial_job_idx=len(done))
            for ret in done:
                ret.return_value  # a failed job stops the sweep, as in Hydra's sweepers
        return done
"""


def _batch_sweeper(tmp_path: Path, batches: str) -> list[str]:
    """``BatchSweeper`` as an installed Hydra plugin (``hydra_plugins.*`` on the path of
    the ``mill`` a test starts) and a sweeper config ``batches`` selecting it."""
    plugin = tmp_path / "lib" / "hydra_plugins" / "mill_test_batch_sweeper"
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text(BATCH_SWEEPER)
    conf = tmp_path / "sweeperconf" / "hydra" / "sweeper"
    conf.mkdir(parents=True)
    (conf / "batches.yaml").write_text(
        "_target_: hydra_plugins.mill_test_batch_sweeper.BatchSweeper\nbatches: " + batches
    )
    return [f"hydra.searchpath=[file://{tmp_path / 'sweeperconf'}]", "hydra/sweeper=batches"]


def _run_batches(tmp_path: Path, batches: str):
    """``mill -m`` on the fake model with :data:`BATCH_SWEEPER` launching ``batches``."""
    sweep = tmp_path / "sweep"
    sweeper = _batch_sweeper(tmp_path, batches)
    proc = run_mill("-m", "model=fake", "task=arc_easy", *sweeper, f"hydra.sweep.dir={sweep}")
    return proc, sweep


@pytest.mark.slow
def test_a_sweeper_that_proposes_jobs_is_checked_batch_by_batch(evil: Path, tmp_path: Path) -> None:
    """The sweeper's second batch holds a job with a refused hook (it is only data in the
    sweeper's config: the master config passes). The first batch runs; the second is
    refused with one line, exit 2, before any of its jobs runs (its allowed first job
    included) and before anything of evilpkg is imported."""
    batches = (
        "[[[task.limit=1]], "
        "[[task.limit=2], [task.limit=3, '+hydra.callbacks.e._target_=evilpkg.hook']]]"
    )
    proc, sweep = _run_batches(tmp_path, batches)
    assert proc.returncode == 2, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mill: error: ")]
    assert len(errors) == 1 and "hydra.callbacks.e._target_='evilpkg.hook'" in errors[0], (
        proc.stderr[-3000:]
    )
    assert "Traceback" not in proc.stderr + proc.stdout
    _untouched(evil)
    jobs = sorted(p.name for p in sweep.iterdir() if p.is_dir() and not p.name.startswith("."))
    assert len(jobs) == 1, jobs  # the first batch's job, and no job of the refused batch
    assert (sweep / jobs[0] / "results.json").is_file()


@pytest.mark.slow
def test_a_sweeper_of_the_users_runs_its_batches(evil: Path, tmp_path: Path) -> None:
    """The other side: the same sweeper with allowed jobs runs every batch."""
    proc, sweep = _run_batches(tmp_path, "[[[task.limit=1]], [[task.limit=2], [task.limit=3]]]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(list(sweep.glob("*/results.json"))) == 3


@pytest.mark.parametrize(
    "override", ["+model.x._target_=evilpkg.hook", "+task.dataset.y._target_=evilpkg.hook"]
)
def test_a_target_outside_hydra_is_refused_at_composition_by_its_full_key(
    override: str, evil: Path
) -> None:
    """Issue 35, item 5: a model-level ``_target_`` was refused only after the model loaded,
    naming ``x._target_``; at composition it is refused naming its full key."""
    import mill

    key = override.lstrip("+").split("=")[0]
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}='evilpkg\.hook' is not allowed"):
        mill.compose(["task=arc_easy", "model=fake", override])
    _untouched(evil)
