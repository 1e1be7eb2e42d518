"""The plain-text report of one run: ``report.txt`` and the table printed at the end of a
run. The results table, then what else the run's files say: the served model's usage,
skipped bad rows, how generations ended (the length budget, unfinished reasoning), the
judge, programs run without a sandbox. One implementation, from
``results.json`` and the manifest alone, for the run's own report and ``mill -cn report``'s
rebuild, so the two are the same text."""

from __future__ import annotations

from typing import Any, cast

from rich.console import Console

from mill.report.numbers import number
from mill.report.table import results_table, usage_table
from mill.results.format import Results, judge_label

UNSAFE_LINE = (
    "WARNING: the model's programs ran WITHOUT a sandbox (execution.sandbox=none, "
    "execution.allow_unsafe=true): they could read and write your files and reach the network"
)


def skipped_warning(skipped: dict[str, list[dict[str, Any]]]) -> str:
    """The one line (console, log and report.txt) about bad rows skipped."""
    per_task = ", ".join(f"{task}: {len(rows)}" for task, rows in sorted(skipped.items()))
    first = next(iter(skipped.values()))[0]["error"].split(" (or skip such rows")[0]
    total = sum(len(rows) for rows in skipped.values())
    return (
        f"skipped {total} bad row(s) ({per_task}; data.skip_bad_rows=true), listed under "
        f"skipped_rows in results.json; the first: {first}"
    )


def skipped_rows(results: Results) -> dict[str, list[dict[str, Any]]]:
    """Task -> the bad rows it skipped (``data.skip_bad_rows=true``), tasks with none left out."""
    return {
        name: list(body.skipped_rows["rows"])
        for name, body in results.tasks.items()
        if body.skipped_rows and body.skipped_rows.get("rows")
    }


def judge_lines(results: Results) -> list[str]:
    """The lines about the judge: who judged, its identity's key fields, the rubrics'
    hashes, and per judged metric its invalid judgments (and, pairwise, the share of
    verdicts that changed with the answers' order)."""
    judge = results.judge
    if not judge:
        return []
    ident = judge.get("identity") or {}
    keys = ("class", "weights_fingerprint", "judge_revision")
    named = ", ".join(f"{k}={ident[k]}" for k in keys if ident.get(k))
    who = judge_label(ident) + (f" ({named})" if named else "")
    lines = [f"judge: {who}; conversation format: {judge.get('conversation_format')}"]
    for metric, roles in (judge.get("templates") or {}).items():
        hashes = ", ".join(f"{role} {digest[:12]}" for role, digest in roles.items())
        lines.append(f"judge templates of {metric} (sha256): {hashes}")
    for task, body in results.tasks.items():
        for name, row in body.metrics.items():
            details = row.details or {}
            if "n_invalid" not in details:
                continue
            line = f"{task} {name}: {details['n_invalid']} invalid judgment(s)"
            if details.get("position_bias") is not None:
                line += f", position bias {number(details['position_bias'])}"
            if details.get("interval"):  # Arena-Hard's own report: percent, (-x / +y)
                line += f"; score {round(cast(float, row.value), 1)} {details['interval']}"
            lines.append(line)
    return lines


def generation_lines(results: Results) -> list[str]:
    """Per generative task, how its generations ended: the share the length budget cut off
    (``max_gen_toks``) beside the score, and those whose reasoning never closed."""
    lines = []
    for task, body in results.tasks.items():
        counts = body.generations
        if not counts:
            continue
        n, cut = int(counts.get("generations", 0)), int(counts.get("hit_max_gen_toks", 0))
        rate = counts.get("truncation_rate")
        budget = (body.settings.get("generation") or {}).get("max_gen_toks")
        said = f"{task}: {cut} of {n} generations hit max_gen_toks={budget}"
        said += f" ({100 * rate:.1f}%)" if rate is not None else ""
        if counts.get("unknown"):
            said += f", {counts['unknown']} not known (saved completions)"
        if counts.get("reasoning_unfinished"):
            said += (
                f"; {counts['reasoning_unfinished']} left their reasoning unfinished "
                "(no answer, scored 0)"
            )
        lines.append(said)
    return lines


def print_run_report(console: Console, results: Results, title: str, unsafe: bool) -> None:
    """Print the run's report on ``console`` (a recording one gives ``report.txt``);
    ``unsafe``: its programs ran without a sandbox (the manifest's ``execution.unsafe``)."""
    console.print(results_table(results, title))
    if results.usage:
        console.print(usage_table(results.usage))
    skipped = skipped_rows(results)
    if skipped:
        console.print(skipped_warning(skipped), markup=False, highlight=False)
    for line in generation_lines(results):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    for line in judge_lines(results):
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    if unsafe:
        console.print(UNSAFE_LINE, markup=False, highlight=False)
