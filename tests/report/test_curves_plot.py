"""The curves page's plot: whole training steps on the x axis, the legend beside the
axes (never over the lines)."""

from __future__ import annotations

from mill.report.load import Score


def test_curve_axis_has_whole_steps_and_the_legend_outside(monkeypatch) -> None:
    from mill.report import plots

    seen = {}
    real = plots.to_png

    def keep(fig):  # the figure as drawn, before it becomes a PNG
        fig.canvas.draw()
        ax = fig.axes[0]
        seen["ticks"] = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        legend = ax.get_legend().get_window_extent()
        seen["legend_left"], seen["axes_right"] = legend.x0, ax.get_window_extent().x1
        return real(fig)

    monkeypatch.setattr(plots, "to_png", keep)
    points = [(s, Score("arc_easy", "acc", 0.2 + s / 100, 0.05, 100)) for s in (2, 3, 4)]
    assert plots.curve_png("acc", {"arc_easy": points}).startswith(b"\x89PNG")
    assert seen["ticks"] and all(float(t).is_integer() for t in seen["ticks"]), seen
    assert seen["legend_left"] >= seen["axes_right"]
