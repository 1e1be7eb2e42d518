"""Same behaviour before and after a change: the run folders of two revisions of Mill, compared
file by file, byte for byte, after removing only what legitimately varies between two runs.

    python -m benchmarks.before_after                      # main against the working tree
    python -m benchmarks.before_after --before main --after HEAD --keep /tmp/ba
    python -m benchmarks.before_after --runs loglik sweep  # a subset of the runs

Each revision is checked out into a temporary ``git worktree`` with ``mill/conf`` and
``mill/tasks`` linked to ``conf/`` and ``tasks/`` (as ``.ci/run`` links a fresh clone); the
working tree (``--after`` by default) is this checkout as it is, its links included. Each side
runs the same fixed runs with this interpreter, ``PYTHONPATH`` set to its checkout, offline,
one thread and a fresh ``MILL_CACHE`` of its own (:data:`RUNS`): the fake model on a
log-likelihood task, a generation task, MT-Bench and Arena-Hard judged by ``judge=fake`` on
their bundled samples, HumanEval's programs in the sandbox, a sweep, a run and its rerun from
the same response cache; stories260k (the bundled conversion of ``../shared/models/stories260K``)
on ARC-Easy, WikiText and GSM8K; then ``mill report`` over two runs (report.html and the text
report of each) and ``mill compare`` (its json, txt, html and plot).

Then every file of both sides' folders is compared, after these and only these are removed:

* absolute paths: each side's checkout, output folder, cache and own folder become
  ``<REPO>``, ``<OUT>``, ``<CACHE>`` and ``<SIDE>`` (in every text file); both sides' runs
  lie in folders of the same name (``<side>/runs/<run>``), so a folder's name is the same;
* JSON keys, at any depth: ``started`` (the start time), ``seconds``, ``phases`` and
  ``duration_s`` (wall times: of the run, its phases, each sandboxed program), ``git_sha``
  (the revision itself), ``results_sha256`` and ``samples_sha256`` (the digests of
  results.json and of the samples files, which hold those times; the files themselves are
  compared) and ``fingerprint`` (the ``datasets`` library's cache fingerprint of a local
  file, a hash over its absolute path; the file's ``sha256`` is kept), and the ``checksum``
  of an object that holds a ``duration_s`` at any depth (a sandbox verdict file's seal covers
  its data's wall time);
  no run folder records a pid or a hostname;
* in text (logs, YAML, HTML, text reports): date-times (``2026-11-28 23:40:25``, ISO 8601
  with an offset), durations (``17.4 s``), the ``memory by phase`` log line (RSS) and the
  side's own revision (its hash, whole or from 7 characters on: the HTML report names it);
* in HTML reports: the cells of a ``seconds`` column (a run's or a program's wall time)
  and the value beside a setting named as a JSON key above (``...dataset.fingerprint``,
  ``git_sha``);
* in SQLite files (the response cache): the ``created`` column (when each response was
  written); each model's key, a digest of its identity, which holds the model's absolute
  path, replaced by the digest of the identity with the paths replaced; and the
  ``checksum`` column, a digest over that key and the response (the response itself is
  compared); the rows are compared in primary-key order, not the file's bytes (page
  layout).

Prints a table (file, equal or differs, with the first differing line) and exits 1 on any
difference or a file only one side has, 2 when a run fails or a revision cannot be checked
out, 0 when everything is equal.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.driver_common import REPO

VARYING_KEYS = frozenset(
    {
        "started",
        "seconds",
        "phases",
        "duration_s",
        "git_sha",
        "results_sha256",
        "samples_sha256",
        "fingerprint",
    }
)
"""JSON keys whose values legitimately differ between two runs of the same code."""

_DATETIME = re.compile(
    r"\d{4}-\d\d-\d\d[ T_]\d\d[:-]\d\d[:-]\d\d(?:[.,-]\d+)?(?:[+-]\d\d:\d\d| UTC|Z)?"
)
_DURATION = re.compile(r"\b\d+(?:\.\d+)? ?s\b")
_MEMORY_LINE = re.compile(r"^.*memory by phase.*$", re.M)
_TABLE = re.compile(r"<table[^>]*>.*?</table>", re.S)
_HEAD = re.compile(r"<thead>(.*?)</thead>", re.S)
_HEAD_CELL = re.compile(r"<th[^>]*>(.*?)</th>", re.S)
_ROW = re.compile(r"<tr[^>]*>.*?</tr>", re.S)
_CELL = re.compile(r"<td[^>]*>.*?</td>", re.S)
_SETTING = re.compile(
    rf"(<code>(?:[^<]*\.)?(?:{'|'.join(sorted(VARYING_KEYS))})</code></td><td>).*?(</td>)"
)
_TEXT = {".json", ".jsonl", ".yaml", ".yml", ".txt", ".html", ".log", ".md", ".csv", ""}


@dataclass(frozen=True)
class Run:
    """One command of the fixed set: ``mill`` with ``args`` (``{out}`` and ``{run}`` filled in:
    the side's output folder and this run's folder)."""

    name: str
    args: tuple[str, ...]


FAKE = ("model=fake",)
STORIES = "model=stories260k"
RUNS: tuple[Run, ...] = (
    Run("loglik", ("task=arc_easy", *FAKE, "task.limit=20", "hydra.run.dir={run}")),
    Run("generation", ("task=gsm8k", *FAKE, "task.limit=10", "hydra.run.dir={run}")),
    Run(
        "mt_bench",
        ("task=mt_bench", *FAKE, "judge=fake", "task.limit=6", "hydra.run.dir={run}"),
    ),
    Run(
        "arena_hard",
        ("task=arena_hard", *FAKE, "judge=fake", "task.limit=6", "hydra.run.dir={run}"),
    ),
    Run("code", ("task=humaneval", *FAKE, "task.limit=4", "hydra.run.dir={run}")),
    Run(
        "sweep",
        ("-m", "task=arc_easy,boolq", *FAKE, "task.limit=5", "hydra.sweep.dir={run}"),
    ),
    Run(
        "cached",
        ("task=arc_easy", *FAKE, "task.limit=20", "runner.cache={out}/cache_shared")
        + ("hydra.run.dir={run}",),
    ),
    Run(
        "cached_rerun",
        ("task=arc_easy", *FAKE, "task.limit=20", "runner.cache={out}/cache_shared")
        + ("hydra.run.dir={run}",),
    ),
    Run(
        "stories_arc",
        ("task=arc_easy", "model=stories260k", "task.limit=10", "hydra.run.dir={run}"),
    ),
    Run(
        "stories_wikitext",
        ("task=wikitext", "model=stories260k", "task.limit=2", "hydra.run.dir={run}"),
    ),
    Run(
        "stories_gsm8k", ("task=gsm8k", "model=stories260k", "task.limit=2", "hydra.run.dir={run}")
    ),
    Run("report", ("report", "runs=[{out}/loglik,{out}/generation]", "out={run}")),
    Run("compare", ("compare", "a={out}/loglik", "b={out}/cached_rerun", "out={run}")),
)


class Refused(Exception):
    """A revision cannot be checked out or a run failed (exit 2)."""


# ----- the two sides --------------------------------------------------------------------------


def checkout(rev: str | None, into: Path) -> Path:
    """The checkout of ``rev`` at ``into`` (a detached ``git worktree`` with the links), or
    this working tree itself when ``rev`` is None."""
    if rev is None:
        for name in ("conf", "tasks"):
            if not (REPO / "mill" / name / "__init__.py").is_file():
                raise Refused(
                    f"the working tree has no mill/{name} link: ln -s ../{name} mill/{name} "
                    "(as .ci/run links a clone), or compare a committed --after revision"
                )
        return REPO
    into.parent.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["git", "worktree", "add", "--quiet", "--detach", str(into), rev],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        said = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Refused(f"git worktree add {rev} failed: {said}")
    for name in ("conf", "tasks"):
        (into / "mill" / name).symlink_to(Path("..") / name)
    return into


def remove_checkout(path: Path) -> None:
    if path != REPO and path.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=REPO, check=False)


def side_places(root: Path, side: Path) -> Places:
    """One side's folders: ``side/runs`` (compared), ``side/cache`` (its ``MILL_CACHE``),
    ``side/cwd`` (the runs' working directory) and ``side/mill.log``."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
    )
    return Places(root, side / "runs", side / "cache", side, head.stdout.strip())


def run_side(places: Places, runs: list[Run]) -> None:
    """Every run of ``runs`` with the checkout ``places.repo``, into ``places.out/<run>``."""
    root, out, cache, log = places.repo, places.out, places.cache, places.side / "mill.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(root),
        "MILL_CACHE": str(cache),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "CI": "1",  # plain progress, no terminal
    }
    work = places.side / "cwd"  # the working directory: nothing of it is compared
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    for run in runs:
        args = [a.format(out=out, run=out / run.name) for a in run.args]
        with log.open("a") as sink:
            sink.write(f"\n$ mill {' '.join(args)}\n")
            sink.flush()
            done = subprocess.run(
                [sys.executable, "-m", "mill", *args],
                cwd=work,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode != 0:
            raise Refused(f"{run.name} failed with {root} (exit {done.returncode}): see {log}")
        print(f"  {places.side.name}: {run.name} done", flush=True)


# ----- normalising and comparing ----------------------------------------------------------------


@dataclass(frozen=True)
class Places:
    """The absolute paths of one side, replaced by placeholders (the innermost first)."""

    repo: Path
    out: Path
    cache: Path
    side: Path
    revision: str  # the checkout's commit, whole

    def replace(self, text: str) -> str:
        text = re.sub(rf"\b{self.revision[:7]}[0-9a-f]{{0,33}}\b", "<revision>", text)
        named = ((self.out, "<OUT>"), (self.cache, "<CACHE>"), (self.repo, "<REPO>"))
        for path, name in (*named, (self.side, "<SIDE>")):
            text = text.replace(str(path), name)
            real = str(path.resolve())
            if real != str(path):
                text = text.replace(real, name)
        return text


def _holds_wall_time(node: Any) -> bool:
    """Whether ``node`` holds a ``duration_s`` at any depth."""
    if isinstance(node, dict):
        return "duration_s" in node or any(_holds_wall_time(v) for v in node.values())
    if isinstance(node, list):
        return any(_holds_wall_time(v) for v in node)
    return False


def _drop_varying(node: Any) -> Any:
    if isinstance(node, dict):
        # a record sealed over a wall time (a sandbox verdict file's checksum covers its
        # data's duration_s) differs in its seal too; a seal over anything else is compared
        varying = VARYING_KEYS | ({"checksum"} if _holds_wall_time(node) else set())
        return {k: _drop_varying(v) for k, v in node.items() if k not in varying}
    if isinstance(node, list):
        return [_drop_varying(v) for v in node]
    return node


def _json_text(text: str) -> str:
    return json.dumps(_drop_varying(json.loads(text)), indent=1, ensure_ascii=False)


def normalised(path: Path, places: Places) -> bytes:
    """``path``'s content without what legitimately varies (see the module docstring)."""
    if path.suffix in (".sqlite", ".db"):
        return _sqlite_rows(path, places).encode()
    if path.suffix not in _TEXT:
        return path.read_bytes()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return path.read_bytes()
    text = places.replace(text)
    if path.suffix == ".json":
        text = _json_text(text)
    elif path.suffix == ".jsonl":
        text = "\n".join(_json_text(line) for line in text.splitlines() if line.strip())
    text = _MEMORY_LINE.sub("<memory>", text)
    if path.suffix == ".html":
        text = _SETTING.sub(r"\1<removed>\2", _TABLE.sub(_without_seconds, text))
    text = _DATETIME.sub("<time>", text)
    return _DURATION.sub("<duration>", text).encode()


def _without_seconds(table: re.Match[str]) -> str:
    """An HTML table with the cells of its ``seconds`` column emptied."""
    head = _HEAD.search(table.group(0))
    names = [re.sub("<[^>]+>", "", c) for c in _HEAD_CELL.findall(head.group(1))] if head else []
    if "seconds" not in names:
        return table.group(0)
    column = names.index("seconds")

    def row(match: re.Match[str]) -> str:
        cells = list(_CELL.finditer(match.group(0)))
        if len(cells) <= column:
            return match.group(0)
        cell = cells[column]
        return f"{match.group(0)[: cell.start()]}<td><seconds></td>{match.group(0)[cell.end() :]}"

    return _ROW.sub(row, table.group(0))


def _sqlite_rows(path: Path, places: Places) -> str:
    """Every table's rows in primary-key order, without the ``created`` and ``checksum``
    columns, each model's key replaced by the digest of its identity with the paths
    replaced."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        keys = {}
        if con.execute("select 1 from sqlite_master where name='models'").fetchone():
            for key, identity in con.execute("select model, identity from models"):
                plain = places.replace(identity).encode()
                keys[key] = f"<model {hashlib.sha256(plain).hexdigest()[:16]}>"
        lines = []
        tables = con.execute("select name, sql from sqlite_master where type='table' order by 1")
        for table, sql in tables.fetchall():
            columns = [row[1] for row in con.execute(f"pragma table_info('{table}')")]
            kept = [c for c in columns if c not in ("created", "checksum")]
            lines.append(f"{table}: {sql}")
            query = f"select {', '.join(kept)} from '{table}' order by {', '.join(kept)}"
            lines += [repr(row) for row in con.execute(query)]
        text = "\n".join(lines)
        for key, name in keys.items():
            text = text.replace(key, name)
        return places.replace(text)
    finally:
        con.close()


def _files(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith((".sqlite-wal", ".sqlite-shm", "-journal"))
    }


def compare(before: Path, after: Path, places: tuple[Places, Places]) -> list[tuple[str, str]]:
    """``(file, verdict)`` for every file of either folder: ``equal``, ``differs: <first
    differing line of each side>``, or ``only before`` / ``only after``."""
    a_files, b_files = _files(before), _files(after)
    rows = []
    for name in sorted(a_files | b_files):
        if name not in b_files:
            rows.append((name, "only before"))
            continue
        if name not in a_files:
            rows.append((name, "only after"))
            continue
        a = normalised(before / name, places[0])
        b = normalised(after / name, places[1])
        rows.append((name, "equal" if a == b else f"differs: {_first_difference(a, b)}"))
    return rows


def _first_difference(a: bytes, b: bytes) -> str:
    a_lines, b_lines = a.splitlines(), b.splitlines()
    for number, (x, y) in enumerate(zip(a_lines, b_lines, strict=False), start=1):
        if x != y:
            at = next((i for i, (c, d) in enumerate(zip(x, y, strict=False)) if c != d), 0)
            start = max(0, at - 30)
            return f"line {number}: {x[start : at + 40]!r} != {y[start : at + 40]!r}"
    return f"{len(a_lines)} lines against {len(b_lines)}"


def table(rows: list[tuple[str, str]]) -> str:
    width = max([len("file"), *(len(name) for name, _ in rows)])
    lines = [f"{'file':<{width}}  result", f"{'-' * width}  ------"]
    lines += [f"{name:<{width}}  {verdict}" for name, verdict in rows]
    return "\n".join(lines)


# ----- the command ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.before_after", description=None)
    parser.add_argument("--before", default="main", help="revision before the change (main)")
    parser.add_argument(
        "--after", default=None, help="revision after the change (default: the working tree)"
    )
    parser.add_argument(
        "--runs", nargs="+", choices=[r.name for r in RUNS], help="only these runs (all)"
    )
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: removed)")
    args = parser.parse_args(argv)
    runs = [r for r in RUNS if not args.runs or r.name in args.runs]
    work = args.keep.resolve() if args.keep else Path(tempfile.mkdtemp(prefix="before-after-"))
    if args.keep and work.exists() and any(work.iterdir()):
        print(f"error: --keep {work} is not empty: give an empty or new folder", file=sys.stderr)
        return 2
    work.mkdir(parents=True, exist_ok=True)
    sides = {"before": args.before, "after": args.after}
    roots: dict[str, Path] = {}
    places: list[Places] = []
    try:
        for side, rev in sides.items():
            roots[side] = checkout(rev, work / side / "checkout")
            print(f"{side}: {rev or 'the working tree'} at {roots[side]}", flush=True)
            places.append(side_places(roots[side], work / side))  # its revision, now
            run_side(places[-1], runs)
        rows = compare(places[0].out, places[1].out, (places[0], places[1]))
    except Refused as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        for root in roots.values():
            remove_checkout(root)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(table(rows))
    different = [name for name, verdict in rows if verdict != "equal"]
    print(
        f"\n{len(rows)} files, {len(rows) - len(different)} equal, {len(different)} "
        f"differ or are on one side only ({args.before} against {args.after or 'the working tree'})"
    )
    return 1 if different else 0


if __name__ == "__main__":
    raise SystemExit(main())
