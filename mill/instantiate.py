"""The one place where config ``_target_``s become objects, behind an allow-list.

A ``_target_`` string is checked by what it really names, not by how it is spelled. It is
resolved the way Hydra resolves it (import the first part, then attribute by attribute,
importing submodules where an attribute is missing), and allowed only when

* every module on the way is a real submodule of the one before it (``mill.cli.os`` is
  the ``os`` module reached through an attribute of ``mill.cli``: refused);
* every other object on the way is a class defined inside an allowed package;
* no part is a dunder (``__init__``, ``__globals__``, ...);
* the object it names is a class or function (not a module) whose defining module
  (``obj.__module__``) is inside an allowed package: ``mill`` and the user's
  ``allow_targets`` (e.g. ``[my_tasks.]``).

Nothing outside an allowed package is imported to check a target: the first check is the
spelling, so a target naming another package is refused before any of its code runs.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any, cast

from omegaconf import DictConfig, ListConfig, Node, OmegaConf

from mill.errors import ConfigError
from mill.redact import hide_sweep_credentials

BUILTIN_PREFIXES = ("mill.",)

MOVED_TARGETS = {"mill.metrics.judge.": "mill.judging.rubrics."}
"""Modules whose classes moved: a run folder written before the move names the old one in
its ``resolved.yaml`` (``mill compare`` and ``mill judge`` rebuild its metrics from it)."""


def current_targets(node: Any) -> Any:
    """``node`` (plain containers, as read from an older ``resolved.yaml``) with every
    ``_target_`` of a moved module (:data:`MOVED_TARGETS`) naming where it lives now."""
    if isinstance(node, dict):
        out = {k: current_targets(v) for k, v in node.items()}
        target = out.get("_target_")
        if isinstance(target, str):
            for old, new in MOVED_TARGETS.items():
                if target.startswith(old):
                    out["_target_"] = new + target[len(old) :]
        return out
    if isinstance(node, list):
        return [current_targets(v) for v in node]
    return node


def _targets(node: Any, path: str = "") -> Iterable[tuple[str, str]]:
    if isinstance(node, DictConfig):
        for key in node.keys():
            value = node._get_node(key)
            if key == "_target_":
                yield path or "<root>", str(node[key])
            else:
                yield from _targets(value, f"{path}.{key!s}" if path else str(key))
    elif isinstance(node, ListConfig):
        for i, value in enumerate(node):
            yield from _targets(value, f"{path}[{i}]")


def _packages(allow: Iterable[str]) -> tuple[str, ...]:
    """Allowed package names (``mill``, ``my_tasks``, ``my_tasks.sub``), no trailing dots."""
    out = []
    for prefix in (*BUILTIN_PREFIXES, *allow):
        name = str(prefix).strip().rstrip(".")
        if name:
            out.append(name)
    return tuple(dict.fromkeys(out))


def _inside(module: Any, packages: tuple[str, ...]) -> bool:
    return isinstance(module, str) and any(
        module == p or module.startswith(p + ".") for p in packages
    )


def resolve_target(target: str, allow: Iterable[str] = ()) -> Any:
    """The class or function ``target`` names, when the allow-list permits it.

    Raises ValueError saying why not (the caller adds which setting it was)."""
    packages = _packages(allow)
    parts = target.split(".")
    if not target or any(not p for p in parts):
        raise ValueError("it is not a dotted name like package.module.Class")
    if not _inside(target, packages):
        raise ValueError("it is outside the allowed packages")
    dunder = next((p for p in parts if p.startswith("__") and p.endswith("__")), None)
    if dunder:
        raise ValueError(f"it reaches through {dunder!r}")
    try:
        obj: Any = importlib.import_module(parts[0])
    except ImportError as err:
        raise ValueError(f"module {parts[0]!r} cannot be imported ({err})") from None
    for m in range(1, len(parts)):
        here = ".".join(parts[: m + 1])
        parent = obj
        if hasattr(parent, parts[m]):
            obj = getattr(parent, parts[m])
        elif isinstance(parent, ModuleType):
            try:
                obj = importlib.import_module(here)
            except ModuleNotFoundError:
                raise ValueError(f"{here!r} does not exist") from None
        else:
            raise ValueError(f"{here!r} does not exist")
        if isinstance(obj, ModuleType):
            on_the_way = any(p.startswith(here + ".") for p in packages)  # hydra._internal
            if obj.__name__ != here or not (_inside(here, packages) or on_the_way):
                raise ValueError(
                    f"{here!r} is the module {obj.__name__!r} imported by "
                    f"{'.'.join(parts[:m])!r}, not a part of it"
                )
        elif m < len(parts) - 1 and not (
            inspect.isclass(obj) and _inside(getattr(obj, "__module__", None), packages)
        ):
            raise ValueError(f"it reaches through {here!r}, which is not a class of its own")
    if isinstance(obj, ModuleType) or not callable(obj):
        raise ValueError("it names no class or function")
    module = getattr(obj, "__module__", None)
    if not _inside(module, packages):
        raise ValueError(f"it names {getattr(obj, '__qualname__', obj)!r} defined in {module!r}")
    return obj


def check_targets(node: Any, allow: Iterable[str] = ()) -> None:
    """Raise ConfigError for any ``_target_`` that does not name a class or function
    defined inside ``mill`` or the packages of ``allow`` (see the module docstring)."""
    allow = tuple(allow)
    packages = _packages(allow)
    for where, target in _targets(node):
        try:
            resolve_target(target, allow)
        except ValueError as err:
            raise _not_allowed(where, target, str(err), packages) from None


def _not_allowed(where: str, target: str, why: str, packages: tuple[str, ...]) -> ConfigError:
    return ConfigError(
        f"{where}._target_={target!r} is not allowed: {why}. Mill instantiates only "
        f"classes and functions defined in {', '.join(p + '.*' for p in packages)}. "
        "Add its package to allow_targets (e.g. +allow_targets=[my_tasks.]) if you "
        "trust it"
    )


def check_composed_targets(cfg: DictConfig, allow: Iterable[str] = ()) -> None:
    """Every ``_target_`` of a composed config (but ``hydra``, checked by
    :func:`check_hydra_hooks`) that names no allowed package is refused at composition,
    before anything is built, naming its full key (``model.x._target_``). What an allowed
    name really is, is checked again when it is built (:func:`check_targets`)."""
    packages = _packages(allow)
    for key in cfg.keys():
        if key == "hydra":
            continue
        for where, target in _targets(cfg._get_node(key), str(key)):
            if not _inside(target, packages):
                raise _not_allowed(where, target, "it is outside the allowed packages", packages)


def instantiate(node: Any, allow: Iterable[str] = (), **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` after checking every ``_target_`` against the allow-list."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate as hydra_instantiate

    if not isinstance(node, (DictConfig, ListConfig)):
        node = OmegaConf.create(node)
    check_targets(node, allow)
    try:
        return hydra_instantiate(node, **kwargs)
    except InstantiationException as err:
        cause = err.__cause__
        from mill.errors import MillError

        if isinstance(cause, MillError):
            raise cause from None
        raise ConfigError(f"cannot build {node.get('_target_', 'object')}: {err}") from err


# --- Hydra's own hooks -------------------------------------------------------------------
#
# Hydra acts on parts of the composed config itself, before (or without) Mill's code:
# ``hydra.callbacks`` (instantiated before the job runs, recursively), ``hydra.launcher`` and
# ``hydra.sweeper`` (plugins, instantiated with their nested ``_target_``s),
# ``hydra.job_logging`` and ``hydra.hydra_logging`` (``logging.config.dictConfig``: a
# handler's or formatter's ``class``, any ``()`` factory, any ``ext://`` import) and
# ``hydra.job.env_set`` (environment variables set for the job and inherited by every
# process it starts). Each is checked on every config Hydra composes (run, each job of a
# sweep, the compose API) by :func:`checked_composition`, before Hydra returns it.

PLUGIN_PACKAGES = ("hydra_plugins", "hydra._internal.core_plugins")
LOGGING_PACKAGES = ("logging",)
LOGGING_STREAMS = ("ext://sys.stdout", "ext://sys.stderr")
# environment variables that make a process load code: refused in hydra.job.env_set
CODE_ENV_PREFIXES = ("LD_", "DYLD_", "PYTHON")
CODE_ENV_NAMES = frozenset(
    {"BASH_ENV", "ENV", "NODE_OPTIONS", "PERL5OPT", "PERL5LIB", "RUBYOPT", "GCONV_PATH"}
)


def _value(node: DictConfig | ListConfig, key: Any) -> Any:
    """``node[key]`` resolved; its raw text when it cannot be resolved yet (a value of
    ``hydra.runtime``, which Hydra fills when the job starts)."""
    try:
        return node[key]
    except Exception:  # noqa: BLE001 (any resolver error: the raw value is what is checked)
        raw = cast(Node | None, node._get_node(key))  # one key: one node
        return raw._value() if raw is not None else None


def _walk(node: Any, path: str) -> Iterable[tuple[str, Any, Any]]:
    """``(path, key, value)`` of every entry under ``node``, containers included."""
    if isinstance(node, DictConfig):
        items: Iterable[tuple[Any, str]] = ((k, f"{path}.{k!s}") for k in node.keys())
    elif isinstance(node, ListConfig):
        items = ((i, f"{path}[{i}]") for i in range(len(node)))
    else:
        return
    for key, where in items:
        value = _value(node, key)
        yield where, key, value
        yield from _walk(value, where)


def _refuse(where: str, value: Any, why: str, packages: tuple[str, ...]) -> ConfigError:
    return ConfigError(
        f"{where}={value!r} is not allowed: {why}. There Mill allows only "
        f"{', '.join(p + '.*' for p in packages)}; add a package you trust to "
        "allow_targets on the command line (e.g. +allow_targets=[my_pkg.])"
    )


def _check_callable(where: str, target: Any, extra: tuple[str, ...], allow: tuple[str, ...]) -> Any:
    try:
        return resolve_target(str(target), (*extra, *allow))
    except ValueError as err:
        raise _refuse(where, str(target), str(err), _packages((*extra, *allow))) from None


def _check_logging(node: Any, where: str, allow: tuple[str, ...]) -> None:
    """A ``logging.config.dictConfig`` tree: ``()`` and ``class`` name callables, and an
    ``ext://`` string imports what it names."""
    for path, key, value in _walk(node, where):
        if key in ("()", "class") and not isinstance(value, (DictConfig, ListConfig)):
            _check_callable(path, value, LOGGING_PACKAGES, allow)
        elif isinstance(value, str) and value.strip().startswith("ext://"):
            if value.strip() not in LOGGING_STREAMS:
                raise ConfigError(
                    f"{path}={value!r} is not allowed: logging configs may import only "
                    f"{' and '.join(LOGGING_STREAMS)}"
                )


def _check_plugin(node: Any, where: str, kind: type, allow: tuple[str, ...]) -> None:
    target = _value(node, "_target_") if isinstance(node, DictConfig) else None
    if target is not None:
        obj = _check_callable(f"{where}._target_", target, PLUGIN_PACKAGES, allow)
        if not (inspect.isclass(obj) and issubclass(obj, kind)):
            raise ConfigError(
                f"{where}._target_={str(target)!r} is not a Hydra {kind.__name__.lower()} "
                f"plugin (a subclass of {kind.__module__}.{kind.__name__}); pick one with "
                f"hydra/{where.rsplit('.', 1)[-1]}=<name> (basic"
                f"{', slurm' if kind.__name__ == 'Launcher' else ''})"
            )
    for path, key, value in _walk(node, where):
        if key == "_target_" and path != f"{where}._target_":
            _check_callable(path, value, PLUGIN_PACKAGES, allow)


def check_hydra_hooks(hydra_node: Any, allow: Iterable[str] = ()) -> None:
    """Raise ConfigError for anything under ``hydra`` that Hydra would import, call or
    hand to a process outside the allow-list (see the comment above)."""
    from hydra.plugins.launcher import Launcher
    from hydra.plugins.sweeper import Sweeper

    if not isinstance(hydra_node, DictConfig):
        return
    allow = tuple(allow)
    for key in hydra_node.keys():
        where = f"hydra.{key!s}"
        value = _value(hydra_node, key)
        if key in ("job_logging", "hydra_logging"):
            _check_logging(value, where, allow)
        elif key == "launcher":
            _check_plugin(value, where, Launcher, allow)
        elif key == "sweeper":
            _check_plugin(value, where, Sweeper, allow)
        else:  # callbacks, and a _target_ anywhere else
            for path, sub, target in _walk(value, where):
                if sub == "_target_":
                    _check_callable(path, target, (), allow)
    env = OmegaConf.select(hydra_node, "job.env_set", default=None)
    for name in env.keys() if isinstance(env, DictConfig) else ():
        text = str(name)
        if text.upper().startswith(CODE_ENV_PREFIXES) or text.upper() in CODE_ENV_NAMES:
            raise ConfigError(
                f"hydra.job.env_set.{text} is not allowed: it makes the processes Mill "
                "starts load code; set it in your shell if you mean it"
            )


def _override_allow(overrides: Iterable[str]) -> list[str] | None:
    """``allow_targets`` as the command line (or the API's overrides) set it; None when
    they do not."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    found: list[str] | None = None
    for override in OverridesParser.create().parse_overrides(list(overrides)):
        if override.key_or_group == "allow_targets" and not override.is_sweep_override():
            value = None if override.is_delete() else override.value()
            found = [str(v) for v in value] if isinstance(value, list) else []
    return found


def check_searchpath(overrides: Iterable[str], primary: Any = None, name: str = "") -> None:
    """A ``pkg://`` entry of ``hydra.searchpath`` is imported while Hydra composes: it must
    name a package of the allow-list (checked by spelling, before composition). Hydra reads
    the command line's ``hydra.searchpath`` or else the primary config's (``primary``, the
    value in the primary config ``name``, e.g. one given with ``-cd <dir> -cn <name>``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = list(overrides)
    packages = _packages((*PLUGIN_PACKAGES, *(_override_allow(overrides) or [])))
    entries: list[tuple[Any, str]] = []
    for override in OverridesParser.create().parse_overrides(overrides):
        if override.key_or_group != "hydra.searchpath" or override.is_delete():
            continue
        value = override.value()
        entries += [(v, "") for v in (value if isinstance(value, list) else [value])]
    if not entries and isinstance(primary, (list, ListConfig)):
        entries = [(v, f" (the searchpath of the primary config {name!r})") for v in primary]
    for entry, where in entries:
        text = str(entry).strip()
        module = text.removeprefix("pkg://").split("/")[0]
        if text.startswith("pkg://") and not _inside(module, packages):
            why = f"Hydra imports that package{where}"
            raise _refuse("hydra.searchpath", text, why, packages)


SINGLE_GROUPS = ("model", "judge", "runner", "data", "execution", "report")
"""Config groups a run takes one option of (``task`` takes a list: :func:`mill.cli.task_lists`;
``metrics``, ``sink`` several by design)."""


def check_group_lists(overrides: Iterable[str]) -> None:
    """``model=[fake,stories260k]``: Hydra would merge the listed configs into one (keys of
    one backend given to another's class: a traceback when it is built); ConfigError naming
    the override, with the sweep that runs each, before composition."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    for override in OverridesParser.create().parse_overrides(list(overrides)):
        group = override.key_or_group
        if group in SINGLE_GROUPS and not override.is_sweep_override():
            value = None if override.is_delete() else override.value()
            if isinstance(value, list):
                names = ",".join(str(v) for v in value)
                raise ConfigError(
                    f"{group}=[{names}] names {len(value)} {group} configs; a run has one "
                    f"{group}: give one ({group}={value[0] if value else '<name>'}), or a "
                    f"run each: mill -m {group}={names}"
                )


def _primary_searchpath(loader: Any, config_name: str | None) -> Any:
    """The ``hydra.searchpath`` of the primary config, read as Hydra reads it before it
    adds those entries (the YAML file only: nothing is imported)."""
    from hydra._internal.config_repository import CachingConfigRepository

    if config_name is None:
        return None
    loaded = CachingConfigRepository(loader.repository).load_config(config_path=config_name)
    if loaded is None or not isinstance(loaded.config, DictConfig):
        return None  # Hydra says what is wrong with it
    return OmegaConf.select(loaded.config, "hydra.searchpath", default=None)


def check_composed(cfg: DictConfig, overrides: Iterable[str]) -> None:
    """The checks of one composed config (with its ``hydra`` node): ``allow_targets`` comes
    from the command line only (a config file, e.g. a task YAML found through
    ``hydra.searchpath``, cannot widen it), then :func:`check_hydra_hooks`."""
    allowed = _override_allow(overrides)
    composed = (
        [str(a) for a in (_value(cfg, "allow_targets") or [])] if "allow_targets" in cfg else []
    )
    if composed != (allowed or []):
        raise ConfigError(
            f"allow_targets={composed} is set by a config file, not on the command line; "
            "a config cannot allow its own code: pass allow_targets=[...] on the command "
            "line (or in mill.evaluate's overrides) if you trust it"
        )
    check_hydra_hooks(_value(cfg, "hydra") if "hydra" in cfg else None, composed)
    check_composed_targets(cfg, composed)


BASIC_SWEEPER = "hydra._internal.core_plugins.basic_sweeper.BasicSweeper"


def _sweep_jobs(loader: Any, cfg: DictConfig) -> list[list[str]]:
    """The overrides of every job of a sweep by Hydra's basic sweeper (as
    ``load_sweep_config`` will compose them); none for another sweeper, which composes its
    jobs as it goes (each still checked as it is composed)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if OmegaConf.select(cfg, "hydra.sweeper._target_") != BASIC_SWEEPER:
        return []
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    arguments = [f"{k}={v}" for k, v in params.items()]
    # the overrides as written: an override's ${...} (hydra.sweep.subdir=${hydra.job.num})
    # is resolved by Hydra in each job, not here
    arguments += [str(o) for o in cast(list[Any], OmegaConf.to_container(cfg.hydra.overrides.task))]
    parsed = OverridesParser.create(config_loader=loader).parse_overrides(arguments)
    base = [str(o) for o in cast(list[Any], OmegaConf.to_container(cfg.hydra.overrides.hydra))]
    return [base + job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]


class _BatchChecked:
    """A sweeper's launcher that composes, and so checks, every job of a batch before it
    launches any: a sweeper other than Hydra's basic one may propose its jobs as results
    come in (Optuna, Ax, Nevergrad), so Mill learns them only batch by batch."""

    def __init__(self, launcher: Any, loader: Any, config: DictConfig) -> None:
        self._launcher, self._loader, self._config = launcher, loader, config

    def launch(self, job_overrides: Any, initial_job_idx: int) -> Any:
        for overrides in job_overrides:  # load_configuration runs check_composed
            self._loader.load_sweep_config(self._config, list(overrides))
        return self._launcher.launch(job_overrides, initial_job_idx)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._launcher, name)


@contextmanager
def checked_composition() -> Iterator[None]:
    """Within this block every config Hydra composes (``mill``'s run, the master config
    and every job of a sweep, the compose API) passes :func:`check_composed` before Hydra
    sees it: before logging is configured, callbacks instantiated, plugins loaded or any
    folder made. A sweep's jobs are all composed and checked before its first job runs
    (Hydra's basic sweeper: all its batches; another sweeper, which may propose jobs as
    results come in: each batch before any of its jobs, :class:`_BatchChecked`).
    A sweep's config then has its URLs' credentials masked
    (:func:`mill.redact.hide_sweep_credentials`): the jobs get them from the environment."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.plugins import Plugins
    from hydra.types import RunMode

    original = ConfigLoaderImpl.load_configuration

    def load_configuration(
        self: Any, config_name: Any, overrides: list[str], run_mode: Any, *args: Any, **kw: Any
    ) -> DictConfig:
        check_group_lists(overrides)
        check_searchpath(overrides, _primary_searchpath(self, config_name), config_name)
        cfg = original(self, config_name, overrides, run_mode, *args, **kw)
        check_composed(cfg, overrides)
        if run_mode == RunMode.MULTIRUN:
            for job in _sweep_jobs(self, cfg):
                check_composed(original(self, config_name, job, RunMode.RUN), job)
            # what a launcher gets (and SLURM's pickles to disk) holds no credential
            hide_sweep_credentials(cfg)
        return cfg

    def instantiate_launcher(
        self: Any, hydra_context: Any, task_function: Any, config: DictConfig
    ) -> Any:
        launcher = original_launcher(
            self, hydra_context=hydra_context, task_function=task_function, config=config
        )
        if OmegaConf.select(config, "hydra.sweeper._target_") == BASIC_SWEEPER:
            return launcher  # every job was checked with the master config
        return _BatchChecked(launcher, hydra_context.config_loader, config)

    original_launcher = Plugins.instantiate_launcher
    ConfigLoaderImpl.load_configuration = load_configuration  # type: ignore[method-assign]
    Plugins.instantiate_launcher = instantiate_launcher  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConfigLoaderImpl.load_configuration = original  # type: ignore[method-assign]
        Plugins.instantiate_launcher = original_launcher  # type: ignore[method-assign]
