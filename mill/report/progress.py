"""Progress per phase: a rich bar with ETA on a terminal, plain periodic lines otherwise."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


class PhaseProgress:
    """Reports the evaluator's phases (building requests, scoring requests, ...)."""

    def __init__(self, console: Console, interactive: bool, every_s: float = 10.0) -> None:
        self.console = console
        self.interactive = interactive
        self.every_s = every_s
        self._bar: Progress | None = None
        self._task_id: TaskID | None = None
        self._name = ""
        self._total = 0
        self._count = 0
        self._start = self._last = 0.0
        self._first: tuple[float, int] | None = None  # when the first batch finished, and its size

    def phase(self, name: str, total: int) -> None:
        self.done()
        self._name, self._total, self._count = name, total, 0
        self._start = self._last = time.monotonic()
        self._first = None
        if self.interactive:
            self._bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                TextColumn("eta"),
                TimeRemainingColumn(),
                console=self.console,
                transient=False,
            )
            self._bar.start()
            self._task_id = self._bar.add_task(name, total=total)
        else:
            self.console.print(f"[mill] {name}: 0/{total}")

    def advance(self, n: int = 1) -> None:
        self._count += n
        if self._bar is not None and self._task_id is not None:
            self._bar.advance(self._task_id, n)
            return
        now = time.monotonic()
        if (
            self._first is None
        ):  # the first batch also pays for warming up: the rate starts after it
            self._first = (now, self._count)
        if now - self._last >= self.every_s and self._count < self._total:
            self._last = now
            since, done = self._first
            rate = (self._count - done) / max(now - since, 1e-9)
            eta = f", eta {(self._total - self._count) / rate:.0f}s" if rate > 0 else ""
            self.console.print(
                f"[mill] {self._name}: {self._count}/{self._total} "
                f"({100 * self._count / max(self._total, 1):.0f}%{eta})"
            )

    def done(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        elif self._name:
            elapsed = time.monotonic() - self._start
            self.console.print(
                f"[mill] {self._name}: {self._count}/{self._total} in {elapsed:.1f}s"
            )
        self._name = ""


class LoadingLine:
    """What a model's loading is doing (:func:`mill.progress.loading_step`): on a terminal
    one status line with a spinner and the seconds so far; otherwise a line per step. Ends
    with the seconds of each step (``loaded model x in 6.1s: importing ... 4.2s, ...``)."""

    def __init__(self, console: Console, interactive: bool, name: str) -> None:
        self.console = console
        self.name = name
        self._status = console.status(f"[mill] loading model {name}") if interactive else None
        self._steps: list[tuple[str, float]] = []
        self._start = time.monotonic()

    def __enter__(self) -> LoadingLine:
        if self._status is not None:
            self._status.start()
        else:
            self.console.print(f"[mill] loading model {self.name}")
        return self

    def step(self, what: str) -> None:
        self._steps.append((what, time.monotonic()))
        if self._status is not None:
            self._status.update(f"[mill] loading model {self.name}: {what}")
        else:
            self.console.print(f"[mill] loading model {self.name}: {what}")

    def __exit__(self, kind: object, err: object, trace: object) -> None:
        if self._status is not None:
            self._status.stop()
        if kind is not None:
            return
        end = time.monotonic()
        times = [*(t for _, t in self._steps[1:]), end] if self._steps else []
        parts = [f"{what} {t - s:.1f}s" for (what, s), t in zip(self._steps, times, strict=True)]
        said = f": {', '.join(parts)}" if parts else ""
        line = f"[mill] loaded model {self.name} in {end - self._start:.1f}s{said}"
        self.console.print(line, soft_wrap=True)
