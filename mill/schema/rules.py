"""The rules a setting is declared with (:class:`Number`, :class:`Choice`, :class:`Flag`,
:class:`Text`, :class:`Nested`), the bounds they share, and :func:`check_number`, which
checks one value by its rule and types it (one line naming the key, the value and what is
accepted). :func:`checked` is the check of a constructor's argument: skipped inside
:func:`already_typed`, where the objects are built from values a run already typed.

Nothing here imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from mill.errors import ConfigError

_REFUSED: Any = object()
"""What a rule's ``_one`` returns for a value it does not accept."""

SEED_MAX = 2**32 - 1
"""The largest seed: numpy's ``RandomState`` takes 0 to 2**32 - 1 (torch and Python more)."""
SIZE_MAX = 2**31 - 1
"""The largest count or size (tokens, bytes, docs): the largest 32-bit integer, what tensor
shapes, C libraries and resource limits all take."""
ITERS_MAX = 1_000_000
"""The most paired or vectorised bootstrap resamples (``mill compare iters``, arena-hard's
``rounds``): drawn in numpy chunks, 1,000,000 of 1,000 docs took about 25 s here; a
larger count allocates terabytes (``iters=1e12``: 7.28 TiB) instead of refining an
interval."""
STDERR_ITERS_MAX = 100_000
"""The most resamples of ``runner.bootstrap_iters``: lm-eval's own default (100,000). Its
stderrs resample in Python, one statistic per resample: 10,000 of 1,000 values took 2.8 s
per metric here, so 100,000 is about half a minute per metric and 1e12 never ends."""


@dataclass(frozen=True)
class Number:
    """What a numeric setting accepts: a finite number at least ``minimum`` (above it when
    ``above``), at most ``maximum``, a whole number when ``whole``, null when ``optional``,
    the ``words`` listed, and a non-empty list of such numbers when ``each``. Every number
    has both bounds (a declaration without ``maximum`` is refused when the module loads): a
    value far too large (``runner.seed=1e30``, ``runner.bootstrap_iters=1e12``) is one line
    here, not a library's traceback, an allocation of terabytes or a hang."""

    minimum: float
    whole: bool = True
    optional: bool = False
    words: tuple[str, ...] = ()
    above: bool = False
    maximum: float | None = None
    each: bool = False
    meaning: str = ""

    def __post_init__(self) -> None:
        if self.maximum is None:
            raise TypeError(f"Number({self.meaning!r}) declares no maximum")

    def accepted(self) -> str:
        """``a whole number >= 1 and <= 1024 (or auto)``: the accepted range, as messages and the
        configuration reference say it."""
        kind = "a whole number" if self.whole else "a finite number"
        bound = f" {'>' if self.above else '>='} {_text(self.minimum)}"
        bound += f" and <= {_text(self.maximum)}" if self.maximum is not None else ""
        also = [*self.words, *(["null"] if self.optional else [])]
        alternatives = f" (or {' or '.join(also)})" if also else ""
        listed = " (or a non-empty list of them)" if self.each else ""
        return f"{kind}{bound}{alternatives}{listed}"

    def _one(self, value: Any) -> Any:
        if isinstance(value, str) and value.lower() in self.words:
            return value.lower()
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return _REFUSED
        if not math.isfinite(value):
            return _REFUSED
        if self.whole and not float(value).is_integer():
            return _REFUSED
        if (value <= self.minimum) if self.above else (value < self.minimum):
            return _REFUSED
        if self.maximum is not None and value > self.maximum:
            return _REFUSED
        return int(value) if self.whole else value


@dataclass(frozen=True)
class Choice:
    """One of ``choices`` (strings, compared without case, and booleans), or null when
    ``optional``."""

    choices: tuple[str | bool, ...]
    optional: bool = False
    meaning: str = ""
    each = False

    def accepted(self) -> str:
        names = [_word(c) for c in self.choices]
        listed = ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]
        return f"one of {listed}" + (" (or null)" if self.optional else "")

    def _one(self, value: Any) -> Any:
        for choice in self.choices:
            if isinstance(choice, bool):
                if _boolean(value) is choice:
                    return choice
            elif isinstance(value, str) and value.lower() == choice:
                return choice
        return _REFUSED


@dataclass(frozen=True)
class Flag:
    """A boolean (``true`` or ``false``), or null when ``optional``."""

    optional: bool = False
    meaning: str = ""
    each = False

    def accepted(self) -> str:
        return "true or false" + (" (or null)" if self.optional else "")

    def _one(self, value: Any) -> Any:
        found = _boolean(value)
        return _REFUSED if found is None else found


@dataclass(frozen=True)
class Text:
    """One string (a name, a path, a template), ``true``/``false`` too when ``flags``, or
    null when ``optional``; when ``pattern`` is given, only a string it matches whole
    (``shape`` says which in messages: ``model.device=gpu`` is refused here, before torch
    says so in three lines). A number is refused, never read as its text: the YAML parser
    has already turned what was typed into a number (``model.name=nan`` is a float,
    ``1e3`` the float 1000.0, ``1.10`` the float 1.1), so its text may not be what was
    written; the message says to quote it."""

    optional: bool = False
    flags: bool = False
    meaning: str = ""
    pattern: str = ""
    shape: str = ""
    each = False

    def accepted(self) -> str:
        also = [*(["true", "false"] if self.flags else []), *(["null"] if self.optional else [])]
        return (self.shape or "a string") + (f" (or {' or '.join(also)})" if also else "")

    def _one(self, value: Any) -> Any:
        if isinstance(value, bool):
            return value if self.flags else _REFUSED
        if not isinstance(value, str):
            return _REFUSED
        return value if not self.pattern or re.fullmatch(self.pattern, value) else _REFUSED


@dataclass(frozen=True)
class Nested:
    """A list (``kind="list"``), a mapping (``"mapping"``) or either (``"any"``); one
    string too when ``text``; null when ``optional``. Its items are the subsystem's to
    read (task members, templates, file names per split)."""

    kind: str = "list"
    optional: bool = False
    text: bool = False
    meaning: str = ""
    each = True

    def accepted(self) -> str:
        kind = {"list": "a list", "mapping": "a mapping", "any": "a list or a mapping"}
        also = [*(["a string"] if self.text else []), *(["null"] if self.optional else [])]
        return kind[self.kind] + (f" (or {' or '.join(also)})" if also else "")

    def _one(self, value: Any) -> Any:
        if isinstance(value, str):
            return value if self.text else _REFUSED
        is_list = isinstance(value, Sequence) and not isinstance(value, bytes)
        if is_list and self.kind in ("list", "any"):
            return value
        if isinstance(value, Mapping) and self.kind in ("mapping", "any"):
            return value
        return _REFUSED


Rule = Number | Choice | Flag | Text | Nested


def positive(maximum: float, meaning: str) -> Number:
    """A finite number above 0 and at most ``maximum`` (a time, a size, a level)."""
    return Number(0, whole=False, above=True, maximum=maximum, meaning=meaning)


def _text(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else f"{number:g}"


def _boolean(value: Any) -> bool | None:
    """A boolean, or the word ``true``/``false`` (any case) as one; else None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def _word(choice: str | bool) -> str:
    return str(choice).lower() if isinstance(choice, bool) else choice


def check_number(setting: str, value: Any, rule: Rule) -> Any:
    """``value`` when ``rule`` accepts it (whole numbers as int, words and choices in lower
    case), else ConfigError naming ``setting`` (the full key), the value and what is
    accepted; a list where one value is expected says so."""
    if value is None and rule.optional:
        return value
    is_list = isinstance(value, Sequence) and not isinstance(value, (str, bytes))
    if is_list and isinstance(rule, Number) and rule.each:
        found = [rule._one(v) for v in value]
        if found and all(v is not _REFUSED for v in found):
            return found
    else:
        found_one = rule._one(value)
        if found_one is not _REFUSED:
            return found_one
    unknown = isinstance(rule, Choice) and isinstance(value, str)
    message = f"{setting}={value!r} is {'unknown' if unknown else 'not allowed'}: give "
    message += rule.accepted()
    if isinstance(rule, Text) and isinstance(value, (int, float)) and not isinstance(value, bool):
        message += f"; {value} was read as a number: quote it (\"{setting}='{value}'\")"
    if is_list and value and not rule.each:
        sweep = ",".join(str(v) for v in value)
        message += f"; one value, not a list (a run per value: mill -m {setting}={sweep})"
    raise ConfigError(message)


_TYPED: ContextVar[bool] = ContextVar("mill_settings_typed", default=False)
"""True inside :func:`already_typed`: context-local, so it holds in that block of that
thread alone (another thread, another run, starts without it)."""


@contextmanager
def already_typed() -> Iterator[None]:
    """A block whose objects are built from values already typed by their rules (a run's,
    :class:`mill.runner.run_config.RunConfig`'s slices; a task's typed spec): in it,
    :func:`checked` returns a value as given instead of checking it again, so a run checks
    each setting once. Outside it (an object built in Python) every value is checked."""
    token = _TYPED.set(True)
    try:
        yield
    finally:
        _TYPED.reset(token)


def is_typed() -> bool:
    """Whether this is an :func:`already_typed` block."""
    return _TYPED.get()


def checked(setting: str, value: Any, rule: Rule) -> Any:
    """``value`` checked and typed by ``rule`` (:func:`check_number`), or as given inside
    :func:`already_typed`: the check of a constructor's argument."""
    return value if _TYPED.get() else check_number(setting, value, rule)
