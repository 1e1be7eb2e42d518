"""One rich console per stream, interactive only on a real terminal outside CI."""

from __future__ import annotations

import os
import sys

from rich.console import Console


def interactive(mode: str = "auto") -> bool:
    """Whether to animate: ``always``, ``never``, or ``auto`` (a TTY and ``CI`` unset)."""
    if mode in ("always", "never"):
        return mode == "always"
    ci = os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
    return sys.stderr.isatty() and not ci


def make_console(stderr: bool, mode: str = "auto", record: bool = False) -> Console:
    """A console that writes no ANSI codes and no animation unless :func:`interactive`."""
    live = interactive(mode)
    return Console(
        stderr=stderr,
        force_terminal=live,
        force_interactive=live,
        no_color=not live,
        width=None if live else 120,
        record=record,
        highlight=False,
        markup=False,
    )
