"""Metric base classes: a per-sample score and a corpus aggregate with its stderr.

Every aggregate has a standard error: the closed form ``std(ddof=1)/sqrt(n)`` when the
aggregate is a mean of per-sample values (:class:`MeanMetric`; summed as lm-eval and
lighteval sum it, :func:`mill.metrics.stats.mean_stderr`), a seeded bootstrap over
docs otherwise (:class:`CorpusMetric`), and a 95% interval that stays inside the metric's
``bounds`` (:meth:`Metric.interval`, :func:`mill.metrics.stats.interval`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from mill.execution import Verdict
from mill.metrics import stats
from mill.metrics.stats import Bounds, bootstrap_stderr, mean, mean_stderr
from mill.types import Doc, OutputType, Response

if TYPE_CHECKING:
    from mill.task.base import Task

SampleValue = Any
"""A per-sample value: a float for means, a tuple for corpus metrics."""


class DocResponses(list[Response]):
    """A doc's responses in request order: one per choice (LOGPROBS), one per repeat
    (GENERATIVE) or one (PERPLEXITY). ``unconditioned`` holds the context-free responses
    of PMI, one per choice, when a selected metric asked for them. ``turns`` holds the
    later turns of a multi-turn task (turn 2, 3 ... of the first repeat), ``judgments``
    a judged metric's parsed judgments (metric name -> one per judge prompt, None when
    the reply did not parse) and ``judge_records`` the calls behind them; ``verdicts``
    the execution verdict of each generation's program when the task runs programs
    (else None)."""

    def __init__(
        self,
        responses: Iterable[Response],
        unconditioned: Iterable[Response] = (),
        turns: Iterable[Response] = (),
    ) -> None:
        super().__init__(responses)
        self.unconditioned: list[Response] = list(unconditioned)
        self.turns: list[Response] = list(turns)
        self.judgments: dict[str, list[Any]] = {}
        self.judge_records: dict[str, list[dict[str, Any]]] = {}
        """Per judged metric, each judge call's record (key, template, reply, judgment,
        attempts): the sample's ``extra.judgments``."""
        self.verdicts: list[Verdict] | None = None
        self.doc: Doc | None = None
        """The doc these respond to (set by the evaluator), for the hooks that take only
        the responses (:meth:`Metric.extracted_answer`)."""

    def answers(self) -> list[str]:
        """The answer of every turn (the first repeat's; :attr:`Response.answer`), in turn
        order."""
        first = [self[0].answer] if self else []
        return first + [r.answer for r in self.turns]


class Metric:
    """A named score: ``score`` per doc, ``aggregate`` over the corpus, ``stderr`` of it."""

    name: str = ""
    """The class default; a configured instance may carry its own (``metrics.<name>``)."""
    output_types: ClassVar[frozenset[OutputType]] = frozenset()
    higher_is_better: ClassVar[bool] = True
    needs_unconditioned: ClassVar[bool] = False
    """True: the evaluator issues context-free requests (PMI) for this metric."""
    named_by_config: ClassVar[bool] = False
    """True: its constructor takes ``name``, the config's (``metrics.<name>``), so that a
    bad setting's one line names the metric as the config does (the judged metrics,
    :class:`mill.judging.JudgedMetric`)."""
    bounds: ClassVar[Bounds | None] = None
    """The range the value cannot leave (``(0.0, 1.0)`` for pass@k, f1): its interval stays
    inside. A mean of 0/1 values is bounded by [0, 1] without saying so."""

    def score(self, doc: Doc, responses: Sequence[Response]) -> SampleValue:
        """Per-sample value from a doc and its responses (ordered by request index)."""
        raise NotImplementedError

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        """Corpus-level value."""
        raise NotImplementedError

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        """Standard error of :meth:`aggregate`."""
        raise NotImplementedError

    def extracted_answer(self, responses: Sequence[Response]) -> Any | None:
        """The answer this metric extracts from a generation, recorded as the sample's
        prediction (under the metric's name); None when it reads the output as it is."""
        return None

    def pick(self, doc: Doc, responses: Sequence[Response]) -> int | None:
        """The choice this metric picks (LOGPROBS accuracies: the argmax of its own choice
        scores), recorded in the sample's ``picks``; None for a metric that picks none."""
        return None

    def check_task(self, task: Task) -> str | None:
        """Why this metric cannot score ``task`` (checked before data loads), or None."""
        return None

    def parts(self) -> list[Metric]:
        """The metrics this config stands for: itself, or one per setting of a list
        (``pass_at_k`` with ``k=[1,10]``), each named ``<name>@<setting>``."""
        return [self]

    def check_doc(self, doc: Doc) -> str | None:
        """Why this metric cannot score ``doc`` (checked before the model runs), or None."""
        return None

    @property
    def is_mean(self) -> bool:
        """The aggregate is the mean of per-sample floats (closed-form stderr)."""
        return False

    def value_bounds(self, values: Sequence[SampleValue]) -> Bounds | None:
        """:attr:`bounds`, or [0, 1] for a mean of 0/1 values."""
        if self.bounds is None and self.is_mean:
            present = [v for v in values if v is not None]
            if present and all(isinstance(v, (bool, int, float)) and v in (0, 1) for v in present):
                return (0.0, 1.0)
        return self.bounds

    def interval(
        self,
        values: Sequence[SampleValue],
        value: float | None,
        stderr: float | None,
        *,
        iters: int,
        seed: int,
    ) -> tuple[tuple[float, float], str] | None:
        """The 95% interval of ``value`` = :meth:`aggregate` of ``values`` and its method
        (:func:`mill.metrics.stats.interval`: Wilson for 0/1 means, a percentile bootstrap
        for other bounded means, value +- 1.96 stderr clipped to the bounds otherwise)."""
        return stats.interval(
            values,
            value,
            stderr,
            is_mean=self.is_mean,
            bounds=self.value_bounds(values),
            iters=iters,
            seed=seed,
        )


class MeanMetric(Metric):
    """A metric whose corpus value is the mean of per-sample values.

    stderr = sample standard deviation (Bessel-corrected) / sqrt(n), as lm-eval's
    ``mean_stderr``.
    """

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        return mean([float(v) for v in values])

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        return mean_stderr([float(v) for v in values])

    @property
    def is_mean(self) -> bool:
        return True


class CorpusMetric(Metric):
    """A metric computed from all per-sample values at once (not a mean). Its stderr is
    the standard deviation of the aggregate over ``iters`` seeded bootstrap resamples of
    the docs."""

    def stderr(self, values: Sequence[SampleValue], *, iters: int, seed: int) -> float | None:
        return bootstrap_stderr(list(values), self.aggregate, iters=iters, seed=seed)


class RatioMetric(CorpusMetric):
    """A corpus metric over per-sample pairs (numerator, denominator), e.g. log-likelihood
    and word count: ``from_sums(sum numerators, sum denominators)``."""

    def from_sums(self, numerator: float, denominator: float) -> float:
        """The corpus value from the summed pairs."""
        raise NotImplementedError

    def aggregate(self, values: Sequence[SampleValue]) -> float:
        pairs = [v for v in values if isinstance(v, (tuple, list))]
        return self.from_sums(sum(p[0] for p in pairs), sum(p[1] for p in pairs))
