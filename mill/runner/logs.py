"""Log records that belong in ``mill.log`` only.

A user error is printed once, as one line, by the CLI; the same error (with a traceback
for Mill's own bugs) goes to ``mill.log`` through :func:`to_file`, which hands the record
to the file handlers alone, whatever logging config is active.

``mill.log`` itself is opened by :class:`RunLog` (Hydra's job logging, a worker's): the
rule of every file Mill writes (:func:`mill.files.inside`) applies, so a symbolic link
planted at ``mill.log`` is refused, not followed.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

from mill.files import inside


class RunLog(logging.FileHandler):
    """A :class:`logging.FileHandler` for ``<folder>/mill.log`` that refuses a path leading
    outside its folder (StorageError naming it) before opening anything."""

    def __init__(self, filename: str | Path, mode: str = "a", **kwargs: Any) -> None:
        path = Path(filename)
        inside(path.parent, path)
        super().__init__(path, mode, **kwargs)


def to_file(level: int, message: str, exc_info: bool = False) -> None:
    """Log ``message`` on the ``mill`` logger to the root logger's file handlers only."""
    logger = logging.getLogger("mill")
    if not logger.isEnabledFor(level):
        return
    record = logger.makeRecord(
        logger.name, level, __file__, 0, message, (), sys.exc_info() if exc_info else None
    )
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
            handler.handle(record)


class ConsoleFormatter(logging.Formatter):
    """A log record on the console in Mill's one style: ``mill: warning: <message>`` (as
    ``mill: error: ...`` for errors; progress is ``[mill] ...``); another library's record
    names it (``mill: warning: (huggingface_hub) ...``). ``mill.log`` keeps its dated
    ``[time][logger][LEVEL]`` lines."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        own = record.name == "mill" or record.name.startswith("mill.")
        return f"mill: {record.levelname.lower()}: {'' if own else f'({record.name}) '}{text}"
