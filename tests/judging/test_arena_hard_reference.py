"""Arena-Hard-Auto v0.1 end to end against its own rules (lmarena/arena-hard-auto at the
commit ``conf/task/arena_hard.yaml`` cites, 196f6b82): one deterministic judge server on
127.0.0.1 (:mod:`tests.runner.judge_server`) answers Mill's run over the 500 prompts and an
independent re-implementation, written here from the reference's source (Arena-Hard is not
on PyPI; none of its code is in the repository), of

* ``gen_judgment.py``: the judge conversation (its system prompt and the config's
  template, game 1 with the baseline as assistant A, game 2 swapped), the config's
  ``temperature`` and ``max_tokens``, and ``get_score`` (the reply upper-cased, the last
  match of the first pattern that matches);
* ``show_result.py``: ``load_judgments`` (a question with a game without a score is
  dropped, ``label_to_score`` with its ten labels and weight 3, game 2's scores then 1 -
  game 1's, exploded into battles) and ``print_leaderboard`` (100 rounds of pandas'
  ``sample(frac=1.0, replace=True)`` per model, the score the mean of the rounds' means,
  the interval their 5% and 95% quantiles, printed in percent as ``(-x / +y)``).

The request bodies are equal, the score equal to 4 digits and the interval equal (the
rounds are seeded with ``runner.seed``: numpy's legacy global seed for the reference)."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import numpy as np
import pytest

from mill.runner.job import run_job
from tests.helpers import SHARED
from tests.runner.judge_server import judge_server

pd = pytest.importorskip("pandas")
yaml = pytest.importorskip("yaml")

pytestmark = pytest.mark.slow

ARENA = SHARED / "data/arena_hard"
SEED = 1234


def _post(url: str, body: dict[str, Any]) -> str:
    request = urllib.request.Request(
        f"{url}/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["choices"][0]["message"]["content"]


def _get_score(judgment: str, patterns: list[str]) -> str | None:
    """Arena-Hard's ``get_score``, from its description above."""
    for pattern in patterns:
        matches = [m for m in re.compile(pattern).findall(judgment.upper()) if m != ""]
        if matches:
            return matches[-1].strip("\n")
    return None


def _reference_judgments(url: str, answers: dict[str, str]) -> tuple[list[dict], list[dict]]:
    """Arena-Hard's judgment records (``uid``, ``model``, ``games``) and the bodies sent."""
    config = yaml.safe_load((ARENA / "arena-hard-v0.1.yaml").read_text())
    system = (ARENA / "judge_system_prompt.txt").read_text()
    questions = [json.loads(x) for x in (ARENA / "question.jsonl").read_text().splitlines()]
    baseline = {
        json.loads(x)["uid"]: json.loads(x)["messages"][-1]["content"]["answer"]
        for x in (ARENA / "model_answer_gpt-4-0314.jsonl").read_text().splitlines()
    }
    sent, records = [], []
    for q in questions:
        games = []
        for a, b in (
            (baseline[q["uid"]], answers[q["uid"]]),
            (answers[q["uid"]], baseline[q["uid"]]),
        ):  # noqa: E501
            user = config["prompt_template"].format(QUESTION=q["prompt"], ANSWER_A=a, ANSWER_B=b)
            body = {
                "model": "gpt-4",
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
                "temperature": config["temperature"],
                "max_tokens": config["max_tokens"],
            }
            sent.append(body)
            games.append({"score": _get_score(_post(url, body), config["regex_patterns"])})
        records.append(
            {"uid": q["uid"], "model": "cand", "category": q["category"], "games": games}
        )  # noqa: E501
    return records, sent


def _reference_leaderboard(records: list[dict], weight: int = 3) -> dict[str, Any]:
    """``load_judgments`` then ``print_leaderboard``, from their description above."""
    data = pd.DataFrame(records)
    null = data.games.map(
        lambda g: g[0] is None or g[1] is None or None in (g[0]["score"], g[1]["score"])
    )  # noqa: E501
    kept = data[~null].reset_index(drop=True)
    label_to_score = {
        "A>B": [1], "A>>B": [1] * weight, "A=B": [0.5], "A<<B": [0] * weight, "A<B": [0],
        "B>A": [0], "B>>A": [0] * weight, "B=A": [0.5], "B<<A": [1] * weight, "B<A": [1],
    }  # fmt: skip
    kept["scores"] = kept.games.map(
        lambda g: label_to_score[g[1]["score"]] + [1 - s for s in label_to_score[g[0]["score"]]]
    )
    battles = kept[["uid", "model", "category", "scores"]].explode("scores").reset_index(drop=True)
    battles = battles[["model", "scores"]]
    battles["scores"] = battles["scores"].astype(float)
    np.random.seed(SEED)
    rounds = pd.concat(
        [
            battles.groupby("model").sample(frac=1.0, replace=True).groupby("model").mean()
            for _ in range(100)
        ]
    )
    score = float(rounds.groupby("model").mean().loc["cand", "scores"])
    lower = float(rounds.groupby("model").quantile(0.05).loc["cand", "scores"])
    upper = float(rounds.groupby("model").quantile(0.95).loc["cand", "scores"])
    return {
        "score": score,
        "lower": lower,
        "upper": upper,
        "dropped": int(null.sum()),
        "battles": len(battles),
        "ci": f"(-{round((score - lower) * 100, 1)} / +{round((upper - score) * 100, 1)})",
    }


@pytest.mark.skipif(not ARENA.is_dir(), reason="needs ../shared/data/arena_hard")
def test_arena_hard_equals_its_reference_end_to_end(compose, tmp_path) -> None:
    with judge_server() as server:
        cfg = compose(
            "task=arena_hard", "data=local", f"data.dir={SHARED / 'data'}",
            "model=openai_chat", f"model.base_url={server.url}", "model.model=cand",
            "judge=openai_chat", f"judge.base_url={server.url}", "judge.model=gpt-4",
            "judge.num_concurrent=4", "model.num_concurrent=4", "judge.max_invalid=0.2",
            f"runner.seed={SEED}", "report.progress=never",
        )  # fmt: skip
        results = run_job(cfg, tmp_path / "run")
        mill_sent = [b for b in server.seen if b["model"] == "gpt-4"]
        lines = (tmp_path / "run/samples/arena_hard.jsonl").read_text().splitlines()
        answers = {json.loads(x)["extra"]["id"]: json.loads(x)["extra"]["turns"][0] for x in lines}
        records, sent = _reference_judgments(server.url, answers)
    assert len(answers) == 500 and len(mill_sent) == 1000

    def canonical(bodies: list[dict]) -> list[str]:
        return sorted(
            json.dumps([b["messages"], b["max_tokens"], float(b["temperature"])]) for b in bodies
        )

    assert canonical(mill_sent) == canonical(sent)  # same prompts, max_tokens 4096, temp 0
    assert {b["max_tokens"] for b in mill_sent} == {4096}
    reference = _reference_leaderboard(records)
    row = results.tasks["arena_hard"].metrics["arena_hard_score"]
    assert reference["dropped"] > 0 and row.details["dropped_questions"] == reference["dropped"]
    assert row.details["n_invalid"] == 2 * reference["dropped"]
    assert row.details["battles"] == reference["battles"]
    assert round(row.value, 4) == round(100 * reference["score"], 4)
    assert row.details["ci_low"] == pytest.approx(100 * reference["lower"], abs=1e-9)
    assert row.details["ci_high"] == pytest.approx(100 * reference["upper"], abs=1e-9)
    assert row.details["interval"] == reference["ci"]
    print(  # the numbers docs/judging.md quotes
        f"\nMill {row.value:.4f} {row.details['interval']} | Arena-Hard "
        f"{100 * reference['score']:.4f} {reference['ci']} | dropped {reference['dropped']}"
    )
