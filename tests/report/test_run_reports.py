"""Reports written by real runs and sweeps: files, self-containment, numbers, tables."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import jsonlines
import numpy as np
import pytest
from scipy.special import softmax

from mill.report.load import RunFolder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _inline_pngs(html: str) -> list[bytes]:
    found = re.findall(r'<img alt="[^"]*" src="data:image/png;base64,([A-Za-z0-9+/=]+)">', html)
    return [base64.b64decode(b) for b in found]


def _assert_self_contained(html: str) -> None:
    """No request can leave the page: no external src/href/url(), no link or script tags."""
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)
    assert "url(" not in html and "@import" not in html
    assert "<link" not in html and "<script" not in html
    assert html.count("<img") == len(_inline_pngs(html)) > 0


@pytest.mark.slow
def test_every_run_of_a_sweep_gets_plots_and_a_self_contained_page(sweep) -> None:
    for job in ("0_arc_fake0", "1_arc_fake1"):
        folder = sweep.path / job
        html = (folder / "report.html").read_text()
        _assert_self_contained(html)
        names = sorted(p.name for p in (folder / "plots").iterdir())
        assert names == ["calibration_arc_challenge.png", "calibration_arc_easy.png", "scores.png"]
        pngs = _inline_pngs(html)
        # the page inlines exactly the plot files, scores first
        assert pngs[0] == (folder / "plots" / "scores.png").read_bytes()
        assert set(pngs) == {p.read_bytes() for p in (folder / "plots").iterdir()}
        assert all(p.startswith(PNG_MAGIC) for p in pngs)
        assert "Calibration" in html and "reliability diagram arc_easy" in html
    wiki = sweep.path / "2_wikitext_fake0"
    html = (wiki / "report.html").read_text()
    _assert_self_contained(html)
    # PERPLEXITY tasks have no reliability diagram
    assert [p.name for p in (wiki / "plots").iterdir()] == ["scores.png"]
    assert "Calibration" not in html


@pytest.mark.slow
def test_run_page_shows_every_number_of_results_json(sweep) -> None:
    folder = sweep.path / "0_arc_fake0"
    results = json.loads((folder / "results.json").read_text())
    html = (folder / "report.html").read_text()
    for task, body in results["tasks"].items():
        for metric, row in body["metrics"].items():
            cells = f"<td>{task}</td><td>{metric} <span class='small'>↑</span></td>"
            assert cells in html
            after = html.split(cells, 1)[1]
            lo, hi = row["ci"]  # the recorded interval (Wilson for acc), inside [0, 1]
            assert 0 <= lo <= hi <= 1
            assert after.startswith(
                f'<td class="num">{row["value"]:.4f}</td><td class="num">{row["stderr"]:.4f}</td>'
                f'<td class="num">[{lo:.4f}, {hi:.4f}]</td>'
            )
    micro = results["groups"]["arc"]["metrics"]["acc"]["micro"]
    assert f"{micro['value']:.4f}" in html and "40 samples" in html


def _ece_by_hand(samples: list[dict], bins: int = 10) -> float:
    conf, right = [], []
    for s in samples:
        p = softmax(np.array(s["response"]["logprobs"]))
        conf.append(p.max())
        right.append(int(np.argmax(p)) == s["gold"])
    total = 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        # right-inclusive bins (lo, hi], 0 in the first (Guo et al. 2017): written out here
        # independently of mill's binning so that this comparison can fail
        idx = [i for i, c in enumerate(conf) if lo < c <= hi or (b == 0 and c == 0.0)]
        if idx:
            acc = sum(right[i] for i in idx) / len(idx)
            mean_conf = sum(conf[i] for i in idx) / len(idx)
            total += len(idx) / len(conf) * abs(acc - mean_conf)
    return total


@pytest.mark.slow
def test_reliability_numbers_on_the_page_match_the_samples(sweep) -> None:
    for job in ("0_arc_fake0", "1_arc_fake1"):
        folder = sweep.path / job
        html = (folder / "report.html").read_text()
        for task in ("arc_easy", "arc_challenge"):
            with jsonlines.open(folder / "samples" / f"{task}.jsonl") as reader:
                samples = list(reader)
            ece = _ece_by_hand(samples)
            assert f"{task}: ECE {ece:.3f}" in html
            # the argmax accuracy used for calibration is the run's acc
            acc = json.loads((folder / "results.json").read_text())["tasks"][task]["metrics"]
            assert f'<td class="num">{acc["acc"]["value"]:.3f}</td>' in html


@pytest.mark.slow
def test_sweep_end_prints_one_row_per_task_and_model_and_writes_the_sweep_page(sweep) -> None:
    table = sweep.stdout[sweep.stdout.index(f"sweep {sweep.path.parent.name}/sweep") :]
    rows = [
        [c.strip() for c in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ") and not line.startswith("| task ")
    ]
    assert all(len(r) == 6 for r in rows)
    pairs = {(r[0], r[1].split()[0], r[2]): r for r in rows}
    for task, metric in [
        ("arc_easy", "acc"),
        ("arc_challenge", "acc_norm"),
        ("arc (micro)", "acc"),
        ("wikitext", "bits_per_byte"),
    ]:
        for model in ("fake0", "fake1"):
            assert (task, metric, model) in pairs
    # numbers in the table are the jobs' own
    wiki = json.loads((sweep.path / "3_wikitext_fake1" / "results.json").read_text())
    bpb = wiki["tasks"]["wikitext"]["metrics"]["bits_per_byte"]
    row = pairs[("wikitext", "bits_per_byte", "fake1")]
    assert row[3:] == [f"{bpb['value']:.4f}", f"{bpb['stderr']:.4f}", str(bpb["n"])]
    # 2 models x (2 arc tasks x 2 metrics + 2 metrics x micro/macro + 3 wikitext metrics)
    assert len(rows) == 2 * (2 * 2 + 2 * 2 + 3)
    assert (sweep.path / "report.txt").read_text().strip() in sweep.stdout
    html = (sweep.path / "report.html").read_text()
    _assert_self_contained(html)
    assert _inline_pngs(html) == [(sweep.path / "sweep.png").read_bytes()]
    # beside the job folders only files: the sweep's folders are its jobs
    assert all(p.name[0].isdigit() for p in sweep.path.iterdir() if p.is_dir())
    for job in sorted(p.name for p in sweep.path.iterdir() if p.is_dir() and p.name[0].isdigit()):
        assert f"href='{job}/report.html'" in html
    assert "Calibration (ECE)" in html


@pytest.mark.slow
def test_report_txt_of_a_run_is_the_printed_table(sweep) -> None:
    text = (sweep.path / "0_arc_fake0" / "report.txt").read_text()
    header = next(line for line in text.splitlines() if line.startswith("| task"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "task",
        "metric",
        "value",
        "stderr",
        "n",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["scores.png", "calibration_arc_easy.png"])
def test_plots_are_real_images(sweep, name: str) -> None:
    from matplotlib.image import imread

    pixels = imread(sweep.path / "0_arc_fake0" / "plots" / name)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 400
    assert pixels[..., :3].std() > 0.05  # not a blank canvas


@pytest.mark.slow
def test_sweep_with_a_failed_job_lists_it(tmp_path: Path) -> None:
    from tests.helpers import run_mill

    sweep = tmp_path / "sweep"
    proc = run_mill(
        "-m", "task=arc_easy", "model=fake", "model.name=fake0", "task.limit=5",
        "+metrics=[acc],[word_perplexity]",
        f"hydra.sweep.dir={sweep}",
    )  # fmt: skip
    assert proc.returncode == 2
    html = (sweep / "report.html").read_text()
    assert "1 failed" in html and "1_arc_easy_fake0" in html and "word_perplexity" in html
    assert "failed: 1_arc_easy_fake0" in proc.stdout


def _hand_run(path: Path, data: dict, source: str = "bundled") -> RunFolder:
    """A run of two 4-doc tasks, acc 0.25 and 0.75 (the issue's numbers), rows as the
    evaluator builds them."""
    from mill.metrics import Accuracy
    from mill.metrics.groups import row
    from mill.results import DataOrigin, Manifest, MetricValue, Results, TaskResults

    tasks = {}
    for name, values in (("low", [1.0, 0, 0, 0]), ("high", [1.0, 1, 1, 0])):
        body = MetricValue.from_dict(row(Accuracy(), values, 200, 0))
        tasks[name] = TaskResults(
            metrics={"acc": body}, settings={"output_type": "logprobs"}, data=data
        )
    results = Results(tasks=tasks, data_source=DataOrigin(source))
    return RunFolder(path, results, Manifest(status="succeeded"))


def test_intervals_on_the_page_stay_inside_0_1(tmp_path: Path) -> None:
    """Issue 26, item 12: n=4, acc 0.25 and 0.75 showed [-0.2400, 0.7400] and [0.26, 1.24]."""
    from mill.report import html, plots

    run = _hand_run(tmp_path, {})
    page = html.run_page(run, b"png", [])
    assert "[0.0456, 0.6994]" in page and "[0.3006, 0.9544]" in page
    assert "-0.2400" not in page and "1.2400" not in page
    cis = {s.task: tuple(round(x, 4) for x in s.ci()) for s in run.scores()}
    assert cis == {"low": (0.0456, 0.6994), "high": (0.3006, 0.9544)}
    assert plots.scores_png(run.scores(), {}).startswith(b"\x89PNG")
    # the task x model page and chart read the same intervals
    sweep = html.sweep_page("t", [("m", run, "r.html")], [("m", s) for s in run.scores()], None, [])
    assert "Bundled sample data" in sweep


def test_bridged_tasks_say_where_their_data_came_from(tmp_path: Path) -> None:
    """Issue 26, item 12: an lm-eval task on local files is not "data=bundled"."""
    from mill.report import html

    lm = {
        "lm_eval": {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {"test": "/data/bbh/snarks.json"}},
        }
    }
    run = _hand_run(tmp_path, lm)
    assert run.data_source == "lm-eval" and run.results.bundled_tasks() == []
    page = html.run_page(run, b"png", [])
    assert "Bundled sample data" not in page and "data=bundled" not in page
    assert (
        "data=lm-eval" in page and "low: lm-eval dataset json, files /data/bbh/snarks.json" in page
    )
    hub = {"lm_eval": {"dataset_path": "cais/mmlu", "dataset_name": "anatomy"}}
    assert (
        _hand_run(tmp_path, hub).results.data_origin("low") == "lm-eval dataset cais/mmlu/anatomy"
    )
    native = _hand_run(tmp_path, {})
    page = html.run_page(native, b"png", [])
    assert "The numbers of low, high come from the small excerpts" in page
    assert "Data: low: bundled; high: bundled." in page
    local = _hand_run(tmp_path, {}, source="local")
    local.results.data_source.dir = "/data/arc"
    page = html.run_page(local, b"png", [])
    assert "Bundled sample data" not in page and "Data: low: local /data/arc" in page
