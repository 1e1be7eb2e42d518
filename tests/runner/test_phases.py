"""The per-run phase line in mill.log (mill.runner.phases)."""

from __future__ import annotations

import mmap
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


def test_cpu_line_counts_each_phase_cpu_time() -> None:
    clock = PhaseClock()
    time.sleep(0.05)  # wall time, almost no CPU
    clock.mark("data")
    spent = time.process_time()
    while time.process_time() - spent < 0.1:  # busy: CPU time
        pass
    clock.mark("model")
    line = clock.cpu_line()
    assert line.startswith("cpu by phase: start ")
    cpu, total = _parse(line.removeprefix("cpu by phase: "))
    assert list(cpu) == ["start", "data", "model"]
    assert cpu["data"] < 0.04 and cpu["model"] >= 0.1
    # the start phase counts from the process's start, so the phases add up to its CPU time
    assert abs(sum(cpu.values()) - total) < 0.1
    # "phases: " stays the wall-time line's own marker (scripts look it up by it)
    assert "phases: " not in line


def test_memory_line_gives_peak_and_current_rss_per_phase() -> None:
    clock = PhaseClock()
    # 64 MiB of fresh pages, every one written: an anonymous mapping, not the allocator's
    # heap, where a block may reuse pages a test before this one left resident (the RSS does
    # not grow then: seen once in the whole suite)
    block = mmap.mmap(-1, 64 << 20)
    block.write(b"\x01" * (64 << 20))
    clock.mark("data")
    block.close()
    clock.mark("model")
    line = clock.memory_line()
    assert line is not None and line.startswith("memory by phase (peak/current RSS MiB): ")
    found = dict(
        (m.group(1), (int(m.group(2)), int(m.group(3))))
        for m in re.finditer(r"(\w+) (\d+)/(\d+)", line)
    )
    assert list(found) == ["start", "data", "model"]
    assert found["data"][1] >= found["start"][1] + 60  # the block was held at its end
    assert found["data"][0] >= found["data"][1]  # and the peak saw it
    assert found["model"][0] >= found["data"][0]  # a peak never goes down
    assert all(current <= peak for peak, current in found.values())


def test_the_manifest_records_the_phases_the_log_line_prints(compose, tmp_path, caplog) -> None:
    """A run's manifest holds each phase's wall seconds (what the tools read with
    ``mill.load``), the same phases in the same order as ``mill.log``'s line."""
    import logging

    import mill
    from mill.runner.job import run_job

    cfg = compose("model=fake", "task=arc_easy", "task.limit=4", "report.progress=never")
    with caplog.at_level(logging.INFO):
        run_job(cfg, tmp_path / "run")
    (line,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("phases: ")]
    logged, total = _parse(line.removeprefix("phases: "))
    recorded = mill.load(tmp_path / "run").manifest.phases
    assert recorded is not None and list(recorded) == list(logged)
    assert list(recorded)[-1] == "report" and "scoring" in recorded
    for name, seconds in recorded.items():
        assert abs(seconds - logged[name]) <= 0.0051, name  # the line rounds to 0.01 s
    assert abs(sum(recorded.values()) - total) < 0.02
