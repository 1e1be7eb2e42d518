# ruff: noqa: E501 (a table: one case a line)
"""Responses of our own on each instruction type's boundary: (id, kwargs, response, followed
strict). tests/ifeval/test_checks.py checks Mill's verdicts; the parity test checks that
lm-eval 0.4.13's copy of the reference gives the same ones."""

from __future__ import annotations

from typing import Any

WORDS_300 = " ".join(["word"] * 300)
SIX = "One. Two. Three. Four. Five. Six."

CASES: list[tuple[str, dict[str, Any], str, bool]] = [
    # words: exactly on the threshold
    ("length_constraints:number_words", {"relation": "at least", "num_words": 300}, WORDS_300, True),
    ("length_constraints:number_words", {"relation": "at least", "num_words": 301}, WORDS_300, False),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 300}, WORDS_300, False),
    ("length_constraints:number_words", {"relation": "less than", "num_words": 301}, WORDS_300, True),
    # hyphens and apostrophes split words (\w+ runs)
    ("length_constraints:number_words", {"relation": "at least", "num_words": 4}, "well-known it's", True),
    # sentences: Punkt keeps "Dr." inside a sentence, ends one after "e.g." before a lower-case word
    ("length_constraints:number_sentences", {"relation": "at least", "num_sentences": 6}, SIX, True),
    ("length_constraints:number_sentences", {"relation": "less than", "num_sentences": 6}, SIX, False),
    ("length_constraints:number_sentences", {"relation": "less than", "num_sentences": 2}, "Dr. Smith went home by bus.", True),
    ("length_constraints:number_sentences", {"relation": "less than", "num_sentences": 2}, "Dr. Smith went home, e.g. by bus.", False),
    # paragraphs divided by ***; an empty one between dividers fails
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "One\n***\nTwo", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "***\nOne\n***\nTwo\n***", True),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "One\n***\n***\nTwo", False),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 3}, "One\n***\nTwo", False),
    # nth paragraph's first word, quotes and punctuation stripped, case-insensitive
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "Summer"}, "Intro.\n\n\"Summer, at last.\"", True),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 3, "nth_paragraph": 2, "first_word": "summer"}, "Intro.\n\nSummer.", False),
    ("length_constraints:nth_paragraph_first_word", {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "summer"}, "Intro.\n\nSummers.", False),
    # keywords: case-insensitive; forbidden words as whole words only
    ("keywords:existence", {"keywords": ["Kingdom", "sea"]}, "the KINGDOM by the Sea", True),
    ("keywords:existence", {"keywords": ["Kingdom", "sea"]}, "the kingdom", False),
    ("keywords:frequency", {"keyword": "lion", "frequency": 3, "relation": "at least"}, "Lion lion LION", True),
    ("keywords:frequency", {"keyword": "lion", "frequency": 3, "relation": "less than"}, "Lion lion LION", False),
    ("keywords:forbidden_words", {"forbidden_words": ["cat"]}, "concatenate the catalogue", True),
    ("keywords:forbidden_words", {"forbidden_words": ["cat"]}, "a Cat sat", False),
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 3, "let_relation": "at least"}, "Q q q", True),
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 3, "let_relation": "less than"}, "Q q q", False),
    # language
    ("language:response_language", {"language": "de"}, "Das ist ein kurzer Satz auf Deutsch, der nichts bedeutet.", True),
    ("language:response_language", {"language": "en"}, "Das ist ein kurzer Satz auf Deutsch, der nichts bedeutet.", False),
    # placeholders, postscript (marker on the last line, mixed case)
    ("detectable_content:number_placeholders", {"num_placeholders": 2}, "Dear [name], at [address].", True),
    ("detectable_content:number_placeholders", {"num_placeholders": 3}, "Dear [name], at [address].", False),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body text.\np.s. see you", True),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"}, "Body text.\nP. P. S. see you", True),
    ("detectable_content:postscript", {"postscript_marker": "P.S."}, "Body text. PS see you", False),
    # bullets: * and - lines, exactly N
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n- two", True),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n* two\n* three", False),
    ("detectable_format:number_bullet_lists", {"num_bullets": 1}, "* one\n**bold** line", True),
    ("detectable_format:constrained_response", {}, "  My answer is maybe.  ", True),
    ("detectable_format:constrained_response", {}, "my answer is yes.", False),
    # highlights: *x* and **x** both count; empty ones do not
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and *two*", True),
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2}, "*one* and ** **", False),
    ("detectable_format:multiple_sections", {"section_spliter": "Section", "num_sections": 2}, "Section 1\na\nSection 2\nb", True),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2}, "SECTION 1\na", False),
    # JSON, bare and inside a fence
    ("detectable_format:json_format", {}, '{"a": 1}', True),
    ("detectable_format:json_format", {}, '```json\n{"a": 1}\n```', True),
    ("detectable_format:json_format", {}, 'Here it is: {"a": 1}', False),
    ("detectable_format:title", {}, "<<A Title>>\ntext", True),
    ("detectable_format:title", {}, "<< >>\ntext", False),
    ("combination:two_responses", {}, "First answer\n******\nSecond answer", True),
    ("combination:two_responses", {}, "Same\n******\nSame", False),
    ("combination:two_responses", {}, "a\n******\n\n******\nb", False),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "write a poem. Roses are red.", True),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem."}, "Sure! Write a poem.", False),
    # end phrase: trailing space and closing quote allowed, case-insensitive; nothing after
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Done. any other questions? ", True),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, '"Done. Any other questions?"', True),
    ("startend:end_checker", {"end_phrase": "Any other questions?"}, "Any other questions? Bye", False),
    ("startend:quotation", {}, ' "quoted" ', True),
    ("startend:quotation", {}, '"', False),
    # capitals: word tokens that are upper case
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"}, "THE END is NEAR", True),
    ("change_case:capital_word_frequency", {"capital_frequency": 3, "capital_relation": "less than"}, "THE END is NEAR", False),
    ("change_case:english_capital", {}, "THIS IS AN ENGLISH SENTENCE ABOUT THE WEATHER TODAY.", True),
    ("change_case:english_capital", {}, "THIS IS AN ENGLISH SENTENCE ABOUT THE Weather TODAY.", False),
    ("change_case:english_lowercase", {}, "this is an english sentence about the weather today.", True),
    ("change_case:english_lowercase", {}, "This is an english sentence about the weather today.", False),
    ("punctuation:no_comma", {}, "No commas here.", True),
    ("punctuation:no_comma", {}, "One, two.", False),
]  # fmt: skip

LOOSE_CASES: list[tuple[str, dict[str, Any], str, bool, bool]] = [
    # (id, kwargs, response, strict, loose): a first line or asterisks the loose variants drop
    ("startend:quotation", {}, 'Sure, here it is:\n"quoted"', False, True),
    ("punctuation:no_comma", {}, "Sure, here:\nno commas here", False, True),
    ("change_case:english_lowercase", {}, "**this is an english sentence about the weather**", True, True),
    ("detectable_format:json_format", {}, 'Here:\n{"a": 1}\nDone', False, True),
    ("startend:end_checker", {"end_phrase": "The end."}, "Story. The end.\nThanks", False, True),
    ("detectable_format:title", {}, "no title", False, False),
]  # fmt: skip
