"""What long phases report progress to, and the progress that reports nothing.

The evaluator reports phases (``building requests``, ``scoring requests``) to a
:class:`Progress`; the console renders them with :class:`mill.report.progress.PhaseProgress`,
and everything that must stay silent (ranks other than 0, scripts, tests) uses
:class:`NullProgress`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
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


_LOADING: ContextVar[Callable[[str], None] | None] = ContextVar("mill_loading", default=None)


@contextmanager
def loading_steps(report: Callable[[str], None]) -> Iterator[None]:
    """While a model loads, :func:`loading_step` calls ``report`` with each step's name
    (the runner shows them on the loading line)."""
    token = _LOADING.set(report)
    try:
        yield
    finally:
        _LOADING.reset(token)


def loading_step(what: str) -> None:
    """A model's loader says what it starts doing (``importing torch``, ``tokenizer``,
    ``weights``); nothing happens outside :func:`loading_steps`."""
    report = _LOADING.get()
    if report is not None:
        report(what)
