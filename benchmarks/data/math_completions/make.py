"""Write the test completions for the math checkers: ``<task>.jsonl`` beside this file, one
``{"task_id", "case", "completion"}`` per line, from the real rows of the shared data
(``$MILL_SHARED_DATA`` or ../shared/data beside the checkout).

Deterministic: the same data gives the same files (no randomness; rows in file order). Every
row of aime24, aime25 and amc23 and the first 100 rows of math500 get the ordinary cases (the
gold boxed as given, the same value in other forms, a wrong value, an ``ANSWER:`` line, the
answer after a closed ``<think>`` block); a few rows per task get the rest (no answer, several
boxed answers, an unclosed ``<think>``, a lone ``</think>``, pathological expressions), and
math500 rows past the first 100 whose answers are matrices, intervals, tuples, sets, degrees
or text get their forms too.

    python -m benchmarks.data.math_completions.make        # from the checkout's root

``benchmarks.lighteval_math`` scores each file; its outputs are the ``*.lighteval.jsonl``
files here (see README.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

from benchmarks.driver_common import SHARED_DATA

HERE = Path(__file__).resolve().parent
PATHOLOGICAL = [
    "9^{9^{9^{9^{9}}}}",
    "\\frac{" + "(x+1)" * 60 + "}{" + "(x-1)" * 60 + "}",
    "(" * 200 + "1" + ")" * 200,
]


def rows(task: str) -> list[tuple[str | int, str]]:
    """(task_id, gold answer string) per row: math500's unique_id, aime24's and amc23's id,
    aime25's 0-based line number."""
    lines = (SHARED_DATA / task / "test.jsonl").read_text(encoding="utf-8").splitlines()
    data = [json.loads(line) for line in lines if line.strip()]
    if task == "math500":
        return [(r["unique_id"], r["answer"]) for r in data]
    if task == "aime25":
        return [(i, str(r["answer"])) for i, r in enumerate(data)]
    return [(r["id"], str(r["answer"])) for r in data]


def say(answer: str) -> str:
    """A short completion ending in lighteval's requested final line for ``answer``."""
    return f"Therefore, the final answer is: $\\boxed{{{answer}}}$. I hope it is correct"


def integer_forms(gold: str, more: bool) -> Iterator[tuple[str, str]]:
    """Other spellings of an integer answer (AIME/AMC golds; AMC's are floats like 27.0);
    ``more``: the rarer ones too."""
    value = int(float(gold))
    yield "int_plain", f"The answer is {value}."
    yield "int_float", say(f"{value}.0")
    yield "int_dollars", f"So the answer is ${value}$."
    yield "int_text", say(f"\\text{{{value}}}")
    yield "int_frac", say(f"\\dfrac{{{2 * value}}}{{2}}")
    if more:
        yield "int_units", say(f"{value} \\text{{ miles}}")
        yield "int_leading_zeros", say(f"{value:03d}")
        yield "int_bracket_display", f"Hence\n\\[\n\\boxed{{{value}}}\n\\]"


FRAC = re.compile(r"^(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}$")


def math_forms(gold: str, more: bool) -> Iterator[tuple[str, str]]:
    """Other spellings of a MATH-500 answer, by what the gold looks like; ``more``: the
    answer in other delimiters too."""
    m = FRAC.match(gold)
    if m:
        sign, a, b = m.groups()
        value = Fraction(int(a), int(b)) * (-1 if sign else 1)
        yield "frac_slash", say(f"{sign}{a}/{b}")
        yield "frac_dfrac", say(f"{sign}\\dfrac{{{a}}}{{{b}}}")
        yield "frac_decimal6", say(f"{float(value):.6f}")
        yield "frac_decimal3", say(f"{float(value):.3f}")
    if re.fullmatch(r"-?\d+", gold):
        yield "int_float", say(f"{gold}.0")
        yield "int_plain", f"The answer is {gold}."
        yield "int_dollars", f"So the answer is ${gold}$."
    if "^\\circ" in gold:
        yield "degrees_dropped", say(gold.replace("^\\circ", "").strip())
        yield "degrees_word", say(gold.replace("^\\circ", "\\text{ degrees}"))
    if gold.startswith("\\text{"):
        inner = gold[len("\\text{") : -1]
        yield "text_bare", say(inner)
        yield "text_textbf", say(f"\\textbf{{{inner}}}")
    if "pmatrix" in gold:
        yield "matrix_bmatrix", say(gold.replace("pmatrix", "bmatrix"))
    if re.fullmatch(r"[\[(].*,.*[\])]", gold) or gold.startswith("\\left"):
        plain = gold.replace("\\left", "").replace("\\right", "")
        yield "tuple_or_interval_plain", say(plain)
        yield "tuple_or_interval_spaced", say(plain.replace(",", " , "))
    if "," in gold and not re.match(r"[\[(\\]", gold):
        parts = [p.strip() for p in gold.split(",")]
        yield "list_reversed", say(", ".join(reversed(parts)))
        yield "list_set", say("\\{" + ", ".join(parts) + "\\}")
    if "\\sqrt" in gold:
        yield "sqrt_no_braces", say(re.sub(r"\\sqrt\{(\w)\}", r"\\sqrt\1", gold))
    if "\\frac" in gold and not m:
        yield "dfrac", say(gold.replace("\\frac", "\\dfrac"))
    if more:
        yield "inline_dollars", f"The answer is ${gold}$."
        yield "display_dollars", f"Thus $$\\boxed{{{gold}}}$$"


def wrong(task: str, gold: str, other: str) -> str:
    """A wrong answer: the integer plus one (AIME/AMC), else another row's answer."""
    if task != "math500" or re.fullmatch(r"-?\d+", gold):
        return str(int(float(gold)) + 1)
    return other if other != gold else f"{gold} + 1"


def cases(task: str) -> Iterator[dict[str, Any]]:
    table = rows(task)
    golds = [g for _, g in table]
    special_kinds = ("matrix", "\\left", "^\\circ", "\\text", "\\{", "(", "[")
    for i, (task_id, gold) in enumerate(table):
        ordinary = task != "math500" or i < 100
        special = task == "math500" and not ordinary and any(k in gold for k in special_kinds)
        if not (ordinary or special):
            continue
        other = golds[(i + 1) % len(golds)]
        bad = wrong(task, gold, other)
        g, b = f"$\\boxed{{{gold}}}$", f"$\\boxed{{{bad}}}$"
        out = [("gold_boxed", say(gold))]
        more = i < 12 or special
        out += list(integer_forms(gold, more) if task != "math500" else math_forms(gold, more))
        if ordinary:
            out += [
                ("wrong_boxed", say(bad)),
                ("answer_line", f"Some work.\nANSWER: {gold}"),
                (
                    "think_closed_then_answer",
                    f"<think>Maybe {b}? No.</think>\n{say(gold)}",
                ),
            ]
        if ordinary and i < 6:  # the rarer shapes on a few rows per task
            out += [
                ("no_answer", "I am not able to solve this problem."),
                ("answer_line_wrong", f"Some work.\nANSWER: {bad}"),
                ("two_boxed_gold_last", f"First {b}, then {g}."),
                ("two_boxed_gold_first", f"First {g}, then {b}."),
                (
                    "think_closed_wrong_after",
                    f"<think>It is {g}.</think>\n{say(bad)}",
                ),
                (
                    "think_unclosed_boxed",
                    f"<think>Tentatively {g}, but let me check",
                ),
                ("lone_close_think_then_answer", f"Thinking, maybe {bad}.\n</think>\n{say(gold)}"),
                (
                    "lone_close_think_wrong_after",
                    f"Surely {g}.\n</think>\n{say(bad)}",
                ),
                (
                    "two_think_blocks",
                    f"<think>a</think>x<think>{b}</think>\n{say(gold)}",
                ),
                ("text_before_think", f"{say(gold)}\n<think>or {b}</think>"),
                ("answer_line_then_think_final_line", f"ANSWER: {gold}\n<think>{say(bad)}</think>"),
                (
                    "think_closed_boxed_inside_plain_after",
                    f"<think>Maybe {b}.</think>\nIt is {gold}.",
                ),
                (
                    "lone_close_think_boxed_before_plain_after",
                    f"Maybe {b}.\n</think>\nIt is {gold}.",
                ),
                ("empty", ""),
            ]
        if ordinary and i < 1:  # math-verify's 5 s timeouts: up to 90 s a completion here
            out += [(f"pathological_{j}", say(expr)) for j, expr in enumerate(PATHOLOGICAL)]
        for case, completion in out:
            yield {"task_id": task_id, "case": case, "completion": completion}


def main() -> None:
    for task in ("math500", "aime24", "aime25", "amc23"):
        path = HERE / f"{task}.jsonl"
        lines = [json.dumps(c, ensure_ascii=False) + "\n" for c in cases(task)]
        path.write_text("".join(lines), encoding="utf-8")
        print(f"{path.name}: {len(lines)} completions")


if __name__ == "__main__":
    main()
