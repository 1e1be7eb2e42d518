"""Test-only fault injection: ``MILL_FAULT=<point>[:<n>[:<signal>]]`` kills this process.

The fault-injection tests (``tests/runner/test_faults.py``) kill a real ``mill`` run at
named points of its life, deterministically, instead of racing it with sleeps: at the
n-th pass (default 1st) through the point the process sends itself the signal (default
SIGKILL; ``SIGTERM`` tests the interruption path). With
``MILL_FAULT`` unset (every normal run) :func:`fault` is one environment lookup. Points:

* ``prepared``: the folder is claimed, ``resolved.yaml`` and the manifest are written;
* ``model_loaded``: the model is in memory, nothing is scored yet;
* ``response``: a response was delivered (committed to the cache, its sample written
  when it completed a doc); ``response:5`` kills at the fifth;
* ``samples_closed``: the sample files have their final names;
* ``results_written``: ``results.json`` is written, the reports are not;
* ``report_text``: ``report.txt`` is written, the plots and ``report.html`` are not;
* ``reports_written``: every report is written, the manifest still says ``running``.
"""

from __future__ import annotations

import os
import signal

_passes: dict[str, int] = {}


def fault(point: str) -> None:
    """Kill this process at the n-th pass through ``point`` if ``MILL_FAULT`` asks."""
    spec = os.environ.get("MILL_FAULT")
    if not spec:
        return
    name, _, rest = spec.partition(":")
    if name != point:
        return
    nth, _, signame = rest.partition(":")
    _passes[point] = _passes.get(point, 0) + 1
    if _passes[point] == int(nth or 1):
        os.kill(os.getpid(), getattr(signal, signame or "SIGKILL"))
