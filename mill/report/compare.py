"""Paired comparison of two runs, task by task, on the docs both runs scored.

For each task both runs have, and each metric both report, on the shared doc ids
(subject, doc_id), with A = ``a`` and B = ``b``:

* difference: metric(B) - metric(A), each the metric's own corpus aggregate over the
  shared docs (a mean for accuracies, e.g. exp(-sum ll / sum words) for word perplexity);
* confidence interval: paired bootstrap. ``rng = numpy.random.default_rng(seed)``; for
  each of ``iters`` resamples, ``idx = rng.integers(0, n, size=n)`` picks the same docs
  from both runs and the difference is recomputed; the interval is the
  (alpha/2, 1 - alpha/2) quantiles of those differences (numpy's default, linear);
* p-value: for metrics whose per-doc values are all 0 or 1, McNemar's exact test:
  with n10 docs right in A only and n01 right in B only, the two-sided binomial test of
  n01 successes in n01 + n10 trials at 1/2 (``scipy.stats.binomtest``); 1 when
  n01 + n10 = 0. Otherwise a two-sided paired bootstrap test on the same resamples,
  p = (1 + #{|d* - d| >= |d|}) / (iters + 1);
* verdict: significant when p < alpha; then the better run is the one the metric's
  direction (higher/lower is better) favours.

Runs whose task settings differ (``results.json`` tasks.<task>.settings, compared key by
key) are refused with the differing keys named; ``ignore_settings`` lists keys to skip.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mill.dotted import flatten
from mill.metrics.stats import Statistic, cohen_kappa, mcnemar_exact, paired_bootstrap
from mill.record import SampleRecord
from mill.report.load import ReportInputError, RunFolder
from mill.report.numbers import number, paired_cells
from mill.results.format import judge_label

FEW_DOCS = 30  # below this, say that bootstrap intervals and p-values are unreliable


@dataclass
class Paired:
    """One task x metric comparison."""

    task: str
    metric: str
    n: int
    a: float
    b: float
    diff: float
    ci: tuple[float, float]
    p_value: float
    test: str
    higher_is_better: bool
    better: str | None  # "A", "B" or None (not significant)
    verdict: str
    n10: int | None = None  # McNemar: docs right in A only
    n01: int | None = None  # McNemar: docs right in B only


def settings_diff(
    a: dict[str, Any], b: dict[str, Any], ignore: Sequence[str] = ()
) -> list[tuple[str, Any, Any]]:
    """(dotted key, value in A, value in B) for every key whose values differ."""
    fa, fb = flatten(a, keep_empty=True), flatten(b, keep_empty=True)

    def ignored(key: str) -> bool:
        return any(key == i or key.startswith(i + ".") for i in ignore)

    return [
        (key, fa.get(key), fb.get(key))
        for key in dict.fromkeys([*fa, *fb])
        if not ignored(key) and fa.get(key) != fb.get(key)
    ]


def _statistic(metric: Any, values: list[Any]) -> tuple[np.ndarray, Statistic]:
    """Per-doc values as an array, and the corpus aggregate of rows of doc indices."""
    from mill.metrics.base import MeanMetric, RatioMetric

    if isinstance(metric, RatioMetric):
        arr: np.ndarray = np.asarray(values, dtype=np.float64).reshape(len(values), 2)
        from_sums = np.vectorize(metric.from_sums, otypes=[np.float64])
        return arr, lambda idx: from_sums(arr[idx, 0].sum(-1), arr[idx, 1].sum(-1))
    if isinstance(metric, MeanMetric):
        arr = np.asarray(values, dtype=np.float64)
        return arr, lambda idx: arr[idx].mean(-1)
    arr = np.empty(len(values), dtype=object)
    arr[:] = values

    def generic(idx: np.ndarray) -> np.ndarray:
        rows = np.atleast_2d(idx)
        out = np.asarray([metric.aggregate(list(arr[r])) for r in rows], dtype=np.float64)
        return out if idx.ndim > 1 else out[0]

    return arr, generic


def compare_metric(
    task: str,
    metric: Any,
    a_values: list[Any],
    b_values: list[Any],
    *,
    iters: int,
    seed: int,
    alpha: float,
    label_a: str = "A",
    label_b: str = "B",
) -> Paired:
    """The paired statistics of one metric over docs given in the same order in A and B."""
    n = len(a_values)
    arr_a, stat_a = _statistic(metric, a_values)
    arr_b, stat_b = _statistic(metric, b_values)
    all_docs = np.arange(n)
    value_a, value_b = float(stat_a(all_docs)), float(stat_b(all_docs))
    diff = value_b - value_a
    diffs = paired_bootstrap(stat_a, stat_b, n, iters, seed)
    lo, hi = (float(q) for q in np.quantile(diffs, [alpha / 2, 1 - alpha / 2]))
    binary = arr_a.dtype != object and arr_a.ndim == 1
    binary = binary and bool(np.isin(arr_a, (0.0, 1.0)).all() and np.isin(arr_b, (0.0, 1.0)).all())
    n10 = n01 = None
    if binary:
        n10, n01, p = mcnemar_exact(arr_a, arr_b)
        test = "McNemar"
    else:
        p = float((1 + np.sum(np.abs(diffs - diff) >= abs(diff))) / (iters + 1))
        test = "bootstrap"
    higher = bool(getattr(metric, "higher_is_better", True))
    better = None
    if p < alpha and diff != 0 and not math.isnan(diff):
        better = "B" if (diff > 0) == higher else "A"
    level = round(100 * (1 - alpha))
    counts = f" (right only in A: {n10}, only in B: {n01})" if binary else ""
    few = "; few docs: bootstrap numbers are unreliable" if not binary and n < FEW_DOCS else ""
    numbers = (
        f"B - A = {number(diff, sign=True)}, "
        f"{level}% CI [{number(lo, sign=True)}, {number(hi, sign=True)}], "
        f"{test} p={p:.4g}{counts}, {n} shared docs{few}"
    )
    if better is None:
        verdict = f"{task} {metric.name}: no significant difference (alpha={alpha}): {numbers}"
    else:
        name = label_b if better == "B" else label_a
        verdict = f"{task} {metric.name}: {better} ({name}) is better: {numbers}"
    return Paired(
        task, metric.name, n, value_a, value_b, diff, (lo, hi), p, test, higher, better,
        verdict, n10, n01,
    )  # fmt: skip


def _metric(run: RunFolder, name: str, task: str = "") -> Any:
    """The run's own metric object (its config in resolved.yaml, else the built-in one; an
    lm-eval task's from its recorded aggregation)."""
    from omegaconf import OmegaConf

    from mill.errors import MillError
    from mill.metrics.config import build_metric, metric_config

    settings = run.settings(task) if task else {}
    if settings.get("class") == "mill.lm_eval.bridge.LMEvalTask":
        from mill.lm_eval.adapters import rebuild_metric

        try:
            return rebuild_metric(name, settings)
        except MillError as err:
            raise ReportInputError(f"{run.path}: cannot rebuild metric {name!r}: {err}") from err
    # one part of a metric config with a list (pass_at_k@10 of pass_at_k with k=[1,10])
    config_name = name.rsplit("@", 1)[0]
    chosen = (run.config.get("metrics") or {}).get(config_name)
    allow = [str(a) for a in run.config.get("allow_targets", [])]
    try:
        node = OmegaConf.create(chosen) if chosen else metric_config(config_name)
        parts = build_metric(config_name, node, allow).parts()
    except MillError as err:
        raise ReportInputError(f"{run.path}: cannot rebuild metric {name!r}: {err}") from err
    for part in parts:
        if part.name == name:
            return part
    raise ReportInputError(f"{run.path}: cannot rebuild metric {name!r} from its config")


def _by_doc(run: RunFolder, task: str) -> dict[tuple[str, int], SampleRecord]:
    return {(r.subject, r.doc_id): r for r in run.samples(task)}


def check_settings(
    run_a: RunFolder, run_b: RunFolder, tasks: Sequence[str], ignore: Sequence[str]
) -> None:
    """Refuse when any shared task's settings differ, naming every differing key."""
    found = []
    for task in tasks:
        for key, va, vb in settings_diff(run_a.settings(task), run_b.settings(task), ignore):
            found.append(f"{task}.{key} (a={json.dumps(va)}, b={json.dumps(vb)})")
    if found:
        raise ReportInputError(
            "cannot compare: task settings differ: "
            + ", ".join(found)
            + "; rerun with matching settings, or skip keys with ignore_settings=[...]"
        )


def judge_difference(run_a: RunFolder, run_b: RunFolder) -> str | None:
    """How the judges of two judged runs differ (one line), or None when both were judged
    by the same judge (identity and rubrics) or neither was judged."""
    ja, jb = run_a.results.judge, run_b.results.judge
    if ja is None and jb is None:
        return None
    if ja is None or jb is None:
        judged = "a" if ja is not None else "b"
        return f"only {judged} was judged"
    parts = []
    if ja.get("identity") != jb.get("identity"):
        a, b = judge_label(ja.get("identity")), judge_label(jb.get("identity"))
        parts.append(f"judge a={a!r}, b={b!r} (identities differ)")
    if ja.get("templates") != jb.get("templates"):
        parts.append("the rubrics' templates differ")
    return "; ".join(parts) or None


def same_answers(run_a: RunFolder, run_b: RunFolder) -> bool:
    """Whether both runs judged the same saved answers (two ``mill judge`` runs of one
    source run: the same sha256 of its results.json)."""
    ma, mb = run_a.results.model, run_b.results.model
    return ma.get("class") == mb.get("class") == "SavedAnswers" and ma.get(
        "source_results_sha256"
    ) == mb.get("source_results_sha256")


@dataclass
class Agreement:
    """How often two judges agree on the same answers, for one task and judged metric."""

    task: str
    metric: str
    n: int
    rate: float
    rate_stderr: float | None
    kappa: float
    kappa_stderr: float | None


def _judgment_labels(value: Any) -> list[Any]:
    """A doc's judgments as labels, one per turn: the grade (single grading) or the
    outcome after the swap rule (pairwise); None for an invalid one."""
    return [v[0] if isinstance(v, (list, tuple)) else v for v in value]


def agreement(run_a: RunFolder, run_b: RunFolder) -> list[Agreement]:
    """Per task and judged metric: the share of (question, turn) judgments both judges
    gave alike, with its binomial stderr, and Cohen's kappa with its stderr; judgments
    either judge left invalid are left out."""
    out = []
    for task in [t for t in run_a.task_names if t in run_b.task_names]:
        docs_a, docs_b = _by_doc(run_a, task), _by_doc(run_b, task)
        keys = sorted(set(docs_a) & set(docs_b))
        for name, row in run_a.results.tasks[task].metrics.items():
            if row.details is None or name not in run_b.results.tasks[task].metrics:
                continue
            pairs = [
                (x, y)
                for k in keys
                for x, y in zip(
                    _judgment_labels(docs_a[k].metrics[name]),
                    _judgment_labels(docs_b[k].metrics[name]),
                    strict=False,
                )
                if x is not None and y is not None
            ]
            if not pairs:
                continue
            a, b = [x for x, _ in pairs], [y for _, y in pairs]
            rate = sum(x == y for x, y in pairs) / len(pairs)
            kappa, kappa_se = cohen_kappa(a, b)
            rate_se = (rate * (1 - rate) / len(pairs)) ** 0.5 if len(pairs) > 1 else None
            out.append(Agreement(task, name, len(pairs), rate, rate_se, kappa, kappa_se))
    if not out:
        raise ReportInputError("cannot measure agreement: the two judgings share no judgment")
    return out


def agreement_table(rows: Sequence[Agreement], title: str) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.ASCII, safe_box=True)
    for col in ("task", "metric"):
        table.add_column(col, no_wrap=True)
    for col in ("n", "agreement", "stderr", "kappa", "stderr"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in rows:
        table.add_row(
            r.task, r.metric, str(r.n), number(r.rate), number(r.rate_stderr),
            number(r.kappa), number(r.kappa_stderr),
        )  # fmt: skip
    return table


def _check_pair(
    run_a: RunFolder, run_b: RunFolder, iters: int, alpha: float, allow_different_judges: bool
) -> None:
    """Refuse what no comparison of these two runs can use (ReportInputError)."""
    differs = judge_difference(run_a, run_b)
    if differs and not allow_different_judges:
        raise ReportInputError(
            f"cannot compare judged scores made by different judges: {differs}; judge both "
            "runs' answers with one judge (mill judge run=... judge=...), or compare anyway "
            "with allow_different_judges=true"
        )
    if iters < 1:
        raise ReportInputError(f"iters={iters}: give a positive number of bootstrap resamples")
    if not 0 < alpha < 1:
        raise ReportInputError(f"alpha={alpha}: give a level between 0 and 1, e.g. 0.05")


def shared_tasks(run_a: RunFolder, run_b: RunFolder, tasks: Sequence[str] | None) -> list[str]:
    """The tasks both runs have (only ``tasks``, when given); ReportInputError for none or
    for a task given that is not in both."""
    shared = [t for t in run_a.task_names if t in run_b.task_names]
    if tasks:
        unknown = [t for t in tasks if t not in shared]
        if unknown:
            raise ReportInputError(
                f"tasks={list(tasks)}: {', '.join(unknown)} not in both runs (shared: "
                f"{', '.join(shared) or 'none'})"
            )
        shared = [t for t in shared if t in tasks]
    if not shared:
        raise ReportInputError(
            f"cannot compare: no task in common (a has {', '.join(run_a.task_names)}; "
            f"b has {', '.join(run_b.task_names)}); compare two runs of the same task"
        )
    return shared


def _shared_docs(run_a: RunFolder, run_b: RunFolder, task: str) -> list[tuple[str, int]]:
    """The (subject, doc id) keys both runs scored, refused when they hold different docs."""
    docs_a, docs_b = _by_doc(run_a, task), _by_doc(run_b, task)
    keys = sorted(set(docs_a) & set(docs_b))
    if not keys:
        raise ReportInputError(f"cannot compare {task}: the two runs share no doc ids")
    hashes = [(k, docs_a[k].doc_hash, docs_b[k].doc_hash) for k in keys]
    changed = [k for k, ha, hb in hashes if ha and hb and ha != hb]
    if changed:
        subject, doc_id = changed[0]
        raise ReportInputError(
            f"cannot compare {task}: {len(changed)} shared doc ids hold different documents "
            f"(doc_hash differs, first {subject}/{doc_id}); the runs used different data"
        )
    return keys


def compare_runs(
    run_a: RunFolder,
    run_b: RunFolder,
    *,
    iters: int,
    seed: int,
    alpha: float,
    tasks: Sequence[str] | None = None,
    ignore: Sequence[str] = (),
    labels: tuple[str, str] = ("A", "B"),
    allow_different_judges: bool = False,
) -> list[Paired]:
    """Every shared task x metric of two runs (ReportInputError on anything unusable, and
    on judged scores made by different judges unless ``allow_different_judges``)."""
    _check_pair(run_a, run_b, iters, alpha, allow_different_judges)
    shared = shared_tasks(run_a, run_b, tasks)
    check_settings(run_a, run_b, shared, ignore)
    out: list[Paired] = []
    for task in shared:
        keys = _shared_docs(run_a, run_b, task)
        docs_a, docs_b = _by_doc(run_a, task), _by_doc(run_b, task)
        metrics_b = run_b.results.tasks[task].metrics
        for name in [m for m in run_a.results.tasks[task].metrics if m in metrics_b]:
            a_vals = [docs_a[k].metrics[name] for k in keys]
            b_vals = [docs_b[k].metrics[name] for k in keys]
            out.append(
                compare_metric(
                    task,
                    _metric(run_a, name, task),
                    a_vals,
                    b_vals,
                    iters=iters,
                    seed=seed,
                    alpha=alpha,
                    label_a=labels[0],
                    label_b=labels[1],
                )  # fmt: skip
            )
    if not out:
        raise ReportInputError("cannot compare: the runs share no metric on their shared tasks")
    return out


def problem_flips(run_a: RunFolder, run_b: RunFolder, task: str) -> dict[str, list[str]] | None:
    """Code tasks, problem by problem on the shared docs: the problems whose every program
    passed in one run only (named by their dataset ids), or None for a task without
    execution verdicts."""
    docs_a, docs_b = _by_doc(run_a, task), _by_doc(run_b, task)
    shared = sorted(set(docs_a) & set(docs_b))
    if not any(docs_a[k].execution or docs_b[k].execution for k in shared):
        return None

    def passed(record: SampleRecord) -> bool:
        return bool(record.execution) and all(
            v.get("status") == "passed" for v in record.execution or []
        )

    def name(record: SampleRecord) -> str:
        return str((record.extra or {}).get("item_id") or f"doc {record.doc_id}")

    return {
        "passed_only_in_a": [
            name(docs_a[k]) for k in shared if passed(docs_a[k]) and not passed(docs_b[k])
        ],
        "passed_only_in_b": [
            name(docs_b[k]) for k in shared if passed(docs_b[k]) and not passed(docs_a[k])
        ],
    }


EXCERPT = 160  # characters of the prompt's end shown beside a flipped question
SHOWN_IDS = 10  # flipped questions named per direction on the console


def answer(record: SampleRecord) -> Any:
    """What a sample answered: a generative task's first answer after the reasoning rule
    (``response.text_post_processed``) when present, else its first raw text; a multiple
    choice task's ``prediction``."""
    response = record.response
    if response.text_post_processed:
        return response.text_post_processed[0]
    if response.text:
        return response.text[0]
    return record.prediction


def _choice_text(value: Any, choices: list[str]) -> Any:
    """An index into the choices as its choice's text (``"Paris (2)"``); anything else as is."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(choices):
        return f"{choices[value]} ({value})"
    return value


def _excerpt(prompt: str) -> str:
    """The prompt's end (where the question is, after any few-shot examples), one line."""
    flat = " ".join(prompt.split())
    return flat if len(flat) <= EXCERPT else "…" + flat[-(EXCERPT - 1) :]


def verdict_flips(run_a: RunFolder, run_b: RunFolder, row: Paired) -> dict[str, Any]:
    """A 0/1 metric, question by question on the shared docs: the questions right in A and
    wrong in B (``right_to_wrong``) and wrong in A and right in B (``wrong_to_right``),
    each with its subject, doc id, prompt excerpt, gold and both runs' answers (a choice
    index as its text), predictions and verdicts; the counts are the row's McNemar n10
    and n01."""
    docs_a, docs_b = _by_doc(run_a, row.task), _by_doc(run_b, row.task)
    out: dict[str, Any] = {"right_to_wrong": [], "wrong_to_right": []}
    for key in sorted(set(docs_a) & set(docs_b)):
        ra, rb = docs_a[key], docs_b[key]
        va, vb = float(ra.metrics[row.metric]), float(rb.metrics[row.metric])
        if va == vb:
            continue
        out["right_to_wrong" if va > vb else "wrong_to_right"].append(
            {
                "subject": ra.subject,
                "doc_id": ra.doc_id,
                "prompt": _excerpt(ra.response.input),
                "gold": _choice_text(ra.gold, ra.choices),
                "a": {
                    "answer": _choice_text(answer(ra), ra.choices),
                    "verdict": va,
                    "prediction": ra.prediction,
                },
                "b": {
                    "answer": _choice_text(answer(rb), rb.choices),
                    "verdict": vb,
                    "prediction": rb.prediction,
                },
            }
        )
    return out


def verdict_flips_line(
    task: str, metric: str, flips: dict[str, Any], labels: tuple[str, str]
) -> str:
    """One line per task and 0/1 metric: the first flipped questions in each direction."""
    from mill.report.html import flip_name

    def listed(items: list[dict[str, Any]]) -> str:
        names = [flip_name(task, f) for f in items[:SHOWN_IDS]]
        more = f" and {len(items) - SHOWN_IDS} more" if len(items) > SHOWN_IDS else ""
        return f"{len(items)}" + (f" ({', '.join(names)}{more})" if items else "")

    return (
        f"{task} {metric} questions right in A ({labels[0]}) and wrong in B ({labels[1]}): "
        f"{listed(flips['right_to_wrong'])}; wrong in A and right in B: "
        f"{listed(flips['wrong_to_right'])}"
    )


def flips_line(task: str, flips: dict[str, list[str]], labels: tuple[str, str]) -> str:
    """One line per code task: which problems pass in one run only."""

    def listed(ids: list[str]) -> str:
        shown = ", ".join(ids[:20]) + (f", ... ({len(ids) - 20} more)" if len(ids) > 20 else "")
        return f"{len(ids)}" + (f" ({shown})" if ids else "")

    return (
        f"{task} problems passing only in A ({labels[0]}): {listed(flips['passed_only_in_a'])}; "
        f"only in B ({labels[1]}): {listed(flips['passed_only_in_b'])}"
    )


def _labels(run_a: RunFolder, run_b: RunFolder) -> tuple[str, str]:
    a, b = run_a.model_label, run_b.model_label
    return (run_a.path.name, run_b.path.name) if a == b else (a, b)


def compare_table(rows: Sequence[Paired], title: str, alpha: float) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.ASCII, safe_box=True)
    level = round(100 * (1 - alpha))
    for col in ("task", "metric"):
        table.add_column(col, no_wrap=True)
    for col in ("n", "A", "B", "B-A", f"{level}% CI", "p"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("test", no_wrap=True)
    for r in rows:
        metric = f"{r.metric} {'^' if r.higher_is_better else 'v'}"
        table.add_row(r.task, metric, *paired_cells(asdict(r)), r.test)
    return table


def _names(value: Any) -> list[str]:
    """A list override (``[a,b]``) or a single name (``a``) as a list of strings."""
    from omegaconf import OmegaConf

    if value is None or value == "":
        return []
    return [str(v) for v in value] if OmegaConf.is_list(value) else [str(value)]


def _open_pair(cfg: Any) -> tuple[RunFolder, RunFolder]:
    """Runs ``a`` and ``b`` of the command, refused when missing, the same folder, or when
    ``out`` lies inside one of them."""
    from omegaconf import OmegaConf

    for key in ("a", "b"):
        if OmegaConf.is_missing(cfg, key) or cfg.get(key) in (None, ""):
            raise ReportInputError(
                f"compare needs two run folders: mill compare a=<run dir> b=<run dir> "
                f"({key}= is missing)"
            )
    trust = cfg.get("trust_edited", False)
    run_a = RunFolder.open(str(cfg.a), trust_edited=trust)
    run_b = RunFolder.open(str(cfg.b), trust_edited=trust)
    if run_a.path.resolve() == run_b.path.resolve():
        raise ReportInputError(f"a and b are the same folder ({run_a.path}); give two runs")
    if cfg.get("out"):
        from mill.files import reads_into

        into = reads_into(Path(str(cfg.out)), (run_a.path, run_b.path))
        if into is not None:
            raise ReportInputError(
                f"out={cfg.out} would write into {into}, a run this comparison reads; Mill "
                "never writes into the folders it reads: choose another out= folder"
            )
    return run_a, run_b


def _print_agreement(console: Any, run_a: RunFolder, run_b: RunFolder) -> None:
    """Two judgings of one run's answers: how often the judges agree."""
    console.print(f"A = {run_a.path}", soft_wrap=True)
    console.print(f"B = {run_b.path}", soft_wrap=True)
    source = run_a.results.model.get("source_run")
    console.print(agreement_table(agreement(run_a, run_b), f"judge agreement on {source}"))


def _print_table(
    console: Any, run_a: RunFolder, run_b: RunFolder, rows: Sequence[Paired], alpha: float
) -> None:
    """Which run is which, the paired table and each row's verdict."""
    labels = _labels(run_a, run_b)
    console.print(f"A = {labels[0]}: {run_a.path}", soft_wrap=True)
    console.print(f"B = {labels[1]}: {run_b.path}", soft_wrap=True)
    for run in (run_a, run_b):
        if run.edited_note:
            console.print(run.edited_note, soft_wrap=True)
    console.print(compare_table(rows, f"{labels[1]} (B) - {labels[0]} (A)", alpha))
    differs = judge_difference(run_a, run_b)
    if differs:  # allowed: allow_different_judges=true
        console.print(f"judged by different judges (allow_different_judges=true): {differs}")
    for row in rows:
        console.print(row.verdict, soft_wrap=True)


def _print_flips(
    console: Any, run_a: RunFolder, run_b: RunFolder, rows: Sequence[Paired]
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, list[str]]]]:
    """The questions whose verdict differs (0/1 metrics) and the code problems passing in
    one run only, printed and returned (for ``compare.json`` and ``compare.html``)."""
    labels = _labels(run_a, run_b)
    questions: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row.n10 is None:
            continue
        found = verdict_flips(run_a, run_b, row)
        questions.setdefault(row.task, {})[row.metric] = found
        console.print(
            verdict_flips_line(row.task, row.metric, found, labels), soft_wrap=True, markup=False
        )
    problems = {}
    for task in dict.fromkeys(r.task for r in rows):  # code tasks: problem by problem
        flips = problem_flips(run_a, run_b, task)
        if flips is not None:
            problems[task] = flips
            console.print(flips_line(task, flips, labels), soft_wrap=True, markup=False)
    return questions, problems


def compare_command(cfg: Any) -> None:
    """``mill compare a=<run> b=<run>``: print the table and verdicts; write ``out``."""
    from mill.report.console import make_console
    from mill.report.settings import command_settings

    cfg = command_settings(cfg, "compare")
    run_a, run_b = _open_pair(cfg)
    console = make_console(stderr=False, mode=str(cfg.get("progress", "auto")), record=True)
    if same_answers(run_a, run_b):  # two judgings of one run's answers: judge agreement
        _print_agreement(console, run_a, run_b)
        return
    labels = _labels(run_a, run_b)
    rows = compare_runs(
        run_a, run_b, iters=cfg.iters, seed=cfg.seed, alpha=cfg.alpha,
        tasks=_names(cfg.get("tasks")) or None, ignore=_names(cfg.get("ignore_settings")),
        labels=labels, allow_different_judges=cfg.get("allow_different_judges", False),
    )  # fmt: skip
    _print_table(console, run_a, run_b, rows, cfg.alpha)
    questions, problems = _print_flips(console, run_a, run_b, rows)
    only = [t for t in run_a.task_names if t not in run_b.task_names]
    only += [t for t in run_b.task_names if t not in run_a.task_names]
    if only:
        console.print(f"not compared (in one run only): {', '.join(only)}")
    if cfg.get("out"):
        write_compare(
            Path(str(cfg.out)), run_a, run_b, labels, rows, cfg, console.export_text(), problems,
            questions,
        )  # fmt: skip
    else:
        make_console(stderr=True).print(
            "[mill] wrote nothing: add out=<folder> for compare.json, compare.txt and compare.html",
            soft_wrap=True,
        )


def write_compare(
    out: Path,
    run_a: RunFolder,
    run_b: RunFolder,
    labels: tuple[str, str],
    rows: Sequence[Paired],
    cfg: Any,
    text: str,
    problems: dict[str, dict[str, list[str]]] | None = None,
    flips: dict[str, dict[str, Any]] | None = None,
) -> None:
    """``compare.json``, ``compare.txt``, ``plots/compare.png`` and ``compare.html``;
    ``problems``: code tasks' problems passing in one run only (:func:`problem_flips`);
    ``flips``: per task and 0/1 metric, the questions whose verdict differs
    (:func:`verdict_flips`)."""
    from mill.files import write_inside
    from mill.report import html, plots
    from mill.report.console import make_console

    params = {"iters": int(cfg.iters), "seed": int(cfg.seed), "alpha": float(cfg.alpha)}
    dicts = [asdict(r) for r in rows]
    blob = {
        "a": {"path": str(run_a.path), "label": labels[0], "edited": run_a.edited},
        "b": {"path": str(run_b.path), "label": labels[1], "edited": run_b.edited},
        **params,
        "rows": dicts,
    }
    if problems:
        blob["problems"] = problems
    blob["flips"] = flips or {}
    write_inside(out, "compare.json", json.dumps(blob, indent=2) + "\n")
    write_inside(out, "compare.txt", text)
    png = plots.compare_png(dicts, *labels)
    write_inside(out, "plots/compare.png", png)
    write_inside(
        out,
        "compare.html",
        html.compare_page(*labels, run_a, run_b, dicts, png, params, flips or {}),
    )
    make_console(stderr=True).print(
        f"[mill] wrote {out / 'compare.html'} (and compare.json, compare.txt, plots/compare.png)",
        soft_wrap=True,
    )
