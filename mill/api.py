"""Mill from Python: :func:`evaluate` and :func:`compose`.

The same settings as the ``mill`` command line (Hydra overrides, or a composed config)
and the same code path: the config is composed as the CLI composes it and the run goes
through the CLI's own job (:func:`mill.runner.job.run_job`, then
:func:`mill.runner.execute.execute`): the same checks, log lines, warnings, truncation
counts and results. With ``output_dir`` it writes the experiment folder (manifest,
samples, report, response cache); without one nothing is written anywhere.

A model may be given as an object instead of a config: any
:class:`~mill.model.base.LanguageModel`, or a ``transformers`` causal LM with its
tokenizer (wrapped by :meth:`mill.model.hf.HFCausalLM.from_transformers`). Such a model
has no files to fingerprint: its identity says ``in_memory`` and the response cache is
off for it. A torch module's train/eval mode is restored afterwards, so ``evaluate`` can
run inside a training loop.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from mill.errors import ConfigError
from mill.record import SampleRecord
from mill.results.format import Results


def _register_resolvers() -> None:
    import mill.cli  # noqa: F401  (registers the mill_resource resolver)


def compose(overrides: Sequence[str] = ()) -> DictConfig:
    """Mill's config composed with Hydra ``overrides``, exactly as ``mill OVERRIDES...``
    composes it (``["task=arc", "model=llama3", "+metrics=[acc,acc_norm]"]``)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    from mill.cli import task_lists
    from mill.instantiate import checked_composition

    _register_resolvers()
    GlobalHydra.instance().clear()
    try:
        with checked_composition(), initialize_config_module("mill.conf", version_base="1.3"):
            # task=[a,b] as the command line reads it (several tasks, not merged configs)
            return hydra_compose("mill", overrides=task_lists(list(overrides)))
    except HydraException as err:
        from mill.runner.config_errors import describe

        raise ConfigError(describe(err, list(overrides))) from None
    finally:
        GlobalHydra.instance().clear()


class InMemoryModel:
    """A model object handed to :func:`evaluate`, seen through an identity that says
    ``in_memory``: its weights may have changed since it was loaded (a checkpoint in a
    training loop), so no response cache ever serves or stores its scores. Everything else
    is the wrapped model's."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def identity(self) -> dict[str, Any]:
        return {**self.inner.identity(), "in_memory": True}

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)


def _wrap(model: Any, tokenizer: Any) -> Any:
    """The model to evaluate: a LanguageModel as it is, or a transformers model wrapped
    with its tokenizer; either way marked in memory."""
    from mill.model.base import LanguageModel

    if isinstance(model, LanguageModel):
        if tokenizer is not None:
            raise ConfigError("tokenizer= is for a transformers model; a LanguageModel has its own")
        return InMemoryModel(model)
    if tokenizer is None:
        raise ConfigError(
            f"model is a {type(model).__name__}: pass its tokenizer too "
            "(mill.evaluate(model=model, tokenizer=tokenizer, ...)), or a mill LanguageModel"
        )
    from mill.model.hf import HFCausalLM

    return InMemoryModel(HFCausalLM.from_transformers(model, tokenizer))


def compose_tasks(tasks: Sequence[str], overrides: Sequence[str] = ()) -> DictConfig:
    """:func:`compose` for several task configs evaluated together, as the command line's
    ``task=[a,b]`` (:func:`mill.cli.task_lists`): a task group of them (reported per task
    and together), ``task.limit``/``task.num_fewshot`` reaching every member and
    ``task.<name>.*`` one of them."""
    names = list(tasks)
    if len(names) <= 1:
        return compose([*(f"task={n}" for n in names), *overrides])
    return compose([f"task=[{','.join(names)}]", *overrides])


def evaluate(
    task: str | Sequence[str] | None = None,
    model: str | Any | None = None,
    *,
    tokenizer: Any = None,
    overrides: Sequence[str] = (),
    config: DictConfig | None = None,
    metrics: Sequence[str] | None = None,
    limit: int | None = None,
    judge: str | None = None,
    output_dir: str | Path | None = None,
    on_sample: Callable[[SampleRecord], None] | None = None,
    progress: bool = False,
) -> Results:
    """Evaluate a model on a task; returns the typed :class:`~mill.results.Results`.

    Args:
        task: a task config name (``arc_easy``, ``arc``, ``mmlu``, ...): ``task=<name>``;
            or a list of names, evaluated together (:func:`compose_tasks`).
        model: a model config name (``llama3``, ``stories260k``): ``model=<name>``; or a
            :class:`~mill.model.base.LanguageModel`; or a ``transformers`` causal LM (then
            ``tokenizer`` too), evaluated in memory in this process.
        tokenizer: the tokenizer of a ``transformers`` model.
        overrides: more Hydra overrides, as on the command line (``task.limit=10``,
            ``model.batch_size=8``, ``+sink=mlflow``).
        config: an already composed config (:func:`compose`) instead of overrides.
        metrics: metric names: ``+metrics=[...]``.
        limit: docs per task: ``task.limit=<n>``.
        judge: a judge config name (``stories260k``, ``openai_chat``): ``judge=<name>``,
            for judged tasks (``judge.*`` settings go in ``overrides``).
        output_dir: write an experiment folder there, as ``mill`` does (read it back with
            :func:`mill.load`); None writes nothing.
        on_sample: called with each doc's :class:`~mill.record.SampleRecord` (no folder).
        progress: show progress on stderr.
    """
    from mill.files import contain_library_caches

    contain_library_caches()
    cfg = _run_config(task, model, overrides, config, metrics, limit, judge)
    if not progress:
        cfg.report.progress = "never"
    return _run(cfg, model, tokenizer, output_dir, on_sample, progress)


def _run(
    cfg: DictConfig,
    model: str | Any | None,
    tokenizer: Any,
    output_dir: str | Path | None,
    on_sample: Callable[[SampleRecord], None] | None,
    progress: bool,
) -> Results:
    """:func:`evaluate`'s run of ``cfg``: an in-memory ``model`` wrapped (and left in the
    caller's train/eval mode), the folder ``output_dir`` checked, the job run."""
    module = _torch_module(model)
    training = getattr(module, "training", None)
    try:
        lm = None if model is None or isinstance(model, str) else _wrap(model, tokenizer)
        if lm is not None:
            OmegaConf.set_struct(cfg, False)
            name = getattr(lm.inner, "name", None) or type(lm.inner).__name__
            cfg.model = {"name": str(name), "in_memory": True}
        folder = None if output_dir is None else Path(output_dir)
        if folder is not None:
            from mill.files import check_folder_path

            check_folder_path(folder, "output_dir")
            if on_sample is not None:
                raise ConfigError("on_sample is for runs without output_dir; read the folder")
        from mill.runner.job import run_job

        # a folder's run prints as `mill` does; without one only progress, when asked
        results = run_job(
            cfg, folder, None, model=lm, on_sample=on_sample, show=folder is not None or progress
        )
        assert results is not None
        return results
    finally:
        if training is not None:  # the caller's train/eval mode (wrapping sets eval)
            module.train(training)


def _run_config(
    task: str | Sequence[str] | None,
    model: str | Any | None,
    overrides: Sequence[str],
    config: DictConfig | None,
    metrics: Sequence[str] | None,
    limit: int | None,
    judge: str | None,
) -> DictConfig:
    """:func:`evaluate`'s config: ``config`` as given (a copy), or composed from the task
    and model names, metrics, limit, judge and overrides; ConfigError for both."""
    tasks = [task] if isinstance(task, str) else list(task or [])
    named = [] if model is None or not isinstance(model, str) else [f"model={model}"]
    extra = [
        *named,
        *([f"+metrics=[{','.join(metrics)}]"] if metrics else []),
        *([f"task.limit={int(limit)}"] if limit is not None else []),
        *([f"judge={judge}"] if judge else []),
    ]
    if config is None:
        return compose_tasks(tasks, [*extra, *overrides])
    if extra or overrides or tasks:
        raise ConfigError(
            "give either config= or task/model names, metrics, limit and overrides; "
            "compose them all with mill.compose([...]) instead"
        )
    return config.copy()


def _torch_module(model: Any) -> Any:
    """The torch module behind ``model`` (a transformers model, or a LanguageModel's
    ``.model``), or None."""
    from mill.model.base import LanguageModel

    if model is None or isinstance(model, str):
        return None
    module = getattr(model, "model", None) if isinstance(model, LanguageModel) else model
    return module if callable(getattr(module, "train", None)) else None
