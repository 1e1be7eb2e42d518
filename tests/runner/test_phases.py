"""The per-run phase line in mill.log (mill.runner.phases)."""

from __future__ import annotations

import re
import time

from mill.runner.phases import PhaseClock, process_age_s

_IMPORTED = time.monotonic()


def _parse(line: str) -> tuple[dict[str, float], float]:
    head, tail = line.split("; total ")
    phases = {m.group(1): float(m.group(2)) for m in re.finditer(r"(\w[\w ]*?) (\d+\.\d+) s", head)}
    return phases, float(tail.split(" s")[0])


def test_process_age_counts_from_the_process_start() -> None:
    age = process_age_s()
    assert age is not None  # Linux: /proc is there
    # this process started before this module was imported
    assert age >= time.monotonic() - _IMPORTED
    assert age < 24 * 3600


def test_phases_are_in_order_and_add_up_to_the_total() -> None:
    clock = PhaseClock()
    time.sleep(0.02)
    clock.mark("data")
    time.sleep(0.05)
    clock.mark("model")
    clock.mark("data")  # a repeated phase adds to the first
    line = clock.line()
    assert line.startswith("phases: start ")
    phases, total = _parse(line.removeprefix("phases: "))
    assert list(phases) == ["start", "data", "model"]
    assert phases["data"] >= 0.02 and phases["model"] >= 0.05
    assert abs(sum(phases.values()) - total) < 0.02  # rounding of each to 0.01 s
    assert phases["start"] >= time.monotonic() - _IMPORTED - total
