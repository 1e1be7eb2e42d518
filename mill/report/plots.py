"""PNG plots with matplotlib's object API and the Agg canvas (no pyplot, no display).

matplotlib is imported inside the functions, so importing this module (and ``mill --help``)
stays fast. Every function returns PNG bytes; the caller saves them and inlines them in HTML.

Intervals drawn are the 95% intervals results.json records (:meth:`Score.ci`: Wilson for
accuracies, inside the metric's bounds); the thick part of a bar is +- 1 stderr, cut to
that interval.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from mill.metrics.ifeval import TypeAccuracy
from mill.metrics.stats import clipped_interval
from mill.report.calibration import Reliability
from mill.report.load import Score
from mill.report.numbers import number

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

PALETTE = (
    "#1f6fb4",
    "#e0701c",
    "#2a9d4b",
    "#c8333a",
    "#7d5bb0",
    "#8a5a44",
    "#d45fb0",
    "#6d6d6d",
    "#a5a21e",
    "#17a8b8",
)
GROUP_COLOR = "#555555"
DPI = 120


def _figure(width: float, height: float) -> Figure:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    return fig


def _style(ax: Axes) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.grid(axis="x", color="#e3e3e3", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=9)


def to_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, facecolor="white")
    return buf.getvalue()


def _log_scale(metric: str, rows: Sequence[Score]) -> bool:
    """Perplexities on a log axis when their intervals span more than a factor of 10."""
    values = [s.value for s in rows if s.value is not None]
    if "perplexity" not in metric or not values or min(values) <= 0:
        return False
    ends = [x for s in rows if (ci := s.ci()) for x in ci if x > 0]
    return max([*values, *ends]) / min([*values, *ends]) > 10


def _metric_label(metric: str, higher_is_better: bool) -> str:
    return f"{metric}  ({'higher' if higher_is_better else 'lower'} is better)"


def _interval(score: Score, log: bool, z: float | None = None) -> tuple[float, float] | None:
    """The 95% interval (``z`` None), or value +- z * stderr cut to it."""
    ci = score.ci()
    if ci is None or score.value is None:
        return None
    if z is not None:
        ci = clipped_interval(score.value, score.stderr, ci, z) or ci
    lo, hi = ci
    if log and lo <= 0:  # a log axis cannot show it: draw down to 1% of the value
        lo = score.value / 100
    return lo, hi


def _set_xlim(ax: Axes, metric: str, rows: Sequence[Score], log: bool) -> None:
    """Scores on [0, 1] (accuracies) get the whole [0, 1] axis, widened to show every CI."""
    values = [s.value for s in rows if s.value is not None]
    if log:
        ax.set_xscale("log")
        return
    if not values or not all(0 <= v <= 1 for v in values) or metric == "bits_per_byte":
        return
    ends = [x for s in rows if (ci := s.ci()) for x in ci]
    ax.set_xlim(min([0.0, *ends]) - 0.01, max([1.0, *ends]) + 0.01)


def _draw_interval(
    ax: Axes, y: float, score: Score, color: str, log: bool, marker: str = "o"
) -> None:
    if score.value is None:
        return
    wide, narrow = _interval(score, log), _interval(score, log, 1.0)
    if wide is not None and narrow is not None:
        ax.plot(wide, (y, y), color=color, linewidth=1.4, solid_capstyle="butt")
        for x in wide:
            ax.plot((x, x), (y - 0.12, y + 0.12), color=color, linewidth=1.4)
        ax.plot(narrow, (y, y), color=color, linewidth=6, alpha=0.35, solid_capstyle="butt")
    ax.plot([score.value], [y], marker=marker, color=color, markersize=6, zorder=3)


def scores_png(scores: Sequence[Score], chance: dict[str, float] | None = None) -> bytes:
    """Per metric one panel; per task (and group aggregate) one row: value, +-SE, 95% CI.

    ``chance``: task -> expected accuracy of a uniform guess, drawn on accuracy panels."""
    chance = chance or {}
    metrics = list(dict.fromkeys(s.metric for s in scores))
    rows_per = {m: [s for s in scores if s.metric == m] for m in metrics}
    heights = [len(rows_per[m]) * 0.42 + 0.75 for m in metrics]
    fig = _figure(8.0, sum(heights) + 0.2)
    axes = fig.subplots(len(metrics), 1, height_ratios=heights, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics, strict=True):
        rows = rows_per[metric]
        ys = list(range(len(rows)))[::-1]
        log = _log_scale(metric, rows)
        for y, score in zip(ys, rows, strict=True):
            color = PALETTE[0] if score.kind == "task" else GROUP_COLOR
            _draw_interval(ax, y, score, color, log, "o" if score.kind == "task" else "D")
            if metric.startswith("acc") and score.task in chance and score.kind == "task":
                ax.plot(
                    [chance[score.task]] * 2,
                    (y - 0.3, y + 0.3),
                    color="#b0b0b0",
                    linewidth=2,
                    zorder=1,
                )
            se = f" ± {number(score.stderr, 3)}" if score.stderr is not None else ""
            n = {"micro": f"{score.n} samples", "macro": f"{score.n} tasks"}.get(
                score.kind, f"n={score.n}"
            )
            ax.annotate(
                f"{number(score.value, 3)}{se}   {n}",
                xy=(1.0, y),
                xycoords=("axes fraction", "data"),
                xytext=(8, 0),
                textcoords="offset points",
                va="center",
                fontsize=9,
                family="monospace",
            )
        ax.set_yticks(ys, [s.row_name for s in rows])
        ax.set_ylim(-0.6, len(rows) - 0.4)
        _set_xlim(ax, metric, rows, log)
        ax.set_xlabel(_metric_label(metric, rows[0].higher_is_better), fontsize=9)
        _style(ax)
    if any(m.startswith("acc") for m in metrics) and chance:
        axes[0].set_title(
            "dot: value · thick: ±1 SE · whiskers: 95% CI · grey tick: chance",
            fontsize=8,
            color="#666666",
            loc="left",
        )
    else:
        axes[0].set_title(
            "dot: value · thick: ±1 SE · whiskers: 95% CI", fontsize=8, color="#666666", loc="left"
        )
    return to_png(fig)


def _reliability_bars(top: Any, rel: Reliability, centers: list[float], width: float) -> None:
    """The diagonal, accuracy per bin, its gap to the bin's confidence and the bin means."""
    top.plot((0, 1), (0, 1), linestyle="--", color="#999999", linewidth=1, label="perfect")
    top.bar(
        centers,
        [b.accuracy for b in rel.bins],
        width=width * 0.92,
        color=PALETTE[0],
        alpha=0.85,
        label="accuracy",
    )
    top.bar(
        centers,
        [b.confidence - b.accuracy for b in rel.bins],
        bottom=[b.accuracy for b in rel.bins],
        width=width * 0.92,
        facecolor="none",
        edgecolor=PALETTE[3],
        hatch="///",
        linewidth=0.8,
        label="gap to confidence",
    )
    top.scatter(
        [b.confidence for b in rel.bins],
        [b.accuracy for b in rel.bins],
        s=14,
        color="black",
        zorder=3,
        label="bin mean",
    )


def _reliability_labels(fig: Any, top: Any, rel: Reliability) -> None:
    """Chance, the axes, the title, the numbers' box and the legend."""
    top.axvline(rel.chance, color="#b0b0b0", linewidth=1, linestyle=":")
    top.set_xlim(0, 1)
    top.set_ylim(0, 1)
    top.set_ylabel("accuracy", fontsize=9)
    fig.suptitle(rel.task, fontsize=10, x=0.02, ha="left", fontweight="bold")
    top.text(
        0.03,
        0.97,
        f"ECE = {number(rel.ece, 3)}\naccuracy = {number(rel.accuracy, 3)}\n"
        f"mean confidence = {number(rel.mean_confidence, 3)}\nn = {rel.n}",
        transform=top.transAxes,
        va="top",
        fontsize=8.5,
        family="monospace",
        bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "#cccccc"},
    )
    top.legend(
        loc="lower left", bbox_to_anchor=(0, 1.0), ncols=4, fontsize=7, frameon=False,
        handlelength=1.2, columnspacing=0.9,
    )  # fmt: skip


def reliability_png(rel: Reliability) -> bytes:
    """Reliability diagram (accuracy per confidence bin vs the diagonal) over a histogram."""
    fig = _figure(4.6, 4.9)
    top, bottom = fig.subplots(2, 1, height_ratios=[3.2, 1], sharex=True)
    width = rel.bins[0].hi - rel.bins[0].lo if rel.bins else 0.1
    centers = [(b.lo + b.hi) / 2 for b in rel.bins]
    _reliability_bars(top, rel, centers, width)
    _reliability_labels(fig, top, rel)
    bottom.bar(centers, [b.count for b in rel.bins], width=width * 0.92, color="#8c8c8c")
    bottom.set_ylabel("docs", fontsize=9)
    bottom.set_xlabel("confidence (max softmax over choices)", fontsize=9)
    for ax in (top, bottom):
        _style(ax)
        ax.grid(axis="y", color="#eeeeee", linewidth=0.8)
    return to_png(fig)


def sweep_png(entries: Sequence[tuple[str, Score]]) -> bytes:
    """Task x model chart: per metric a panel, per task a row, per model a coloured interval.

    ``entries``: (model label, score) pairs."""
    labels = list(dict.fromkeys(label for label, _ in entries))
    colors = {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels)}
    metrics = list(dict.fromkeys(s.metric for _, s in entries))
    rows_per = {
        m: list(dict.fromkeys(s.row_name for _, s in entries if s.metric == m)) for m in metrics
    }
    per_row = max(0.32 * len(labels), 0.45) + 0.15
    heights = [len(rows_per[m]) * per_row + 0.8 for m in metrics]
    fig = _figure(8.0, sum(heights) + 0.5)
    axes = fig.subplots(len(metrics), 1, height_ratios=heights, squeeze=False)[:, 0]
    step = 0.7 / max(len(labels), 1)
    for ax, metric in zip(axes, metrics, strict=True):
        rows = rows_per[metric]
        found = [(lab, s) for lab, s in entries if s.metric == metric]
        log = _log_scale(metric, [s for _, s in found])
        for r, row in enumerate(rows):
            base = len(rows) - 1 - r
            if r:
                ax.axhline(base + 0.5, color="#eeeeee", linewidth=0.8)
            for i, label in enumerate(labels):
                for lab, score in found:
                    if lab == label and score.row_name == row:
                        y = base + 0.35 - step / 2 - i * step
                        _draw_interval(ax, y, score, colors[label], log)
        ax.set_yticks(range(len(rows))[::-1], rows)
        ax.set_ylim(-0.5, len(rows) - 0.5)
        _set_xlim(ax, metric, [s for _, s in found], log)
        higher = next(s.higher_is_better for _, s in found)
        ax.set_xlabel(_metric_label(metric, higher), fontsize=9)
        _style(ax)
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=colors[lab], marker="o", linewidth=1.4) for lab in labels]
    fig.legend(
        handles,
        labels,
        loc="outside upper center",
        ncols=min(len(labels), 4),
        fontsize=9,
        frameon=False,
        title="dot: value · thick: ±1 SE · whiskers: 95% CI",
        title_fontsize=8,
    )
    return to_png(fig)


def compare_png(rows: Sequence[dict[str, Any]], label_a: str, label_b: str) -> bytes:
    """Forest plot of paired differences B - A with their bootstrap confidence intervals,
    one panel (own scale) per task x metric."""
    fig = _figure(8.0, 0.95 * len(rows) + 0.7)
    axes = fig.subplots(len(rows), 1, squeeze=False)[:, 0]
    for ax, row in zip(axes, rows, strict=True):
        color = {"B": PALETTE[2], "A": PALETTE[3]}.get(row["better"] or "", "#7a7a7a")
        lo, hi = row["ci"]
        ax.plot((lo, hi), (0, 0), color=color, linewidth=1.6)
        for x in (lo, hi):
            ax.plot((x, x), (-0.25, 0.25), color=color, linewidth=1.6)
        ax.plot([row["diff"]], [0], "o", color=color, zorder=3)
        ax.axvline(0, color="#333333", linewidth=1)
        span = max(abs(lo), abs(hi), abs(row["diff"])) or 1.0
        ax.set_xlim(min(lo, 0) - 0.08 * span, max(hi, 0) + 0.08 * span)
        ax.set_ylim(-0.6, 0.6)
        ax.set_yticks([0], [f"{row['task']} · {row['metric']}"])
        better = {"B": f"{label_b} better", "A": f"{label_a} better"}.get(
            row["better"] or "", "no significant difference"
        )
        ax.annotate(
            f"p={row['p_value']:.3g}\n{better}",
            xy=(1.0, 0),
            xycoords=("axes fraction", "data"),
            xytext=(8, 0),
            textcoords="offset points",
            va="center",
            fontsize=8.5,
            color=color,
        )
        _style(ax)
    axes[-1].set_xlabel(
        f"B − A   (A = {label_a}, B = {label_b}; whiskers: paired bootstrap CI)", fontsize=9
    )
    return to_png(fig)


def curve_png(metric: str, series: Mapping[str, Sequence[tuple[int, Score]]]) -> bytes:
    """A metric against the training step: per task a line, a band of +-1 stderr and a
    lighter one of the 95% CI (evaluation during training's ``curves.html``)."""
    fig = _figure(8.0, 3.6)
    ax = fig.subplots()
    higher = True
    for i, (task, points) in enumerate(series.items()):
        color = PALETTE[i % len(PALETTE)]
        kept = [(step, s) for step, s in points if s.value is not None]
        if not kept:
            continue
        higher = kept[0][1].higher_is_better
        steps = [step for step, _ in kept]
        values = [float(s.value) for _, s in kept]  # type: ignore[arg-type]
        for z, alpha in ((None, 0.10), (1.0, 0.22)):  # the 95% interval, then +-1 SE in it
            bands = [
                _interval(s, False, z) or (v, v) for v, (_, s) in zip(values, kept, strict=True)
            ]
            lows, highs = [lo for lo, _ in bands], [hi for _, hi in bands]
            ax.fill_between(steps, lows, highs, color=color, alpha=alpha, linewidth=0)
        ax.plot(steps, values, marker="o", markersize=4, color=color, label=task)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.set_xlabel("training step", fontsize=9)
    ax.set_ylabel(_metric_label(metric, higher), fontsize=9)
    ax.legend(  # beside the axes, never over the lines
        fontsize=8.5,
        frameon=False,
        title="band: ±1 SE · light: 95% CI",
        title_fontsize=8,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
    )
    _style(ax)
    ax.grid(axis="y", color="#eeeeee", linewidth=0.8)
    return to_png(fig)


def instruction_types_png(task: str, rows: Sequence[TypeAccuracy]) -> bytes:
    """IFEval: one bar per instruction type (strict accuracy; a tick at the loose one),
    sorted highest first, each labelled with its count of instructions."""
    fig = _figure(8.0, 0.26 * len(rows) + 1.2)
    ax = fig.subplots()
    ys = list(range(len(rows)))[::-1]
    strict = [r.strict / r.count for r in rows]
    loose = [r.loose / r.count for r in rows]
    ax.barh(ys, strict, color=PALETTE[0], height=0.7, label="strict")
    ax.scatter(loose, ys, color=PALETTE[1], marker="|", s=120, zorder=3, label="loose")
    ax.set_yticks(ys, [f"{r.instruction} (n={r.count})" for r in rows], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"{task}: share of instructions followed", fontsize=9)
    ax.legend(fontsize=8, frameon=False, loc="lower right")
    _style(ax)
    return to_png(fig)
