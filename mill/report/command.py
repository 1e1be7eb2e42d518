"""The report-side commands behind Mill's second primary configs (``conf/compare.yaml``,
``conf/report.yaml``), chosen by the command's name (``mill.cli`` makes ``mill compare``
Hydra's ``-cn compare``, so both spellings work):

    mill compare a=<run dir> b=<run dir>
    mill report runs=[<run or sweep dir>,...]
    mill runs [task=...] [model=...] [open=N]
    mill view [run]

Each config sets ``command``; :func:`run_command` dispatches on it. Neither command loads a
model.
"""

from __future__ import annotations

from typing import Any

from mill.errors import ConfigError


def run_command(cfg: Any) -> None:
    """Run ``cfg.command`` (``compare``, ``report``, ``runs`` or ``view``)."""
    command = str(cfg.command)
    if command == "compare":
        from mill.report.compare import compare_command

        compare_command(cfg)
    elif command == "runs":
        from mill.report.runs import runs_command

        runs_command(cfg)
    elif command == "report":
        from mill.report.rebuild import report_command

        report_command(cfg)
    elif command == "view":
        from mill.report.view import view_command

        view_command(cfg)
    else:
        raise ConfigError(
            f"command={command!r} is unknown; use mill compare, mill report, mill runs or mill view"
        )
