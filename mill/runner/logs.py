"""Log records that belong in ``mill.log`` only.

A user error is printed once, as one line, by the CLI; the same error is logged (with a
traceback for Mill's own bugs) for ``mill.log``. Such records carry ``extra=FILE_ONLY`` and
the console handlers drop them with :class:`ConsoleFilter`.
"""

from __future__ import annotations

import logging

FILE_ONLY = {"file_only": True}
"""``log.error(..., extra=FILE_ONLY)``: to mill.log, never to the console."""


class ConsoleFilter(logging.Filter):
    """Drops records marked :data:`FILE_ONLY` (for the console handler)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(record, "file_only", False)
