"""What long phases report progress to, and the progress that reports nothing.

The evaluator reports phases (``building requests``, ``scoring requests``) to a
:class:`Progress`; the console renders them with :class:`mill.report.progress.PhaseProgress`,
and everything that must stay silent (ranks other than 0, scripts, tests) uses
:class:`NullProgress`.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """A sequence of phases, each with a known number of steps."""

    def phase(self, name: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...


class NullProgress:
    """A :class:`Progress` that reports nothing."""

    def phase(self, name: str, total: int) -> None:
        return None

    def advance(self, n: int = 1) -> None:
        return None

    def done(self) -> None:
        return None
