"""The plain progress lines: the ETA is the rate after the first batch (which also pays for
warming up), none before a second batch."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from mill.report import progress
from mill.report.progress import PhaseProgress


def test_the_eta_starts_after_the_first_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: now[0])
    out = io.StringIO()
    console = Console(file=out, width=200, markup=False, highlight=False)
    bar = PhaseProgress(console, interactive=False, every_s=10.0)
    bar.phase("scoring requests", 400)
    now[0] = 110.0  # the first batch: 1 request in 10 s, warm-up included
    bar.advance(1)
    now[0] = 120.0  # then 100 requests in 10 s: 299 left at 10 per second
    bar.advance(100)
    bar.done()
    assert out.getvalue().splitlines() == [
        "[mill] scoring requests: 0/400",
        "[mill] scoring requests: 1/400 (0%)",
        "[mill] scoring requests: 101/400 (25%, eta 30s)",
        "[mill] scoring requests: 101/400 in 20.0s",
    ]
