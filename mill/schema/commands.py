"""The typed fields of Mill's other commands' configs (``mill report``, ``mill compare``,
``mill runs``, ``mill view``, ``mill judge``; ``conf/<command>.yaml``), each field declared
with its rule (``field(metadata=setting(rule))``), at the config's root:
:data:`mill.schema.COMMANDS` takes every rule from these fields, as :data:`mill.schema.SETTINGS`
takes the run's from :mod:`mill.schema.groups` and :mod:`mill.schema.components`.

Nothing here imports torch, Hydra or OmegaConf.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mill.schema.groups import setting
from mill.schema.rules import (
    ITERS_MAX,
    SEED_MAX,
    SIZE_MAX,
    Choice,
    Flag,
    Nested,
    Number,
    Text,
    positive,
)

__all__ = ["CompareCommand", "JudgeCommand", "ReportCommand", "RunsCommand", "ViewCommand"]

_PROGRESS = Choice(("auto", "always", "never"), meaning="progress and tables: auto, plain")
_TRUST = Flag(meaning="read files changed since their run wrote them (and say so)")


@dataclass(frozen=True)
class ReportCommand:
    """``mill report``."""

    runs: str | list[str] = field(
        metadata=setting(Nested(text=True, meaning="run folders and/or sweep folders"))
    )
    out: str = field(metadata=setting(Text(meaning="where everything is written")))
    trust_edited: bool = field(metadata=setting(_TRUST))
    progress: str = field(metadata=setting(_PROGRESS))


@dataclass(frozen=True)
class CompareCommand:
    """``mill compare``."""

    a: str = field(metadata=setting(Text(meaning="run folder A (the baseline)")))
    b: str = field(metadata=setting(Text(meaning="run folder B")))
    iters: int = field(
        metadata=setting(Number(1, maximum=ITERS_MAX, meaning="paired bootstrap resamples"))
    )
    seed: int = field(
        metadata=setting(Number(0, maximum=SEED_MAX, meaning="seed of the resamples"))
    )
    alpha: float = field(metadata=setting(positive(0.5, "significance level (CI 1 - alpha)")))
    tasks: str | list[str] | None = field(
        metadata=setting(Nested(optional=True, text=True, meaning="only these tasks"))
    )
    ignore_settings: str | list[str] = field(
        metadata=setting(Nested(text=True, meaning="task settings keys not compared"))
    )
    allow_different_judges: bool = field(
        metadata=setting(Flag(meaning="compare scores of different judges"))
    )
    trust_edited: bool = field(metadata=setting(_TRUST))
    out: str | None = field(
        metadata=setting(Text(optional=True, meaning="also write compare.{json,txt,html} here"))
    )
    progress: str = field(metadata=setting(_PROGRESS))


@dataclass(frozen=True)
class RunsCommand:
    """``mill runs``."""

    dir: str = field(metadata=setting(Text(meaning="where the runs are")))
    tasks: str | list[str] | None = field(
        metadata=setting(Nested(optional=True, text=True, meaning="only runs of these tasks"))
    )
    models: str | list[str] | None = field(
        metadata=setting(Nested(optional=True, text=True, meaning="only runs of these models"))
    )
    limit: int | None = field(
        metadata=setting(
            Number(1, optional=True, maximum=SIZE_MAX, meaning="the newest N runs (null: all)")
        )
    )
    open: int | None = field(
        metadata=setting(
            Number(
                1,
                optional=True,
                maximum=SIZE_MAX,
                meaning="open the report of the Nth run listed",
            )
        )
    )
    all: bool = field(metadata=setting(Flag(meaning="list failed runs too (hidden unless asked)")))
    progress: str = field(metadata=setting(_PROGRESS))


@dataclass(frozen=True)
class ViewCommand:
    """``mill view``."""

    run: str | None = field(
        metadata=setting(
            Text(optional=True, meaning="a run or sweep folder (null: the newest run)")
        )
    )
    dir: str = field(metadata=setting(Text(meaning="where the runs are (run=null)")))
    open: bool = field(metadata=setting(Flag(meaning="open the page in the browser")))
    trust_edited: bool = field(metadata=setting(_TRUST))


@dataclass(frozen=True)
class JudgeCommand:
    """``mill judge``."""

    run: str = field(metadata=setting(Text(meaning="the finished run whose answers are judged")))
    trust_edited: bool = field(metadata=setting(_TRUST))
    allow_targets: list[str] = field(
        metadata=setting(Nested(meaning="extra _target_ module prefixes"))
    )
