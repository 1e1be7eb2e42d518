"""Tasks -> requests -> model -> responses -> metrics.

The evaluator builds every doc's requests, groups them by output type across tasks,
dispatches each group to the model method for that type, folds the responses
of each doc into a :class:`~mill.record.SampleRecord` as soon as the doc is complete, and
aggregates metrics per task and per task group.

Tasks that run programs (``Task.EXECUTES``, the code tasks) add one step between responses
and metrics: their complete docs wait until generation ends, then the task builds every
generation's program, all of them run in one batch (:data:`Execute`, the runner's
``mill.execution.run_programs`` over the cores), and each doc is scored from its verdicts.
"""

from __future__ import annotations

import inspect
import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from mill.data.load import DataSource
from mill.errors import ConfigError
from mill.execution import Verdict
from mill.judging import DispatchFn, Judging, WaitingDoc, is_judged
from mill.metrics.base import DocResponses, Metric
from mill.metrics.groups import aggregate_members, row
from mill.model.base import LanguageModel
from mill.progress import Progress
from mill.record import SampleRecord
from mill.results import (
    DataOrigin,
    GroupMetric,
    GroupResults,
    MetricValue,
    Results,
    TaskResults,
    Truncation,
)
from mill.task.base import Task, TaskGroup
from mill.types import Doc, DocKey, DocOutput, OutputType, ReasoningRule, Request, Response

log = logging.getLogger("mill")

DISPATCH_ORDER = (OutputType.LOGPROBS, OutputType.PERPLEXITY, OutputType.GENERATIVE)


@dataclass
class TaskResult:
    """Aggregated metrics of one task: name -> {value, stderr, n}. A task with several
    subjects also has per-subject results and its subject groups (micro and macro)."""

    name: str
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    values: dict[str, list[Any]] = field(default_factory=dict)
    keys: list[tuple[str, int]] = field(default_factory=list)
    """(subject, doc id) of each value, in completion order until :func:`evaluate_tasks` sorts."""
    subjects: dict[str, TaskResult] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    generations: GenerationCounts | None = None
    """GENERATIVE tasks: how their generations ended (set as docs are folded)."""


@dataclass
class GenerationCounts:
    """How a generative task's generations ended: ``results.json``'s ``generations``."""

    generations: int = 0
    hit_max_gen_toks: int = 0
    """Ended at ``max_gen_toks`` (the budget cut them off)."""
    unknown: int = 0
    """The backend could not tell (saved completions)."""
    reasoning_unfinished: int = 0
    """Their reasoning block never closed: no answer, scored 0."""

    def add(self, response: Response) -> None:
        self.generations += 1
        if response.hit_max_gen_toks is None:
            self.unknown += 1
        elif response.hit_max_gen_toks:
            self.hit_max_gen_toks += 1
        self.reasoning_unfinished += int(response.reasoning_unfinished)

    def to_dict(self) -> dict[str, Any]:
        known = self.generations - self.unknown
        return {
            "generations": self.generations,
            "hit_max_gen_toks": self.hit_max_gen_toks,
            "truncation_rate": self.hit_max_gen_toks / known if known else None,
            "unknown": self.unknown,
            "reasoning_unfinished": self.reasoning_unfinished,
        }


def check_metrics(task: Task, metrics: Sequence[Metric]) -> None:
    """Refuse metrics that cannot be computed from this task's output type or settings."""
    for metric in metrics:
        if task.OUTPUT_TYPE not in metric.output_types:
            fits = ", ".join(sorted(t.value for t in metric.output_types))
            raise ConfigError(
                f"metric {metric.name!r} needs a {fits} task but task {task.name!r} is "
                f"{task.OUTPUT_TYPE.value}; drop it from metrics or pick another task"
            )
        problem = metric.check_task(task)
        if problem:
            raise ConfigError(problem)


def _prediction(
    task: Task, doc: Doc, responses: Sequence[Response], metrics: Sequence[Metric]
) -> Any:
    """The sample's prediction: the chosen index (LOGPROBS), the answers metrics extracted
    from the generation, else the generation itself (GENERATIVE), or the log-probability."""
    if task.OUTPUT_TYPE is OutputType.LOGPROBS:
        return int(np.argmax(np.array([r.logprob for r in responses], dtype=float)))
    if task.OUTPUT_TYPE is OutputType.GENERATIVE:
        extracted = {m.name: m.extracted_answer(responses) for m in metrics}
        extracted = {k: v for k, v in extracted.items() if v is not None}
        return extracted or responses[0].answer
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


Execute = Callable[[Sequence[str], Callable[[int, Verdict], None]], list[Verdict]]
"""Runs complete programs, calling back ``(index, verdict)`` as each ends; returns the
verdicts in program order (the runner's ``mill.execution.run_programs`` with its settings
and cache)."""


@dataclass
class RequestPlan:
    """Every doc's requests, and the response slots each doc waits on."""

    requests: list[Request] = field(default_factory=list)
    docs: dict[DocKey, Doc] = field(default_factory=dict)
    pending: dict[DocKey, dict[tuple[str, int], Response | None]] = field(default_factory=dict)


def build_requests(
    tasks: Sequence[Task],
    metrics: dict[str, list[Metric]],
    model: LanguageModel,
    source: DataSource,
    progress: Progress,
) -> RequestPlan:
    """Load each task's docs and build their requests (PMI's unconditioned ones when a
    metric needs them); refuses docs a metric cannot score before the model runs."""
    for task in tasks:
        check_metrics(task, metrics[task.name])
    plan = RequestPlan()
    for task in tasks:  # before any request: what this model cannot answer, and why
        refusal = model.refusal(task.OUTPUT_TYPE)
        if refusal:
            raise ConfigError(f"task {task.name!r}: {refusal}")
        if model.takes_messages() and "messages" not in inspect.signature(task.docs).parameters:
            raise ConfigError(
                f"task {task.name!r} cannot hand its prompts as chat messages; evaluate it "
                "with model=openai_completions"
            )
    hand_messages = model.takes_messages()
    chat = (
        model.chat_template() if any(t.chat_template for t in tasks) and not hand_messages else None
    )
    progress.phase("building requests", len(tasks))
    for task in tasks:
        unconditioned = any(m.needs_unconditioned for m in metrics[task.name])
        docs_of = (
            task.docs(source, chat=chat, messages=True)
            if hand_messages
            else task.docs(source, chat=chat)
        )
        for doc in docs_of:
            for metric in metrics[task.name]:
                problem = metric.check_doc(doc)
                if problem:
                    raise ConfigError(problem)
            doc_requests = task.requests(doc, unconditioned=unconditioned)
            key = (task.name, doc.subject, doc.id)
            plan.docs[key] = doc
            plan.pending[key] = {(r.role, r.index): None for r in doc_requests}
            plan.requests.extend(doc_requests)
        progress.advance()
    progress.done()
    return plan


class Collector:
    """The ``on_response`` of a run: collects each doc's responses as they arrive (in any
    order) and, once a doc is complete, folds them, scores the doc, records its sample and
    keeps its per-sample values for :func:`aggregate`."""

    def __init__(
        self,
        tasks: Sequence[Task],
        metrics: dict[str, list[Metric]],
        plan: RequestPlan,
        write_sample: Callable[[SampleRecord], None],
        progress: Progress,
        reasoning: ReasoningRule,
    ) -> None:
        self.by_task = {task.name: task for task in tasks}
        self.reasoning = reasoning
        self.metrics = metrics
        self.plan = plan
        self.write_sample = write_sample
        self.progress = progress
        self.results = {task.name: TaskResult(task.name) for task in tasks}
        self.next_round: list[Request] = []
        """Requests built from this round's responses (a multi-turn task's next turn)."""
        self.to_judge: dict[DocKey, DocResponses] = {}
        """Docs whose answers are complete and wait for the judge."""
        self.awaiting: list[tuple[Task, Doc, DocResponses]] = []
        """Complete docs of tasks that run programs, waiting for :meth:`execute`."""

    def __call__(self, request: Request, response: Response) -> None:
        key = (request.task, request.subject, request.doc_id)
        slots = self.plan.pending[key]
        slots[(request.role, request.index)] = response
        self.progress.advance()
        if any(v is None for v in slots.values()):
            return
        task = self.by_task[request.task]
        doc = self.plan.docs[key]
        answered = self._answered if task.OUTPUT_TYPE is OutputType.GENERATIVE else _as_is
        responses = DocResponses(
            answered(slots[k] for k in sorted(slots) if k[0] == "choice"),  # type: ignore[misc]
            (slots[k] for k in sorted(slots) if k[0] == "unconditioned"),  # type: ignore[misc]
            answered(slots[k] for k in sorted(slots, key=_turn_order) if k[0].startswith(TURN)),  # type: ignore[misc]
        )
        responses.doc = doc
        follow_up = getattr(task, "follow_up", None)  # multi-turn tasks: the next turn
        more = follow_up(doc, responses.answers()) if follow_up is not None else []
        if more:
            slots.update({(r.role, r.index): None for r in more})
            self.next_round.extend(more)
            return
        if any(is_judged(m) for m in self.metrics[task.name]):
            self.to_judge[key] = responses
            return
        if task.EXECUTES:
            self.awaiting.append((task, doc, responses))
        else:
            self.fold(task, doc, responses)
        del self.plan.pending[key]

    def _answered(self, responses: Iterable[Response]) -> list[Response]:
        """Generations with their answer under the run's reasoning rule
        (:attr:`Response.text_post_processed`), copies: the model's responses, which the
        cache keeps, stay as they came."""
        out = []
        for response in responses:
            answer, unfinished = self.reasoning.apply(response.text or "")
            out.append(
                replace(response, text_post_processed=answer, reasoning_unfinished=unfinished)
            )
        return out

    def take_round(self) -> list[Request]:
        """The next round's requests (and forget them)."""
        out, self.next_round = self.next_round, []
        return out

    def execute(self, run: Execute) -> None:
        """Build the programs of every awaiting doc, run them in one batch, then score each
        doc from its verdicts (:attr:`DocResponses.verdicts`, in repeat order)."""
        if not self.awaiting:
            return
        programs: list[str] = []
        spans: list[tuple[int, int]] = []
        for task, doc, responses in self.awaiting:
            built = task.programs(doc, [r.answer for r in responses]) or []
            spans.append((len(programs), len(built)))
            programs.extend(built)
        self.progress.phase("running programs", len(programs))
        verdicts = run(programs, lambda index, verdict: self.progress.advance())
        self.progress.done()
        for (task, doc, responses), (start, count) in zip(self.awaiting, spans, strict=True):
            responses.verdicts = list(verdicts[start : start + count])
            self.fold(task, doc, responses)
        self.awaiting = []

    def judge(self, judging: Judging, dispatch_fn: DispatchFn) -> None:
        """Judge every doc waiting for the judge (:meth:`Judging.judge`), then score
        and record each, in doc order."""
        waiting = [
            WaitingDoc(key, self.plan.docs[key], self.to_judge[key], self.metrics[key[0]])
            for key in sorted(self.to_judge)
        ]
        judging.judge(waiting, dispatch_fn, self.progress)
        for item in waiting:
            del self.to_judge[item.key]
            self.fold(self.by_task[item.key[0]], item.doc, item.responses)
            del self.plan.pending[item.key]

    def fold(self, task: Task, doc: Doc, responses: DocResponses) -> None:
        """Score one complete doc, keep its values and write its sample record."""
        task_metrics = self.metrics[task.name]
        scores = {m.name: m.score(doc, responses) for m in task_metrics}
        result = self.results[task.name]
        if task.OUTPUT_TYPE is OutputType.GENERATIVE:
            counts = result.generations = result.generations or GenerationCounts()
            for response in [*responses, *responses.turns]:
                counts.add(response)
        subject = result.subjects.setdefault(doc.subject, TaskResult(doc.subject))
        for part in (result, subject):
            part.keys.append((doc.subject, doc.id))
            for name, value in scores.items():
                part.values.setdefault(name, []).append(value)
        model_response = DocOutput.from_responses(doc, task.OUTPUT_TYPE, list(responses))
        if responses.unconditioned:
            model_response.unconditioned_logprobs = [
                float(r.logprob or 0.0) for r in responses.unconditioned
            ]
        record = SampleRecord.build(
            doc, model_response, _prediction(task, doc, responses, task_metrics), scores
        )
        picks = {m.name: m.pick(doc, responses) for m in task_metrics}
        record.picks = {k: v for k, v in picks.items() if v is not None} or None
        if responses.verdicts is not None:
            record.execution = [v.to_dict() for v in responses.verdicts]
        extra = getattr(task, "sample_extra", None)  # lm-eval tasks: their doc and filters
        if extra is not None:
            record.extra = extra(doc)
        if responses.turns or responses.judgments:
            record.extra = {**(record.extra or {}), "turns": responses.answers()}
            if "id" in doc.item:  # the question's own id (FastChat's question_id)
                record.extra["id"] = doc.item["id"]
        if responses.judge_records:
            record.extra = {**(record.extra or {}), "judgments": responses.judge_records}
        if doc.messages is not None:  # what a chat server was sent (response.input renders it)
            record.extra = {**(record.extra or {}), "messages": [list(m) for m in doc.messages]}
        self.write_sample(record)


def _as_is(responses: Iterable[Response]) -> list[Response]:
    return list(responses)


TURN = "turn"
"""Role prefix of a multi-turn task's later turns: ``turn2``, ``turn3`` ... (turn 1 is the
ordinary ``choice`` request)."""


def _turn_order(slot: tuple[str, int]) -> tuple[int, int]:
    role, index = slot
    tail = role[len(TURN) :]
    return (int(tail) if role.startswith(TURN) and tail.isdigit() else 0, index)


def require_judge(
    metrics: dict[str, list[Metric]], judging: Judging | None, rejudged: str | None = None
) -> None:
    """Refuse judged metrics without a judge (before any model loads), and ``mill judge
    run=<rejudged>`` of a run with no judged metric (its judging would judge nothing)."""
    needs_judge = [m.name for ms in metrics.values() for m in ms if is_judged(m)]
    if rejudged is not None and not needs_judge:
        scored = sorted({m.name for ms in metrics.values() for m in ms})
        raise ConfigError(
            f"run={rejudged}: its tasks ({', '.join(metrics)}) have no judged metric (they "
            f"score {', '.join(scored) or 'nothing'}), so there is nothing to judge; mill "
            "judge judges runs of judged tasks (task=mt_bench, arena_hard, judged, or "
            "+metrics=[judge_score])"
        )
    if needs_judge and judging is None:
        raise ConfigError(
            f"metric {needs_judge[0]!r} is scored by a judge model; add judge=<model> "
            "(e.g. judge=stories260k or judge=openai_chat judge.base_url=...)"
        )


def aggregate(
    tasks: Sequence[Task],
    metrics: dict[str, list[Metric]],
    results: dict[str, TaskResult],
    bootstrap_iters: int,
    seed: int,
) -> dict[str, TaskResult]:
    """Per-task (and per-subject, and subject-group) aggregates of the collected values,
    independent of the order in which responses completed."""
    for task in tasks:
        result = results[task.name]
        # aggregates (sums, bootstrap resamples) must not depend on completion order
        for part in (result, *result.subjects.values()):
            order = sorted(range(len(part.keys)), key=part.keys.__getitem__)
            part.keys = [part.keys[i] for i in order]
            part.values = {k: [v[i] for i in order] for k, v in part.values.items()}
        for metric in metrics[task.name]:
            values = result.values.get(metric.name, [])
            result.metrics[metric.name] = row(metric, values, bootstrap_iters, seed)
        if len(task.subjects) < 2:
            result.subjects = {}
            continue
        result.subjects = {s: result.subjects[s] for s in task.subjects if s in result.subjects}
        for subject in result.subjects.values():
            for metric in metrics[task.name]:
                values = subject.values.get(metric.name, [])
                subject.metrics[metric.name] = row(metric, values, bootstrap_iters, seed)
        for group, members in task.subject_groups().items():
            present = [result.subjects[s] for s in members if s in result.subjects]
            if present:
                result.groups[group] = {
                    "subjects": [s.name for s in present],
                    "metrics": aggregate_members(
                        present, metrics[task.name], bootstrap_iters, seed
                    ),
                }
    return results


def evaluate_tasks(
    tasks: Sequence[Task],
    metrics: dict[str, list[Metric]],
    model: LanguageModel,
    source: DataSource,
    write_sample: Callable[[SampleRecord], None],
    progress: Progress,
    bootstrap_iters: int = 1000,
    seed: int = 1234,
    dispatch_fn: DispatchFn = dispatch,
    judging: Judging | None = None,
    execute: Execute | None = None,
    reasoning: ReasoningRule | None = None,
) -> dict[str, TaskResult]:
    """Evaluate ``tasks`` on ``model``; returns per-task aggregates.

    :func:`build_requests`; then ``dispatch_fn`` sends the requests to the model (the
    runner's hook for sharding them across processes and caching them; it must call
    ``on_response`` once per request, in any order, on every rank) with a
    :class:`Collector` as ``on_response``. Requests come in rounds: a multi-turn task's
    next turn is built from the previous turn's responses and sent through ``dispatch_fn``
    again, until no doc asks for more; then ``execute`` runs the programs of tasks that
    execute (:meth:`Collector.execute`); then judged metrics send their judge prompts to
    the judge (:meth:`Collector.judge`). Then :func:`aggregate`. Every generation is read
    through ``reasoning`` (:class:`~mill.types.ReasoningRule`, ``<think>`` blocks by
    default) before anything scores it: programs, judges and metrics see its answer."""
    require_judge(metrics, judging)
    executing = [t.name for t in tasks if t.EXECUTES]
    if executing and execute is None:
        raise ConfigError(f"task {executing[0]!r} runs programs but no executor was given")
    plan = build_requests(tasks, metrics, model, source, progress)
    collector = Collector(
        tasks, metrics, plan, write_sample, progress, reasoning or ReasoningRule()
    )
    progress.phase("scoring requests", len(plan.requests))
    dispatch_fn(model, plan.requests, collector)
    turn = 1
    while collector.next_round:
        turn += 1
        more = collector.take_round()
        progress.phase(f"scoring requests (turn {turn})", len(more))
        dispatch_fn(model, more, collector)
    progress.done()
    if execute is not None:
        collector.execute(execute)
    if judging is not None:
        collector.judge(judging, dispatch_fn)
    return aggregate(tasks, metrics, collector.results, bootstrap_iters, seed)


def aggregate_group(
    members: Sequence[TaskResult], metrics: Sequence[Metric], bootstrap_iters: int, seed: int
) -> dict[str, dict[str, Any]]:
    """Group aggregates (micro and macro) of metrics shared by all members; see
    :func:`mill.metrics.groups.aggregate_members`."""
    return aggregate_members(members, metrics, bootstrap_iters, seed)


def _task_results(
    task: Task, result: TaskResult, source: DataSource, reasoning: ReasoningRule
) -> TaskResults:
    """One task's entry of ``results.json``: its metrics, subjects, settings, how its
    generations ended, the data it read and the rows it skipped."""
    return TaskResults(
        metrics=_rows(result.metrics),
        subjects={s: _rows(r.metrics) for s, r in result.subjects.items()},
        settings=_settings(task, reasoning),
        generations=None if result.generations is None else result.generations.to_dict(),
        data=task.origins,
        skipped_rows=(
            {"count": len(task.skipped), "rows": task.skipped} if source.skip_bad_rows else None
        ),
    )


def to_results(
    tasks: Sequence[Task],
    per_task: dict[str, TaskResult],
    metrics: dict[str, list[Metric]],
    group: TaskGroup | None,
    *,
    model: dict[str, Any],
    source: DataSource,
    truncation: dict[str, Any],
    seconds: float,
    bootstrap_iters: int,
    seed: int,
    reasoning: ReasoningRule | None = None,
) -> Results:
    """The typed results of a run (``results.json``): tasks, the subject groups of
    multi-subject tasks, and a task group's micro/macro aggregates over the metrics all
    its tasks share (an lm-eval group's own aggregates, for ``task=lm_eval``)."""
    rule = reasoning or ReasoningRule()
    results = Results(
        tasks={t.name: _task_results(t, per_task[t.name], source, rule) for t in tasks},
        model=model,
        data_source=DataOrigin(
            source.source, str(source.root) if source.root else None, source.source
        ),
        truncation=Truncation.from_dict(truncation),
        seconds=round(seconds, 3),
    )
    for t in tasks:  # subject groups of multi-subject tasks (MMLU categories, overall)
        for name, body in per_task[t.name].groups.items():
            results.groups[name] = GroupResults.from_dict(body)
    if group is not None:
        results.groups.update(_task_group(group, tasks, per_task, metrics, bootstrap_iters, seed))
    # what was read, per task (user files, lm-eval's dataset), not only the data= option
    results.data_source.tasks = {name: results.data_origin(name) for name in results.tasks}
    results.data_source.source = results.data_label
    return results


def _task_group(
    group: TaskGroup,
    tasks: Sequence[Task],
    per_task: dict[str, TaskResult],
    metrics: dict[str, list[Metric]],
    bootstrap_iters: int,
    seed: int,
) -> dict[str, GroupResults]:
    """A task group's aggregates: an lm-eval group's own (``aggregate_results``), else the
    micro/macro aggregates of the metrics every task of the group shares."""
    if hasattr(group, "aggregate_results"):  # lm-eval groups
        bodies = group.aggregate_results(per_task, bootstrap_iters, seed)
        return {name: GroupResults.from_dict(body) for name, body in bodies.items()}
    shared = [
        m
        for m in metrics[tasks[0].name]
        if all(m.name in [x.name for x in metrics[t.name]] for t in tasks)
    ]
    body = aggregate_group([per_task[t.name] for t in tasks], shared, bootstrap_iters, seed)
    return {
        group.name: GroupResults(
            metrics={k: GroupMetric.from_dict(v) for k, v in body.items()},
            tasks=[t.name for t in tasks],
        )
    }


def _settings(task: Task, reasoning: ReasoningRule) -> dict[str, Any]:
    """The task's settings as run; a generative task's with the reasoning rule its answers
    were read through."""
    settings = task.describe()
    if task.OUTPUT_TYPE is OutputType.GENERATIVE:
        settings["reasoning_tags"] = reasoning.describe()
    return settings


def _rows(rows: dict[str, dict[str, Any]]) -> dict[str, MetricValue]:
    return {name: MetricValue.from_dict(body) for name, body in rows.items()}
