"""The typed objects of the config groups whose keys are fixed (``runner``, ``report``,
``execution``, ``data``), each field declared with its rule
(``field(metadata=setting(rule))``): the one declaration of those settings.
:data:`mill.schema.SETTINGS` takes their rules from these fields (:func:`group_rules`), and
so do the checks and the configuration reference. ``execution`` and ``data`` are declared
here by their fields alone (:class:`ExecutionFields`, :class:`DataFields`); the subsystem's
class adds what they mean (:class:`mill.execution.ExecutionSettings`,
:class:`mill.data.DataSource`). The other groups' fields are in
:mod:`mill.schema.components`.

The defaults live in one place, the group's preset in ``conf/`` (``conf/runner/local.yaml``,
``conf/report/console.yaml``), which fills what a node leaves out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.schema.rules import (
    SEED_MAX,
    SIZE_MAX,
    STDERR_ITERS_MAX,
    Choice,
    Flag,
    Number,
    Rule,
    Text,
    check_number,
    checked,
    positive,
)

__all__ = [
    "DataFields",
    "ExecutionFields",
    "ReportSettings",
    "RunnerSettings",
    "check_fields",
    "group_of",
    "group_rules",
    "preset",
    "setting",
]


def setting(rule: Rule) -> dict[str, Rule]:
    """A dataclass field's metadata declaring the rule of its setting."""
    return {"rule": rule}


def group_of(cls: type) -> dict[str, type]:
    """A dataclass field's metadata declaring that it holds a group of its own, the
    dataclass ``cls`` (``task.generation``): its fields are settings under the field's key."""
    return {"group": cls}


def group_rules(group: str, cls: type) -> dict[str, Rule]:
    """``<group>.<field>`` -> the rule each field of the dataclass ``cls`` declares, in
    field order (a field without one is no setting; a field declared by :func:`group_of`
    gives its group's, under ``<group>.<field>.``); ``group`` empty: the config's root."""
    out: dict[str, Rule] = {}
    for f in fields(cls):
        key = f"{group}.{f.name}" if group else f.name
        if "rule" in f.metadata:
            out[key] = f.metadata["rule"]
        elif "group" in f.metadata:
            out.update(group_rules(key, f.metadata["group"]))
    return out


def check_fields(group: str, obj: Any) -> None:
    """Each field of the dataclass instance ``obj`` checked by its declared rule
    (ConfigError naming ``<group>.<field>``): the check of an object built in Python
    (none inside :func:`mill.schema.rules.already_typed`: a run's values are typed)."""
    for f in fields(obj):
        if "rule" in f.metadata:
            checked(f"{group}.{f.name}", getattr(obj, f.name), f.metadata["rule"])


def _typed_fields(group: str, cls: type, node: Mapping[str, Any]) -> dict[str, Any]:
    """``node``'s settings checked and typed by the rules of ``cls``'s fields."""
    rules = group_rules(group, cls)
    return {
        key: check_number(f"{group}.{key}", value, rules[f"{group}.{key}"])
        if f"{group}.{key}" in rules
        else value
        for key, value in node.items()
    }


@cache
def preset(name: str) -> dict[str, Any]:
    """The preset ``conf/<name>`` (``runner/local.yaml``): each setting with its default."""
    from omegaconf import OmegaConf

    text = resources.files("mill.conf").joinpath(name).read_text()
    loaded = OmegaConf.to_container(OmegaConf.create(text))
    assert isinstance(loaded, dict)
    return {str(k): v for k, v in loaded.items()}


@dataclass(frozen=True)
class RunnerSettings:
    """How one experiment runs (``conf/runner/*.yaml``; defaults in ``local.yaml``)."""

    num_processes: int | None = field(
        metadata=setting(Number(1, words=("auto",), maximum=1024, meaning="data-parallel workers"))
    )
    """Data-parallel workers; None means ``auto``: one per visible GPU (1 without GPUs)."""
    launcher: str = field(
        metadata=setting(Choice(("auto", "accelerate", "torchrun"), meaning="how workers start"))
    )
    """How workers start: ``accelerate`` launch (GPUs), ``torchrun`` (CPU), or ``auto``."""
    cpu: bool | None = field(
        metadata=setting(Choice((True, False, "auto"), optional=True, meaning="force CPU workers"))
    )
    """Force CPU workers (gloo); None = CPU only when no GPU is visible."""
    seed: int = field(
        metadata=setting(
            Number(0, maximum=SEED_MAX, meaning="python/numpy/torch seeds and the bootstrap")
        )
    )
    bootstrap_iters: int = field(
        metadata=setting(
            Number(0, maximum=STDERR_ITERS_MAX, meaning="resamples for bootstrap stderrs (0: none)")
        )
    )
    resume: bool = field(
        metadata=setting(Flag(meaning="continue an interrupted run in its folder"))
    )
    """Continue an interrupted run in the same folder (hydra.run.dir=<folder>)."""
    cache: str | None = field(
        metadata=setting(Text(optional=True, flags=True, meaning="run, a folder, or false"))
    )
    """``run``: responses cached in ``<run folder>/cache``; a path: a shared cache folder;
    None: no cache."""
    timeout_s: int = field(
        metadata=setting(
            Number(
                1,
                maximum=7 * 86400,
                meaning="seconds a worker waits for the slowest at a collective",
            )
        )
    )
    """Seconds a collective may wait for the slowest worker before failing."""
    sample_tokens: bool = field(
        default=False,
        metadata=setting(Flag(meaning="samples keep each prompt's and answer's token ids")),
    )
    """Samples (and the run's response cache) keep each prompt's and answer's token ids."""

    @classmethod
    def default(cls) -> RunnerSettings:
        """The ``local`` preset: one process, the run folder's cache."""
        return cls.parse(None)

    @classmethod
    def parse(cls, node: Mapping[str, Any] | None) -> RunnerSettings:
        """The settings of a ``runner`` node that no run config typed (a test's, a
        caller's), typed here by the rules of the fields; settings it leaves out take the
        preset's values. A run's own come typed (:meth:`of_typed`)."""
        return cls.of_typed(_typed_fields("runner", cls, cls._filled(node)))

    @classmethod
    def of_typed(cls, node: Mapping[str, Any] | None) -> RunnerSettings:
        """The settings of a ``runner`` node whose settings are already typed by their rules
        (:class:`mill.runner.run_config.RunConfig`'s), read without checking them again;
        settings it leaves out take the preset's values (Mill's own file, typed as written)."""
        values = cls._filled(node)
        cache = values["cache"]
        if cache is False or cache is None or str(cache).lower() in ("false", "none", "null"):
            cache = None
        elif cache is True or str(cache).lower() in ("true", "run"):
            cache = "run"
        else:
            cache = str(Path(str(cache)).expanduser())
        return cls(
            num_processes=None if values["num_processes"] == "auto" else values["num_processes"],
            launcher=values["launcher"],
            cpu=None if values["cpu"] in (None, "auto") else values["cpu"],
            seed=values["seed"],
            bootstrap_iters=values["bootstrap_iters"],
            resume=values["resume"],
            cache=cache,
            timeout_s=values["timeout_s"],
            sample_tokens=values["sample_tokens"],
        )

    @classmethod
    def _filled(cls, node: Mapping[str, Any] | None) -> dict[str, Any]:
        """``node`` with the preset's value of each setting it leaves out (unknown keys
        refused); ``num_processes`` null is ``auto``."""
        given = dict(node or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(f"runner has no setting {unknown[0]!r}; known: {sorted(known)}")
        filled = {**preset("runner/local.yaml"), **given}
        if filled["num_processes"] is None:
            filled["num_processes"] = "auto"
        return filled

    def use_cpu(self) -> bool:
        """Whether workers run on CPU (imports torch only when it has to look for GPUs)."""
        if self.cpu is not None:
            return self.cpu
        import torch

        return not torch.cuda.is_available()

    def processes(self) -> int:
        """The number of data-parallel workers to start."""
        if self.num_processes is not None:
            return self.num_processes
        if self.use_cpu():
            return 1
        import torch

        return max(1, torch.cuda.device_count())

    def cache_dir(self, run_folder: Path) -> Path | None:
        if self.cache is None:
            return None
        if self.cache == "run":  # the run folder's: checked like every name it writes
            from mill.files import inside

            return inside(run_folder, run_folder / "cache")
        return Path(self.cache)


@dataclass(frozen=True)
class ReportSettings:
    """The ``report`` group of a run (``conf/report/console.yaml``): the console while it
    goes."""

    progress: str = field(
        metadata=setting(Choice(("auto", "always", "never"), meaning="progress bars")),
    )
    """Progress bars: ``auto`` (on a terminal outside CI), ``always`` or ``never``."""
    every_s: float = field(
        metadata=setting(positive(86400, "seconds between progress lines")),
    )
    """Seconds between plain progress lines when not animated."""

    @classmethod
    def of_typed(cls, node: Mapping[str, Any] | None) -> ReportSettings:
        """The settings of a typed ``report`` node; what it leaves out takes the preset's
        value (``conf/report/console.yaml``)."""
        values = {**preset("report/console.yaml"), **(node or {})}
        return cls(progress=str(values["progress"]), every_s=float(values["every_s"]))


@dataclass(frozen=True)
class ExecutionFields:
    """The ``execution`` group's settings (``conf/execution/bwrap.yaml``, ``none.yaml``):
    how code tasks run the model's programs. The defaults are the ``bwrap`` preset's, for an
    object built in Python; checked by their rules when built (:func:`check_fields`)."""

    sandbox: str = field(
        default="bwrap",
        metadata=setting(Choice(("bwrap", "none"), meaning="bwrap (isolated) or none")),
    )
    timeout_s: float = field(
        default=3.0,
        metadata=setting(positive(86400, "wall-clock seconds per program")),
    )
    """Wall clock per program (the program's own run; start-up aside)."""
    workers: int | None = field(
        default=None,
        metadata=setting(
            Number(1, optional=True, maximum=1024, meaning="programs at once (null: 2 per core)")
        ),
    )
    """Programs at once; None: twice the cores (``ExecutionSettings.worker_count``)."""
    memory_gb: float = field(
        default=4.0,
        metadata=setting(positive(1_000_000, "address space per program, GB")),
    )
    """RLIMIT_AS of each program."""
    python: str | None = field(
        default=None,
        metadata=setting(Text(optional=True, meaning="the programs' interpreter")),
    )
    """The programs' interpreter; None: the running Python's base interpreter."""
    allow_unsafe: bool = field(
        default=False, metadata=setting(Flag(meaning="required with execution=none"))
    )
    max_output_bytes: int = field(
        default=1 << 20,
        metadata=setting(Number(1, maximum=SIZE_MAX, meaning="stdout+stderr read per program")),
    )
    """Stdout+stderr beyond this ends the program (failed)."""
    max_processes: int = field(
        default=64,
        metadata=setting(Number(1, maximum=SIZE_MAX, meaning="processes and threads per sandbox")),
    )
    """Processes and threads per sandbox (fork bombs end here)."""
    max_file_mb: float = field(
        default=64.0,
        metadata=setting(positive(1_000_000, "file size limit and tmpfs size, MB")),
    )
    """RLIMIT_FSIZE, and the size of the tmpfs working folder."""
    max_open_files: int = field(
        default=256,
        metadata=setting(
            Number(1, maximum=1 << 20, meaning="open files per program (RLIMIT_NOFILE)")
        ),
    )
    """RLIMIT_NOFILE."""

    def __post_init__(self) -> None:
        check_fields("execution", self)


@dataclass(frozen=True)
class DataFields:
    """The ``data`` group's settings (``conf/data/*.yaml``): where the tasks' documents
    come from. Checked by their rules when built (:func:`check_fields`)."""

    source: str = field(
        default="hub",
        metadata=setting(Choice(("bundled", "hub", "local"), meaning="the data= option")),
    )
    dir: str | None = field(
        default=None,
        metadata=setting(Text(optional=True, meaning="the folder read by data=local")),
    )
    skip_bad_rows: bool = field(
        default=False,
        metadata=setting(Flag(meaning="skip (and count) rows a task cannot read")),
    )
    """Skip (and count) rows that lack what their task needs instead of stopping the run."""

    def __post_init__(self) -> None:
        check_fields("data", self)
