"""Self-contained HTML pages: inline CSS, images inlined as base64 PNG, no network at all.

The builders take already-computed numbers and PNG bytes; they do no statistics.
"""

from __future__ import annotations

import base64
import html
import json
import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, cast

from mill.dotted import flatten
from mill.metrics.ifeval import TypeAccuracy
from mill.report.calibration import Reliability
from mill.report.load import RunFolder, Score
from mill.report.numbers import number, paired_cells, value_pm_stderr

CSS = """
:root { --ink:#1d2329; --muted:#66707a; --line:#e2e6ea; --soft:#f5f7f9; --accent:#2b5797;
  --good:#1e7d3c; --bad:#b3261e; }
* { box-sizing: border-box; }
body { margin:0; background:#fff; color:var(--ink);
  font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1000px; margin:0 auto; padding:28px 28px 60px; }
h1 { font-size:24px; margin:0 0 6px; letter-spacing:-0.01em; }
h2 { font-size:17px; margin:34px 0 10px; padding-bottom:4px; border-bottom:1px solid var(--line); }
h3 { font-size:14px; margin:18px 0 6px; }
.meta { color:var(--muted); display:flex; flex-wrap:wrap; gap:6px 8px; margin:6px 0 0; }
.chip { background:var(--soft); border:1px solid var(--line); border-radius:999px;
  padding:1px 10px; font-size:12.5px; white-space:nowrap; }
.chip.ok { color:var(--good); border-color:#b9dcc4; background:#eef8f1; }
.chip.fail { color:var(--bad); border-color:#efc2be; background:#fdf0ef; }
.note { background:#fff8e6; border:1px solid #f1d9a0; border-radius:6px; padding:8px 12px;
  margin:16px 0 0; font-size:13px; }
table { border-collapse:collapse; width:100%; margin:6px 0 4px; font-size:13px; }
th, td { padding:5px 10px; border-bottom:1px solid var(--line); text-align:left;
  vertical-align:top; }
th { background:var(--soft); font-weight:600; font-size:12.5px; color:#3a434c; }
td.num, th.num { text-align:right; font-variant-numeric:tabular-nums; white-space:nowrap; }
tr.group td { color:#444; font-style:italic; }
tr.fail td:first-child { color:var(--bad); }
tbody tr:hover td { background:#fafbfc; }
.small { color:var(--muted); font-size:11.5px; }
figure { margin:10px 0 0; }
figure img { max-width:100%; height:auto; display:block; border:1px solid var(--line);
  border-radius:6px; }
figcaption { color:var(--muted); font-size:12.5px; margin-top:4px; }
.grid { display:grid; grid-template-columns:repeat(auto-fill,minmax(440px,1fr)); gap:14px; }
details { margin:8px 0; border:1px solid var(--line); border-radius:6px; padding:4px 12px; }
details > summary { cursor:pointer; font-weight:600; padding:4px 0; }
code, pre { font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; font-size:12.5px; }
pre { background:var(--soft); border:1px solid var(--line); border-radius:6px; padding:8px 10px;
  overflow-x:auto; white-space:pre-wrap; word-break:break-all; }
.verdict { margin:4px 0; padding:6px 10px; border-left:4px solid #aab2ba; background:var(--soft); }
.verdict.B, .verdict.A { border-left-color:var(--accent); }
a { color:var(--accent); }
footer { margin-top:40px; color:var(--muted); font-size:12px; }
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def img(png: bytes, alt: str) -> str:
    data = base64.b64encode(png).decode("ascii")
    return f'<img alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def figure(png: bytes, alt: str, caption: str = "") -> str:
    cap = f"<figcaption>{caption}</figcaption>" if caption else ""
    return f"<figure>{img(png, alt)}{cap}</figure>"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Iterable[int] = (),
    row_classes: Sequence[str] | None = None,
    row_attrs: Sequence[str] | None = None,
) -> str:
    """A table of already-escaped cell HTML; columns in ``numeric`` are right-aligned;
    ``row_attrs``: each row's extra attributes (already escaped, e.g. ``data-dir="x"``)."""
    num = set(numeric)

    def cls(i: int) -> str:
        return ' class="num"' if i in num else ""

    head = "".join(f"<th{cls(i)}>{esc(h)}</th>" for i, h in enumerate(headers))
    body = []
    for r, row in enumerate(rows):
        rc = f' class="{row_classes[r]}"' if row_classes and row_classes[r] else ""
        rc += f" {row_attrs[r]}" if row_attrs and row_attrs[r] else ""
        cells = "".join(f"<td{cls(i)}>{cell}</td>" for i, cell in enumerate(row))
        body.append(f"<tr{rc}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def kv_table(data: dict[str, Any]) -> str:
    rows = []
    for key, value in flatten(data, keep_empty=True).items():
        shown = value if isinstance(value, str) else json.dumps(value, default=str)
        rows.append([f"<code>{esc(key)}</code>", esc(shown)])
    return table(["key", "value"], rows)


REBUILD = "rebuild with <code>mill report runs=[&lt;folder&gt;]</code>"


def page(title: str, body: str, how: str = REBUILD) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}<footer>Written by Mill from the files of the runs; {how}."
        "</footer>"
        "</main></body></html>\n"
    )


def chips(items: Iterable[tuple[str, str]]) -> str:
    return (
        '<div class="meta">'
        + "".join(f'<span class="chip {c}">{esc(t)}</span>' for t, c in items)
        + "</div>"
    )


def _notes(runs: Iterable[RunFolder]) -> str:
    """Where each task's data came from (a warning for the bundled excerpts, which are not
    benchmark scores) and, for files read with ``trust_edited``, that they were edited."""
    runs = list(runs)
    origins = {
        (task, run.results.data_origin(task)): None for run in runs for task in run.task_names
    }
    bundled = list(dict.fromkeys(task for task, origin in origins if origin == "bundled"))
    out = []
    for run in runs:
        if run.edited_note:
            out.append(f'<p class="note"><b>Edited results.</b> {esc(run.edited_note)}</p>')
    if bundled:
        out.append(
            '<p class="note"><b>Bundled sample data.</b> The numbers of '
            f"{esc(', '.join(bundled))} come from the small excerpts shipped with Mill "
            "(data=bundled); they are not benchmark scores.</p>"
        )
    if origins:
        where = "; ".join(f"{task}: {origin}" for task, origin in origins)
        out.append(f"<p class='small'>Data: {esc(where)}.</p>")
    return "".join(out)


def scores_table(scores: Sequence[Score]) -> str:
    rows, classes = [], []
    for s in scores:
        ci = s.ci()
        arrow = "↑" if s.higher_is_better else "↓"
        unit = {"micro": " samples", "macro": " tasks"}.get(s.kind, "")
        rows.append(
            [
                esc(s.row_name),
                f"{esc(s.metric)} <span class='small'>{arrow}</span>",
                number(s.value),
                number(s.stderr),
                f"[{number(ci[0])}, {number(ci[1])}]" if ci else "-",
                f"{esc(s.n)}{unit}",
            ]
        )
        classes.append("" if s.kind == "task" else "group")
    return table(["task", "metric", "value", "stderr", "95% CI", "n"], rows, (2, 3, 4, 5), classes)


def calibration_section(items: Sequence[tuple[Reliability, bytes]]) -> str:
    if not items:
        return ""
    rows = [
        [
            esc(rel.task),
            str(rel.n),
            number(rel.accuracy, 3),
            number(rel.mean_confidence, 3),
            f"<b>{number(rel.ece, 3)}</b>",
            number(rel.chance, 3),
        ]
        for rel, _ in items
    ]
    figs = "".join(
        figure(png, f"reliability diagram {rel.task}", f"{esc(rel.task)}: ECE {number(rel.ece, 3)}")
        for rel, png in items
    )
    return (
        "<h2>Calibration</h2>"
        "<p class='small'>Confidence = the largest probability of a softmax over the choices' "
        "log-likelihoods; a doc is correct when that choice is gold (the answer <code>acc</code> "
        "scores). 10 equal-width bins; ECE = Σ (n<sub>b</sub>/N)·|accuracy<sub>b</sub> − "
        "confidence<sub>b</sub>|. Dotted line: chance.</p>"
        + table(
            ["task", "n", "accuracy", "mean confidence", "ECE", "chance"], rows, (1, 2, 3, 4, 5)
        )
        + f"<div class='grid'>{figs}</div>"
    )


def programs_section(run: RunFolder) -> str:
    """Code tasks: each problem's verdicts (passed of run, the statuses, the first failing
    program's message and output tail), failing problems first."""
    if run.manifest.execution is None:  # no task ran programs: no samples to read
        return ""
    parts = []
    for task in run.task_names:
        records = [r for r in run.samples(task) if r.execution]
        if not records:
            continue
        rows, classes = [], []
        records.sort(
            key=lambda r: (
                all(v["status"] == "passed" for v in cast(list[dict[str, Any]], r.execution)),
                r.doc_id,
            )
        )
        for record in records:
            verdicts = record.execution or []
            passed = sum(v["status"] == "passed" for v in verdicts)
            failing = next((v for v in verdicts if v["status"] != "passed"), None)
            statuses = ", ".join(
                f"{s} ×{n}" if n > 1 else s
                for s, n in Counter(v["status"] for v in verdicts).items()
            )
            item = (record.extra or {}).get("item_id") or f"doc {record.doc_id}"
            message = ""
            if failing is not None:
                message = esc(failing.get("message", ""))
                tail = failing.get("output_tail") or ""
                if tail:
                    message += f"<details><summary>output</summary><pre>{esc(tail)}</pre></details>"
            seconds = sum(float(v.get("duration_s", 0.0)) for v in verdicts)
            rows.append(
                [esc(item), f"{passed}/{len(verdicts)}", esc(statuses), message, f"{seconds:.2f}"]
            )
            classes.append("" if failing is None else "fail")
        total = sum(all(v["status"] == "passed" for v in r.execution or []) for r in records)
        parts.append(
            f"<details open><summary>{esc(task)}: {total} of {len(records)} problems passed "
            "every program</summary>"
            + table(
                ["problem", "passed", "verdicts", "first failure", "seconds"],
                rows,
                numeric=(1, 4),
                row_classes=classes,
            )  # fmt: skip
            + "</details>"
        )
    return "<h2>Programs</h2>" + "".join(parts) if parts else ""


def generations_section(run: RunFolder) -> str:
    """How each generative task's generations ended: the lines ``report.txt`` has
    (:func:`mill.report.text.generation_lines`)."""
    from mill.report.text import generation_lines

    lines = generation_lines(run.results)
    if not lines:
        return ""
    return "<h2>Generations</h2><ul>" + "".join(f"<li>{esc(x)}</li>" for x in lines) + "</ul>"


def judge_section(run: RunFolder) -> str:
    """A judged run's judge: the lines ``report.txt`` has (:func:`mill.report.text.judge_lines`),
    and its whole record (identity, settings, rubric hashes, judgment counts)."""
    from mill.report.text import judge_lines

    lines = judge_lines(run.results)
    if not lines:
        return ""
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    record = kv_table(run.results.judge or {})
    return (
        f"<h2>Judge</h2><ul>{items}</ul><details><summary>Judge record</summary>{record}</details>"
    )


def instruction_types_section(
    items: Sequence[tuple[str, Sequence[TypeAccuracy], bytes]],
) -> str:
    """IFEval: each task's accuracy per instruction type (chart and table, sorted)."""
    if not items:
        return ""
    parts = ["<h2>Instruction types</h2>"]
    for task, rows, png in items:
        parts.append(
            figure(
                png,
                f"{task}: accuracy per instruction type",
                f"{task}: share of each instruction type followed (bar: strict, tick: loose), "
                "with its count of instructions.",
            )
        )
        cells = [
            [
                esc(r.instruction),
                str(r.count),
                number(r.strict / r.count),
                number(r.loose / r.count),
            ]
            for r in rows
        ]
        parts.append(
            f"<details><summary>{esc(task)}: the table</summary>"
            + table(["instruction type", "count", "strict", "loose"], cells, numeric=(1, 2, 3))
            + "</details>"
        )
    return "".join(parts)


def task_sections(run: RunFolder) -> str:
    """A run of several tasks (``task=[a,b]``, a group): a section per task, its scores
    and settings, linked from a list at the top of the section; empty for one task."""
    names = run.task_names
    if len(names) < 2:
        return ""
    scores = run.scores()
    links = " · ".join(f"<a href='#task-{esc(t)}'>{esc(t)}</a>" for t in names)
    parts = [f"<h2>Tasks</h2><p>{links}</p>"]
    for task in names:
        mine = [s for s in scores if s.kind == "task" and s.task == task]
        parts.append(
            f"<section id='task-{esc(task)}'><h3>{esc(task)}</h3>{scores_table(mine)}"
            f"<details><summary>Settings</summary>{kv_table(run.settings(task))}</details>"
            "</section>"
        )
    return "".join(parts)


def details_section(run: RunFolder) -> str:
    """The run page's details: task settings, model, data, how to reproduce it."""
    m = run.manifest
    parts = ["<h2>Details</h2>"]
    for task in run.task_names:
        parts.append(
            f"<details><summary>Task settings: {esc(task)}</summary>"
            f"{kv_table(run.settings(task))}</details>"
        )
    parts.append(f"<details><summary>Model</summary>{kv_table(run.results.model)}")
    parts.append("</details>")
    data = {t: b.data for t, b in run.results.tasks.items()}
    parts.append(f"<details><summary>Data</summary>{kv_table(data)}</details>")
    repro = []
    if m.argv:
        repro.append(f"<h3>Command</h3><pre>{esc(shlex.join(m.argv))}</pre>")
    known = m.to_dict()
    env: dict[str, Any] = {
        k: known[k] for k in ("git_sha", "seeds", "versions", "device") if k in known
    }
    if env:
        repro.append(kv_table(env))
    if repro:
        parts.append(f"<details><summary>Reproduce</summary>{''.join(repro)}</details>")
    return "".join(parts)


def run_page(
    run: RunFolder,
    scores_png: bytes,
    calibration: Sequence[tuple[Reliability, bytes]],
    instruction: Sequence[tuple[str, Sequence[TypeAccuracy], bytes]] = (),
    samples: str | None = None,
) -> str:
    """The report of one run; ``samples``: the link to its page of every sample."""
    m = run.manifest
    started = str(m.started or "")[:19].replace("T", " ")
    unsafe = bool((m.execution or {}).get("unsafe"))
    meta = [
        ("programs ran WITHOUT a sandbox (execution.sandbox=none)", "fail") if unsafe else None,
        (f"data={run.data_source}", ""),
        ("succeeded", "ok"),  # results.json exists only for a run that succeeded
        (f"{started} UTC", "") if started else None,
        (f"{run.results.seconds} s", ""),
        (f"git {str(m.git_sha)[:10]}", "") if m.git_sha else None,
        (str(run.path), ""),
    ]
    parts = [
        f"<h1>{esc(run.task_label)} · {esc(run.model_label)}</h1>",
        chips(c for c in meta if c),
        _notes([run]),
        "<h2>Results</h2>",
        (
            f"<p>Every sample, filtered and searched: <a id='samples-link' href='{esc(samples)}'>"
            f"{esc(samples)}</a></p>"
            if samples
            else ""
        ),
        scores_table(run.scores()),
        figure(scores_png, "scores with standard errors", "Scores with ±1 SE and 95% CIs."),
        task_sections(run),
        calibration_section(calibration),
        instruction_types_section(instruction),
        programs_section(run),
        generations_section(run),
        judge_section(run),
        details_section(run),
    ]
    return page(f"{run.title} — Mill report", "".join(parts))


def pivot_table(entries: Sequence[tuple[str, Score]], labels: Sequence[str]) -> str:
    """Rows task x metric, one column per model: value ± stderr (best of a row in bold)."""
    keys = list(dict.fromkeys((s.row_name, s.metric) for _, s in entries))
    lookup = {(lab, s.row_name, s.metric): s for lab, s in entries}
    rows, classes = [], []
    for row_name, metric in keys:
        found = [lookup.get((lab, row_name, metric)) for lab in labels]
        present = [s for s in found if s is not None and s.value is not None]
        best = None
        if len(present) > 1:
            pick = max if present[0].higher_is_better else min
            top = pick(s.value for s in present)  # type: ignore[type-var]
            winners = [s for s in present if s.value == top]
            best = winners[0] if len(winners) == 1 else None  # a tie has no best
        cells = [esc(row_name), esc(metric)]
        for s in found:
            if s is None:
                cells.append("<span class='small'>–</span>")
                continue
            text = value_pm_stderr(s.value, s.stderr)
            n = {"micro": f"{s.n} samples", "macro": f"{s.n} tasks"}.get(s.kind, f"n={s.n}")
            cell = f"{text}<br><span class='small'>{esc(n)}</span>"
            cells.append(f"<b>{cell}</b>" if s is best else cell)
        rows.append(cells)
        sample = next(s for s in found if s is not None)
        classes.append("" if sample.kind == "task" else "group")
    return table(["task", "metric", *labels], rows, range(2, 2 + len(labels)), classes)


def ece_table(calibration: Sequence[tuple[str, Reliability]], labels: Sequence[str]) -> str:
    """Rows LOGPROBS task, one column per model: ECE, with accuracy and mean confidence."""
    tasks = list(dict.fromkeys(rel.task for _, rel in calibration))
    lookup = {(label, rel.task): rel for label, rel in calibration}
    rows = []
    for task in tasks:
        cells = [esc(task)]
        for label in labels:
            rel = lookup.get((label, task))
            cells.append(
                "<span class='small'>–</span>"
                if rel is None
                else f"{number(rel.ece, 3)}<br><span class='small'>acc {number(rel.accuracy, 3)} · "
                f"conf {number(rel.mean_confidence, 3)} · n={rel.n}</span>"
            )
        rows.append(cells)
    return (
        "<h2>Calibration (ECE)</h2><p class='small'>Expected calibration error of the argmax "
        "choice (10 bins); reliability diagrams are in each run's report.</p>"
        + table(["task", *labels], rows, range(1, 1 + len(labels)))
    )


def _jobs_table(runs: Sequence[tuple[str, RunFolder, str]], samples: Sequence[str | None]) -> str:
    """A sweep's jobs: model, task, data, seconds, and links to each one's pages."""
    links = list(samples) or [None] * len(runs)
    job_rows = []
    for (label, run, link), every in zip(runs, links, strict=True):
        job_rows.append(
            [
                esc(label),
                esc(run.task_label),
                esc(run.data_source),
                number(run.results.seconds),
                f"<a href='{esc(link)}'>{esc(run.path.name)}</a>",
                f"<a class='samples' href='{esc(every)}'>samples</a>" if every else "",
            ]
        )
    headers = ["model", "task", "data", "seconds", "report", "every sample"]
    return table(headers, job_rows, (3,))


def sweep_page(
    title: str,
    runs: Sequence[tuple[str, RunFolder, str]],
    entries: Sequence[tuple[str, Score]],
    chart_png: bytes | None,
    failed: Sequence[tuple[str, str]],
    calibration: Sequence[tuple[str, Reliability]] = (),
    samples: Sequence[str | None] = (),
) -> str:
    """Several runs side by side: ``runs`` = (label, run, link to its report);
    ``calibration`` = (label, reliability) of every LOGPROBS task of every run; ``samples``:
    each run's link to its page of every sample (None: it has none)."""
    labels = list(dict.fromkeys(label for label, _, _ in runs))
    tasks = list(dict.fromkeys(run.task_label for _, run, _ in runs))
    meta = [
        (f"{len(runs)} succeeded", "ok"),
        (f"{len(failed)} failed", "fail") if failed else None,
        (f"tasks: {', '.join(tasks)}", ""),
        (f"models: {', '.join(labels)}", ""),
    ]
    parts = [
        f"<h1>{esc(title)}</h1>",
        chips(c for c in meta if c),
        _notes(run for _, run, _ in runs),
    ]
    if entries:
        parts += [
            "<h2>Results</h2>",
            "<p class='small'>value ± stderr; best of each row in bold (not a significance test:"
            " use <code>mill compare a=… b=…</code> for a paired test).</p>",
            pivot_table(entries, labels),
        ]
    if chart_png is not None:
        parts.append(
            figure(chart_png, "task by model chart", "Task × model with ±1 SE and 95% CIs.")
        )
    if calibration:
        parts.append(ece_table(calibration, labels))
    parts += ["<h2>Runs</h2>", _jobs_table(runs, samples)]
    if failed:
        parts += [
            "<h2>Failed jobs</h2>",
            table(["job", "why"], [[esc(name), esc(why)] for name, why in failed]),
        ]
    return page(f"{title} — Mill report", "".join(parts))


# The flips table's filters and sort: rows whose text holds every word typed (any case),
# in the direction, task, metric and subject chosen (each row's data-* attributes); a click
# on a column's header sorts by it (again: the other way). Inline, no network, file://.
FLIPS_JS = """<script>(function () {
  var box = document.getElementById("flips-filter"), count = document.getElementById("flips-count");
  var picks = ["dir", "task", "metric", "subject"].map(function (k) {
    return [k, document.getElementById("flips-" + k)];
  });
  var tbody = document.querySelector("#flips tbody");
  var rows = [].slice.call(tbody.querySelectorAll("tr"));
  function apply() {
    var words = box.value.toLowerCase().split(/\\s+/).filter(Boolean), shown = 0;
    rows.forEach(function (r) {
      var text = r.textContent.toLowerCase();
      var ok = picks.every(function (p) {
        return !p[1].value || r.dataset[p[0]] === p[1].value;
      }) && words.every(function (w) { return text.indexOf(w) >= 0; });
      r.style.display = ok ? "" : "none"; if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + rows.length + " shown";
  }
  var sorted = -1, up = true;
  [].slice.call(document.querySelectorAll("#flips thead th")).forEach(function (th, i) {
    th.style.cursor = "pointer"; th.title = "sort by this column";
    th.addEventListener("click", function () {
      up = sorted === i ? !up : true; sorted = i;
      rows.sort(function (x, y) {
        var a = x.cells[i].textContent, b = y.cells[i].textContent;
        var c = a.localeCompare(b, undefined, {numeric: true});
        return up ? c : -c;
      });
      rows.forEach(function (r) { tbody.appendChild(r); });
    });
  });
  box.addEventListener("input", apply);
  picks.forEach(function (p) { p[1].addEventListener("change", apply); }); apply();
})();</script>"""


def flip_name(task: str, flip: dict[str, Any]) -> str:
    """A flipped question as the console names it: its doc id, after its subject when the
    task has subjects."""
    subject = str(flip["subject"])
    return (
        f"{subject}/{flip['doc_id']}"
        if subject not in ("", "default", task)
        else str(flip["doc_id"])
    )


DIRECTIONS = {"right_to_wrong": "right → wrong", "wrong_to_right": "wrong → right"}


def flips_section(flips: dict[str, dict[str, Any]], label_a: str, label_b: str) -> str:
    """The questions whose verdict differs between the runs (per task and 0/1 metric), A's
    and B's answers side by side; filtered by words, direction, task, metric and subject,
    sorted by any column."""
    rows, attrs, rows_values = [], [], []
    for task, metrics in flips.items():
        for metric, by_direction in metrics.items():
            for direction, items in by_direction.items():
                for f in items:
                    rows.append(
                        [esc(task), esc(metric), esc(DIRECTIONS[direction]),
                         esc(flip_name(task, f)), esc(f["prompt"]), esc(f["gold"]),
                         esc(f["a"]["answer"]), esc(f["b"]["answer"])]
                    )  # fmt: skip
                    values = (direction, task, metric, str(f["subject"]))
                    rows_values.append(values)
                    pairs = zip(FLIP_KEYS, values, strict=True)
                    attrs.append(" ".join(f'data-{k}="{esc(v)}"' for k, v in pairs))
    if not rows:
        return ""
    body = table(
        ["task", "metric", "A → B", "doc", "prompt (end)", "gold", f"A ({label_a})",
         f"B ({label_b})"],
        rows,
        row_attrs=attrs,  # the filters read them
    )  # fmt: skip
    return (
        "<h2>Questions whose verdict differs</h2>"
        "<p class='small'>Per task and 0/1 metric: right in A and wrong in B (right → wrong), "
        "and the reverse; A's and B's answers side by side. Click a column's header to sort."
        "</p>"
        '<p><input id="flips-filter" type="search" placeholder="filter: words in any column" '
        f'size="40"> {_flip_selects(rows_values)} '
        '<span id="flips-count" class="small"></span></p>'
        f'<div id="flips">{body}</div>{FLIPS_JS}'
    )


FLIP_KEYS = ("dir", "task", "metric", "subject")
"""The flips' data attributes, each with a select of its values (FLIPS_JS reads both)."""


def _flip_selects(values: Sequence[tuple[str, ...]]) -> str:
    """A select per :data:`FLIP_KEYS` over the rows' ``values`` (one tuple a row, in
    :data:`FLIP_KEYS`' order): every value present, "" for all; both directions always."""
    every = ("both directions", "every task", "every metric", "every subject")
    selects = []
    for i, key in enumerate(FLIP_KEYS):
        labels = DIRECTIONS if key == "dir" else {v[i]: v[i] for v in values}
        options = "".join(
            f'<option value="{esc(v)}">{esc(label)}</option>' for v, label in labels.items()
        )
        selects.append(
            f'<select id="flips-{key}"><option value="">{every[i]}</option>{options}</select>'
        )
    return " ".join(selects)


def compare_page(
    label_a: str,
    label_b: str,
    run_a: RunFolder,
    run_b: RunFolder,
    rows: Sequence[dict[str, Any]],
    chart_png: bytes,
    params: dict[str, Any],
    flips: dict[str, dict[str, Any]] | None = None,
) -> str:
    """A paired comparison of two runs; ``flips``: the questions whose verdict differs
    (:func:`mill.report.compare.verdict_flips`, per task and metric)."""
    level = round(100 * (1 - float(params["alpha"])))
    table_rows = [
        [esc(r["task"]), esc(r["metric"]), *paired_cells(r), esc(r["test"])] for r in rows
    ]
    verdicts = "".join(
        f"<div class='verdict {esc(r['better'] or '')}'>{esc(r['verdict'])}</div>" for r in rows
    )
    parts = [
        f"<h1>{esc(label_a)} vs {esc(label_b)}</h1>",
        chips(
            [
                (f"A = {run_a.path}", ""),
                (f"B = {run_b.path}", ""),
                (f"{params['iters']} bootstrap resamples", ""),
                (f"seed {params['seed']}", ""),
                (f"α = {params['alpha']}", ""),
            ]
        ),
        _notes([run_a, run_b]),
        "<h2>Verdicts</h2>",
        verdicts,
        "<h2>Paired differences</h2>",
        table(
            ["task", "metric", "shared docs", "A", "B", "B − A", f"{level}% CI", "p", "test"],
            table_rows,
            (2, 3, 4, 5, 6, 7),
        ),
        figure(chart_png, "paired differences", f"B − A with {level}% paired bootstrap CIs."),
        "<p class='small'>CI: percentile interval of the metric difference over paired "
        "bootstrap resamples of the shared docs. p: McNemar's exact (binomial) test for 0/1 "
        "metrics, else a two-sided paired bootstrap test. No correction for multiple "
        "comparisons.</p>",
        flips_section(flips or {}, label_a, label_b),
    ]
    how = "rerun with <code>mill compare a=&lt;run&gt; b=&lt;run&gt; out=&lt;folder&gt;</code>"
    return page(f"{label_a} vs {label_b} — Mill comparison", "".join(parts), how)
