"""The ``code_eval`` metric of lm-eval's code tasks, supplied by Mill.

lm-eval 0.4.13's ``humaneval`` and ``mbpp`` ``utils.py`` call
``evaluate.load("code_eval")`` when imported: HF evaluate fetches that metric's script
from the Hub (which fails offline) and it runs the programs in threads of the evaluating
process. While the bridge loads lm-eval tasks, :func:`supplied` makes that call return
:data:`CODE_EVAL` instead, whose ``compute`` has code_eval's interface and builds code_eval's
programs (``candidate + "\\n" + test_case``), but never runs anything itself: the programs
are collected (:meth:`CodeEval.collecting`) and run by Mill's execution step in its sandbox,
and the verdicts score them (:meth:`CodeEval.scoring`) with Mill's pass@k estimator
(:func:`mill.metrics.repeats.pass_at_k`, equal to code_eval's).
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from mill.errors import TaskError
from mill.execution import Verdict
from mill.metrics.repeats import pass_at_k


class CodeEval:
    """Stand-in for HF evaluate's ``code_eval`` (see the module doc)."""

    def __init__(self) -> None:
        self._collected: list[str] | None = None
        self._verdicts: dict[str, Verdict] | None = None

    @staticmethod
    def programs(references: Sequence[str], predictions: Sequence[Sequence[str]]) -> list[str]:
        """code_eval's programs: each candidate of problem i, then problem i's tests."""
        return [
            f"{candidate}\n{test}"
            for test, candidates in zip(references, predictions, strict=True)
            for candidate in candidates
        ]

    @contextmanager
    def collecting(self) -> Iterator[list[str]]:
        """Within: ``compute`` records its programs in the yielded list, scores nothing."""
        self._collected = []
        try:
            yield self._collected
        finally:
            self._collected = None

    @contextmanager
    def scoring(self, verdicts: dict[str, Verdict]) -> Iterator[None]:
        """Within: ``compute`` scores each program by its verdict in ``verdicts``."""
        self._verdicts = verdicts
        try:
            yield
        finally:
            self._verdicts = None

    def compute(
        self,
        references: Sequence[str],
        predictions: Sequence[Sequence[str]],
        k: Sequence[int] = (1, 10, 100),
        **ignored: Any,  # num_workers, timeout: the sandbox's settings decide
    ) -> tuple[dict[str, float], dict[int, list[tuple[int, dict[str, Any]]]]]:
        ks = [k] if isinstance(k, int) else list(k)
        programs = self.programs(references, predictions)
        if self._collected is not None:
            self._collected.extend(programs)
            return {f"pass@{x}": 0.0 for x in ks}, {}
        if self._verdicts is None:  # utils.py's check at import: nothing runs then
            return {f"pass@{x}": 0.0 for x in ks}, {}
        missing = [p for p in programs if p not in self._verdicts]
        if missing:
            raise TaskError(f"code_eval: {len(missing)} program(s) were not run by the sandbox")
        results: dict[int, list[tuple[int, dict[str, Any]]]] = {}
        totals, correct = [], []
        position = 0
        for task_id, candidates in enumerate(predictions):
            verdicts = [self._verdicts[p] for p in programs[position : position + len(candidates)]]
            position += len(candidates)
            results[task_id] = [
                (j, {"task_id": task_id, "passed": v.passed, "result": v.message or v.status})
                for j, v in enumerate(verdicts)
            ]
            totals.append(len(verdicts))
            correct.append(sum(v.passed for v in verdicts))
        scores = {
            f"pass@{x}": sum(pass_at_k(n, c, x) for n, c in zip(totals, correct, strict=True))
            / len(totals)
            for x in ks
            if all(n >= x for n in totals)
        }
        return scores, results


CODE_EVAL = CodeEval()
"""The one stand-in every lm-eval code task's ``utils.py`` receives."""


@contextmanager
def supplied() -> Iterator[None]:
    """Within: ``evaluate.load("code_eval")`` returns :data:`CODE_EVAL` (other metrics load
    as usual); a stub ``evaluate`` module stands in where the library is not installed."""
    try:
        import evaluate

        module: Any = evaluate
        stub = False
    except ImportError:
        module = types.ModuleType("evaluate")
        sys.modules["evaluate"] = module
        stub = True
    original = getattr(module, "load", None)

    def load(path: str, *args: Any, **kwargs: Any) -> Any:
        if path == "code_eval":
            return CODE_EVAL
        if original is None:
            raise ImportError(f"evaluate.load({path!r}) needs HF evaluate: pip install evaluate")
        return original(path, *args, **kwargs)

    module.load = load
    try:
        yield
    finally:
        if stub:
            sys.modules.pop("evaluate", None)
        else:
            module.load = original
