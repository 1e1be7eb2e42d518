"""The pages open in headless Chromium, every image decodes, and a screenshot shows the
plots where the page puts them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.helpers import run_mill


def _check_images(chromium, page: Path, expected: int) -> list[dict]:
    images = chromium.images(page)
    assert len(images) == expected
    for img in images:
        assert img["complete"] and img["w"] > 100 and img["h"] > 100, img
    return images


@pytest.mark.slow
def test_run_page_renders_with_its_plots(chromium, sweep, tmp_path: Path) -> None:
    page = sweep.path / "0_arc_fake0" / "report.html"
    images = _check_images(chromium, page, 3)
    assert [i["alt"] for i in images] == [
        "scores with standard errors",
        "reliability diagram arc_easy",
        "reliability diagram arc_challenge",
    ]
    shot = np.asarray(
        Image.open(chromium.screenshot(page, tmp_path / "shot.png")).convert("RGB"), dtype=float
    )
    assert shot.shape[1] == 1200 and shot.std() > 20  # not blank
    plots = page.parent / "plots"
    names = ["scores.png", "calibration_arc_easy.png", "calibration_arc_challenge.png"]
    for img, name in zip(images, names, strict=True):
        # the screenshot, where the page laid out this <img>, shows the plot file
        x, y = round(img["x"]) + 2, round(img["y"]) + 2
        w, h = round(img["bw"]) - 4, round(img["bh"]) - 4
        seen = shot[y : y + h, x : x + w]
        plot = Image.open(plots / name).convert("RGB")
        plot = plot.resize((round(img["bw"]) - 2, round(img["bh"]) - 2), Image.BILINEAR)
        expected = np.asarray(plot, dtype=float)[1 : 1 + h, 1 : 1 + w]
        assert seen.shape == expected.shape
        assert np.abs(seen - expected).mean() < 6, name
        # and it is a plot: ink on white, with the blue of the series
        blue = (seen[..., 2] > seen[..., 0] + 60) & (seen[..., 2] > seen[..., 1] + 30)
        assert (seen.mean(axis=2) < 200).mean() > 0.01 and blue.sum() > 100, name


@pytest.mark.slow
def test_sweep_and_compare_pages_render(chromium, sweep, tmp_path: Path) -> None:
    _check_images(chromium, sweep.path / "report.html", 1)
    out = tmp_path / "cmp"
    a, b = sweep.path / "2_wikitext_fake0", sweep.path / "3_wikitext_fake1"
    proc = run_mill("-cn", "compare", f"a={a}", f"b={b}", "iters=500", f"out={out}")
    assert proc.returncode == 0, proc.stderr
    _check_images(chromium, out / "compare.html", 1)
