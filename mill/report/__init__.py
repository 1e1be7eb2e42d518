"""What a run shows: the console (progress with ETA per phase, the results table), the
report pages (report.html of a run, a sweep, a comparison), ``mill report``, ``mill compare``
and ``mill runs``. The names below are imported from their modules on first use (plots
import matplotlib).

- :mod:`mill.report.load`: a finished run or sweep read for reporting (:class:`RunFolder`);
- :mod:`mill.report.rebuild`: the report pages written from a folder;
- :mod:`mill.report.compare`: two runs compared, paired statistics per metric;
- :mod:`mill.report.runs`: the experiments under a folder, listed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports

if TYPE_CHECKING:
    from mill.report.compare import compare_command, compare_runs
    from mill.report.load import ReportInputError, RunFolder, Score, Sweep, open_sweep
    from mill.report.rebuild import report_command, write_run_report
    from mill.report.runs import list_runs, runs_command
    from mill.report.table import results_table

__all__ = [
    "ReportInputError",
    "RunFolder",
    "Score",
    "Sweep",
    "compare_command",
    "compare_runs",
    "list_runs",
    "open_sweep",
    "report_command",
    "results_table",
    "runs_command",
    "write_run_report",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "mill.report.compare": ("compare_command", "compare_runs"),
        "mill.report.load": ("ReportInputError", "RunFolder", "Score", "Sweep", "open_sweep"),
        "mill.report.rebuild": ("report_command", "write_run_report"),
        "mill.report.runs": ("list_runs", "runs_command"),
        "mill.report.table": ("results_table",),
    },
)
