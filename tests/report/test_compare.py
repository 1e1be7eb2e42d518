"""``mill compare`` (and its Hydra spelling ``mill -cn compare``): statistics against a hand
computation on hand-made run folders, refusals, and real runs."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonlines
import numpy as np
import pytest

from tests.helpers import run_mill, sample_record, write_finished_run

SETTINGS = {
    "name": "arc_easy",
    "class": "mill.tasks.arc.ArcEasy",
    "output_type": "logprobs",
    "num_fewshot": 0,
    "limit": 40,
    "dataset": {"path": "allenai/ai2_arc", "name": "ARC-Easy", "revision": "abc"},
}

# Per 10-doc block: A right on 0,1,2,8; B right on 0,1,3,4,5,6,8. So per block one doc is
# right in A only (2) and four in B only (3,4,5,6); over 40 docs n10 = 4 and n01 = 16.
A_BLOCK = [1, 1, 1, 0, 0, 0, 0, 0, 1, 0]
B_BLOCK = [1, 1, 0, 1, 1, 1, 1, 0, 1, 0]


def _ll(i: int, run: str) -> float:
    base = -(20.0 + (i * 7) % 5)
    return base if run == "a" else base + (1.0 if i % 10 else -2.0)


def _write_run(path: Path, run: str, doc_ids: list[int], settings: dict) -> Path:
    acc = A_BLOCK if run == "a" else B_BLOCK
    (path / "samples").mkdir(parents=True)
    rows = []
    for i in doc_ids:
        record = sample_record(
            i,
            task="arc_easy",
            doc_hash=f"doc{i}",
            logprobs=[-1.0, -2.0],
            metrics={"acc": float(acc[i % 10]), "word_perplexity": [_ll(i, run), 5.0]},
        )
        record.prediction = 0 if acc[i % 10] else 1  # gold is choice 0
        rows.append(record.to_json())
    with jsonlines.open(path / "samples" / "arc_easy.jsonl", "w") as out:
        out.write_all(rows)
    metric = {"value": 0.5, "stderr": 0.1, "n": len(rows), "higher_is_better": True}
    ppl = {**metric, "higher_is_better": False}
    results = {
        "tasks": {
            "arc_easy": {
                "metrics": {"acc": metric, "word_perplexity": ppl},
                "settings": settings,
                "data": {},
            }
        },
        "groups": {},
        "model": {"pretrained": f"/models/model-{run}"},
        "data_source": {"source": "local"},
    }
    write_finished_run(path, results)
    return path


@pytest.fixture()
def pair(tmp_path: Path) -> tuple[Path, Path]:
    # docs 40, 41 only in A and 42, 43 only in B: the shared docs are 0..39
    a = _write_run(tmp_path / "a", "a", [*range(40), 40, 41], SETTINGS)
    b = _write_run(tmp_path / "b", "b", [*range(40), 42, 43], SETTINGS)
    return a, b


def _hand_bootstrap(a: np.ndarray, b: np.ndarray, stat, iters: int, seed: int) -> np.ndarray:
    """The resampling scheme, written out: same docs for A and B in every resample."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(iters):
        idx = rng.integers(0, len(a), size=len(a))
        out.append(stat(b[idx]) - stat(a[idx]))
    return np.array(out)


@pytest.mark.slow
def test_paired_statistics_match_a_hand_computation(pair, tmp_path: Path) -> None:
    a, b = pair
    out = tmp_path / "cmp"
    proc = run_mill("compare", f"a={a}", f"b={b}", "iters=2000", "seed=7", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    rows = {r["metric"]: r for r in json.loads((out / "compare.json").read_text())["rows"]}

    acc = rows["acc"]
    assert acc["n"] == 40
    assert (acc["a"], acc["b"], acc["diff"]) == pytest.approx((0.4, 0.7, 0.3))
    assert (acc["n10"], acc["n01"]) == (4, 16)
    # McNemar exact: two-sided binomial tail of <= 4 of 20 discordant docs at 1/2
    tail = sum(math.comb(20, k) for k in range(5))  # 1 + 20 + 190 + 1140 + 4845
    assert acc["p_value"] == pytest.approx(2 * tail / 2**20)
    assert acc["p_value"] == pytest.approx(0.0118179, abs=1e-7)
    a_acc = np.array(A_BLOCK * 4, dtype=float)
    b_acc = np.array(B_BLOCK * 4, dtype=float)
    diffs = _hand_bootstrap(a_acc, b_acc, np.mean, 2000, 7)
    assert acc["ci"] == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])), abs=1e-12)
    # and it is close to the normal interval of the paired differences
    d = b_acc - a_acc
    half = 1.96 * d.std() / math.sqrt(40)
    assert acc["ci"] == pytest.approx([0.3 - half, 0.3 + half], abs=0.04)
    assert acc["better"] == "B" and acc["test"] == "McNemar"

    ppl = rows["word_perplexity"]
    ll_a = np.array([_ll(i, "a") for i in range(40)])
    ll_b = np.array([_ll(i, "b") for i in range(40)])
    words = np.full(40, 5.0)
    value_a = math.exp(-ll_a.sum() / words.sum())
    value_b = math.exp(-ll_b.sum() / words.sum())
    assert (ppl["a"], ppl["b"]) == pytest.approx((value_a, value_b))
    assert ppl["diff"] == pytest.approx(value_b - value_a)
    pairs_a, pairs_b = np.stack([ll_a, words], 1), np.stack([ll_b, words], 1)

    def wppl(p: np.ndarray) -> float:
        return math.exp(-p[:, 0].sum() / p[:, 1].sum())

    diffs = _hand_bootstrap(pairs_a, pairs_b, wppl, 2000, 7)
    assert ppl["ci"] == pytest.approx(list(np.quantile(diffs, [0.025, 0.975])), rel=1e-9)
    hits = np.sum(np.abs(diffs - (value_b - value_a)) >= abs(value_b - value_a))
    assert ppl["p_value"] == pytest.approx((1 + hits) / 2001)
    assert ppl["test"] == "bootstrap"
    # B scores 1 nat more on 36 of 40 docs and 2 less on 4: lower perplexity, significant
    assert value_b < value_a and ppl["better"] == "B"

    lines = proc.stdout.splitlines()
    verdict = next(line for line in lines if line.startswith("arc_easy acc:"))
    assert verdict.startswith("arc_easy acc: B (model-b) is better: B - A = +0.3000")
    assert "McNemar p=0.01182 (right only in A: 4, only in B: 16), 40 shared docs" in verdict
    assert any(line.startswith("arc_easy word_perplexity: B (model-b) is better") for line in lines)
    for name in ("compare.html", "compare.txt", "plots/compare.png"):
        assert (out / name).is_file(), name


def test_same_seed_same_numbers_other_seed_other_interval(pair, tmp_path: Path) -> None:
    from mill.report.compare import compare_runs
    from mill.report.load import RunFolder

    a, b = RunFolder.open(pair[0]), RunFolder.open(pair[1])
    first = compare_runs(a, b, iters=500, seed=1, alpha=0.05)
    again = compare_runs(a, b, iters=500, seed=1, alpha=0.05)
    other = compare_runs(a, b, iters=500, seed=2, alpha=0.05)
    assert [r.ci for r in first] == [r.ci for r in again]
    assert [r.ci for r in first] != [r.ci for r in other]
    assert first[0].p_value == other[0].p_value  # McNemar does not resample
    wide = compare_runs(a, b, iters=500, seed=1, alpha=0.01)[0]
    assert wide.ci[0] <= first[0].ci[0] and wide.ci[1] >= first[0].ci[1]


@pytest.mark.slow
def test_refuses_runs_whose_task_settings_differ_naming_the_keys(tmp_path: Path) -> None:
    other = {**SETTINGS, "limit": 50, "num_fewshot": 5, "dataset": {**SETTINGS["dataset"]}}
    other["dataset"]["revision"] = "def"
    a = _write_run(tmp_path / "a", "a", list(range(40)), SETTINGS)
    b = _write_run(tmp_path / "b", "b", list(range(40)), other)
    proc = run_mill("-cn", "compare", f"a={a}", f"b={b}", "iters=10")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    for part in (
        "arc_easy.limit (a=40, b=50)",
        "arc_easy.num_fewshot (a=0, b=5)",
        'arc_easy.dataset.revision (a="abc", b="def")',
    ):
        assert part in proc.stderr
    assert "arc_easy.name" not in proc.stderr and not proc.stdout
    proc = run_mill(
        "-cn", "compare", f"a={a}", f"b={b}", "iters=10",
        "ignore_settings=[limit,num_fewshot,dataset.revision]",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["a={a}"], "b= is missing"),
        (["a={a}", "b={missing}"], "is not a folder"),
        (["a={a}", "b={a}"], "same folder"),
        (["a={a}", "b={b}", "iters=0"], "iters=0"),
        (["a={a}", "b={b}", "alpha=2"], "alpha=2"),
        (["a={a}", "b={b}", "tasks=[gsm8k]"], "gsm8k not in both runs"),
        (["a={a}", "b={empty}"], "has no results.json"),
        (["a={a}", "b={b}", "out={a}"], "would write into"),
        (["a={a}", "b={b}", "out={b}/cmp"], "would write into"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(pair, tmp_path: Path, args, message) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    paths = {"a": pair[0], "b": pair[1], "missing": tmp_path / "nope", "empty": empty}
    before = sorted(p for run in pair for p in run.rglob("*"))
    proc = run_mill("-cn", "compare", *[arg.format(**paths) for arg in args])
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("mill: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p for run in pair for p in run.rglob("*")) == before  # nothing written


@pytest.mark.slow
def test_real_runs_compare_on_their_shared_docs(sweep, single_run: Path, tmp_path: Path) -> None:
    a, b = sweep.path / "0_arc_fake0", sweep.path / "1_arc_fake1"
    out = tmp_path / "cmp"
    proc = run_mill("-cn", "compare", f"a={a}", f"b={b}", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((out / "compare.json").read_text())["rows"]
    res_a = json.loads((a / "results.json").read_text())["tasks"]
    res_b = json.loads((b / "results.json").read_text())["tasks"]
    assert [(r["task"], r["metric"]) for r in rows] == [
        ("arc_easy", "acc"),
        ("arc_easy", "acc_norm"),
        ("arc_challenge", "acc"),
        ("arc_challenge", "acc_norm"),
    ]
    for r in rows:  # same docs in both: the paired values are the runs' own results
        assert r["n"] == 20 and r["test"] == "McNemar"
        assert r["a"] == pytest.approx(res_a[r["task"]]["metrics"][r["metric"]]["value"])
        assert r["b"] == pytest.approx(res_b[r["task"]]["metrics"][r["metric"]]["value"])
        assert r["verdict"] in proc.stdout
    # the questions whose verdict differs, each read back from both runs' samples files
    blob = json.loads((out / "compare.json").read_text())
    assert f"[mill] wrote {out / 'compare.html'}" in proc.stderr
    for r in rows:
        flips = blob["flips"][r["task"]][r["metric"]]
        assert (len(flips["right_to_wrong"]), len(flips["wrong_to_right"])) == (r["n10"], r["n01"])
        samples = {
            run: {
                (s["subject"], s["doc_id"]): s
                for s in jsonlines.open(run / "samples" / f"{r['task']}.jsonl")
            }
            for run in (a, b)
        }
        for direction, (va, vb) in (("right_to_wrong", (1, 0)), ("wrong_to_right", (0, 1))):
            for f in flips[direction]:
                sa, sb = (samples[run][(f["subject"], f["doc_id"])] for run in (a, b))
                assert (sa["metrics"][r["metric"]], sb["metrics"][r["metric"]]) == (va, vb)
                assert (f["a"]["prediction"], f["b"]["prediction"]) == (
                    sa["prediction"], sb["prediction"],
                )  # fmt: skip
                assert f["a"]["answer"].startswith(sa["choices"][sa["prediction"]])
                assert f["prompt"].endswith(" ".join(sa["response"]["input"].split())[-20:])
    assert sum(r["n10"] + r["n01"] for r in rows) > 0  # the two fake seeds disagree somewhere
    # the standalone run scored 30 docs; refused as is, compared on 20 with the limit ignored
    proc = run_mill("-cn", "compare", f"a={a}", f"b={single_run}")
    assert proc.returncode == 2 and "arc_easy.limit (a=20, b=30)" in proc.stderr
    proc = run_mill("-cn", "compare", f"a={a}", f"b={single_run}", "ignore_settings=[limit]")
    assert proc.returncode == 0, proc.stderr
    assert "20 shared docs" in proc.stdout and "not compared (in one run only): arc_challenge" in (
        proc.stdout
    )
    proc = run_mill("-cn", "compare", f"a={a}", f"b={sweep.path / '2_wikitext_fake0'}")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "no task in common (a has arc_easy, arc_challenge; b has wikitext)" in proc.stderr


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 0, 0, 0], [1.0, 1, 1, 0]),  # the acc 0.25 vs 0.75, n=4
        ([0.0, 0, 0, 0], [1.0, 1, 1, 1]),  # the largest difference there is
        ([1.0, 1, 1, 1], [0.0, 0, 0, 0]),
    ],
)
def test_a_difference_of_accuracies_stays_inside_minus_1_1(a, b) -> None:
    from mill.metrics import Accuracy
    from mill.report.compare import compare_metric

    row = compare_metric("t", Accuracy(), a, b, iters=2000, seed=0, alpha=0.05)
    lo, hi = row.ci
    assert -1.0 <= lo <= row.diff <= hi <= 1.0
    if abs(row.diff) == 1.0:
        assert lo == hi == row.diff


def _compare(a: Path, b: Path, out: Path | None) -> None:
    from omegaconf import OmegaConf

    from mill.report.compare import compare_command

    compare_command(
        OmegaConf.create(
            {
                "a": str(a),
                "b": str(b),
                "iters": 200,
                "seed": 1,
                "alpha": 0.05,
                "out": str(out) if out else None,
                "tasks": None,
                "ignore_settings": [],
                "progress": "never",
            }
        )  # fmt: skip
    )


def test_flips_name_each_question_whose_verdict_differs(
    pair, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "cmp"
    _compare(*pair, out)
    blob = json.loads((out / "compare.json").read_text())
    acc = next(r for r in blob["rows"] if r["metric"] == "acc")
    flips = blob["flips"]["arc_easy"]
    assert list(flips) == ["acc"]  # word_perplexity is not a 0/1 metric: no flips
    down, up = flips["acc"]["right_to_wrong"], flips["acc"]["wrong_to_right"]
    # A right on 0,1,2,8 and B on 0,1,3,4,5,6,8 of each block of 10; shared docs 0..39 only
    assert [f["doc_id"] for f in down] == [2, 12, 22, 32]
    assert [f["doc_id"] for f in up] == [i for i in range(40) if i % 10 in (3, 4, 5, 6)]
    assert (len(down), len(up)) == (acc["n10"], acc["n01"]) == (4, 16)
    assert down[0] == {
        "subject": "default",
        "doc_id": 2,
        "prompt": "doc 2",
        "gold": "choice 0 (0)",
        "a": {"answer": "choice 0 (0)", "verdict": 1.0, "prediction": 0},
        "b": {"answer": "choice 1 (1)", "verdict": 0.0, "prediction": 1},
    }
    assert all(f["a"]["verdict"] == 0.0 and f["b"]["answer"] == "choice 0 (0)" for f in up)
    printed = capsys.readouterr()
    assert (
        "arc_easy acc questions right in A (model-a) and wrong in B (model-b): 4 (2, 12, 22, 32);"
        " wrong in A and right in B: 16 (3, 4, 5, 6, 13, 14, 15, 16, 23, 24 and 6 more)"
    ) in printed.out
    assert printed.err.strip() == (
        f"[mill] wrote {out / 'compare.html'} (and compare.json, compare.txt, plots/compare.png)"
    )
    page = (out / "compare.html").read_text()
    assert page.count('data-dir="right_to_wrong"') == 4
    assert page.count('data-dir="wrong_to_right"') == 16
    assert (
        'id="flips-filter"' in page
        and "<script>" in page
        and "http" not in page.split("<script>")[1].split("</script>")[0]
    )  # the filter loads nothing from the network
    # without out= nothing is written, and it says so in one line
    before = sorted(tmp_path.rglob("*"))
    _compare(*pair, None)
    printed = capsys.readouterr()
    assert printed.err.strip().splitlines() == [
        "[mill] wrote nothing: add out=<folder> for compare.json, compare.txt and compare.html"
    ]
    assert "wrong in A and right in B: 16" in printed.out
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize(
    ("response", "prediction", "expected"),
    [
        # generative: the answer after the reasoning rule when there is one
        ({"text": ["<think>x</think> 42"], "text_post_processed": ["42"]}, "42", "42"),
        # generative without a reasoning rule: the raw text
        ({"text": ["The answer is 7"]}, "7", "The answer is 7"),
        # multiple choice: the prediction (a choice index)
        ({"logprobs": [-1.0, -0.5]}, 1, 1),
    ],
)
def test_a_samples_answer_is_read_from_its_record(response, prediction, expected) -> None:
    from mill.report.compare import answer
    from mill.types import DocOutput

    record = sample_record(0)
    record.response = DocOutput(input="q", **response)
    record.prediction = prediction
    assert answer(record) == expected


def test_runs_of_different_tasks_are_refused_naming_both(pair, tmp_path: Path) -> None:
    from mill.report.compare import compare_runs
    from mill.report.load import ReportInputError, RunFolder
    from tests.report.test_compare_code import A_PASSES
    from tests.report.test_compare_code import _write_run as write_code_run

    code = write_code_run(tmp_path / "code", A_PASSES)
    with pytest.raises(ReportInputError) as err:
        compare_runs(RunFolder.open(pair[0]), RunFolder.open(code), iters=10, seed=0, alpha=0.05)
    message = str(err.value)
    assert len(message.splitlines()) == 1
    assert "no task in common (a has arc_easy; b has humaneval)" in message
    assert message.endswith("compare two runs of the same task")


@pytest.mark.slow
def test_generative_flips_show_the_answers_the_metric_read(tmp_path: Path) -> None:
    runs = []
    for seed in (0, 1):  # gsm8k on two fake seeds: some questions right in one run only
        run = tmp_path / f"fake{seed}"
        proc = run_mill(
            "task=gsm8k", "model=fake", f"model.seed={seed}", f"model.name=fake{seed}",
            "task.limit=20", f"hydra.run.dir={run}",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        runs.append(run)
    out = tmp_path / "cmp"
    proc = run_mill("compare", f"a={runs[0]}", f"b={runs[1]}", "iters=100", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    blob = json.loads((out / "compare.json").read_text())
    samples = [
        {s["doc_id"]: s for s in jsonlines.open(run / "samples" / "gsm8k.jsonl")} for run in runs
    ]
    seen = 0
    for row in blob["rows"]:
        flips = blob["flips"]["gsm8k"][row["metric"]]
        assert (len(flips["right_to_wrong"]), len(flips["wrong_to_right"])) == (
            row["n10"], row["n01"],
        )  # fmt: skip
        for f in flips["right_to_wrong"] + flips["wrong_to_right"]:
            for side, sample in zip(("a", "b"), (s[f["doc_id"]] for s in samples), strict=True):
                response = sample["response"]
                expected = (response.get("text_post_processed") or response["text"])[0]
                assert f[side]["answer"] == expected
                assert f[side]["verdict"] == sample["metrics"][row["metric"]]
            assert f["gold"] == samples[0][f["doc_id"]]["gold"]
            seen += 1
    assert seen > 0
