"""Run in lm-eval 0.4.13's interpreter: its ``ifeval`` checker (a copy of Google's
reference) on IFEval rows and their responses; prints one JSON object per row:
``{"key", "strict": [...], "loose": [...]}``.

    python lmeval_ifeval.py ROWS.jsonl RESPONSES.jsonl

``NLTK_DATA`` must name a folder holding ``tokenizers/punkt_tab`` (then lm-eval's
module-level ``nltk.download`` is not called). ``langdetect`` is seeded 0, as Mill's
checker is (the reference leaves it unseeded), and ``random`` is seeded 0 before each row:
the reference draws a random letter for a ``letter_frequency`` instruction whose letter is
not a-z (keys 1122 and 1129), and the draw is then the same on every run.
"""

from __future__ import annotations

import json
import random
import sys

import langdetect

langdetect.DetectorFactory.seed = 0

from lm_eval.tasks.ifeval import utils  # noqa: E402


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    lines = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
    responses = {r["prompt"]: r["response"] for r in lines}
    for row in rows:
        random.seed(0)
        out = utils.process_results(row, [responses[row["prompt"]]])
        print(
            json.dumps(
                {
                    "key": row["key"],
                    "strict": list(out["inst_level_strict_acc"]),
                    "loose": list(out["inst_level_loose_acc"]),
                }
            )
        )


if __name__ == "__main__":
    main()
