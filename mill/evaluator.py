"""Tasks -> requests -> model -> responses -> metrics.

The evaluator builds every doc's requests, groups them by output type across tasks,
dispatches each group to the model method for that type (seed 000), folds the responses
of each doc into a :class:`~mill.record.SampleRecord` as soon as the doc is complete, and
aggregates metrics per task and per task group.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mill.data.load import DataSource
from mill.errors import ConfigError
from mill.metrics.base import Metric
from mill.metrics.exact_match import ExactMatch
from mill.metrics.stats import mean
from mill.model.base import LanguageModel
from mill.record import ModelResponse, SampleRecord
from mill.task.base import Task
from mill.task.doc import Doc
from mill.types import OutputType, Request, Response

DISPATCH_ORDER = (OutputType.LOGPROBS, OutputType.PERPLEXITY, OutputType.GENERATIVE)


class Progress(Protocol):
    """What the evaluator reports progress to (see :mod:`mill.report.progress`)."""

    def phase(self, name: str, total: int) -> None: ...
    def advance(self, n: int = 1) -> None: ...
    def done(self) -> None: ...


@dataclass
class TaskResult:
    """Aggregated metrics of one task: name -> {value, stderr, n}."""

    name: str
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    values: dict[str, list[Any]] = field(default_factory=dict)
    """Per-doc metric values, ordered by (subject, doc id) whatever the completion order."""
    keys: list[tuple[str, int]] = field(default_factory=list)


def check_metrics(task: Task, metrics: Sequence[Metric]) -> None:
    """Refuse metrics that cannot be computed from this task's output type."""
    for metric in metrics:
        if task.OUTPUT_TYPE not in metric.output_types:
            fits = ", ".join(sorted(t.value for t in metric.output_types))
            raise ConfigError(
                f"metric {metric.name!r} needs a {fits} task but task {task.name!r} is "
                f"{task.OUTPUT_TYPE.value}; drop it from metrics or pick another task"
            )


def _prediction(task: Task, doc: Doc, responses: list[Response], metrics: Sequence[Metric]) -> Any:
    if task.OUTPUT_TYPE is OutputType.LOGPROBS:
        return int(np.argmax([r.logprob for r in responses]))
    if task.OUTPUT_TYPE is OutputType.GENERATIVE:
        extractors = [m for m in metrics if isinstance(m, ExactMatch) and m.extract_pattern]
        if extractors:
            return {m.name: m.prediction(responses[0]) for m in extractors}
        return responses[0].text
    return responses[0].logprob


def dispatch(
    model: LanguageModel,
    requests: Sequence[Request],
    on_response: Callable[[Request, Response], None],
) -> None:
    """Group requests by output type and send each group to its model method."""
    by_type: dict[OutputType, list[Request]] = defaultdict(list)
    for request in requests:
        by_type[request.output_type].append(request)
    for output_type in DISPATCH_ORDER:
        if by_type.get(output_type):
            getattr(model, output_type.model_method)(by_type[output_type], on_response)


def evaluate(
    tasks: Sequence[Task],
    metrics: dict[str, list[Metric]],
    model: LanguageModel,
    source: DataSource,
    write_sample: Callable[[SampleRecord], None],
    progress: Progress,
    bootstrap_iters: int = 1000,
    seed: int = 1234,
    dispatch_fn: Callable[
        [LanguageModel, Sequence[Request], Callable[[Request, Response], None]], None
    ] = dispatch,
) -> dict[str, TaskResult]:
    """Evaluate ``tasks`` on ``model``; returns per-task aggregates.

    ``dispatch_fn`` sends the requests to the model (the runner's hook for sharding them
    across processes); it must call ``on_response`` once per request, in any order.
    """
    for task in tasks:
        check_metrics(task, metrics[task.name])
    docs: dict[tuple[str, str, int], Doc] = {}
    pending: dict[tuple[str, str, int], dict[int, Response | None]] = {}
    requests: list[Request] = []
    by_task = {task.name: task for task in tasks}
    progress.phase("building requests", len(tasks))
    for task in tasks:
        for doc in task.docs(source):
            doc_requests = task.requests(doc)
            key = (task.name, doc.subject, doc.id)
            docs[key] = doc
            pending[key] = {r.index: None for r in doc_requests}
            requests.extend(doc_requests)
        progress.advance()
    progress.done()

    results = {task.name: TaskResult(task.name) for task in tasks}

    def on_response(request: Request, response: Response) -> None:
        key = (request.task, request.subject, request.doc_id)
        slots = pending[key]
        slots[request.index] = response
        progress.advance()
        if any(v is None for v in slots.values()):
            return
        task, doc = by_task[request.task], docs[key]
        ordered = [slots[i] for i in sorted(slots)]
        responses = [r for r in ordered if r is not None]
        task_metrics = metrics[task.name]
        scores = {m.name: m.score(doc, responses) for m in task_metrics}
        result = results[task.name]
        result.keys.append((request.subject, request.doc_id))
        for name, value in scores.items():
            result.values.setdefault(name, []).append(value)
        record = SampleRecord.build(
            doc,
            ModelResponse.from_responses(doc, task.OUTPUT_TYPE, responses),
            _prediction(task, doc, responses, task_metrics),
            scores,
        )
        write_sample(record)
        del pending[key]

    progress.phase("scoring requests", len(requests))
    dispatch_fn(model, requests, on_response)
    progress.done()

    for task in tasks:
        result = results[task.name]
        # aggregates (sums, bootstrap resamples) must not depend on completion order
        order = sorted(range(len(result.keys)), key=result.keys.__getitem__)
        result.keys = [result.keys[i] for i in order]
        result.values = {k: [v[i] for i in order] for k, v in result.values.items()}
        for metric in metrics[task.name]:
            values = result.values.get(metric.name, [])
            result.metrics[metric.name] = {
                "value": metric.aggregate(values) if values else None,
                "stderr": metric.stderr(values, iters=bootstrap_iters, seed=seed),
                "n": len(values),
                "higher_is_better": metric.higher_is_better,
            }
    return results


def aggregate_group(
    members: Sequence[TaskResult], metrics: Sequence[Metric], bootstrap_iters: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Group aggregates of metrics shared by all members.

    micro: the metric over all samples pooled (for means: the size-weighted mean), stderr
    sqrt(sum (n_i/N)^2 se_i^2) for means (strata are independent tasks), bootstrap over the
    pooled samples otherwise. macro: the unweighted mean of member values, stderr
    sqrt(sum se_i^2) / k.
    """
    out: dict[str, dict[str, Any]] = {}
    for metric in metrics:
        if not all(metric.name in m.metrics for m in members):
            continue
        ns = [m.metrics[metric.name]["n"] for m in members]
        ses = [m.metrics[metric.name]["stderr"] for m in members]
        vals = [m.metrics[metric.name]["value"] for m in members]
        pooled = [v for m in members for v in m.values.get(metric.name, [])]
        total = sum(ns)
        if all(isinstance(v, float) for v in pooled):
            micro_se = (
                None
                if any(s is None for s in ses)
                else float(
                    np.sqrt(sum((n / total) ** 2 * s**2 for n, s in zip(ns, ses, strict=True)))
                )
            )
        else:
            micro_se = metric.stderr(pooled, iters=bootstrap_iters, seed=seed)
        macro_se = (
            None
            if any(s is None for s in ses)
            else float(np.sqrt(sum(s**2 for s in ses)) / len(ses))
        )
        out[metric.name] = {
            "micro": {"value": metric.aggregate(pooled), "stderr": micro_se, "n": total},
            "macro": {"value": mean(vals), "stderr": macro_se, "n": len(members)},
            "higher_is_better": metric.higher_is_better,
        }
    return out
