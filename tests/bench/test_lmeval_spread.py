"""lmeval_spread's comparison of two lm-eval driver outputs (the shape lmeval_driver dumps)."""

from __future__ import annotations

from typing import Any

from benchmarks.lmeval_spread import request_logprobs, spread


def _out(lls: list[float], greedy: list[bool], acc: float) -> dict[str, Any]:
    samples = [
        {
            "doc_id": 0,
            "filter": "none",
            "resps": [[[ll, g]] for ll, g in zip(lls, greedy, strict=True)],
        }
    ]
    return {"tasks": {"t": {"samples": samples, "metrics": {"acc,none": acc, "alias": "t"}}}}


def test_spread_reports_the_largest_deltas_and_differences() -> None:
    base = _out([-2.0, -10.0], [True, False], 0.5)
    other = _out([-2.00001, -10.0003], [True, True], 0.25)
    assert request_logprobs(base) == {("t", 0, 0): (-2.0, True), ("t", 0, 1): (-10.0, False)}
    row = spread(base, other)
    assert row["requests"] == 2 and row["greedy_differ"] == 1 and row["metrics_differ"] == 1
    assert abs(row["max_abs_delta"] - 3e-4) < 1e-9
    assert abs(row["max_rel_delta"] - 3e-5) < 1e-9
    assert spread(base, base)["max_abs_delta"] == 0.0
