"""Mill's math verdicts against lighteval 0.13's, completion by completion.

Reads the test completions of ``benchmarks/data/math_completions/<task>.jsonl`` and the
verdicts lighteval 0.13 gave them (``<task>.lighteval.jsonl``, written by
``benchmarks.lighteval_math`` in ``.venv-lighteval``), and scores every completion as a Mill
run does: the task's doc from the shared data, the run's reasoning rule
(:class:`mill.types.ReasoningRule`, ``<think>`` by default), then the task's checker
(:class:`mill.metrics.equivalence.MathChecker`, math-verify) against the task's gold.
Prints, per task, how many verdicts agree, and every disagreement with its case; exits 1
when a disagreement is not one of the documented differences (:data:`DOCUMENTED`).

    python -m benchmarks.math_parity                     # the four tasks
    python -m benchmarks.math_parity --tasks aime24 --show 5
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from mill.tasks.mathematics import AIME24, AIME25, AMC23, Math500, MathTask

from benchmarks.driver_common import REPO, SHARED_DATA
from mill.data.load import DataSource
from mill.types import ReasoningRule

COMPLETIONS = REPO / "benchmarks" / "data" / "math_completions"
TASKS: dict[str, type[MathTask]] = {
    "math500": Math500,
    "aime24": AIME24,
    "aime25": AIME25,
    "amc23": AMC23,
}
DOCUMENTED = {
    # the reasoning rule (docs/reasoning.md): a block never closed leaves no answer in Mill,
    # lighteval scores the text as it is; text before a lone </think> is reasoning in Mill
    "think_unclosed_boxed": "Mill: no answer (reasoning unfinished); lighteval: the text scored",
    "lone_close_think_boxed_before_plain_after": (
        "Mill: the text before a lone </think> is reasoning; lighteval: kept and read first"
    ),
}
"""Cases whose verdicts differ on purpose, with why."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def mill_verdicts(task_name: str, rows: list[dict[str, Any]], data: Path) -> list[dict[str, Any]]:
    """Mill's verdict of every completion (``task_id``, ``completion``), in order."""
    task = TASKS[task_name](chat_template=False)
    docs = {task.item_id(d.item): d for d in task.docs(DataSource("local", str(data)))}
    rule = ReasoningRule()
    out = []
    for row in rows:
        doc = docs[str(row["task_id"])]
        answer, unfinished = rule.apply(row["completion"])
        check = task.math_checker.check(task.math_gold(doc), answer)
        out.append(
            {"verdict": int(check.correct), "extracted": check.extracted, "unfinished": unfinished}
        )
    task.math_checker.close()
    return out


def compare(task_name: str, data: Path, folder: Path) -> dict[str, Any]:
    """Per task: the count of completions, of agreements, and the disagreements by case."""
    rows = read_jsonl(folder / f"{task_name}.jsonl")
    reference = read_jsonl(folder / f"{task_name}.lighteval.jsonl")
    if len(rows) != len(reference):
        raise SystemExit(f"{task_name}: {len(rows)} completions but {len(reference)} verdicts")
    ours = mill_verdicts(task_name, rows, data)
    differ = [
        {
            "task_id": row["task_id"],
            "case": row.get("case", "?"),
            "mill": mine["verdict"],
            "lighteval": int(ref["verdict"]),
            "mill_extracted": mine["extracted"],
            "lighteval_extracted": ref.get("pred_extracted"),
            "completion": row["completion"][-160:],
        }
        for row, mine, ref in zip(rows, ours, reference, strict=True)
        if mine["verdict"] != int(ref["verdict"])
    ]
    return {
        "task": task_name,
        "completions": len(rows),
        "agree": len(rows) - len(differ),
        "lighteval_right": sum(int(r["verdict"]) for r in reference),
        "mill_right": sum(m["verdict"] for m in ours),
        "differ": differ,
        "by_case": dict(Counter(d["case"] for d in differ)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--data", type=Path, default=SHARED_DATA)
    parser.add_argument("--completions", type=Path, default=COMPLETIONS)
    parser.add_argument("--show", type=int, default=3, help="disagreements printed per case")
    parser.add_argument("--json", type=Path, help="write the whole comparison here")
    args = parser.parse_args(argv)
    results = [compare(t, args.data, args.completions) for t in args.tasks]
    print(
        "| task | completions | verdicts equal | lighteval right | Mill right | differing cases |"
    )
    print("|---|---|---|---|---|---|")
    unexplained = 0
    for r in results:
        cases = ", ".join(f"{c} ({n})" for c, n in sorted(r["by_case"].items())) or "none"
        print(
            f"| {r['task']} | {r['completions']} | {r['agree']} | {r['lighteval_right']} "
            f"| {r['mill_right']} | {cases} |"
        )
        unexplained += sum(n for c, n in r["by_case"].items() if c not in DOCUMENTED)
    for r in results:
        shown: Counter[str] = Counter()
        for d in r["differ"]:
            if shown[d["case"]] < args.show:
                shown[d["case"]] += 1
                print(json.dumps({"task": r["task"], **d}, ensure_ascii=False))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    print(f"unexplained disagreements: {unexplained}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
