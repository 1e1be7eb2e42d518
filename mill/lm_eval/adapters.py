"""lm-eval's pieces as Mill's: ``generate_until`` kwargs as :class:`~mill.types.GenerationArgs`,
one lm-eval metric under one filter as a Mill :class:`~mill.metrics.base.CorpusMetric`
(:class:`LMEvalMetric`), rebuilt from a run folder for ``mill compare``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from mill.errors import ConfigError, TaskError
from mill.lm_eval.requirement import require_lm_eval
from mill.metrics.base import CorpusMetric
from mill.metrics.stats import mean_stderr
from mill.types import Doc, GenerationArgs, OutputType, Response


def generation_args(gen_kwargs: dict[str, Any] | None) -> GenerationArgs:
    """lm-eval ``generate_until`` kwargs as Mill's, normalised as lm-eval's HF model does:
    ``until`` (a string or list), ``max_gen_toks`` (or max_new_tokens / max_tokens /
    max_completion_tokens; default 256), greedy unless ``do_sample`` with a temperature."""
    kwargs = dict(gen_kwargs or {})
    until = kwargs.pop("until", None) or []
    if isinstance(until, str):
        until = [until]
    max_gen = kwargs.pop("max_gen_toks", None)
    for alias in ("max_new_tokens", "max_tokens", "max_completion_tokens"):
        value = kwargs.pop(alias, None)
        if max_gen is None and value is not None:
            max_gen = value
    temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
    do_sample = bool(kwargs.pop("do_sample", False)) and temperature > 0.0
    return GenerationArgs(
        until=tuple(str(u) for u in until),
        max_gen_toks=int(max_gen if max_gen is not None else 256),
        do_sample=do_sample,
        temperature=temperature,
    )


def aggregation_name(fn: Any) -> str | None:
    """The name lm-eval registered an aggregation function under (None: the task's own)."""
    from lm_eval.api.registry import AGGREGATION_REGISTRY

    for name, registered in AGGREGATION_REGISTRY.items():
        if registered is fn:
            return str(name)
    return None


def rebuild_metric(name: str, settings: dict[str, Any]) -> LMEvalMetric:
    """An lm-eval task's metric from a run folder's task settings (``mill compare``)."""
    require_lm_eval()
    import lm_eval.api.metrics  # noqa: F401 - registers lm-eval's aggregations
    from lm_eval.api.registry import AGGREGATION_REGISTRY

    metric, _, filter_name = name.partition(",")
    aggregation = (settings.get("aggregations") or {}).get(metric)
    if aggregation not in AGGREGATION_REGISTRY:
        raise ConfigError(
            f"lm-eval metric {name!r} aggregates with the task's own function "
            f"({aggregation or 'unrecorded'}), which a run folder cannot rebuild"
        )
    higher = (settings.get("higher_is_better") or {}).get(metric)
    return LMEvalMetric(metric, filter_name, higher, AGGREGATION_REGISTRY[aggregation])


class LMEvalMetric(CorpusMetric):
    """One lm-eval metric under one filter (``acc,none``, ``exact_match,strict-match``).

    The per-sample value is what the task's ``process_results`` returned; the aggregate is
    the task's own aggregation function. The stderr is Mill's: closed form for lm-eval's
    ``mean``, a seeded bootstrap of the aggregation otherwise (lm-eval reports none for
    some, e.g. ``bits_per_byte``)."""

    output_types = frozenset(OutputType)

    def __init__(
        self,
        metric: str,
        filter_name: str,
        higher_is_better: bool | None,
        aggregation: Callable[[list[Any]], float] | None = None,
        scorer: Callable[[Doc, Sequence[Response]], dict[str, Any]] | None = None,
    ) -> None:
        from lm_eval.api.metrics import mean

        self.metric = metric
        self.filter_name = filter_name
        self.name = f"{metric},{filter_name}"
        self.higher_is_better = True if higher_is_better is None else bool(higher_is_better)  # type: ignore[misc]
        self._aggregation = aggregation or mean
        self._scorer = scorer

    @property
    def is_mean(self) -> bool:
        from lm_eval.api.metrics import mean

        return self._aggregation is mean

    def score(self, doc: Doc, responses: Sequence[Response]) -> Any:
        if self._scorer is None:
            raise TaskError(f"metric {self.name!r} was rebuilt from a run folder; it cannot score")
        return self._scorer(doc, responses).get(self.name)

    def aggregate(self, values: Sequence[Any]) -> float:
        present = [v for v in values if v is not None]
        return float(self._aggregation(present))

    def stderr(self, values: Sequence[Any], *, iters: int, seed: int) -> float | None:
        present = [v for v in values if v is not None]
        if len(present) < 2:
            return None
        if self.is_mean:  # lm-eval's mean_stderr: the deviations from its own mean
            return mean_stderr([float(v) for v in present], center=self.aggregate(present))
        return super().stderr(present, iters=iters, seed=seed)
