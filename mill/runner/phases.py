"""Where a run's wall time goes: one INFO line in ``mill.log`` per run.

``phases: start 1.10 s, data 0.52 s, model 2.31 s, requests 0.40 s, scoring 1.37 s,
metrics 0.05 s, report 0.61 s; total 6.36 s (cpu 7.9 s)``

``start`` runs from the process's own start (the kernel's record of it, where there is
one) to the evaluation's start: the interpreter, imports, Hydra's composition and the
experiment folder. Each later phase ends where the next begins, so the phases add up to
the total.

A second line gives the CPU time of the process (all its threads) in each phase, which
depends much less than wall time on other jobs sharing the machine:

``cpu by phase: start 1.02 s, data 0.41 s, model 2.20 s, ...; total 7.9 s``

and a third the process's memory at the end of each phase, peak RSS so far and RSS
(Linux ``/proc``; absent elsewhere):

``memory by phase (peak/current RSS MiB): start 310/310, data 312/311, model 498/498, ...``

The wall seconds of each phase also go into ``manifest.json`` (``phases``,
:meth:`PhaseClock.seconds`), where tools read them with ``mill.load`` instead of parsing the
log.
"""

from __future__ import annotations

import os
import time


def proc_status_mib(*keys: str) -> dict[str, float] | None:
    """The memory fields ``keys`` of ``/proc/self/status`` (``VmHWM``, ``VmRSS``,
    ``RssAnon``, ...) in MiB, or None where unknown (not Linux, a field missing)."""
    found: dict[str, float] = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in keys:
                    found[key] = int(value.split()[0]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        return None
    return found if len(found) == len(keys) else None


def rss_mib() -> tuple[float, float] | None:
    """(peak RSS, RSS) of this process in MiB (Linux ``/proc``), or None where unknown."""
    found = proc_status_mib("VmHWM", "VmRSS")
    return None if found is None else (found["VmHWM"], found["VmRSS"])


def process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``), or None where unknown."""
    try:
        with open("/proc/self/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        with open("/proc/uptime") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, uptime - started)


class PhaseClock:
    """Marks the end of each phase of a run; :meth:`line` says how long each took."""

    def __init__(self) -> None:
        age = process_age_s()
        now = time.monotonic()
        self.phases: list[tuple[str, float]] = []
        self.cpu: dict[str, float] = {}
        self.memory: dict[str, tuple[float, float]] = {}
        self._origin = now - age if age is not None else now
        self._last = self._origin
        # process_time counts from the process's start: the start phase's CPU time
        self._last_cpu = 0.0 if age is not None else time.process_time()
        if age is not None:
            self.mark("start", now)

    def mark(self, name: str, now: float | None = None) -> None:
        """End the phase ``name`` now (a repeated name adds to it)."""
        now = time.monotonic() if now is None else now
        cpu = time.process_time()
        seconds = now - self._last
        self._last = now
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu - self._last_cpu
        self._last_cpu = cpu
        memory = rss_mib()
        if memory is not None:
            # VmHWM can read a MiB lower than an earlier read (the kernel's RSS counters
            # are approximate, per-CPU deltas folded in lazily; seen once in the fast
            # tier): "peak so far" stays monotone
            peak = max([memory[0], *(seen for seen, _ in self.memory.values())])
            self.memory[name] = (peak, memory[1])
        for i, (known, before) in enumerate(self.phases):
            if known == name:
                self.phases[i] = (name, before + seconds)
                return
        self.phases.append((name, seconds))

    def seconds(self) -> dict[str, float]:
        """Wall seconds of each phase so far, in order (what :meth:`line` prints), to the
        millisecond: the manifest's ``phases``."""
        return {name: round(seconds, 3) for name, seconds in self.phases}

    def line(self) -> str:
        parts = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.phases)
        total = self._last - self._origin
        cpu = time.process_time()  # this process's CPU time, all threads, since it started
        return f"phases: {parts}; total {total:.2f} s (cpu {cpu:.1f} s)"

    def cpu_line(self) -> str:
        """This process's CPU time (all threads) in each phase, in the order of
        :meth:`line`."""
        parts = ", ".join(f"{name} {self.cpu[name]:.2f} s" for name, _ in self.phases)
        return f"cpu by phase: {parts}; total {time.process_time():.1f} s"

    def memory_line(self) -> str | None:
        """Peak RSS so far and RSS at the end of each phase (MiB), or None without
        ``/proc``."""
        if not self.memory:
            return None
        parts = ", ".join(
            f"{name} {self.memory[name][0]:.0f}/{self.memory[name][1]:.0f}"
            for name, _ in self.phases
            if name in self.memory
        )
        return f"memory by phase (peak/current RSS MiB): {parts}"
