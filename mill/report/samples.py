"""``samples.html``: every sample of a run in one static page, beside ``report.html``.

The samples are read through the one reader (:meth:`mill.report.load.RunFolder.samples`,
:func:`mill.results.read_samples`) and embedded in the page as JSON (a
``<script type="application/json">``): no fetch, no server, no network, so it opens from
``file://``. The page's script (``samples.js``) filters, searches and sorts row indices and
renders one page of samples at a time.

The embedded data: ``tasks`` (names), ``binary`` (per task, the metrics whose per-sample
values are 0/1: the right/wrong filter), ``prefixes`` (prompt beginnings shared by the docs
of a task's subject, stored once: a 5-shot prompt repeats its shots in every doc) and
``rows``, one per sample with short keys: ``t`` task index, ``s`` subject, ``d`` doc id,
``q`` [prefix index, the rest of the prompt], ``c`` choices, ``l`` their log-likelihoods,
``u`` the unconditioned ones, ``p`` each metric's pick (``picks``; ``{"acc": prediction}``
in files written before Mill kept them), ``g`` gold, ``m`` per-sample metrics, ``o``
generations, ``pp`` their ``text_post_processed``, ``x`` the extracted answers, ``h``
``hit_max_gen_toks``, ``r`` ``reasoning_unfinished``, ``tc`` tokens cut from the prompt's
left, ``e`` execution verdicts, ``j`` judge calls (per metric: reply and judgment), ``tu``
the answer of each turn, ``ms`` the chat messages a server was sent ([role, content]; the
prompt is shown as these turns). Keys without a value are left out.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mill.files import write_inside
from mill.record import SampleRecord
from mill.report.html import esc, page
from mill.report.load import ReportInputError, RunFolder

PAGE = "samples.html"
SCRIPT = Path(__file__).with_name("samples.js")
"""The page's script, shipped beside this module (package data)."""
SHARED_PREFIX = 200  # characters: a shorter common beginning is not worth a prefix entry

VIEW_CSS = """
main { max-width:1200px; }
.bar { position:sticky; top:0; background:#fff; padding:8px 0; border-bottom:1px solid var(--line);
  display:flex; flex-wrap:wrap; gap:6px 10px; align-items:center; z-index:1; }
.bar input[type=search] { flex:1 1 260px; padding:4px 8px; }
article.sample { border:1px solid var(--line); border-radius:6px; padding:8px 12px; margin:10px 0; }
article.sample header { display:flex; flex-wrap:wrap; gap:4px 8px; align-items:center; }
pre.tail { max-height:9em; overflow:auto; }
.turn { border-left:3px solid var(--accent); margin:4px 0; padding-left:8px; }
.turn .role { font-weight:600; font-size:12px; color:var(--accent); }
tr.gold td { background:#eef8f1; }
table.choices { width:auto; min-width:50%; }
.gen, .judge { margin:4px 0; }
"""


def _common_prefix(texts: list[str]) -> str:
    """The longest beginning every text shares (of the lexically first and last)."""
    if len(texts) < 2:
        return ""
    return os.path.commonprefix([min(texts), max(texts)])


def _judgments(record: SampleRecord) -> dict[str, list[dict[str, Any]]] | None:
    calls = (record.extra or {}).get("judgments")
    if not isinstance(calls, dict):
        return None
    return {
        str(metric): [
            {"reply": c.get("reply"), "judgment": c.get("judgment")}
            for c in items
            if isinstance(c, dict)
        ]
        for metric, items in calls.items()
        if isinstance(items, list)
    }


def _generative(record: SampleRecord) -> dict[str, Any]:
    response = record.response
    out: dict[str, Any] = {
        "o": response.text,
        "pp": response.text_post_processed,
        "h": response.hit_max_gen_toks,
        "r": response.reasoning_unfinished,
        "x": record.prediction if isinstance(record.prediction, dict) else None,
    }
    if record.execution:
        out["e"] = [
            {"status": v.get("status"), "message": v.get("message")} for v in record.execution
        ]
    turns = (record.extra or {}).get("turns")
    if isinstance(turns, list) and len(turns) > 1:
        out["tu"] = turns
    return out


def sample_row(record: SampleRecord, task: int, prefix: int, cut: int) -> dict[str, Any]:
    """One sample as the page's script reads it (the keys of the module's docstring);
    ``prefix`` and ``cut``: the shared beginning of its prompt, by index and length."""
    response = record.response
    row: dict[str, Any] = {
        "t": task,
        "s": record.subject,
        "d": record.doc_id,
        "q": [prefix, response.input[cut:]],
        "g": record.gold,
        "m": record.metrics,
        "tc": response.truncated_tokens_count or None,
        "j": _judgments(record),
    }
    messages = (record.extra or {}).get("messages")
    if isinstance(messages, list) and messages:  # sent as chat turns (openai_chat)
        row["ms"] = messages
    if record.choices:
        row["c"] = record.choices
        row["l"] = response.logprobs or None
        row["u"] = response.unconditioned_logprobs
        picks = record.picks
        if picks is None and isinstance(record.prediction, int):  # written before picks
            picks = {"acc": record.prediction}
        row["p"] = picks
    if response.text_post_processed is not None or response.text:
        row.update(_generative(record))
    return {k: v for k, v in row.items() if v is not None}


def _binary(rows: list[dict[str, Any]]) -> list[str]:
    """Metrics whose every per-sample value in ``rows`` is 0 or 1 (right or wrong), in
    first-seen order."""
    seen: dict[str, bool] = {}
    for row in rows:
        for name, value in row["m"].items():
            ok = isinstance(value, (bool, int, float)) and value in (0, 1)
            seen[name] = seen.get(name, True) and ok
    return [name for name, ok in seen.items() if ok]


def page_data(run: RunFolder) -> dict[str, Any]:
    """Everything the page shows, from the run's samples files (ReportInputError when a
    task has none)."""
    prefixes: list[str] = [""]
    rows: list[dict[str, Any]] = []
    binary: dict[str, list[str]] = {}
    for t, task in enumerate(run.task_names):
        start = len(rows)
        records = run.samples(task)
        by_subject: dict[str, list[SampleRecord]] = {}
        for record in records:
            by_subject.setdefault(record.subject, []).append(record)
        for group in by_subject.values():
            shared = _common_prefix([r.response.input for r in group])
            index = 0
            if len(shared) >= SHARED_PREFIX:
                prefixes.append(shared)
                index = len(prefixes) - 1
            cut = len(shared) if index else 0
            rows += [sample_row(r, t, index, cut) for r in group]
        binary[task] = _binary(rows[start:])
    return {"tasks": run.task_names, "binary": binary, "prefixes": prefixes, "rows": rows}


def _script() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def embedded_json(value: Any) -> str:
    """``value`` as JSON safe inside a ``<script>`` element (no ``<`` can close it)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


CONTROLS = """<div class="bar">
<input id="q" type="search" placeholder="search: words in the prompt, choices, answers, gold">
<select id="task"></select> <select id="subject"></select>
<select id="metric" title="the metric whose verdict the next filter reads"></select>
<select id="verdict"><option value="">right or wrong</option><option value="wrong">wrong</option>
<option value="right">right</option></select>
<select id="flag"><option value="">every sample</option>
<option value="truncated">truncated (stopped at max_gen_toks)</option>
<option value="extraction">extraction failed</option>
<option value="repeats">repeats disagree</option>
<option value="cut">prompt cut from the left</option></select>
<select id="sort"><option value="doc">sort: doc order</option>
<option value="margin">sort: gold's log-likelihood margin, lowest first</option>
<option value="prompt">sort: longest prompt first</option>
<option value="answer">sort: longest generation first</option></select>
<button id="prev">‹ previous</button><button id="next">next ›</button>
<span id="count" class="small"></span></div><div id="list"></div>"""


def samples_page(run: RunFolder, report: str = "report.html") -> str:
    """The page of every sample of ``run``; ``report``: the link back to its report."""
    data = page_data(run)
    head = (
        f"<h1>Samples · {esc(run.task_label)} · {esc(run.model_label)}</h1>"
        f"<p class='small'>{len(data['rows'])} samples of {esc(run.path)}; "
        f"<a href='{esc(report)}'>the report</a>.</p>"
    )
    body = (
        f"<style>{VIEW_CSS}</style>{head}{CONTROLS}"
        f'<script type="application/json" id="mill-samples">{embedded_json(data)}</script>'
        f"<script>{_script()}</script>"
    )
    return page(f"{run.title} — Mill samples", body)


def has_samples(run: RunFolder) -> bool:
    """Every task of ``run`` has its samples file."""
    return all(run.samples_path(task).is_file() for task in run.task_names)


def write_samples_page(run: RunFolder, out: Path) -> Path:
    """``out/samples.html`` of ``run`` (ReportInputError when a samples file is missing)."""
    missing = [t for t in run.task_names if not run.samples_path(t).is_file()]
    if missing:
        raise ReportInputError(
            f"{run.samples_path(missing[0])} is missing: {run.path} has no samples to show; "
            "give a run folder whose samples/ holds every task's file"
        )
    return write_inside(out, PAGE, samples_page(run))
