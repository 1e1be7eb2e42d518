"""The rubrics: the judged metrics, where a judge model grades or compares a task's
generations.

A judged metric does not read the candidate's generation itself: the judging phase
(:class:`mill.judging.Judging`) asks it for judge prompts
(:meth:`JudgedMetric.judge_prompts`, from the doc and the candidate's answers, one per
turn), sends them to the judge model, parses each reply with :meth:`JudgedMetric.parse`
(``None``: the reply did not parse, an *invalid* judgment) and hands the parsed judgments
to :meth:`score` in prompt order (:attr:`~mill.metrics.base.DocResponses.judgments`).
The rubric (system prompt, prompt template, the regex that reads a grade) belongs to the
metric, never to the judge.

Protocols (FastChat's ``llm_judge``, Zheng et al. 2023, arXiv 2306.05685):

* :class:`JudgeScore`, single-answer grading: the judge's reply gives a grade through a
  regex (MT-Bench's ``[[rating]]``: ``\\[\\[(\\d+\\.?\\d*)\\]\\]``, then
  ``\\[(\\d+\\.?\\d*)\\]``); the score is the mean of the valid grades over every
  (question, turn). Reference-guided grading uses another template, filled with the
  doc's reference answer too (``reference_categories``: the subjects that use it).
* :class:`PairwiseWinRate`, pairwise against a baseline: every turn is judged twice, the
  candidate as assistant A then as assistant B. MT-Bench's swap rule: a verdict that
  changes with the order is a tie. win rate = (wins + ties / 2) / n, with a percentile
  bootstrap 95% CI; ``position_bias`` is the share of pairs whose verdict changed with
  the order.

An invalid judgment never counts as a grade or a verdict; ``n_invalid`` is reported
beside the value (:meth:`details`).
"""

from __future__ import annotations

import json
import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeGuard

import numpy as np

from mill.errors import ConfigError
from mill.files import sha256_json
from mill.metrics.base import CorpusMetric, Metric
from mill.metrics.stats import bootstrap_ci, bootstrap_stderr, mean
from mill.types import Doc, GenerationArgs, OutputType, Response

RATING_PATTERNS = (r"\[\[(\d+\.?\d*)\]\]", r"\[(\d+\.?\d*)\]")
"""FastChat's ``one_score_pattern`` and its ``one_score_pattern_backup``."""

VERDICT_PATTERNS = (r"\[\[(A)\]\]", r"\[\[(B)\]\]", r"\[\[(C)\]\]")
"""MT-Bench's pairwise verdicts in FastChat's order (``run_judge_pair``): ``[[A]]``
anywhere in the reply first, then ``[[B]]``, then ``[[C]]`` (a tie)."""


@dataclass(frozen=True)
class JudgeTemplate:
    """One rubric: the judge's system prompt and the user prompt, a ``str.format``
    template whose fields the protocol fills (``{question}``, ``{answer}``, ...)."""

    name: str
    system_prompt: str
    prompt_template: str

    @property
    def fields(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.prompt_template) if f}

    @property
    def hash(self) -> str:
        """sha256 of the system prompt and the template (the manifest records it)."""
        return sha256_json([self.system_prompt, self.prompt_template])

    def render(self, values: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
        """The judge's conversation: (role, content) turns."""
        user = self.prompt_template.format(**values)
        system = (("system", self.system_prompt),) if self.system_prompt else ()
        return (*system, ("user", user))


@dataclass(frozen=True)
class JudgePrompt:
    """One judge call a doc needs: ``key`` names it within the doc and metric (``t1``,
    ``t2/ab``...), ``messages`` the conversation the judge sees."""

    key: str
    messages: tuple[tuple[str, str], ...]
    template: str


def load_templates(
    templates: Mapping[str, Any] | None, templates_file: str | None, names: Mapping[str, str]
) -> dict[str, JudgeTemplate]:
    """Rubrics by role (``single``, ``single_reference``, ``multi_turn``,
    ``multi_turn_reference``): picked by name from a FastChat ``judge_prompts.jsonl``
    (``names``: role -> prompt name), and given inline (``{role: {system_prompt,
    prompt_template}}``, which win over the file's)."""
    out: dict[str, JudgeTemplate] = {}
    if templates_file:
        path = Path(templates_file)
        try:
            rows = [
                json.loads(line)
                for line in path.read_text(encoding="utf-8").split("\n")
                if line.strip()
            ]
        except (OSError, ValueError) as err:
            raise ConfigError(
                f"cannot read the judge prompts {path}: {err}; point templates_file at a "
                "JSON-lines file of {name, system_prompt, prompt_template}"
            ) from err
        by_name = {str(r.get("name")): r for r in rows}
        for role, name in names.items():
            if name not in by_name:
                raise ConfigError(
                    f"judge prompt {name!r} (for {role}) is not in {path}; it has: "
                    f"{', '.join(sorted(by_name))}"
                )
            row = by_name[name]
            out[str(role)] = JudgeTemplate(
                name, str(row.get("system_prompt") or ""), str(row["prompt_template"])
            )
    for role, body in (templates or {}).items():
        if not isinstance(body, Mapping) or "prompt_template" not in body:
            raise ConfigError(
                f"judge template {role!r} needs a prompt_template (and a system_prompt); "
                "fix the metric's templates"
            )
        out[str(role)] = JudgeTemplate(
            str(role), str(body.get("system_prompt") or ""), str(body["prompt_template"])
        )
    return out


def check_patterns(patterns: Sequence[str], sample: str, what: str) -> list[re.Pattern[str]]:
    """Compile the grade regexes; refuse one that is invalid, has no group, or cannot read
    ``sample`` (a reply in the expected format)."""
    compiled = []
    for pattern in patterns:
        try:
            regex = re.compile(pattern)
        except re.error as err:
            raise ConfigError(f"judge regex {pattern!r} is invalid ({err}); fix {what}") from err
        if regex.groups < 1:
            raise ConfigError(
                f"judge regex {pattern!r} has no group to read the {what} from; put the "
                "grade in parentheses, e.g. \\[\\[(\\d+)\\]\\]"
            )
        compiled.append(regex)
    if not compiled or not any(r.search(sample) for r in compiled):
        raise ConfigError(
            f"judge regex(es) {list(patterns)} cannot match a {what} such as {sample!r}; fix "
            "the metric's patterns"
        )
    return compiled


def _first_match(patterns: Sequence[re.Pattern[str]], text: str) -> str | None:
    for regex in patterns:
        match = regex.search(text)
        if match:
            return match.group(1)
    return None


def is_judged(metric: Metric) -> TypeGuard[JudgedMetric]:
    """Whether ``metric`` is scored by a judge model."""
    return isinstance(metric, JudgedMetric)


class JudgedMetric(CorpusMetric):
    """Base of the judged metrics: rubric templates by role, the reply parser, and the
    per-doc value (a tuple of the parsed judgments; None for an invalid one)."""

    output_types = frozenset({OutputType.GENERATIVE})
    named_by_config = True
    judge_generation: dict[str, Any] = {}
    """Generation settings the protocol fixes for its judge calls, over the judge's own
    (:class:`ArenaHardScore`: 4096 tokens, temperature 0); empty: the judge's."""
    required: ClassVar[dict[str, set[str]]] = {}
    """Template role -> the fields the protocol fills (a template needs all of them)."""

    def __init__(
        self,
        name: str | None = None,
        templates: Mapping[str, Any] | None = None,
        templates_file: str | None = None,
        template_names: Mapping[str, str] | None = None,
        reference_categories: Sequence[str] = (),
        patterns: Sequence[str] | None = None,
    ) -> None:
        self.name = name or type(self).name
        self.templates = load_templates(templates, templates_file, template_names or {})
        if "single" not in self.templates:
            raise ConfigError(
                f"metric {self.name!r} needs a 'single' judge template (the first turn's "
                "rubric); add it to templates or template_names"
            )
        for role, template in self.templates.items():
            needed = self.required.get(role)
            if needed is None:
                raise ConfigError(
                    f"metric {self.name!r}: unknown judge template role {role!r}; use "
                    f"{', '.join(sorted(self.required))}"
                )
            missing = needed - template.fields
            extra = template.fields - needed
            if missing or extra:
                problems = []
                if missing:
                    problems.append(f"lacks {', '.join(sorted(missing))}")
                if extra:
                    problems.append(
                        f"has fields the protocol does not fill: {', '.join(sorted(extra))}"
                    )
                raise ConfigError(
                    f"judge template {template.name!r} ({role}) of metric {self.name!r} "
                    f"{'; '.join(problems)}; it must use exactly {{{', '.join(sorted(needed))}}}"
                )
        self.reference_categories = {str(c) for c in reference_categories}
        self.patterns = check_patterns(
            patterns or self.default_patterns, self.sample_reply, self.what
        )

    default_patterns: ClassVar[tuple[str, ...]] = ()
    sample_reply: ClassVar[str] = ""
    what: ClassVar[str] = "grade"

    def template_hashes(self) -> dict[str, str]:
        """Role -> sha256 of each rubric (the manifest and the report name them)."""
        return {role: t.hash for role, t in sorted(self.templates.items())}

    def _template(self, doc: Doc, turn: int) -> tuple[JudgeTemplate, bool]:
        """The rubric of a turn of ``doc`` and whether it is reference-guided."""
        ref = doc.subject in self.reference_categories
        base = "single" if turn == 0 else "multi_turn"
        role = f"{base}_reference" if ref else base
        if role not in self.templates:
            raise ConfigError(
                f"metric {self.name!r} has no {role!r} judge template for doc {doc.id} "
                f"({doc.subject}, turn {turn + 1}); add it to the metric's templates"
            )
        return self.templates[role], ref

    def check_doc(self, doc: Doc) -> str | None:
        turns = questions(doc)
        for turn in range(len(turns)):
            _, ref = self._template(doc, turn)
            if ref and len(references(doc)) < len(turns):
                return (
                    f"doc {doc.id} of task {doc.task!r} ({doc.subject}) is judged against a "
                    "reference but has none for every turn; add 'reference' to its row"
                )
        return None

    def parse(self, text: str) -> Any | None:
        """The judgment a reply gives, or None when it does not parse (invalid)."""
        raise NotImplementedError

    def judge_prompts(self, doc: Doc, answers: Sequence[str]) -> list[JudgePrompt]:
        """The judge calls of one doc, from its candidate ``answers`` (one per turn)."""
        raise NotImplementedError

    def score(self, doc: Doc, responses: Sequence[Response]) -> tuple[Any, ...]:
        judgments = getattr(responses, "judgments", {}).get(self.name)
        if judgments is None:
            raise ConfigError(
                f"metric {self.name!r} needs a judge: add judge=<model> to the command"
            )
        return self.fold(list(judgments))

    def fold(self, judgments: list[Any]) -> tuple[Any, ...]:
        """The doc's value from its parsed judgments (prompt order)."""
        return tuple(judgments)

    def details(self, values: Sequence[Any], *, iters: int, seed: int) -> dict[str, Any]:
        """What the report shows beside the value: ``n_invalid`` and per-turn scores."""
        return {"n_invalid": sum(1 for v in values for j in v if j is None)}


def questions(doc: Doc) -> list[str]:
    """The doc's user turns (``turns`` of its row, else its context)."""
    turns = doc.item.get("turns")
    return [str(t) for t in turns] if turns else [doc.context]


def references(doc: Doc) -> list[str]:
    """The doc's reference answers, one per turn (``reference`` of its row, else gold)."""
    ref = doc.item.get("reference")
    if ref is None:
        ref = doc.gold if isinstance(doc.gold, (list, tuple)) else [doc.gold] if doc.gold else []
    return [str(r) for r in ref]


def _turn_fields(
    doc: Doc, turn: int, ref: bool, answers: Mapping[str, Sequence[str]]
) -> dict[str, str]:
    """Template fields of ``turn``: single-turn names for the first, numbered ones after
    (FastChat's ``question_1``, ``answer_1``, ``question_2`` ...)."""
    qs = questions(doc)
    refs = references(doc) if ref else []
    if turn == 0:
        out = {"question": qs[0]}
        out.update({name: texts[0] for name, texts in answers.items()})
        if ref:
            out["ref_answer_1"] = refs[0]
        return out
    out = {}
    for k in range(turn + 1):
        out[f"question_{k + 1}"] = qs[k]
        for name, texts in answers.items():
            out[f"{name}_{k + 1}"] = texts[k]
        if ref:
            out[f"ref_answer_{k + 1}"] = refs[k]
    return out


def rubric_fields(answers: tuple[str, ...]) -> dict[str, set[str]]:
    """The fields each rubric role must use, FastChat's names: ``question`` and the
    answers for the first turn, ``question_k`` and ``<answer>_k`` for both turns of a
    multi-turn one, plus ``ref_answer_k`` where reference-guided."""
    first = {"question", *answers}
    both = {f"{name}_{k}" for name in ("question", *answers) for k in (1, 2)}
    return {
        "single": first,
        "single_reference": first | {"ref_answer_1"},
        "multi_turn": both,
        "multi_turn_reference": both | {"ref_answer_1", "ref_answer_2"},
    }


def rubric_scale(metric: str, scale: Sequence[float] | None) -> tuple[float, float]:
    """A rubric's grade range (low, high); ConfigError for a rubric without one."""
    if (
        not isinstance(scale, Sequence)
        or isinstance(scale, str)
        or len(scale) != 2
        or not all(isinstance(v, (int, float)) for v in scale)
        or not scale[0] < scale[1]
    ):
        raise ConfigError(
            f"metric {metric!r}: the rubric has no scale (got {scale!r}); give its grades' "
            "range as scale: [low, high], e.g. scale: [1, 10] for MT-Bench"
        )
    return float(scale[0]), float(scale[1])


def grade_on_scale(value: float, scale: tuple[float, float]) -> float | None:
    """``value`` when it is a grade of the rubric's scale, else None (invalid)."""
    return value if math.isfinite(value) and scale[0] <= value <= scale[1] else None


class JudgeScore(JudgedMetric):
    """judge_score = mean of the valid grades over every (doc, turn): the judge's reply
    parsed by the first of ``patterns`` that matches (FastChat's ``[[rating]]``); stderr
    by bootstrap over docs. Details: ``n_invalid`` and ``turn_k`` (the mean grade of turn k,
    MT-Bench's per-turn scores)."""

    name = "judge_score"
    default_patterns = RATING_PATTERNS
    sample_reply = "Rating: [[5]]"
    what = "grade"
    required: ClassVar[dict[str, set[str]]] = rubric_fields(("answer",))

    def __init__(self, *args: Any, scale: Sequence[float] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.scale = rubric_scale(self.name, scale)

    def parse(self, text: str) -> float | None:
        found = _first_match(self.patterns, text)
        if found is None:
            return None
        return grade_on_scale(float(found), self.scale)

    def judge_prompts(self, doc: Doc, answers: Sequence[str]) -> list[JudgePrompt]:
        out = []
        for turn in range(len(answers)):
            template, ref = self._template(doc, turn)
            fields = _turn_fields(doc, turn, ref, {"answer": answers})
            out.append(JudgePrompt(f"t{turn + 1}", template.render(fields), template.name))
        return out

    def aggregate(self, values: Sequence[Any]) -> float:
        return mean([g for v in values for g in v if g is not None])

    def details(self, values: Sequence[Any], *, iters: int, seed: int) -> dict[str, Any]:
        out = super().details(values, iters=iters, seed=seed)
        turns = max((len(v) for v in values), default=0)
        if turns > 1:
            for k in range(turns):
                out[f"turn_{k + 1}"] = mean(
                    [v[k] for v in values if len(v) > k and v[k] is not None]
                )
        return out


WIN, TIE, LOSS = 1.0, 0.5, 0.0


def swap_rule(first: str | None, second: str | None) -> tuple[float | None, bool]:
    """MT-Bench's rule for one pair: ``first`` is the verdict with the candidate as A,
    ``second`` with the candidate as B (each ``A``, ``B``, ``C`` for a tie, or None).
    Returns (the candidate's outcome: 1 win, 0.5 tie, 0 loss, None when either verdict is
    invalid; whether the verdict changed with the order)."""
    if first is None or second is None:
        return None, False
    candidate_first = {"A": WIN, "B": LOSS, "C": TIE}[first]
    candidate_second = {"B": WIN, "A": LOSS, "C": TIE}[second]
    if candidate_first != candidate_second:
        return TIE, True
    return candidate_first, False


class PairwiseWinRate(JudgedMetric):
    """win_rate = (wins + ties / 2) / n over every valid (doc, turn) pair against the
    doc's baseline answer, each pair judged in both orders under MT-Bench's swap rule
    (:func:`swap_rule`); the stderr by bootstrap over docs, ``ci_low``/``ci_high`` the
    percentile 95% bootstrap interval, ``position_bias`` the share of valid pairs whose
    verdict changed with the order, ``n_invalid`` the invalid judgments."""

    name = "win_rate"
    default_patterns = VERDICT_PATTERNS
    sample_reply = "Verdict: [[A]]"
    what = "verdict"
    required: ClassVar[dict[str, set[str]]] = rubric_fields(("answer_a", "answer_b"))

    def check_doc(self, doc: Doc) -> str | None:
        if len(baseline(doc)) < len(questions(doc)):
            return (
                f"doc {doc.id} of task {doc.task!r} has no baseline answer for every turn; "
                "a pairwise metric needs the baseline's answers ('baseline' in each row)"
            )
        return super().check_doc(doc)

    def parse(self, text: str) -> str | None:
        found = _first_match(self.patterns, text)
        return found if found in ("A", "B", "C") else None

    def judge_prompts(self, doc: Doc, answers: Sequence[str]) -> list[JudgePrompt]:
        base = baseline(doc)
        out = []
        for turn in range(len(answers)):
            template, ref = self._template(doc, turn)
            for key, a, b in (("ab", answers, base), ("ba", base, answers)):
                fields = _turn_fields(doc, turn, ref, {"answer_a": a, "answer_b": b})
                out.append(
                    JudgePrompt(f"t{turn + 1}/{key}", template.render(fields), template.name)
                )
        return out

    def fold(self, judgments: list[Any]) -> tuple[Any, ...]:
        """Per turn: (outcome or None, order-dependent, n invalid verdicts)."""
        pairs = zip(judgments[0::2], judgments[1::2], strict=True)
        out = []
        for first, second in pairs:
            outcome, changed = swap_rule(first, second)
            out.append((outcome, changed, int(first is None) + int(second is None)))
        return tuple(out)

    def aggregate(self, values: Sequence[Any]) -> float:
        return mean([o for v in values for o, _, _ in v if o is not None])

    def stderr(self, values: Sequence[Any], *, iters: int, seed: int) -> float | None:
        return bootstrap_stderr(list(values), self.aggregate, iters=iters, seed=seed)

    def details(self, values: Sequence[Any], *, iters: int, seed: int) -> dict[str, Any]:
        valid = [(o, c) for v in values for o, c, _ in v if o is not None]
        low, high = bootstrap_ci(list(values), self.aggregate, iters=iters, seed=seed)
        return {
            "n_invalid": sum(n for v in values for _, _, n in v),
            "ci_low": low,
            "ci_high": high,
            "position_bias": mean([float(c) for _, c in valid]),
            "wins": sum(1 for o, _ in valid if o == WIN),
            "ties": sum(1 for o, _ in valid if o == TIE),
            "losses": sum(1 for o, _ in valid if o == LOSS),
        }


def baseline(doc: Doc) -> list[str]:
    """The baseline's answers of ``doc`` (``baseline`` of its row), one per turn."""
    base = doc.item.get("baseline") or []
    return [str(b) for b in base]


ARENA_PATTERNS = (r"\[\[([AB<>=]+)\]\]", r"\[([AB<>=]+)\]")
"""Arena-Hard v0.1's ``regex_patterns`` (``config/arena-hard-v0.1.yaml``)."""


def arena_label_scores(weight: int = 3) -> dict[str, tuple[float, ...]]:
    """Arena-Hard's ``label_to_score`` (``show_result.py``): a label's battles, each 1 when
    assistant A wins, 0 when B wins, 0.5 a tie; a strong label counts ``weight`` battles."""
    strong, win, tie, loss = (1.0,) * weight, (1.0,), (0.5,), (0.0,)
    strong_loss = (0.0,) * weight
    return {
        "A>B": win, "A>>B": strong, "A=B": tie, "A<<B": strong_loss, "A<B": loss,
        "B>A": loss, "B>>A": strong_loss, "B=A": tie, "B<<A": strong, "B<A": win,
    }  # fmt: skip


ARENA_LABELS = tuple(arena_label_scores())
"""The ten labels Arena-Hard's ``show_result.py`` maps."""


def arena_verdict(patterns: Sequence[re.Pattern[str]], text: str) -> str | None:
    """Arena-Hard's ``get_score``: the reply upper-cased; the first pattern with a non-empty
    match decides, and its *last* match is the verdict (newlines stripped)."""
    upper = text.upper()
    for regex in patterns:
        found = [m for m in regex.findall(upper) if m]
        if found:
            return str(found[-1]).strip("\n")
    return None


def check_arena_patterns(patterns: Sequence[re.Pattern[str]]) -> None:
    """Refuse patterns that cannot read every one of Arena-Hard's labels back."""
    for label in ARENA_LABELS:
        if arena_verdict(patterns, f"My final verdict is [[{label}]]") != label:
            raise ConfigError(
                f"Arena-Hard's patterns {[p.pattern for p in patterns]} cannot read the label "
                f"{label!r} from 'My final verdict is [[{label}]]'; fix the metric's patterns"
            )


def arena_game_scores(
    game1: str, game2: str, table: Mapping[str, tuple[float, ...]]
) -> tuple[float, ...]:
    """One question's battles as Arena-Hard's ``load_judgments`` builds them: game 2's
    scores (the candidate as A) then 1 - game 1's (the baseline as A)."""
    return (*table[game2], *(1 - s for s in table[game1]))


def arena_bootstrap(battles: Sequence[float], rounds: int, seed: int) -> list[float]:
    """The mean of ``battles`` over ``rounds`` resamples with replacement, drawn as pandas'
    ``sample(frac=1.0, replace=True)`` draws them from numpy's legacy generator (Arena-Hard's
    ``print_leaderboard``; seeded here)."""
    values = np.asarray(battles, dtype=float)
    if not len(values):
        return []
    state = np.random.RandomState(seed)
    n = len(values)
    return [float(values[state.choice(n, size=n, replace=True)].mean()) for _ in range(rounds)]


def arena_interval(score: float, low: float, high: float) -> str:
    """Arena-Hard's ``CI (%)`` column: ``(-x / +y)`` in percent, one decimal."""
    return f"(-{round((score - low) * 100, 1)} / +{round((high - score) * 100, 1)})"


class ArenaHardScore(JudgedMetric):
    """Arena-Hard-Auto's score as its ``show_result.py`` computes it (lmarena/arena-hard-auto
    196f6b82): every question judged twice, the baseline as assistant A (game 1) then as B
    (game 2); a verdict is the last match of the first pattern that matches (``get_score``)
    and one of its ten labels; a question either of whose games has no such verdict is
    dropped (both games counted in ``n_invalid``). The kept questions' battles (a strong
    label ``weight`` battles, ties half; :func:`arena_label_scores`) are resampled
    ``rounds`` times with replacement; the score is the mean of the resamples' means in
    percent, ``ci_low``/``ci_high`` their 5% and 95% quantiles (percent) and ``interval``
    Arena-Hard's ``(-x / +y)``. The resamples are numpy's legacy draws seeded by
    ``runner.seed`` (Arena-Hard leaves them unseeded); stderr: their standard deviation.
    ``position_bias``: the share of kept questions whose two verdicts favour the same
    position."""

    name = "arena_hard_score"
    default_patterns = ARENA_PATTERNS
    sample_reply = "My final verdict is [[A>B]]"
    what = "verdict"
    required: ClassVar[dict[str, set[str]]] = {"single": {"QUESTION", "ANSWER_A", "ANSWER_B"}}
    run_seed: int = 1234
    """Set from ``runner.seed`` when the run builds its metrics."""

    def __init__(
        self,
        *args: Any,
        weight: int = 3,
        rounds: int = 100,
        judge_generation: Mapping[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.weight = int(weight)
        self.rounds = int(rounds)
        self.table = arena_label_scores(self.weight)
        check_arena_patterns(self.patterns)
        self.judge_generation = dict(judge_generation or {})
        unknown = set(self.judge_generation) - set(GenerationArgs.__dataclass_fields__)
        if unknown:
            raise ConfigError(
                f"metric {self.name!r}: judge_generation has unknown keys {sorted(unknown)}; "
                "use max_gen_toks, do_sample, temperature"
            )

    def check_doc(self, doc: Doc) -> str | None:
        if not baseline(doc):
            return (
                f"doc {doc.id} of task {doc.task!r} has no baseline answer; Arena-Hard "
                "judges against the baseline's answers"
            )
        return None

    def parse(self, text: str) -> str | None:
        verdict = arena_verdict(self.patterns, text)
        return verdict if verdict in self.table else None

    def judge_prompts(self, doc: Doc, answers: Sequence[str]) -> list[JudgePrompt]:
        template = self.templates["single"]
        question, base = questions(doc)[0], baseline(doc)[0]
        return [
            JudgePrompt(
                key,
                template.render({"QUESTION": question, "ANSWER_A": a, "ANSWER_B": b}),
                template.name,
            )
            for key, a, b in (("g1", base, answers[0]), ("g2", answers[0], base))
        ]

    def fold(self, judgments: list[Any]) -> tuple[Any, ...]:
        """(battles, same position favoured twice, n invalid); a question with an invalid
        game has no battles and counts both games invalid."""
        first, second = judgments
        if first is None or second is None:
            return ((), False, 2)
        a_first, a_second = self.table[first][0], self.table[second][0]  # 1: A won
        biased = TIE not in (a_first, a_second) and a_first == a_second
        return (arena_game_scores(first, second, self.table), biased, 0)

    def _rounds(self, values: Sequence[Any]) -> list[float]:
        return arena_bootstrap([b for v in values for b in v[0]], self.rounds, self.run_seed)

    def aggregate(self, values: Sequence[Any]) -> float:
        means = self._rounds(values)
        return 100 * float(np.mean(means)) if means else math.nan

    def stderr(self, values: Sequence[Any], *, iters: int, seed: int) -> float | None:
        means = self._rounds(values)
        return 100 * float(np.std(means, ddof=1)) if len(means) > 1 else None

    def details(self, values: Sequence[Any], *, iters: int, seed: int) -> dict[str, Any]:
        means = self._rounds(values)
        kept = [v for v in values if v[2] == 0]
        out: dict[str, Any] = {
            "n_invalid": sum(v[2] for v in values),
            "dropped_questions": len(values) - len(kept),
            "battles": sum(len(v[0]) for v in values),
            "position_bias": mean([float(v[1]) for v in kept]),
        }
        if means:
            score = float(np.mean(means))
            low, high = (float(q) for q in np.quantile(means, [0.05, 0.95]))
            out.update(
                ci_low=100 * low, ci_high=100 * high, interval=arena_interval(score, low, high)
            )
        return out
