"""IFEval's 25 verifiable instructions (Zhou et al. 2023), checked as Google's reference
checker checks them, and the strict and loose verdicts of a response.

An instruction is an id (``punctuation:no_comma``) and its keyword arguments
(``{"relation": "at least", "num_words": 300}``); :func:`instruction` validates them and
returns the check, a function of the response. Where the reference draws a random value
for an argument that is missing or outside its range, Mill refuses the row instead
(:class:`BadInstruction`: one line naming the row's instruction and what to fix), with one
deliberate difference: ``keywords:letter_frequency`` counts the character it is given even
when it is not a letter a-z (the reference replaces such a character with a random letter;
prompt 1122 asks for ``#``; docs/ifeval.md).

:func:`verdicts` follows the reference's protocol: strict, the response as it is; loose,
any of 8 variants of it (the first line removed, the last, both; each also with every
``*`` removed). An empty (or all-space) response follows no instruction.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mill.errors import TaskError
from mill.ifeval import text

Check = Callable[[str], bool]

RELATIONS = ("less than", "at least")
"""The comparisons a count instruction names: fewer than N, or N and more."""

CONSTRAINED_ANSWERS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")

LANGUAGES = {
    "en": "English", "es": "Spanish", "pt": "Portuguese", "ar": "Arabic", "hi": "Hindi",
    "fr": "French", "ru": "Russian", "de": "German", "ja": "Japanese", "it": "Italian",
    "bn": "Bengali", "uk": "Ukrainian", "th": "Thai", "ur": "Urdu", "ta": "Tamil",
    "te": "Telugu", "bg": "Bulgarian", "ko": "Korean", "pl": "Polish", "he": "Hebrew",
    "fa": "Persian", "vi": "Vietnamese", "ne": "Nepali", "sw": "Swahili", "kn": "Kannada",
    "mr": "Marathi", "gu": "Gujarati", "pa": "Punjabi", "ml": "Malayalam", "fi": "Finnish",
}  # fmt: skip
"""The response languages an instruction may name (ISO 639-1, as ``langdetect`` reports)."""


class BadInstruction(TaskError):
    """An instruction id that IFEval does not define, or arguments that do not fit it."""


def _compare(count: int, relation: str, threshold: int) -> bool:
    return count < threshold if relation == "less than" else count >= threshold


# ----- the checks: each takes the response, then the instruction's arguments ----------------


def _keywords_present(response: str, keywords: list[str]) -> bool:
    return all(re.search(k, response, flags=re.IGNORECASE) for k in keywords)


def _keyword_count(response: str, keyword: str, frequency: int, relation: str) -> bool:
    found = re.findall(keyword.strip(), response, flags=re.IGNORECASE)
    return _compare(len(found), relation, frequency)


def _no_forbidden(response: str, forbidden_words: list[str]) -> bool:
    return not any(re.search(rf"\b{w}\b", response, flags=re.IGNORECASE) for w in forbidden_words)


def _letter_count(response: str, letter: str, let_frequency: int, let_relation: str) -> bool:
    counts = Counter(response.lower())
    return _compare(counts[letter.strip().lower()], let_relation, let_frequency)


def _in_language(response: str, language: str) -> bool:
    try:
        return text.language(response) == language
    except text.UnknownLanguage:
        return True  # the reference counts an undetectable language as followed


def _sentence_count(response: str, num_sentences: int, relation: str) -> bool:
    return _compare(len(text.sentences(response)), relation, num_sentences)


def _divided_paragraphs(response: str, num_paragraphs: int) -> bool:
    parts = re.split(r"\s?\*\*\*\s?", response)
    empty = [i for i, part in enumerate(parts) if not part.strip()]
    if any(0 < i < len(parts) - 1 for i in empty):
        return False  # an empty paragraph between two dividers
    return len(parts) - len(empty) == num_paragraphs


def _word_count(response: str, num_words: int, relation: str) -> bool:
    return _compare(text.count_words(response), relation, num_words)


PUNCTUATION_ENDS = frozenset(".,?!'\"")


def _nth_paragraph_starts(
    response: str, num_paragraphs: int, nth_paragraph: int, first_word: str
) -> bool:
    parts = response.split("\n\n")
    count = sum(1 for part in parts if part.strip())
    if nth_paragraph > count:
        return False
    paragraph = parts[nth_paragraph - 1].strip()  # counted among all parts, empty or not
    if not paragraph:
        return False
    word = paragraph.split()[0].strip().lstrip("'").lstrip('"')
    head = ""
    for char in word:
        if char in PUNCTUATION_ENDS:
            break
        head += char.lower()
    return count == num_paragraphs and head == first_word.lower()


def _placeholders(response: str, num_placeholders: int) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= num_placeholders


def _postscript(response: str, postscript_marker: str) -> bool:
    marker = postscript_marker.strip()
    if marker == "P.P.S":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "P.S.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + marker.lower() + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


def _bullets(response: str, num_bullets: int) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == num_bullets


def _constrained(response: str) -> bool:
    stripped = response.strip()
    return any(answer in stripped for answer in CONSTRAINED_ANSWERS)


def _highlights(response: str, num_highlights: int) -> bool:
    single = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    double = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response) if h[2:-2].strip()]
    return len(single) + len(double) >= num_highlights


def _sections(response: str, section_spliter: str, num_sections: int) -> bool:
    splitter = r"\s?" + section_spliter.strip() + r"\s?\d+\s?"
    return len(re.split(splitter, response)) - 1 >= num_sections


JSON_FENCES = ("```json", "```Json", "```JSON", "```")


def _json(response: str) -> bool:
    body = response.strip()
    for fence in JSON_FENCES:  # each opening form removed in turn, as the reference does
        body = body.removeprefix(fence)
    body = body.removesuffix("```").strip()
    try:
        json.loads(body)
    except ValueError:
        return False
    return True


def _title(response: str) -> bool:
    titles = re.findall(r"<<[^\n]+>>", response)
    return any(t.lstrip("<").rstrip(">").strip() for t in titles)


def _two_responses(response: str) -> bool:
    parts = response.split("******")
    kept = []
    for i, part in enumerate(parts):
        if part.strip():
            kept.append(part)
        elif 0 < i < len(parts) - 1:
            return False
    return len(kept) == 2 and kept[0].strip() != kept[1].strip()


def _repeats_prompt(response: str, prompt_to_repeat: str) -> bool:
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


def _ends_with(response: str, end_phrase: str) -> bool:
    return response.strip().strip('"').lower().endswith(end_phrase.strip().lower())


def _capital_words(response: str, capital_frequency: int, capital_relation: str) -> bool:
    count = sum(1 for token in text.word_tokens(response) if token.isupper())
    return _compare(count, capital_relation, capital_frequency)


def _english_and(case: Callable[[str], bool]) -> Check:
    def check(response: str) -> bool:
        if not case(response):
            return False
        try:
            return text.language(response) == "en"
        except text.UnknownLanguage:
            return True  # as the reference

    return check


def _no_comma(response: str) -> bool:
    return "," not in response


def _quoted(response: str) -> bool:
    stripped = response.strip()
    return len(stripped) > 1 and stripped[0] == '"' and stripped[-1] == '"'


# ----- the table of instructions -------------------------------------------------------------

INT = "a whole number"
STR = "a string"
STRS = "a list of strings"
RELATION = f"one of {list(RELATIONS)}"


@dataclass(frozen=True)
class Kind:
    """One instruction type: its check and the arguments it takes (name -> kind)."""

    check: Callable[..., bool]
    arguments: Mapping[str, str]


KINDS: dict[str, Kind] = {
    "keywords:existence": Kind(_keywords_present, {"keywords": STRS}),
    "keywords:frequency": Kind(
        _keyword_count, {"keyword": STR, "frequency": INT, "relation": RELATION}
    ),
    "keywords:forbidden_words": Kind(_no_forbidden, {"forbidden_words": STRS}),
    "keywords:letter_frequency": Kind(
        _letter_count, {"letter": "one character", "let_frequency": INT, "let_relation": RELATION}
    ),
    "language:response_language": Kind(_in_language, {"language": "a language code"}),
    "length_constraints:number_sentences": Kind(
        _sentence_count, {"num_sentences": INT, "relation": RELATION}
    ),
    "length_constraints:number_paragraphs": Kind(_divided_paragraphs, {"num_paragraphs": INT}),
    "length_constraints:number_words": Kind(_word_count, {"num_words": INT, "relation": RELATION}),
    "length_constraints:nth_paragraph_first_word": Kind(
        _nth_paragraph_starts, {"num_paragraphs": INT, "nth_paragraph": INT, "first_word": STR}
    ),
    "detectable_content:number_placeholders": Kind(_placeholders, {"num_placeholders": INT}),
    "detectable_content:postscript": Kind(_postscript, {"postscript_marker": STR}),
    "detectable_format:number_bullet_lists": Kind(_bullets, {"num_bullets": INT}),
    "detectable_format:constrained_response": Kind(_constrained, {}),
    "detectable_format:number_highlighted_sections": Kind(_highlights, {"num_highlights": INT}),
    "detectable_format:multiple_sections": Kind(
        _sections, {"section_spliter": STR, "num_sections": INT}
    ),
    "detectable_format:json_format": Kind(_json, {}),
    "detectable_format:title": Kind(_title, {}),
    "combination:two_responses": Kind(_two_responses, {}),
    "combination:repeat_prompt": Kind(_repeats_prompt, {"prompt_to_repeat": STR}),
    "startend:end_checker": Kind(_ends_with, {"end_phrase": STR}),
    "change_case:capital_word_frequency": Kind(
        _capital_words, {"capital_frequency": INT, "capital_relation": RELATION}
    ),
    "change_case:english_capital": Kind(_english_and(str.isupper), {}),
    "change_case:english_lowercase": Kind(_english_and(str.islower), {}),
    "punctuation:no_comma": Kind(_no_comma, {}),
    "startend:quotation": Kind(_quoted, {}),
}
"""The 25 instruction types of IFEval's 541 prompts."""


def _fits(kind: str, value: Any) -> bool:
    if kind == INT:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    if kind == RELATION:
        return value in RELATIONS
    if kind == STRS:
        return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)
    if kind == "one character":
        return isinstance(value, str) and len(value.strip()) == 1
    if kind == "a language code":
        return value in LANGUAGES
    return isinstance(value, str) and bool(value.strip())


def instruction(instruction_id: str, kwargs: Mapping[str, Any] | None) -> Check:
    """The check of one instruction with its arguments (keys whose value is None are
    absent: the hub's rows list every key of every instruction); :class:`BadInstruction`
    for an unknown id or arguments that do not fit it."""
    kind = KINDS.get(instruction_id)
    if kind is None:
        raise BadInstruction(
            f"unknown IFEval instruction {instruction_id!r}; use one of the 25 ids "
            "(docs/ifeval.md), e.g. 'punctuation:no_comma'"
        )
    given = {k: v for k, v in (kwargs or {}).items() if v is not None}
    expected = dict(kind.arguments)
    wants = ", ".join(f"{k} ({v})" for k, v in expected.items()) or "no arguments"
    unknown = sorted(set(given) - set(expected))
    missing = sorted(set(expected) - set(given))
    if unknown or missing:
        what = f"unknown {unknown}" if unknown else f"missing {missing}"
        raise BadInstruction(f"instruction {instruction_id!r}: kwargs {what}; it takes {wants}")
    for name, value in given.items():
        if not _fits(expected[name], value):
            raise BadInstruction(
                f"instruction {instruction_id!r}: {name}={value!r} is not {expected[name]}"
            )
    if instruction_id == "length_constraints:nth_paragraph_first_word" and not (
        1 <= given["nth_paragraph"] <= given["num_paragraphs"]
    ):
        raise BadInstruction(
            f"instruction {instruction_id!r}: nth_paragraph={given['nth_paragraph']} is not "
            f"between 1 and num_paragraphs={given['num_paragraphs']}"
        )

    def check(response: str) -> bool:
        return bool(kind.check(response, **given))

    return check


def loose_variants(response: str) -> list[str]:
    """The 8 texts the loose verdict tries: the response, without its first line, its last
    line, both; each also with every ``*`` removed."""
    lines = response.split("\n")
    cut = [
        response,
        "\n".join(lines[1:]).strip(),
        "\n".join(lines[:-1]).strip(),
        "\n".join(lines[1:-1]).strip(),
    ]
    return cut + [t.replace("*", "") for t in cut]


@dataclass(frozen=True)
class Verdicts:
    """Whether a response follows each instruction of its prompt, strict and loose."""

    strict: tuple[bool, ...]
    loose: tuple[bool, ...]


def checks(
    instruction_ids: Sequence[str], kwargs: Sequence[Mapping[str, Any] | None]
) -> list[Check]:
    """The checks of a prompt's instructions (:func:`instruction` for each)."""
    if len(instruction_ids) != len(kwargs):
        raise BadInstruction(
            f"{len(instruction_ids)} instruction ids but {len(kwargs)} kwargs; give one "
            "kwargs object per instruction"
        )
    return [instruction(i, k) for i, k in zip(instruction_ids, kwargs, strict=True)]


def verdicts(response: str, prompt_checks: Sequence[Check]) -> Verdicts:
    """Strict and loose verdicts of ``response`` on each check."""
    variants = [v for v in loose_variants(response) if v.strip()]
    followed = bool(response.strip())
    return Verdicts(
        strict=tuple(followed and check(response) for check in prompt_checks),
        loose=tuple(any(check(v) for v in variants) for check in prompt_checks),
    )
