"""Math answers checked for equivalence, not by string: Hugging Face's ``math-verify``
(the ``math`` extra) configured as lighteval 0.13's math metrics configure their copy of it.

Both the gold and the prediction are read with the two extraction targets lighteval's
``pass_at_k_math`` / ``avg_at_n_math`` use (``ExprExtractionConfig()`` and
``LatexExtractionConfig()``: plain expressions and LaTeX, ``\\boxed{}`` first), fallback
``first_match``, extraction ``any_match``; they are equal when any extracted gold equals any
extracted prediction under ``verify`` with numbers compared to 6 digits (``precision=6``).
``\\frac{1}{2}``, ``0.5`` and ``1/2`` are one answer.

Where Mill differs on purpose (docs/reasoning.md): a gold that does not parse is refused when
the docs are built (lighteval falls back to comparing strings); the time limits are Mill's
own, one per parse and one per comparison (``timeout_s``, 5 s as lighteval's), and hold in
any thread: math-verify's own limit is ``signal.alarm``, which works only in the main
thread, so there Mill arms its own timer around each step, and in any other thread (a
served model's workers) the check runs in a child process whose main thread does the same,
killed if it outlives the limit. A check that runs out of time is wrong and counted
(:attr:`MathChecker.timeouts`), never hung.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from mill.errors import ConfigError

EXTRA = "pip install 'mill-eval[math]' (math-verify, with the ANTLR 4.9 parser Hydra shares)"
"""How to install the checker, as every message about it says."""

T = TypeVar("T")

CHECKS_KEPT = 100_000
"""Checks kept for the metrics that read the same generation again (then forgotten)."""


def require_math_verify(what: str) -> None:
    """ConfigError (one line naming the extra) when math-verify is not installed."""
    try:
        import math_verify  # noqa: F401
    except ImportError as err:
        raise ConfigError(
            f"{what} checks answers with math-verify, which is not installed: {EXTRA}"
        ) from err


class _OutOfTime(BaseException):
    """Raised by Mill's timer inside a check (a BaseException, so that math-verify's own
    ``except Exception`` cannot swallow it)."""


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def bounded(fn: Callable[[], T], seconds: float) -> tuple[T | None, bool]:
    """(``fn()``, False), or (None, True) when it ran out of ``seconds`` (main thread only:
    a real-time timer whose signal raises inside it; the previous handler and timer are
    restored)."""

    def expire(signum: int, frame: Any) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(), False
    except _OutOfTime:
        return None, True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _quiet() -> None:
    """math-verify warns once that its own timer is off (Mill bounds each step itself)."""
    import logging

    for name in ("math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)


def _targets() -> list[Any]:
    from math_verify import ExprExtractionConfig, LatexExtractionConfig

    return [ExprExtractionConfig(), LatexExtractionConfig()]


def _parse(text: str) -> list[Any]:
    from math_verify import parse

    # no math-verify timer (signal.alarm): the caller bounds the call
    return list(parse(text, _targets(), parsing_timeout=None))


def _verify(gold: list[Any], prediction: list[Any], precision: int) -> bool:
    from math_verify import verify

    return bool(verify(gold, prediction, float_rounding=precision, timeout_seconds=None))


@dataclass(frozen=True)
class Reading:
    """What was read from one text: math-verify's extractions (empty when nothing parsed)."""

    parsed: list[Any]
    timed_out: bool = False

    @property
    def text(self) -> str | None:
        """The extracted answer as written (math-verify keeps the matched string last),
        else its parsed form; None when nothing was read."""
        if not self.parsed:
            return None
        last = self.parsed[-1]
        return last if isinstance(last, str) else str(self.parsed[0])


@dataclass(frozen=True)
class Check:
    """One prediction checked against one gold."""

    correct: bool
    extracted: str | None
    """What was read from the prediction, None if nothing."""
    timed_out: bool = False


def _read(text: str, seconds: float) -> Reading:
    parsed, late = bounded(lambda: _parse(text), seconds)
    return Reading(list(parsed or []), late)


def _same(
    gold: list[Any], prediction: list[Any], precision: int, seconds: float
) -> tuple[bool, bool]:
    correct, late = bounded(lambda: _verify(gold, prediction, precision), seconds)
    return bool(correct), late


class MathChecker:
    """Is a generated answer mathematically equal to the gold? (lighteval 0.13's
    configuration; see the module). ``timeouts`` counts the steps that ran out of time."""

    def __init__(self, precision: int = 6, timeout_s: float = 5.0) -> None:
        require_math_verify("a math answer check")
        _quiet()
        self.precision = int(precision)
        self.timeout_s = float(timeout_s)
        self.timeouts = 0
        self._golds: dict[str, Reading] = {}
        self._checked: dict[tuple[str, str], Check] = {}
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    def read(self, text: str) -> Reading:
        """The extractions of ``text`` (a gold or a prediction), within the time limit."""
        if _in_main_thread():
            reading = _read(text, self.timeout_s)
        else:
            found = self._in_child("read", (text, self.timeout_s))
            reading = found if found is not None else Reading([], True)
        self.timeouts += int(reading.timed_out)
        return reading

    def gold(self, text: str) -> Reading:
        """The gold's reading, kept for the next sample of the same problem."""
        if text not in self._golds:
            self._golds[text] = self.read(text)
        return self._golds[text]

    def same(self, gold: Reading, prediction: Reading) -> bool:
        """Is any extraction of ``prediction`` equal to any of ``gold``? (to 6 digits)"""
        if not gold.parsed or not prediction.parsed:
            return False
        args = (gold.parsed, prediction.parsed, self.precision, self.timeout_s)
        if _in_main_thread():
            correct, late = _same(*args)
        else:
            found = self._in_child("same", args)
            correct, late = found if found is not None else (False, True)
        self.timeouts += int(late)
        return correct

    def check(self, gold_text: str, prediction: str) -> Check:
        """``prediction`` checked against ``gold_text`` (a gold that does not parse is
        wrong for every prediction: the tasks refuse such rows before any model runs).
        Kept: pass@1, pass@8, maj@8 and avg@n of one generation check it once."""
        key = (gold_text, prediction)
        if key not in self._checked:
            if len(self._checked) >= CHECKS_KEPT:
                self._checked.clear()
            reading = self.read(prediction)
            correct = self.same(self.gold(gold_text), reading)
            self._checked[key] = Check(correct, reading.text, reading.timed_out)
        return self._checked[key]

    def _in_child(self, step: str, args: tuple[Any, ...]) -> Any:
        """One step in the worker process (whose main thread bounds it); None when the
        worker itself outlived the limit (it is then killed, and the next step starts
        another)."""
        with self._lock:
            if self._worker is None:
                self._worker = _Worker()
            try:
                return self._worker.call(step, args, self.timeout_s + 60)  # its start included
            except (TimeoutError, EOFError, OSError):
                self._worker.kill()
                self._worker = None
                return None

    def close(self) -> None:
        """Stop the worker process, if one was started."""
        with self._lock:
            if self._worker is not None:
                self._worker.kill()
                self._worker = None


STEPS: dict[str, Callable[..., Any]] = {"read": _read, "same": _same}
"""What the worker process runs, by name."""


class _Worker:
    """A Python process that runs checks in its main thread (where the timer works):
    pickled (step, args) in on stdin, the pickled result out on stdout, each framed by its
    length. Started with ``python -c``, so it never imports the caller's ``__main__``."""

    def __init__(self) -> None:
        import subprocess
        import sys

        self.process = subprocess.Popen(
            [sys.executable, "-c", "from mill.metrics.equivalence import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def call(self, step: str, args: tuple[Any, ...], seconds: float) -> Any:
        import pickle

        assert self.process.stdin is not None and self.process.stdout is not None
        _send(self.process.stdin, pickle.dumps((step, args)))
        return pickle.loads(_receive(self.process.stdout, seconds))

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()


def _send(stream: Any, payload: bytes) -> None:
    stream.write(len(payload).to_bytes(8, "big") + payload)
    stream.flush()


def _receive(stream: Any, seconds: float | None) -> bytes:
    """One framed message; TimeoutError when it has not come within ``seconds``."""
    import os
    import select
    import time

    deadline = None if seconds is None else time.monotonic() + seconds
    fd, data, size = stream.fileno(), b"", None
    while size is None or len(data) < size + 8:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError("the math check's worker did not answer in time")
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            raise EOFError("the math check's worker ended")
        data += chunk
        if size is None and len(data) >= 8:
            size = int.from_bytes(data[:8], "big")
    return data[8:]


def serve() -> None:
    """The worker's loop (:class:`_Worker`): until its input closes."""
    import pickle
    import sys

    _quiet()
    source, sink = sys.stdin.buffer, sys.stdout.buffer
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        step, args = pickle.loads(source.read(int.from_bytes(head, "big")))
        _send(sink, pickle.dumps(STEPS[step](*args)))


def majority(readings: Sequence[Reading], same: Callable[[Reading, Reading], bool]) -> int | None:
    """The index of the majority answer among ``readings``: answers are grouped by ``same``
    (equivalence, not string equality), the largest group wins, ties go to the group seen
    first, and its first answer stands for it. Answers with nothing read form one group of
    their own; None when it wins."""
    groups: list[list[int]] = []
    unread: list[int] = []
    for i, reading in enumerate(readings):
        if not reading.parsed:
            unread.append(i)
            continue
        for group in groups:
            if same(readings[group[0]], reading):
                group.append(i)
                break
        else:
            groups.append([i])
    if unread:
        groups.append(unread)
    best = max(sorted(groups, key=lambda g: g[0]), key=len)  # the first largest group
    return None if best is unread else best[0]
