"""A run's plots and ``report.html``, drawn by a helper process that starts with the run.

Importing matplotlib and drawing take about a second of one core. A run spends most of
its start on one core (imports, loading data and the model), so :class:`ReportHelper`
starts ``python -m mill.report.background`` at once: the child imports matplotlib and
the report code on the other core, then waits for one line on stdin, the folder, and
writes the plots and ``report.html`` there (:func:`mill.report.rebuild.write_run_report`,
the same function ``mill report`` uses). The run hands it the folder after
``report.txt`` and waits for its answer before the manifest says ``succeeded``, so the
folder ends as an in-process rendering leaves it, in the same order.

The child draws the plots two at a time: it forks, the fork draws the first half (the
calibration diagrams) while the child draws the rest, and the PNG bytes come back
through a pipe (:func:`draw_in_two`); the run itself only waits, so this takes the second
core. Where ``fork`` is missing or the fork fails, the child draws them one after the
other; the files are the same either way.

If the run ends early, the child is killed (an error, an interruption) or reads
end-of-file (the run was killed) before it was handed a folder: it wrote nothing. If
the child cannot start or dies, the run draws in process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

_TIMEOUT_S = 600.0


class ReportHelper:
    """The child process that draws one run's plots and page (see the module docs)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "mill.report.background"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
        except OSError:
            self._proc = None

    def render(self, path: Path) -> None:
        """Write ``path``'s plots and ``report.html`` (a warning on failure, never an
        error: the results are complete), then stop the child."""
        from mill.report.rebuild import report_after_run, warn_not_written

        proc, self._proc = self._proc, None
        answer = None
        if proc is not None:
            try:
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(f"{path}\n")
                proc.stdin.close()
                line = proc.stdout.readline()
                proc.wait(timeout=_TIMEOUT_S)
                answer = json.loads(line) if line.strip() else None
            except (OSError, ValueError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if answer is None:  # no child, or it died: draw here
            report_after_run(path)
        elif answer.get("error"):
            name, _, message = str(answer["error"]).partition(": ")
            warn_not_written("report.html", type(name, (Exception,), {})(message), path)

    def close(self) -> None:
        """Stop the child without drawing (the run failed or was interrupted): it has
        written nothing, so it is simply killed."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()


def _send(fd: int, pngs: list[bytes]) -> None:
    with os.fdopen(fd, "wb") as out:
        for png in pngs:
            out.write(len(png).to_bytes(8, "big"))
            out.write(png)


def _receive(fd: int, count: int) -> list[bytes] | None:
    with os.fdopen(fd, "rb") as pipe:
        data = pipe.read()
    pngs, at = [], 0
    for _ in range(count):
        size = int.from_bytes(data[at : at + 8], "big")
        png = data[at + 8 : at + 8 + size]
        if at + 8 > len(data) or len(png) != size:
            return None
        pngs.append(png)
        at += 8 + size
    return pngs if at == len(data) else None


def draw_in_two(jobs: Sequence[Callable[[], bytes]]) -> list[bytes]:
    """Run drawing jobs in two processes at once: a fork draws the first half, this
    process the rest; the results in the jobs' order. Jobs the fork could not draw are
    drawn here."""
    half = len(jobs) // 2
    if not half or not hasattr(os, "fork"):
        return [job() for job in jobs]
    read, write = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return [job() for job in jobs]
    if pid == 0:  # the fork: draw, send, exit without any of the parent's cleanup
        code = 1
        try:
            os.close(read)
            _send(write, [job() for job in jobs[:half]])
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    mine = [job() for job in jobs[half:]]
    theirs = _receive(read, half)
    _, status = os.waitpid(pid, 0)
    if theirs is None or os.waitstatus_to_exitcode(status) != 0:
        theirs = [job() for job in jobs[:half]]
    return theirs + mine


def preload() -> None:
    """Import what drawing a run's report needs, so that none of it is imported after the
    run hands over its folder (the child does this while the run loads its model)."""
    import matplotlib.backends.backend_agg  # noqa: F401
    import matplotlib.figure  # noqa: F401
    import matplotlib.lines  # noqa: F401
    import omegaconf  # noqa: F401 - RunFolder reads resolved.yaml with it
    import PIL.Image

    import mill.instantiate  # noqa: F401 - RunFolder reads older runs' targets with it
    from mill.report import html, ifeval, plots, rebuild, text  # noqa: F401 - text: judge lines

    PIL.Image.preinit()  # the image plugins Agg's PNG writer would load on its first save


def _main() -> int:
    preload()  # the work done ahead, while the run loads its model
    from mill.report.rebuild import write_run_report

    line = sys.stdin.readline()
    if not line.strip():  # the run ended without results: write nothing
        return 0
    try:
        write_run_report(Path(line.strip()), finished=False, draw=draw_in_two)
    except Exception as err:  # noqa: BLE001 - reported to the run, which warns
        print(json.dumps({"error": f"{type(err).__name__}: {err}"}), flush=True)
        return 0
    print(json.dumps({"ok": True}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
