"""What a task evaluates, as one dataclass built from its typed settings.

:class:`TaskSpec` holds a task's settings (name, few-shot count and sampler, limit, subjects,
splits, dataset, generation, repeats, chat settings): the task config's values checked and
typed by their declarations in :data:`mill.schema.SETTINGS` (:func:`mill.schema.typed`: one
implementation of each range check, the same one the config was checked with when it was
composed), completed by the task class's defaults (:class:`TaskDefaults`: ``NAME``,
``DATASET_PATH``, ``SUBJECTS``, ``SAMPLE_SPLIT``, ``FEWSHOT_SPLIT``, ``GENERATION``, as
data) and checked against them (subjects the class has, a few-shot split to draw from,
repeats of a generative task only). A :class:`mill.task.Task` keeps its spec in
``task.spec`` and reads its settings from it (``task.limit`` is ``task.spec.limit``). This
module knows no ``Task``: it takes the class's declarations as a :class:`TaskDefaults`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mill.data.load import DatasetSpec
from mill.errors import TaskError
from mill.schema import typed
from mill.types import GenerationArgs, OutputType


@dataclass(frozen=True)
class TaskDefaults:
    """What a task class declares, as data: the defaults its config's settings complete
    (:meth:`mill.task.Task.defaults` reads them from the class attributes)."""

    name: str
    """``NAME``."""
    subjects: list[str]
    """``SUBJECTS``: the subjects a config may pick from."""
    sample_split: str
    fewshot_split: str | None
    dataset: DatasetSpec
    """``DATASET_PATH``, ``DATASET_NAME``, ``DATASET_REVISION`` and the ``LOCAL_*`` files."""
    generation: GenerationArgs
    output_type: OutputType
    fixed_shots: bool
    """The class has fixed few-shot examples (``FEWSHOT_SAMPLES``) instead of a split."""


@dataclass
class TaskSpec:
    """A task's settings, typed (see the module docstring)."""

    name: str
    sample_split: str
    fewshot_split: str | None
    dataset: DatasetSpec
    generation: GenerationArgs
    subjects: list[str] = field(default_factory=list)
    num_fewshot: int = 0
    limit: int | None = None
    fewshot_sampler: str = "random"
    fewshot_seed: int = 1234
    repeats: int = 1
    chat_template: bool = False
    system_prompt: str | None = None
    fewshot_as_multiturn: bool = True

    @classmethod
    def build(cls, task: TaskDefaults, **settings: Any) -> TaskSpec:
        """The spec of a task whose class declares ``task`` from its config's ``settings``
        (the arguments of :class:`mill.task.Task`): each checked and typed by the schema
        (ConfigError naming ``task.<key>``), then against the class (TaskError)."""
        values = typed("task", {k: v for k, v in settings.items() if v is not None})
        name = str(values.get("name") or task.name)
        subjects = values.get("subjects") or task.subjects
        subjects = [subjects] if isinstance(subjects, str) else [str(s) for s in subjects]
        unknown = sorted(set(subjects) - set(task.subjects))
        if unknown:
            raise TaskError(f"task {name!r}: unknown subjects {unknown}")
        spec = cls(
            name=name,
            sample_split=str(values.get("sample_split") or task.sample_split),
            fewshot_split=values.get("fewshot_split") or task.fewshot_split,
            dataset=_dataset(task.dataset, name, values.get("dataset") or {}),
            generation=_generation(task.generation, values.get("generation") or {}),
            subjects=subjects,
            fewshot_sampler=values.get("fewshot_sampler", "random"),
            fewshot_seed=values.get("fewshot_seed", 1234),
            repeats=values.get("repeats", 1),
            chat_template=bool(values.get("chat_template", False)),
            system_prompt=values.get("system_prompt"),
            fewshot_as_multiturn=bool(values.get("fewshot_as_multiturn", True)),
        )
        spec = spec.counted(task.fixed_shots, values.get("num_fewshot"), values.get("limit"))
        if spec.repeats > 1 and task.output_type is not OutputType.GENERATIVE:
            raise TaskError(f"task {name!r}: repeats apply to generative tasks only")
        if spec.generation.do_sample and not spec.generation.temperature > 0:
            raise TaskError(
                f"task {name!r}: task.generation.do_sample=true needs a temperature > 0 "
                f"(got {spec.generation.temperature}); set task.generation.temperature, e.g. 0.8"
            )
        return spec

    def counted(self, fixed_shots: bool, num_fewshot: Any = None, limit: Any = None) -> TaskSpec:
        """This spec with the few-shot count and/or the doc limit set (None: unchanged),
        typed by the schema; a few-shot count needs examples to draw from (a few-shot
        split, or ``fixed_shots``: the class's own examples)."""
        values = typed("task", {"num_fewshot": num_fewshot, "limit": limit})
        num_fewshot, limit = values["num_fewshot"], values["limit"]
        out = self
        if num_fewshot is not None:
            if num_fewshot and not (self.fewshot_split or fixed_shots):
                raise TaskError(
                    f"task {self.name!r} has no few-shot split; set task.fewshot_split or "
                    "task.num_fewshot=0"
                )
            out = replace(out, num_fewshot=num_fewshot)
        if limit is not None:
            out = replace(out, limit=limit)
        return out

    def greedy_repeats(self) -> str | None:
        """Why ``repeats`` cannot be generated by a model (greedy generation gives the same
        answer each time), or None."""
        if self.repeats > 1 and not self.generation.do_sample:
            return (
                f"task {self.name!r}: repeats={self.repeats} with greedy generation gives "
                "identical answers; add task.generation.do_sample=true (and a temperature)"
            )
        return None


def _dataset(default: DatasetSpec, name: str, node: Mapping[str, Any]) -> DatasetSpec:
    """The task's dataset with the config's overrides (null: the task's default)."""
    overrides = {k: v for k, v in node.items() if v is not None}
    spec = replace(
        default,
        path=overrides.pop("path", default.path),
        name=overrides.pop("name", default.name),
        revision=overrides.pop("revision", default.revision),
        local_files=dict(overrides.pop("local_files", default.local_files)),
        local_builder=overrides.pop("builder", default.local_builder),
        builder_kwargs=dict(overrides.pop("builder_kwargs", default.builder_kwargs)),
        data_files={
            k: v for k, v in (overrides.pop("data_files", {}) or {}).items() if v is not None
        },
    )
    if overrides:
        raise TaskError(f"task {name!r}: unknown dataset keys {sorted(overrides)}")
    return spec


def _generation(default: GenerationArgs, node: Mapping[str, Any]) -> GenerationArgs:
    """The class's generation arguments with the config's (one stop string or a list)."""
    given = dict(node)
    if "until" in given:
        until = given["until"]
        given["until"] = (until,) if isinstance(until, str) else tuple(until)
    return GenerationArgs(**{**default.__dict__, **given})
