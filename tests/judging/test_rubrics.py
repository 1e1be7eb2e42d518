"""Judged metrics on the fake model scripted as a judge: parsing, MT-Bench's swap rule,
ties, the bootstrap CI, invalid replies and aggregation, against hand-computed values."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mill.errors import ConfigError
from mill.judging import JudgeFailed
from mill.judging.rubrics import JudgeScore, PairwiseWinRate, swap_rule
from mill.metrics.stats import bootstrap_ci, cohen_kappa
from mill.runner.job import run_job
from tests.helpers import write_jsonl

SINGLE = {"single": {"system_prompt": "Judge.", "prompt_template": "Q: {question}\nA: {answer}"}}


def test_grades_parse_with_fastchats_pattern_and_its_backup() -> None:
    metric = JudgeScore(templates=SINGLE, scale=[1, 10])
    assert metric.parse("Fine work. Rating: [[7.5]]") == 7.5
    assert metric.parse("Rating: [4]") == 4.0  # one_score_pattern_backup
    assert metric.parse("[[9]] then [2]") == 9.0  # the double brackets win
    assert metric.parse("no grade here") is None
    pair = PairwiseWinRate(
        templates={"single": {"prompt_template": "{question}{answer_a}{answer_b}"}}
    )
    assert [pair.parse(t) for t in ("[[A]]", "x [[C]] y", "[[D]]", "A")] == ["A", "C", None, None]
    # FastChat's run_judge_pair: [[A]] anywhere first, then [[B]], then [[C]]
    assert pair.parse("I thought [[B]]. Final verdict: [[A]]") == "A"
    assert pair.parse("[[C]] or rather [[B]]") == "B"


def test_a_grade_outside_the_rubrics_scale_is_invalid() -> None:
    metric = JudgeScore(templates=SINGLE, scale=[1, 10])
    assert [metric.parse(f"Rating: [[{g}]]") for g in ("1", "10", "0", "99999", "10.5")] == [
        1.0, 10.0, None, None, None,
    ]  # fmt: skip


@pytest.mark.parametrize("scale", [None, [], [10, 1], ["a", "b"], [1, 5, 10]])
def test_a_rubric_without_a_scale_is_refused_in_one_line(scale) -> None:
    with pytest.raises(ConfigError, match="the rubric has no scale") as err:
        JudgeScore(templates=SINGLE, scale=scale)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("first", "second", "outcome", "changed"),
    [
        ("A", "B", 1.0, False),  # candidate wins as A and as B
        ("B", "A", 0.0, False),  # loses both ways
        ("C", "C", 0.5, False),  # a tie both ways
        ("A", "A", 0.5, True),  # A wins whatever A is: order-dependent -> tie
        ("B", "B", 0.5, True),
        ("A", "C", 0.5, True),
        ("A", None, None, False),  # an invalid verdict: no outcome
    ],
)
def test_mt_benchs_swap_rule(first, second, outcome, changed) -> None:
    assert swap_rule(first, second) == (outcome, changed)


def test_bootstrap_ci_of_two_values_spans_both() -> None:
    # the mean of a resample of [0, 1] is 0, 0.5 or 1 with p = 1/4, 1/2, 1/4: the 2.5%
    # and 97.5% quantiles are 0 and 1
    assert bootstrap_ci([0.0, 1.0], lambda v: sum(v) / len(v), iters=2000, seed=1) == (0.0, 1.0)
    assert bootstrap_ci([1.0, 1.0, 1.0], lambda v: sum(v) / len(v), iters=50, seed=1) == (1.0, 1.0)
    assert bootstrap_ci([1.0], lambda v: v[0], iters=50, seed=1) == (None, None)


def test_cohen_kappa_by_hand() -> None:
    # 10 items: agree on 7 (4 yes, 3 no); a says yes 6 times, b 5 times
    a = ["y", "y", "y", "y", "n", "n", "n", "y", "y", "n"]
    b = ["y", "y", "y", "y", "n", "n", "n", "n", "n", "y"]
    p_o, p_e = 0.7, 0.6 * 0.5 + 0.4 * 0.5
    kappa, se = cohen_kappa(a, b)
    assert kappa == pytest.approx((p_o - p_e) / (1 - p_e)) == pytest.approx(0.4)
    assert se == pytest.approx((p_o * (1 - p_o) / (10 * (1 - p_e) ** 2)) ** 0.5)
    assert cohen_kappa(["y", "y"], ["y", "y"]) == (1.0, None)


@pytest.mark.parametrize(
    ("templates", "patterns", "message"),
    [
        ({"single": {"prompt_template": "Q: {question}"}}, None, "lacks answer"),
        (
            {"single": {"prompt_template": "{question}{answer}{extra}"}},
            None,
            "does not fill: extra",
        ),
        (SINGLE, [r"\[\[\d+\]\]"], "no group"),
        (SINGLE, [r"Score: (\d+)"], "cannot match a grade"),
        (SINGLE, [r"(["], "is invalid"),
        ({"multi": SINGLE["single"], **SINGLE}, None, "unknown judge template role"),
    ],
)
def test_bad_rubrics_are_refused_in_one_line(templates, patterns, message) -> None:
    with pytest.raises(ConfigError, match=message) as err:
        JudgeScore(templates=templates, patterns=patterns, scale=[1, 10])
    assert "\n" not in str(err.value)


def _questions(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "q.jsonl",
        [
            {"id": "a", "turns": ["What is ALPHA?", "And BETA?"], "category": "writing"},
            {"id": "b", "turns": ["What is GAMMA?", "And DELTA?"], "category": "math"},
        ],
    )


def _judged(compose, folder: Path, *overrides: str, replies: dict | None = None):
    cfg = compose("model=fake", "judge=fake", "report.progress=never", *overrides)
    if replies is not None:  # set here: Hydra's override grammar cannot quote every prompt
        cfg.judge.replies = replies
    return run_job(cfg, folder)


# The multi-turn prompt of turn 2 repeats turn 1's question: the first key found wins.
GRADES = '+judge.replies={BETA: "Rating: [[6]]", ALPHA: "[[8]]", DELTA: "no grade", GAMMA: "[3]"}'


def _graded(compose, tmp_path, *extra: str):
    """The two-question file judged with GRADES."""
    q = f"task.questions={_questions(tmp_path)}"
    return _judged(compose, tmp_path / "run", "task=judged", q, GRADES, *extra)


def test_single_grades_mean_per_turn_per_category_and_n_invalid(compose, tmp_path) -> None:
    results = _graded(compose, tmp_path, "judge.max_invalid=0.25")
    row = results.tasks["judged"].metrics["judge_score"]
    # valid grades 8, 6 (doc a), 3 (doc b turn 1); doc b turn 2 is invalid
    assert row.value == pytest.approx((8 + 6 + 3) / 3)
    assert row.details == {"n_invalid": 1, "turn_1": 5.5, "turn_2": 6.0}
    assert results.tasks["judged"].subjects["writing"]["judge_score"].value == 7.0
    assert results.tasks["judged"].subjects["math"]["judge_score"].value == 3.0
    judge = results.judge
    assert judge["judgments"] == {"judgments": 4, "invalid": 1, "retried": 0}
    assert judge["identity"]["class"] == "FakeLM" and judge["conversation_format"] == "plain_text"
    assert set(judge["templates"]["judge_score"]) == {
        "single",
        "multi_turn",
        "single_reference",
        "multi_turn_reference",
    }
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["judge"] == judge
    report = (tmp_path / "run" / "report.txt").read_text()
    assert "judge: fake (class=FakeLM); conversation format: plain_text" in report
    single = judge["templates"]["judge_score"]["single"][:12]
    assert "judge templates of judge_score (sha256): " in report and single in report
    assert "judged judge_score: 1 invalid judgment(s)" in report
    lines = [
        json.loads(x) for x in (tmp_path / "run/samples/judged.jsonl").read_text().splitlines()
    ]
    b = next(x for x in lines if x["doc_id"] == 1)
    assert b["metrics"]["judge_score"] == [3.0, None]
    assert [j["reply"] for j in b["extra"]["judgments"]["judge_score"]] == ["[3]", "no grade"]
    # math is not reference-guided in judge_score; its turn-2 prompt saw turn 1's answer
    assert len(b["extra"]["turns"]) == 2


def test_too_many_invalid_judgments_end_the_run_naming_the_first(compose, tmp_path) -> None:
    with pytest.raises(
        JudgeFailed, match=r"1 of 4 judgments did not parse .*judged/1 judge_score t2: 'no grade'"
    ):
        _graded(compose, tmp_path)
    assert not (tmp_path / "run" / "results.json").exists()
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "failed"


def test_a_sampling_judge_retries_an_invalid_reply_once_at_a_new_seed(compose, tmp_path) -> None:
    results = _graded(
        compose,
        tmp_path,
        "judge.generation.do_sample=true",
        "judge.generation.temperature=1.0",
        "judge.max_invalid=0.25",
    )
    # the fake judge is scripted: the retry gets the same invalid reply
    assert results.judge["judgments"] == {"judgments": 4, "invalid": 1, "retried": 1}


def test_pairwise_win_rate_ties_position_bias_and_ci(compose, tmp_path) -> None:
    q = write_jsonl(tmp_path / "q.jsonl", [{"id": str(i), "turns": [f"Q{i}"]} for i in range(1, 5)])
    base = write_jsonl(
        tmp_path / "base.jsonl", [{"id": str(i), "turns": [f"BASE{i}"]} for i in range(1, 5)]
    )
    # "B's Answer]\nBASE" is the candidate-first order (ab), "A's Answer]\nBASE" the swap
    script = {
        "B's Answer]\nBASE1": "[[A]]",
        "A's Answer]\nBASE1": "[[B]]",  # win
        "B's Answer]\nBASE2": "[[A]]",
        "A's Answer]\nBASE2": "[[A]]",  # order-dependent: tie
        "B's Answer]\nBASE3": "[[B]]",
        "A's Answer]\nBASE3": "[[A]]",  # loss
        "B's Answer]\nBASE4": "[[C]]",
        "A's Answer]\nBASE4": "[[C]]",  # tie
    }
    results = _judged(
        compose,
        tmp_path / "run",
        "task=judged",
        f"task.questions={q}",
        f"task.baseline={base}",
        "+metrics=[win_rate]",
        "runner.bootstrap_iters=200",
        replies=script,
    )
    row = results.tasks["judged"].metrics["win_rate"]
    assert row.value == (1 + 0.5 + 0 + 0.5) / 4
    details = row.details
    assert {k: details[k] for k in ("wins", "ties", "losses", "n_invalid")} == {
        "wins": 1,
        "ties": 2,
        "losses": 1,
        "n_invalid": 0,
    }
    assert details["position_bias"] == 0.25
    assert 0.0 <= details["ci_low"] < 0.5 < details["ci_high"] <= 1.0
    assert (details["ci_low"], details["ci_high"]) == bootstrap_ci(
        [((o, c, 0),) for o, c in ((1.0, False), (0.5, True), (0.0, False), (0.5, False))],
        PairwiseWinRate(
            templates={"single": {"prompt_template": "{question}{answer_a}{answer_b}"}}
        ).aggregate,
        iters=200,
        seed=1234,
    )


def test_pairwise_without_baseline_and_judged_metric_without_judge_are_refused(
    compose, tmp_path
) -> None:
    q = _questions(tmp_path)
    with pytest.raises(ConfigError, match="no baseline answer"):
        _judged(
            compose, tmp_path / "a", "task=judged", f"task.questions={q}", "+metrics=[win_rate]"
        )
    cfg = compose("model=fake", "task=judged", f"task.questions={q}", "report.progress=never")
    with pytest.raises(ConfigError, match="scored by a judge model; add judge=<model>"):
        run_job(cfg, tmp_path / "b")


def test_judge_configs_reuse_the_model_configs(compose) -> None:
    assert "judge" not in compose()
    cfg = compose("judge=stories260k", "judge.max_invalid=1.0")
    assert cfg.judge.pretrained == compose().model.pretrained
    assert cfg.judge._target_ == "mill.model.hf.HFCausalLM"
    assert cfg.judge.max_invalid == 1.0 and cfg.judge.num_concurrent == 1
    served = compose("judge=openai_completions", "judge.base_url=http://127.0.0.1:1/v1")
    assert served.judge._target_ == "mill.model.served.openai_api.OpenAICompletions"
    assert served.judge.base_url == "http://127.0.0.1:1/v1" and served.judge.max_invalid == 0.1


def test_compare_refuses_scores_of_different_judges_unless_allowed(compose, tmp_path) -> None:
    from mill.report.compare import compare_runs
    from mill.report.load import ReportInputError, RunFolder

    q = _questions(tmp_path)
    runs = []
    for name, grade in (("a", "[[8]]"), ("b", "[[4]]")):
        _judged(
            compose,
            tmp_path / name,
            "task=judged",
            f"task.questions={q}",
            replies={"What": f"Rating: {grade}"},
        )
        runs.append(RunFolder.open(str(tmp_path / name)))
    with pytest.raises(ReportInputError, match="different judges: judge a='fake', b='fake'"):
        compare_runs(*runs, iters=100, seed=1, alpha=0.05)
    rows = compare_runs(*runs, iters=100, seed=1, alpha=0.05, allow_different_judges=True)
    assert [(r.metric, r.a, r.b) for r in rows] == [("judge_score", 8.0, 4.0)]


def _compose_judge(*overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("mill.conf", version_base="1.3"):
            return hydra_compose("judge", overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()


def test_mill_judge_rejudges_saved_answers_and_compare_reports_agreement(compose, tmp_path) -> None:
    from mill.judging import judge_job
    from mill.report.compare import agreement, same_answers
    from mill.report.load import ReportInputError, RunFolder
    from mill.runner.job import run_job

    q = _questions(tmp_path)
    source = tmp_path / "source"
    _judged(compose, source, "task=judged", f"task.questions={q}", replies={"What": "[[1]]"})
    scripts = {
        "j1": {"BETA": "[[6]]", "ALPHA": "[[8]]", "What": "[[3]]"},
        "j2": {"BETA": "[[5]]", "ALPHA": "[[8]]", "What": "[[3]]"},
    }
    for name, script in scripts.items():
        cfg = _compose_judge(f"run={source}", "judge=fake", "report.progress=never")
        cfg.judge.replies = script
        results = run_job(judge_job(cfg, RunFolder.open), tmp_path / name)
        model = results.model
        assert model["class"] == "SavedAnswers" and model["source_run"] == str(source)
        assert model["source_model"]["class"] == "FakeLM"
        log = (
            (tmp_path / name / "mill.log").read_text()
            if (tmp_path / name / "mill.log").exists()
            else None
        )
        assert log is None or "loading model" not in log
    one = RunFolder.open(tmp_path / "j1")
    two = RunFolder.open(tmp_path / "j2")
    assert one.results.tasks["judged"].metrics["judge_score"].value == (8 + 6 + 3 + 3) / 4
    assert same_answers(one, two)
    [row] = agreement(one, two)
    # judgments (8, 6, 3, 3) and (8, 5, 3, 3): p_o = 3/4, p_e = (1/4)^2 + (2/4)^2 = 5/16
    assert (row.n, row.rate) == (4, 0.75)
    assert row.kappa == pytest.approx((0.75 - 5 / 16) / (1 - 5 / 16))
    assert row.rate_stderr == pytest.approx((0.75 * 0.25 / 4) ** 0.5)

    # a folder that is not a finished run, a run without its answers: one line each
    cfg = _compose_judge(f"run={tmp_path / 'nothing'}", "judge=fake")
    with pytest.raises(ReportInputError, match="is not a folder"):
        run_job(judge_job(cfg, RunFolder.open), tmp_path / "x")
    (source / "samples" / "judged.jsonl").unlink()
    # the run recorded its samples' sha256: a missing answers file is refused on read
    with pytest.raises(ReportInputError, match="samples/judged.jsonl changed after the run"):
        run_job(
            judge_job(_compose_judge(f"run={source}", "judge=fake"), RunFolder.open), tmp_path / "y"
        )


def _arena() -> object:
    import mill.cli  # noqa: F401  (the mill_resource resolver)
    from mill.instantiate import instantiate
    from mill.metrics.config import metric_config

    return instantiate(metric_config("arena_hard_score"))


def test_arena_hard_verdicts_parse_as_its_get_score() -> None:
    metric = _arena()
    assert metric.parse("My final verdict is: [[a>>b]]") == "A>>B"  # upper-cased
    assert metric.parse("[[B>A]] ... [[B>A]]") == "B>A"
    assert metric.parse("[[A>B]] or rather [[B>A]]") == "B>A"  # the last match
    assert metric.parse("verdict [A=B]") == "A=B"  # the backup pattern
    assert metric.parse("[[A<<B]]") == "A<<B" and metric.parse("[[B=A]]") == "B=A"  # 10 labels
    assert metric.parse("[[A]]") is None and metric.parse("[[A>=B]]") is None  # not a label


@pytest.mark.parametrize(
    ("patterns", "label"),
    [
        ([r"\[\[(A>B|B>A)\]\]"], "A>>B"),
        ([r"\[\[([AB>]+)\]\]"], "A=B"),
        ([r"\[\[(A.B)\]\]"], "A>>B"),
    ],
)
def test_arena_hard_patterns_that_cannot_read_its_labels_are_refused(patterns, label) -> None:
    from mill.judging.rubrics import ArenaHardScore

    templates = {"single": {"prompt_template": "{QUESTION}{ANSWER_A}{ANSWER_B}"}}
    with pytest.raises(ConfigError, match=f"cannot read the label '{re.escape(label)}'") as err:
        ArenaHardScore(templates=templates, patterns=patterns)
    assert "\n" not in str(err.value)


def test_arena_hard_score_on_the_bundled_excerpt(compose, tmp_path) -> None:
    from mill.judging.rubrics import arena_bootstrap

    args = ("task=arena_hard", "task.limit=3", "judge.max_invalid=1.0")
    first = _judged(compose, tmp_path / "answers", *args)  # the fake candidate's answers
    samples = (tmp_path / "answers/samples/arena_hard.jsonl").read_text().splitlines()
    answers = {json.loads(x)["doc_id"]: json.loads(x)["extra"]["turns"][0] for x in samples}
    assert len(set(answers.values())) == 3 and first.judge["judgments"]["invalid"] == 0
    # the fake judge's own reply is A=B in both games: half of every battle
    assert first.tasks["arena_hard"].metrics["arena_hard_score"].value == pytest.approx(50.0)
    # game 1 has the baseline as A (the candidate's answer follows "B's Answer"), game 2
    # the candidate as A. doc 0: B>>A (a strong win: 3 battles), A>B (a win: 1);
    # doc 1: A>B (a loss: 1), A>B (a win: 1), the same position favoured twice;
    # doc 2: A=B, then an invalid verdict: the question is dropped
    verdicts = [("B>>A", "A>B"), ("A>B", "A>B"), ("A=B", "no verdict")]
    script = {}
    for doc, (g1, g2) in enumerate(verdicts):
        script[f"B's Answer|>\n{answers[doc]}\n"] = f"[[{g1}]]"
        script[f"A's Answer|>\n{answers[doc]}\n"] = f"[[{g2}]]"
    results = _judged(compose, tmp_path / "run", *args, replies=script)
    row = results.tasks["arena_hard"].metrics["arena_hard_score"]
    # battles as Arena-Hard lists them, game 2's then 1 - game 1's
    battles = [1.0, 1.0, 1.0, 1.0, 1.0, 0.0]
    means = arena_bootstrap(battles, 100, seed=1234)
    assert row.value == pytest.approx(100 * sum(means) / 100)
    assert row.details["battles"] == 6 and row.details["n_invalid"] == 2
    assert row.details["dropped_questions"] == 1
    assert row.details["position_bias"] == 0.5  # doc 1 of the two kept questions
    assert row.details["ci_low"] == pytest.approx(100 * float(np.quantile(means, 0.05)))
    assert row.details["ci_high"] == pytest.approx(100 * float(np.quantile(means, 0.95)))
    assert re.fullmatch(r"\(-\d+\.\d / \+\d+\.\d\)", row.details["interval"])


def test_a_grade_outside_the_scale_counts_as_invalid_in_a_run(compose, tmp_path) -> None:
    # MT-Bench's 1-10: [[99999]] is no grade (FastChat would average it in)
    replies = {"BETA": "Rating: [[99999]]", "ALPHA": "[[8]]", "DELTA": "[[0]]", "GAMMA": "[[3]]"}
    q = f"task.questions={_questions(tmp_path)}"
    results = _judged(
        compose, tmp_path / "run", "task=judged", q, "judge.max_invalid=1.0", replies=replies
    )
    row = results.tasks["judged"].metrics["judge_score"]
    assert row.details["n_invalid"] == 2 and results.judge["judgments"]["invalid"] == 2
    assert row.value == pytest.approx((8 + 3) / 2)


def test_the_python_api_takes_judge(tmp_path) -> None:
    import mill

    q = _questions(tmp_path)
    overrides = [f"task.questions={q}", "judge.max_invalid=1.0", "+judge.replies={What: '[[7]]'}"]
    results = mill.evaluate("judged", "fake", judge="fake", overrides=overrides)
    row = results.tasks["judged"].metrics["judge_score"]
    assert row.value == 7.0 and row.details["n_invalid"] == 0
    assert results.judge["identity"]["class"] == "FakeLM"
    assert results.judge["judgments"] == {"judgments": 4, "invalid": 0, "retried": 0}
