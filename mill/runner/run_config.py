"""One typed run configuration: the composed config checked and typed once, at the start of
a run, into :class:`RunConfig`, written as ``resolved.yaml`` and read back as the same object.

The Hydra driver (:func:`mill.runner.job.run_job`) builds it once from the resolved config
(:meth:`RunConfig.from_resolved`): every setting declared in :data:`mill.schema.SETTINGS`
checked and typed by its rule (:func:`mill.schema.check_config`: one line naming the key, the
value and what is accepted), no setting that means nothing in this config
(:func:`mill.runner.settings.check_settings`), and the groups the runner reads as typed
slices: ``runner`` (:class:`~mill.schema.RunnerSettings`), ``report``
(:class:`~mill.schema.ReportSettings`), both declared with their rules in
:mod:`mill.schema.groups`, and ``data`` (:class:`mill.data.DataSource`). The polymorphic
groups (``model``: a backend's own keys; ``task``: a task kind's; ``judge``, ``sink``,
``metrics``) stay mappings in :attr:`RunConfig.values`, their declared keys already typed:
the backend, task or sink they build receives typed values, built inside
:func:`mill.schema.already_typed` so that its constructor does not check them again (each
setting is checked once, here). So does ``execution``: its object
(:class:`mill.execution.ExecutionSettings`, which looks for its interpreter) is built only
when a task runs programs.
:meth:`RunConfig.to_yaml` is ``resolved.yaml`` (the file the driver writes, credentials
redacted by the folder) and :meth:`RunConfig.read` reads a run folder's file back as the
same object (the data-parallel workers, :mod:`mill.runner.worker`; credentials restored by
the caller). ``mill report``, ``compare`` and ``runs`` read an old run's ``resolved.yaml`` as
its record (:mod:`mill.report.load`), not as a config to run: a folder written under older
rules still opens there.

Why stdlib frozen dataclasses and Mill's own rules, not pydantic or Hydra structured
configs (measured 2026-12-06 on the 2-core machine, load average 2.5-2.8): ``dataclasses`` is
already imported by ``import mill.cli`` (0 ms more; 15 ms alone), ``from pydantic import
BaseModel`` costs 108-143 ms (pydantic 2.13.4, installed here only as another package's
dependency, not Mill's) and neither imports torch; pydantic's message for
``batch_size=0`` is four lines ("1 validation error for Model / batch_size / Input should
be greater than or equal to 1 [type=greater_than_equal, ...] / For further information
visit https://errors.pydantic.dev/...") where Mill's is one (``model.batch_size=0 is not
allowed: give a whole number >= 1 and <= 2147483647 (or auto)``). Hydra structured configs
(OmegaConf 2.3, an ``int`` field) check the type alone at composition, in three lines
(``Value 'big' of type 'str' could not be converted to Integer`` / ``full_key: batch_size``
/ ``object_type=M``), take ``batch_size=0`` (no range), and would need a class per backend
and per task kind for the polymorphic groups.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from mill.data.load import DataSource
from mill.errors import ConfigError
from mill.runner.settings import check_settings
from mill.schema import ReportSettings, RunnerSettings, already_typed

__all__ = ["RunConfig", "read_resolved"]


def _data(node: Mapping[str, Any] | None) -> DataSource:
    """The data source of a typed ``data`` node (``data.skip_bad_rows`` a boolean by its
    rule)."""
    node = node or {}
    return DataSource(
        source=str(node.get("source", "hub")),
        dir=node.get("dir"),
        skip_bad_rows=bool(node.get("skip_bad_rows", False)),
    )


@dataclass(frozen=True)
class RunConfig:
    """A run's configuration, checked and typed once (:meth:`from_resolved`)."""

    values: dict[str, Any]
    """The resolved config as plain containers, each declared setting typed by its rule
    (whole numbers as int, choices and words in lower case, true/false as booleans). Read,
    never changed: :meth:`group` gives a copy."""
    runner: RunnerSettings
    report: ReportSettings
    data: DataSource

    @classmethod
    def from_resolved(cls, resolved: Mapping[str, Any]) -> RunConfig:
        """The run configuration of ``resolved`` (Hydra's composition, every interpolation
        resolved, as plain containers), checked before any data or model loads; one
        ConfigError line naming the first setting refused."""
        values = check_settings(resolved)
        with already_typed():  # each setting checked once, above
            data = _data(values.get("data"))
        return cls(
            values=values,
            runner=RunnerSettings.of_typed(values.get("runner")),
            report=ReportSettings.of_typed(values.get("report")),
            data=data,
        )

    @classmethod
    def read(cls, folder: Path, secrets: Sequence[tuple[list[Any], Any]] = ()) -> RunConfig:
        """The run configuration ``folder``'s ``resolved.yaml`` holds: the same object the
        driver wrote it from. The credentials the file holds redacted are put back from
        ``secrets`` (a worker's, from the driver's environment: :mod:`mill.runner.worker`;
        none given, they stay redacted) and masked in every sink from here on."""
        from mill.redact import register_config_secrets, restore

        resolved = read_resolved(folder)
        restore(resolved, list(secrets))
        register_config_secrets(resolved)
        return cls.from_resolved(resolved)

    def group(self, name: str) -> Any:
        """A copy of the typed ``name`` group (None when the config has none)."""
        node = self.values.get(name)
        return copy.deepcopy(node)

    def to_yaml(self) -> str:
        """``resolved.yaml``: :attr:`values` as YAML (the folder redacts credentials as it
        writes)."""
        from omegaconf import OmegaConf

        return OmegaConf.to_yaml(OmegaConf.create(self.values))


def read_resolved(folder: Path) -> dict[str, Any]:
    """``folder``'s ``resolved.yaml`` as plain containers; ConfigError when it has none."""
    from omegaconf import OmegaConf

    path = folder / "resolved.yaml"
    if not path.is_file():
        raise ConfigError(f"{folder} has no resolved.yaml; give a run folder Mill wrote")
    loaded = OmegaConf.to_container(OmegaConf.load(path))
    assert isinstance(loaded, dict)  # Mill writes a mapping
    return cast(dict[str, Any], loaded)
