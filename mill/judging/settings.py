"""The judge's settings (``judge=<model config>`` plus ``conf/judge_base.yaml``), typed
once by their declarations in :mod:`mill.schema` (``judge.*``): a run's by its run
configuration (:meth:`JudgeSettings.of_typed`), a node given by hand here
(:meth:`JudgeSettings.parse`).

A judge config is a model config (``conf/judge/<name>.yaml`` reuses ``conf/model/<name>``
through the defaults list) plus the judge's own settings: ``max_invalid``,
``num_concurrent`` (passed to a backend that takes it: the served backends' asyncio
client), ``revision``, ``generation`` and ``cache``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError, MillError
from mill.instantiate import resolve_target
from mill.schema import MODEL_KEYS, typed
from mill.types import GenerationArgs

JUDGE_SETTINGS = ("max_invalid", "num_concurrent", "generation", "revision", "cache")
"""Keys of a judge config that are the judge's, not its model's."""


def judge_cache_setting(value: Any) -> str | None:
    """``judge.cache``: ``shared`` ($MILL_CACHE/judge; ``true`` says the same), ``run``
    (the run's response cache), false (none) or a folder; ConfigError for anything else."""
    if value is False or value is None:
        return None
    if value is True:  # the schema accepts true/false (Text(flags=True)): on is the default
        return "shared"
    if not isinstance(value, str) or not value:
        raise ConfigError(
            f"judge.cache={value!r}: use shared ($MILL_CACHE/judge), run (the run's response "
            "cache), false, or a folder"
        )
    if value not in ("shared", "run"):  # a folder: a file in its way is named here
        from mill.files import check_folder_path

        check_folder_path(Path(value).expanduser(), "judge.cache", "the judge's cache folder")
    return value


_MODEL_KEY = re.compile(rf"(?<![\w.])model\.(?=(?:{'|'.join(MODEL_KEYS)})\b)")


def as_judge_error(err: MillError) -> MillError:
    """``err``, raised by the judge's model (a model config: its messages say
    ``model.base_url``), with each ``model.<key>`` of a model setting named as the user
    typed it, ``judge.<key>``; the same class, ``err`` its cause."""
    text = _MODEL_KEY.sub("judge.", str(err))
    if text == str(err):
        return err
    try:
        renamed = type(err)(text)
    except TypeError:  # a class with its own arguments: the base class says the same
        renamed = MillError(text)
    renamed.__cause__ = err
    return renamed


def _parameters(target: str) -> set[str]:
    try:
        return set(inspect.signature(resolve_target(target)).parameters)
    except Exception:  # an unimportable target fails later, at instantiation, in one line
        return set()


@dataclass(frozen=True)
class JudgeSettings:
    """A ``judge`` node, typed: the model config to build and the judge's own settings."""

    model: dict[str, Any]
    """The judge's model config (instantiated when the judging phase starts), with
    ``num_concurrent`` and ``revision`` added where its backend takes them."""
    max_invalid: float = 0.1
    num_concurrent: int = 1
    revision: Any = None
    generation: GenerationArgs = field(default_factory=lambda: GenerationArgs(max_gen_toks=2048))
    cache: str | None = "shared"
    """``shared``, ``run``, a folder, or None (no cache)."""

    @classmethod
    def parse(cls, node: Mapping[str, Any] | DictConfig) -> JudgeSettings:
        """The settings of a resolved ``judge`` node that no run config typed (a test's, a
        caller's): the judge's own settings typed here by their declarations
        (:data:`mill.schema.SETTINGS`: ``judge.max_invalid`` a share in [0, 1],
        ``judge.num_concurrent`` >= 1, ``judge.generation.*``); ConfigError for a bad one.
        A run's judge comes typed (:meth:`of_typed`)."""
        plain = OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node
        assert isinstance(plain, Mapping)  # a judge config is a mapping (composition)
        body = {str(k): v for k, v in plain.items()}
        own = typed("judge", {k: body[k] for k in JUDGE_SETTINGS if k in body})
        return cls.of_typed({**body, **own})

    @classmethod
    def of_typed(cls, node: Mapping[str, Any]) -> JudgeSettings:
        """The settings of a ``judge`` node whose settings are already typed by their rules
        (:class:`mill.runner.run_config.RunConfig`'s ``judge`` group), read without
        checking them again."""
        body = {str(k): v for k, v in node.items()}
        own = {k: body.pop(k) for k in JUDGE_SETTINGS if k in body}
        gen = dict(own.get("generation") or {})
        unknown = set(gen) - set(GenerationArgs.__dataclass_fields__)
        if unknown:
            raise ConfigError(
                f"judge.generation has unknown keys {sorted(unknown)}; use max_gen_toks, "
                "do_sample, temperature, seed"
            )
        cache = judge_cache_setting(own.get("cache", "shared"))
        gen.setdefault("max_gen_toks", 2048)
        concurrent = own.get("num_concurrent", 1)
        accepts = _parameters(str(body.get("_target_") or ""))
        if "num_concurrent" in accepts:
            body["num_concurrent"] = concurrent
        if "revision" in accepts:  # a hub revision (HF) or a served model's label
            body["revision"] = own.get("revision")
        return cls(
            model=body,
            max_invalid=float(own.get("max_invalid", 0.1)),
            num_concurrent=concurrent,
            revision=own.get("revision"),
            generation=GenerationArgs(**gen),
            cache=cache,
        )

    def record(self) -> dict[str, Any]:
        """What the manifest and results.json say of these settings (``judge.settings``)."""
        return {
            "max_invalid": self.max_invalid,
            "num_concurrent": self.num_concurrent,
            "generation": {**self.generation.__dict__, "until": []},
            "revision": self.revision,
            "cache": self.cache or False,
        }

    def cache_folder(self, run_cache: Path | None) -> Path | None:
        """Where the judge's calls are cached: by default ``$MILL_CACHE/judge``, so judging
        the same answers again with the same judge identity makes no call, whichever run
        asks; ``run_cache`` (the run's response cache) for ``run``."""
        from mill.files import cache_root

        if self.cache is None:
            return None
        if self.cache == "shared":
            return cache_root() / "judge"
        if self.cache == "run":
            return run_cache
        return Path(self.cache).expanduser()
