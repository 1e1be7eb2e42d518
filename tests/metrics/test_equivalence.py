"""Math answers checked for equivalence (:mod:`mill.metrics.equivalence`): forms that are
one answer, forms that are not, time limits in the main thread and in any other, and the
vote of maj@k by equivalence."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("math_verify", reason="the math extra: pip install -e '.[math]'")

from mill.metrics.equivalence import MathChecker, Reading, bounded, majority  # noqa: E402

SAME = [
    ("ANSWER: \\frac{1}{2}", "so $\\boxed{0.5}$"),
    ("1/2", "$\\boxed{\\frac12}$"),
    ("ANSWER: $\\dfrac{3}{4}$", "The answer is $\\boxed{0.75}$."),
    ("27.0", "\\boxed{27}"),  # AMC's golds are floats
    ("204", "Therefore, the final answer is: $\\boxed{204}$. I hope it is correct"),
    ("90^\\circ", "\\boxed{90}"),
    ("ANSWER: $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}$", "$\\boxed{(3,\\frac{\\pi}{2})}$"),
    ("ANSWER: $\\boxed{\\sqrt{2}/2}$", "$\\boxed{\\frac{\\sqrt{2}}{2}}$"),
    ("1/3", "$\\boxed{0.3333333}$"),  # numbers to 6 digits
]
DIFFERENT = [
    ("204", "no idea"),
    ("204", "\\boxed{205}"),
    ("1/3", "$\\boxed{0.33}$"),
    ("ANSWER: $\\boxed{x^2+1}$", "$\\boxed{x^2-1}$"),
]


@pytest.fixture(scope="module")
def checker() -> Iterator[MathChecker]:
    made = MathChecker()
    yield made
    made.close()


@pytest.mark.parametrize(("gold", "prediction"), SAME)
def test_one_answer_in_other_forms(checker: MathChecker, gold: str, prediction: str) -> None:
    check = checker.check(gold, prediction)
    assert check.correct and check.extracted and not check.timed_out


@pytest.mark.parametrize(("gold", "prediction"), DIFFERENT)
def test_other_answers_are_wrong(checker: MathChecker, gold: str, prediction: str) -> None:
    assert not checker.check(gold, prediction).correct


def test_a_check_off_the_main_thread_gives_the_same_verdicts(checker: MathChecker) -> None:
    """A served model's workers score in threads, where ``signal.alarm`` cannot work: the
    check runs in the worker process, verdict for verdict the same."""
    cases = [(g, p + " ") for g, p in SAME + DIFFERENT]  # not the kept checks of the main thread
    here = [checker.check(g, p).correct for g, p in cases]
    fresh = MathChecker()
    there: list[bool] = []
    thread = threading.Thread(
        target=lambda: there.extend(fresh.check(g, p).correct for g, p in cases)
    )
    thread.start()
    thread.join(timeout=120)
    fresh.close()
    assert there == here and fresh.timeouts == 0


def test_a_step_out_of_time_is_wrong_and_counted() -> None:
    long = "$\\boxed{" + "+".join(f"\\frac{{{i}}}{{{i + 1}}}x^{{{i}}}" for i in range(300)) + "}$"
    quick = MathChecker(timeout_s=0.001)
    check = quick.check("ANSWER: $\\boxed{1}$", long)
    assert not check.correct and check.timed_out and quick.timeouts >= 1
    # the same in a thread: the worker process's own timer
    late: list[bool] = []
    thread = threading.Thread(target=lambda: late.append(quick.check("7", long + " ").timed_out))
    thread.start()
    thread.join(timeout=120)
    quick.close()
    assert late == [True]


def test_bounded_stops_a_slow_step_and_restores_the_timer() -> None:
    def slow() -> int:
        end = time.monotonic() + 5
        while time.monotonic() < end:
            pass
        return 1

    started = time.monotonic()
    assert bounded(slow, 0.05) == (None, True)
    assert time.monotonic() - started < 2
    assert bounded(lambda: 3, 1.0) == (3, False)


def test_majority_votes_by_equivalence(checker: MathChecker) -> None:
    answers = ["$\\boxed{0.5}$", "$\\boxed{7}$", "$\\boxed{\\frac{1}{2}}$", "$\\boxed{7}$", "1/2"]
    readings = [checker.read(a) for a in answers]
    assert majority(readings, checker.same) == 0  # 0.5, 1/2, \frac12: three votes, one answer
    tie = [checker.read(a) for a in ("$\\boxed{7}$", "$\\boxed{0.5}$")]
    assert majority(tie, checker.same) == 0  # a tie: the answer seen first
    unread = [Reading([]), Reading([]), checker.read("$\\boxed{7}$")]
    assert majority(unread, checker.same) is None  # most said nothing readable
