"""Tasks written as YAML alone: fields plus Jinja templates (lm-eval's ``doc_to_*``).

A task config with ``_target_: mill.task.YamlTask`` describes the benchmark in fields;
each ``doc_to_*`` is a field name of the row, or a Jinja template rendered on the row
(lm-eval 0.4.13 semantics: ``StrictUndefined``, trailing newlines kept, a
``regex_replace`` filter). ``doc_to_choice`` is a list, a field name, or a template whose
output is a Python literal list (``"{{[sol1, sol2]}}"``). A ``doc_to_target`` that renders
to digits is a choice index.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mill.errors import TaskError
from mill.task.base import Task
from mill.task.rows import MissingField, strict
from mill.types import OutputType

_OUTPUT_TYPES = {t.value: t for t in OutputType}


def _regex_replace(string: str, pattern: str, repl: str, count: int = 0) -> str:
    return re.sub(pattern, repl, string, count=count)


def _environment() -> Any:
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        loader=jinja2.BaseLoader(), undefined=jinja2.StrictUndefined, keep_trailing_newline=True
    )
    env.filters["regex_replace"] = _regex_replace
    return env


class YamlTask(Task):
    """A task defined by its config: ``output_type``, ``doc_to_text``, ``doc_to_target``,
    ``doc_to_choice`` (LOGPROBS), ``description``, delimiters, ``metrics`` and the usual
    task fields (``dataset``, ``sample_split``, ``fewshot_split``, ``num_fewshot``, ...)."""

    def __init__(
        self,
        name: str | None = None,
        doc_to_text: str | None = None,
        doc_to_target: str | None = None,
        output_type: str = "logprobs",
        doc_to_choice: str | list[str] | None = None,
        description: str | None = None,
        target_delimiter: str = " ",
        fewshot_delimiter: str = "\n\n",
        metrics: list[str] | None = None,
        **task: Any,
    ) -> None:
        if not name:
            raise TaskError(
                "the task config has no `name`; add a line `name: <short name>` to its YAML"
            )
        for key, value in (("doc_to_text", doc_to_text), ("doc_to_target", doc_to_target)):
            if value is None:
                raise TaskError(f"task {name!r}: the config has no `{key}`; add it to its YAML")
        if output_type not in _OUTPUT_TYPES:
            raise TaskError(
                f"task {name!r}: output_type={output_type!r} is unknown; choose one of "
                f"{sorted(_OUTPUT_TYPES)}"
            )
        # instance attributes shadow the class-level defaults the base class reads
        self.OUTPUT_TYPE = _OUTPUT_TYPES[output_type]
        self.TARGET_DELIMITER = target_delimiter
        self.FEWSHOT_DELIMITER = fewshot_delimiter
        self.METRICS = list(metrics) if metrics is not None else self._default_metrics()
        if self.OUTPUT_TYPE is OutputType.LOGPROBS and doc_to_choice is None:
            raise TaskError(f"task {name!r}: a logprobs task needs doc_to_choice")
        self._env = _environment()
        self._templates: dict[str, Any] = {}
        for field, source in (
            ("doc_to_text", doc_to_text),
            ("doc_to_target", doc_to_target),
            ("doc_to_choice", doc_to_choice),
            ("description", description),
        ):
            if isinstance(source, str):
                try:
                    self._templates[field] = (source, self._env.from_string(source))
                except Exception as err:  # jinja2.TemplateSyntaxError
                    raise TaskError(
                        f"task {name!r}: {field} is not a valid template: {err}"
                    ) from err
        self._choices = list(doc_to_choice) if isinstance(doc_to_choice, list) else None
        super().__init__(name=name, **task)

    def _default_metrics(self) -> list[str]:
        return {
            OutputType.LOGPROBS: ["acc", "acc_norm"],
            OutputType.GENERATIVE: ["exact_match"],
            OutputType.PERPLEXITY: ["word_perplexity", "byte_perplexity", "bits_per_byte"],
        }[self.OUTPUT_TYPE]

    def _resolve(self, field: str, item: dict[str, Any]) -> Any:
        source, template = self._templates[field]
        if source in item:
            try:
                return strict(item)[source]
            except MissingField as err:
                err.used_by = field
                raise
        # a null field is undefined in templates: StrictUndefined names it when it is used
        values = {k: strict(v, k) for k, v in item.items() if v is not None}
        try:
            return template.render(**values)
        except Exception as err:  # jinja2.UndefinedError and friends
            undefined = re.match(r"'([^']+)' is undefined", str(err))
            if undefined:
                name = undefined.group(1)
                raise MissingField(name, null=name in item, used_by=field) from err
            attribute = re.search(r"has no attribute '([^']+)'", str(err))
            if attribute:
                raise MissingField(attribute.group(1), null=False, used_by=field) from err
            raise TaskError(f"task {self.name!r}: {field} failed on a row: {err}") from err

    # ----- hooks ----------------------------------------------------------------------------
    def doc_to_text(self, item: dict[str, Any]) -> str:
        return str(self._resolve("doc_to_text", item))

    def doc_to_description(self, item: dict[str, Any]) -> str | None:
        return str(self._resolve("description", item)) if "description" in self._templates else None

    def doc_to_choice(self, item: dict[str, Any]) -> list[str] | None:
        if self._choices is not None:
            return list(self._choices)
        if "doc_to_choice" not in self._templates:
            return None
        value = self._resolve("doc_to_choice", item)
        if isinstance(value, str):
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError) as err:
                raise TaskError(
                    f"task {self.name!r}: doc_to_choice rendered {value[:60]!r}, not a list"
                ) from err
        return [str(v) for v in value]

    def _target(self, item: dict[str, Any]) -> Any:
        value = self._resolve("doc_to_target", item)
        if isinstance(value, str) and value.strip().isdigit() and self._is_choice_task():
            return int(value)
        return value

    def _is_choice_task(self) -> bool:
        return self.OUTPUT_TYPE is OutputType.LOGPROBS

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        target = self._target(item)
        if isinstance(target, int):
            return target
        return super().gold_index(item, choices)

    def doc_to_target(self, item: dict[str, Any]) -> str | list[str]:
        target = self._target(item)
        if isinstance(target, int):
            return self.doc_to_choice(item)[target]  # type: ignore[index]
        return [str(t) for t in target] if isinstance(target, list) else str(target)

    def doc_to_perplexity_text(self, item: dict[str, Any]) -> str:
        return str(self._resolve("doc_to_target", item))
