"""What a program run is given (:class:`ExecutionSettings`) and what it yields (:class:`Verdict`).

The settings are the ``execution`` config group (``conf/execution/bwrap.yaml``, ``none.yaml``);
:meth:`ExecutionSettings.identity` is everything that can change a verdict, so the verdict
cache keys on it (the number of workers is not part of it: it changes the speed only).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.schema import ExecutionFields

STATUSES = ("passed", "failed", "timed_out", "out_of_memory", "killed")
# bumped whenever the sandbox or its harness changes in a way that may change a verdict
SANDBOX_VERSION = 3


def default_python() -> str:
    """The running Python's base interpreter (a virtualenv's ``python`` resolves to it), so
    programs see the standard library and nothing the evaluating environment installed."""
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    if base.is_file():
        return str(base)
    return os.path.realpath(sys.executable)


@dataclass(frozen=True)
class ExecutionSettings(ExecutionFields):
    """How the model's programs run (the fields and their rules:
    :class:`mill.schema.ExecutionFields`). ``sandbox="bwrap"`` isolates each program with
    bubblewrap (see :mod:`mill.execution.sandbox`); ``"none"`` runs them without isolation,
    refused unless ``allow_unsafe``."""

    def __post_init__(self) -> None:
        # the declared rules (sandbox's choices, the limits' ranges), full keys named: the
        # same check composition made, for objects built in Python
        super().__post_init__()
        if self.python is not None and not os.access(self.python, os.X_OK):
            raise ConfigError(
                f"execution.python={self.python!r} is not an executable file; give the path of "
                "a Python interpreter, or null for the running Python's base interpreter"
            )

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> ExecutionSettings:
        """The settings from the ``execution`` config group (a mapping; unknown keys refused)."""
        values = dict(config or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"unknown execution setting(s) {', '.join(unknown)}; known: "
                f"{', '.join(sorted(known))}"
            )
        return cls(**values)

    @property
    def interpreter(self) -> str:
        """The programs' interpreter, resolved."""
        return self.python or default_python()

    @property
    def worker_count(self) -> int:
        """``workers``, or twice the cores: a sandbox spends about half its life waiting on
        the kernel (namespaces made and torn down, the interpreter loaded), so two per core
        keep every core busy (docs/benchmark.md, "The sandbox")."""
        return self.workers or 2 * (len(os.sched_getaffinity(0)) or 1)

    def identity(self) -> dict[str, Any]:
        """Everything that can change a verdict (the verdict cache's key with the program)."""
        identity = asdict(self)
        identity.pop("workers")
        identity.pop("allow_unsafe")
        identity["python"] = os.path.realpath(self.interpreter)
        identity["sandbox_version"] = SANDBOX_VERSION
        return identity


@dataclass(frozen=True)
class Verdict:
    """How one program ended: ``status`` is one of :data:`STATUSES`; ``message`` the first line
    of the exception (failed) or a short reason; ``output_tail`` the end of its stdout+stderr."""

    status: str
    message: str = ""
    duration_s: float = 0.0
    output_tail: str = ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r} is not one of {STATUSES}")

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Verdict:
        return cls(
            status=str(data["status"]),
            message=str(data.get("message", "")),
            duration_s=float(data.get("duration_s", 0.0)),
            output_tail=str(data.get("output_tail", "")),
        )
