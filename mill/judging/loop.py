"""The judging phase of a run: every doc whose answers are complete sends its judge
prompts to the judge, once the candidate's answers are all in.

:class:`Judging` is the run's judge: its settings, how the runner loads it (the runner
releases the candidate model first and puts the judge behind its response cache), and
what the manifest records of it. The evaluator calls it through one method,
:meth:`Judging.judge` (:meth:`mill.evaluator.Collector.judge`).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from mill.errors import MillError
from mill.judging.rubrics import JudgedMetric, JudgePrompt, is_judged
from mill.judging.settings import JudgeSettings, as_judge_error
from mill.metrics.base import DocResponses, Metric
from mill.model.base import LanguageModel
from mill.progress import Progress
from mill.task.chat import plain_conversation
from mill.types import (
    ChatTemplate,
    Doc,
    DocKey,
    GenerationArgs,
    OnResponse,
    OutputType,
    Request,
    Response,
)

log = logging.getLogger("mill")

JUDGE_ROLE = "judge"
"""Role prefix of a judge request: ``judge/<metric>/<prompt key>``."""


DispatchFn = Callable[[LanguageModel, Sequence[Request], OnResponse], None]
"""Sends requests to a model, calling ``on_response`` once per request in any order
(:func:`mill.evaluator.dispatch`; the runner's shards it across ranks and caches it): the
evaluator sends the candidate's requests through it, the judging phase the judge's."""


@dataclass
class WaitingDoc:
    """A doc whose answers are complete and wait for the judge."""

    key: DocKey
    doc: Doc
    responses: DocResponses
    metrics: list[Metric]


Sent = tuple[WaitingDoc, JudgedMetric, int, JudgePrompt]
"""What one judge request judges: the doc, the metric, the prompt's index and the prompt."""


class JudgeFailed(MillError):
    """More judgments than ``judge.max_invalid`` allows did not parse."""


@dataclass
class LoadedJudge:
    """The judge model the runner built (behind its response cache when it has one)."""

    model: LanguageModel
    identity: dict[str, Any]
    cache: dict[str, Any] | None = None
    """``dir`` and ``entries_before`` of the judge's response cache, or None without one."""
    stats: Callable[[], dict[str, int]] | None = None
    """The cache's counts (hits, computed, shared) so far, when the judge is cached."""
    close: Callable[[], None] = lambda: None


def template_hashes(metrics: dict[str, list[Metric]]) -> dict[str, dict[str, str]]:
    """Judged metric -> rubric role -> sha256 of its template."""
    return {m.name: m.template_hashes() for ms in metrics.values() for m in ms if is_judged(m)}


@dataclass
class Judging:
    """The judge of a run: ``load`` builds it (the runner's loading step), :meth:`judge`
    judges the waiting docs, :meth:`manifest` says what the manifest keeps of it."""

    settings: JudgeSettings
    load: Callable[[], LoadedJudge]
    templates: dict[str, dict[str, str]] = field(default_factory=dict)
    loaded: LoadedJudge | None = None
    conversation_format: str | None = None
    """Set by :meth:`judge`: ``chat_template``, ``messages`` (the server's template) or
    ``plain_text`` (:func:`mill.task.chat.plain_conversation`)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Set by :meth:`judge`: judgments, invalid, retried."""

    def judge(
        self, waiting: Sequence[WaitingDoc], dispatch_fn: DispatchFn, progress: Progress
    ) -> None:
        """Judge every doc of ``waiting`` (sorted by key): each judged metric's parsed
        judgments go to ``responses.judgments``, their records (reply, template,
        attempts) to ``responses.judge_records``.

        One round sends every judge prompt; a reply that does not parse is sent once more
        at a new seed when the judge samples (else it stays invalid); invalid judgments
        never count as grades. More than ``max_invalid`` of them ends the run, naming the
        first (JudgeFailed). An error of the judge's model names its settings as the user
        typed them, ``judge.base_url`` (:func:`as_judge_error`)."""
        if not waiting:
            return
        try:
            self._judge(waiting, dispatch_fn, progress)
        except MillError as err:
            renamed = as_judge_error(err)
            if renamed is err:
                raise
            raise renamed from err

    def _judge(
        self, waiting: Sequence[WaitingDoc], dispatch_fn: DispatchFn, progress: Progress
    ) -> None:
        self.loaded = self.load()
        model = self.loaded.model
        messages = model.takes_messages()
        chat = None if messages else model.chat_template()
        self.conversation_format = (
            "messages" if messages else "chat_template" if chat is not None else "plain_text"
        )
        if self.conversation_format == "plain_text":
            log.warning(
                "the judge has no chat template: its prompts use Mill's plain-text "
                "conversation format (### System / ### User / ### Assistant; docs/judging.md)"
            )
        sent, requests = self._requests(waiting, chat, messages)
        replies: dict[str, Response] = {}

        def on_reply(request: Request, response: Response) -> None:
            replies[request.id] = response
            progress.advance()

        progress.phase("judging", len(requests))
        dispatch_fn(model, requests, on_reply)
        retry = []
        for request in requests:
            metric = sent[request.id][1]
            args = request.generation
            if metric.parse(replies[request.id].text or "") is None and args and args.do_sample:
                again = replace(request, index=1, generation=replace(args, seed=args.seed + 1))
                sent[again.id] = sent[request.id]
                retry.append(again)
        if retry:
            progress.phase("judging (retries)", len(retry))
            dispatch_fn(model, retry, on_reply)
        progress.done()
        judged = self._parse(sent, [*requests, *retry], replies)
        self._count(judged, len(retry))
        for item in waiting:
            item.responses.judge_records = judged[item.key]

    def _requests(
        self, waiting: Sequence[WaitingDoc], chat: ChatTemplate | None, messages: bool
    ) -> tuple[dict[str, Sent], list[Request]]:
        """Every judge prompt of the waiting docs' judged metrics, as requests, and what
        each request id judges; each metric's judgments start as None, one per prompt."""
        sent: dict[str, Sent] = {}
        requests = []
        for item in waiting:
            answers = item.responses.answers()
            for metric in item.metrics:
                if not is_judged(metric):
                    continue
                prompts = metric.judge_prompts(item.doc, answers)
                item.responses.judgments[metric.name] = [None] * len(prompts)
                generation = metric_generation(metric, self.settings.generation)
                for i, prompt in enumerate(prompts):
                    request = judge_request(
                        item.key, metric.name, prompt, generation, chat, messages
                    )
                    sent[request.id] = (item, metric, i, prompt)
                    requests.append(request)
        return sent, requests

    @staticmethod
    def _parse(
        sent: dict[str, Sent], requests: Sequence[Request], replies: dict[str, Response]
    ) -> dict[DocKey, dict[str, list[dict[str, Any]]]]:
        """Each reply parsed into its metric's judgments; returns each doc's records (key,
        template, reply, judgment, attempts) by metric, its ``judge_records``."""
        judged: dict[DocKey, dict[str, list[dict[str, Any]]]] = defaultdict(dict)
        for request in requests:
            item, metric, i, prompt = sent[request.id]
            text = replies[request.id].text or ""
            parsed = metric.parse(text)
            records = judged[item.key].setdefault(metric.name, [])
            if request.index == 0:
                records.append({"key": prompt.key, "template": prompt.template})
            record = next(r for r in records if r["key"] == prompt.key)
            record.update({"reply": text, "judgment": parsed, "attempts": request.index + 1})
            item.responses.judgments[metric.name][i] = parsed
        return judged

    def _count(self, judged: dict[DocKey, dict[str, list[dict[str, Any]]]], retried: int) -> None:
        """Count the judgments; JudgeFailed when more than ``max_invalid`` did not parse."""
        first_invalid: str | None = None
        invalid = 0
        for key, by_metric in judged.items():
            for metric_name, records in by_metric.items():
                for record in records:
                    if record["judgment"] is None:
                        invalid += 1
                        if first_invalid is None:
                            first_invalid = (
                                f"{key[0]}/{key[2]} {metric_name} {record['key']}: "
                                f"{record['reply'][:80]!r}"
                            )
        total = sum(len(r) for m in judged.values() for r in m.values())
        self.counts = {"judgments": total, "invalid": invalid, "retried": retried}
        max_invalid = self.settings.max_invalid
        if total and invalid / total > max_invalid:
            raise JudgeFailed(
                f"{invalid} of {total} judgments did not parse (more than judge.max_invalid="
                f"{max_invalid}); the first: {first_invalid}; use a judge that follows "
                "the rubric's format, or raise judge.max_invalid"
            )

    def manifest(self) -> dict[str, Any]:
        """``judge`` in the manifest and results.json: the judge's identity, settings,
        rubrics' hashes, conversation format, judgment counts and cache."""
        loaded = self.loaded
        out: dict[str, Any] = {
            "identity": loaded.identity if loaded is not None else {},
            "settings": self.settings.record(),
            "templates": self.templates,
            "conversation_format": self.conversation_format,
            "judgments": self.counts,
        }
        if loaded is not None and loaded.cache is not None:
            out["cache"] = {**loaded.cache, **(loaded.stats() if loaded.stats else {})}
        return out

    def close(self) -> None:
        if self.loaded is not None:
            self.loaded.close()


def metric_generation(metric: JudgedMetric, generation: GenerationArgs) -> GenerationArgs:
    """The judge's generation for ``metric``'s calls: the judge's own, with the settings
    the metric's protocol fixes (``judge_generation``: Arena-Hard's config sets
    ``max_tokens`` 4096 and temperature 0)."""
    fixed = metric.judge_generation
    return replace(generation, **fixed) if fixed else generation


def judge_request(
    key: DocKey,
    metric: str,
    prompt: JudgePrompt,
    generation: GenerationArgs,
    chat: ChatTemplate | None,
    messages: bool,
) -> Request:
    """The request that sends one judge prompt: through the judge's chat template, as
    messages for a server that applies its own, else in the plain-text format."""
    turns = [{"role": r, "content": c} for r, c in prompt.messages]
    context = chat(turns, True) if chat is not None else plain_conversation(turns)
    return Request(
        OutputType.GENERATIVE,
        task=key[0],
        subject=key[1],
        doc_id=key[2],
        index=0,
        context=context,
        generation=generation,
        role=f"{JUDGE_ROLE}/{metric}/{prompt.key}",
        messages=prompt.messages if messages else None,
    )
