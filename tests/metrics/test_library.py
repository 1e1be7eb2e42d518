"""Every metric of the library against values computed by hand."""

from __future__ import annotations

import math

import pytest

from mill.metrics import (
    F1,
    Accuracy,
    AccuracyBytes,
    AccuracyMutualInfo,
    AccuracyNorm,
    AccuracyNormToken,
    BrierScore,
    ConfidenceWeightedAccuracy,
    DistributionalCorrectness,
    DocResponses,
    ExactMatch,
    ExpectedCalibrationError,
    MajAtK,
    PassAtK,
    Perplexity,
    ProbabilityMass,
    ProbabilityMassNorm,
    TernaryScore,
)
from mill.metrics.repeats import pass_at_k
from mill.types import Doc, Response


def _doc(choices: list[str], gold: int, idk: int | None = None) -> Doc:
    return Doc(
        task="t", id=0, subject="default", context="Q:", choices=tuple(choices), gold=gold,
        idk_index=idk,
    )  # fmt: skip


def _resp(lls: list[float], tokens: list[int] | None = None) -> list[Response]:
    tokens = tokens or [1] * len(lls)
    return [
        Response(request_id=str(i), logprob=ll, output_tokens=list(range(n)))
        for i, (ll, n) in enumerate(zip(lls, tokens, strict=True))
    ]


def _probs(p: list[float]) -> list[Response]:
    """One-character choices with ll = log p: the per-character scores are log p too."""
    return _resp([math.log(x) for x in p])


def test_acc_single_candidate_is_greedy() -> None:
    doc = _doc(["signs"], 0)
    assert Accuracy().score(doc, [Response("0", logprob=-9.0, is_greedy=True)]) == 1.0
    assert Accuracy().score(doc, [Response("0", logprob=-0.1, is_greedy=False)]) == 0.0


def test_length_normalisations_pick_different_choices() -> None:
    # tokens: -2/1 = -2 vs -3/3 = -1 -> choice 1; raw ll -> choice 0
    doc, resp = _doc(["ab", "cd"], 1), _resp([-2.0, -3.0], tokens=[1, 3])
    assert Accuracy().score(doc, resp) == 0.0
    assert AccuracyNormToken().score(doc, resp) == 1.0
    # "é" is 1 character but 2 bytes: chars -2/1 vs -3/2 -> 1; bytes -2/2 vs -3/2 -> 0
    doc, resp = _doc(["é", "ab"], 0), _resp([-2.0, -3.0])
    assert AccuracyNorm().score(doc, resp) == 0.0
    assert AccuracyBytes().score(doc, resp) == 1.0


def test_mutual_info_subtracts_unconditioned() -> None:
    # conditioned [-1, -2], unconditioned [-0.5, -3] -> PMI [-0.5, 1.0] -> choice 1
    doc = _doc(["a", "b"], 1)
    responses = DocResponses(_resp([-1.0, -2.0]), _resp([-0.5, -3.0]))
    assert AccuracyMutualInfo().score(doc, responses) == 1.0
    assert Accuracy().score(doc, responses) == 0.0
    assert AccuracyMutualInfo.needs_unconditioned and not Accuracy.needs_unconditioned
    with pytest.raises(ValueError, match="unconditioned"):
        AccuracyMutualInfo().score(doc, _resp([-1.0, -2.0]))


def test_confidence_weighted_accuracy() -> None:
    assert ConfidenceWeightedAccuracy().score(_doc(list("abc"), 0), _probs([0.5, 0.3, 0.2])) == (
        pytest.approx(0.5)
    )
    assert ConfidenceWeightedAccuracy().score(_doc(list("abc"), 1), _probs([0.5, 0.3, 0.2])) == 0


def test_probability_mass_has_no_underflow() -> None:
    # exp(-1000) underflows to 0 in float64: a naive ratio is 0/0 = nan
    doc = _doc(["ab", "c"], 0)
    resp = _resp([-1000.0, -1001.0])
    assert ProbabilityMass().score(doc, resp) == pytest.approx(1 / (1 + math.exp(-1)))
    # per character: -500 vs -1001 -> practically all mass on choice 0
    assert ProbabilityMassNorm().score(doc, resp) == pytest.approx(1.0)
    assert ProbabilityMass().score(_doc(["a", "b", "c"], 1), _probs([0.5, 0.3, 0.2])) == (
        pytest.approx(0.3)
    )


def test_brier() -> None:
    # (0.5 - 1)^2 + 0.3^2 + 0.2^2 = 0.25 + 0.09 + 0.04
    assert BrierScore().score(_doc(list("abc"), 0), _probs([0.5, 0.3, 0.2])) == (
        pytest.approx(0.38)
    )
    assert not BrierScore.higher_is_better


def test_ece_binned() -> None:
    ece = ExpectedCalibrationError(bins=4)
    assert ece.score(_doc(list("abc"), 0), _probs([0.5, 0.3, 0.2])) == (
        pytest.approx(0.5),
        1.0,
    )
    # bins of width 1/4: (0.5, 0.75] holds 0.75 twice (acc 0.5): 2/4 * 0.25;
    # (0.25, 0.5] holds 0.5 (acc 1): 1/4 * 0.5; [0, 0.25] holds 0.25 (acc 0): 1/4 * 0.25
    values = [(0.75, 1.0), (0.75, 0.0), (0.5, 1.0), (0.25, 0.0)]
    assert ece.aggregate(values) == pytest.approx(0.125 + 0.125 + 0.0625)
    assert ece.stderr(values, iters=200, seed=3) == ece.stderr(values, iters=200, seed=3) > 0
    # 0.3 belongs to (0.2, 0.3] despite 0.3 * 10 = 3.0000000000000004
    assert ExpectedCalibrationError(bins=10).aggregate([(0.3, 1.0)]) == pytest.approx(0.7)


def test_ternary_uses_the_marked_idk_choice() -> None:
    # the IDK choice is index 1, not the last one
    doc = _doc(["a", "b", "c", "d"], gold=0, idk=1)
    ternary = TernaryScore(correct=1.0, wrong=0.5)
    assert ternary.score(doc, _probs([0.7, 0.1, 0.1, 0.1])) == 1.0
    assert ternary.score(doc, _probs([0.1, 0.7, 0.1, 0.1])) == 0.0
    assert ternary.score(doc, _probs([0.1, 0.1, 0.1, 0.7])) == -0.5  # last, but not IDK
    assert ternary.check_doc(_doc(["a", "b"], 0)) and ternary.check_doc(doc) is None


def test_dcs_applies_the_idk_factor() -> None:
    dcs = DistributionalCorrectness()
    doc = _doc(["A", "B", "C", "D", "?"], gold=2, idk=4)
    # (0.40 - (0.31 + 0.27 + 0.01)) * (1 - 0.01) = -0.1881 (eval-framework: -0.19)
    assert dcs.score(doc, _probs([0.31, 0.27, 0.40, 0.01, 0.01])) == pytest.approx(-0.1881)
    # (0.40 - 0.21) * (1 - 0.39) = 0.1159 (eval-framework: 0.19)
    assert dcs.score(doc, _probs([0.15, 0.05, 0.40, 0.01, 0.39])) == pytest.approx(0.1159)
    # IDK first: the same probabilities reordered give the same score
    moved = _doc(["?", "A", "B", "C", "D"], gold=3, idk=0)
    assert dcs.score(moved, _probs([0.39, 0.15, 0.05, 0.40, 0.01])) == pytest.approx(0.1159)
    with pytest.raises(ValueError, match="correct >= wrong"):
        DistributionalCorrectness(correct=0.5, wrong=1.0)


def test_exact_match_normalisation_options() -> None:
    doc = Doc(task="t", id=0, subject="default", context="", gold="The answer: 42!")
    resp = [Response("0", text="the ANSWER 42")]
    assert ExactMatch().score(doc, resp) == 0.0
    assert ExactMatch(ignore_case=True, ignore_punctuation=True).score(doc, resp) == 1.0
    assert ExactMatch(ignore_case=True, regexes_to_ignore=[r"[:!]"]).score(doc, resp) == 1.0


def test_f1_token_overlap() -> None:
    # tokens [cat, sat] vs [cat, sat, down]: P = 1, R = 2/3, F1 = 0.8; best reference wins
    doc = Doc(task="t", id=0, subject="default", context="", gold=("a cat sat down", "dog"))
    assert F1().score(doc, [Response("0", text="The cat sat.")]) == pytest.approx(0.8)
    assert F1().score(doc, [Response("0", text="")]) == 0.0


def test_perplexity_of_gold_continuations() -> None:
    ppl = Perplexity()
    values = [ppl.score(_doc(["x"], 0), _resp([-1.0])), ppl.score(_doc(["y"], 0), _resp([-3.0]))]
    assert values == [-1.0, -3.0]
    assert ppl.aggregate(values) == pytest.approx(math.exp(2.0))
    assert ppl.stderr(values, iters=100, seed=0) is not None and not ppl.higher_is_better


def test_pass_at_k_and_maj_at_k() -> None:
    # n=4, c=1, k=2: 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 0, 2) == 0.0 and pass_at_k(4, 3, 2) == 1.0
    doc = Doc(task="t", id=0, subject="default", context="", gold="#### 7")
    texts = ["so 8", "so 7", "so 7", "so 9"]
    resp = [Response(str(i), text=t) for i, t in enumerate(texts)]
    options = dict(extract_pattern=r"(\d+)", regexes_to_ignore=["(?s).*#### "])
    assert PassAtK(k=2, **options).score(doc, resp) == pytest.approx(1 - 1 / 6)
    assert MajAtK(k=3, **options).score(doc, resp) == 1.0  # 8, 7, 7 -> 7
    assert MajAtK(k=2, **options).score(doc, resp) == 0.0  # tie 8, 7 -> first seen: 8
