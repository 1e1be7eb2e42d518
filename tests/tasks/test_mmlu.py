"""MMLU: 57 subjects, lm-eval's prompt, dev shots first_n, local CSVs adapted in loading."""

from __future__ import annotations

import pytest
from mill.tasks.mmlu import CATEGORIES, MMLU, SUBJECT_CATEGORIES

from mill.data.load import DataSource
from tests.helpers import SHARED

BUNDLED = DataSource("bundled")


def test_subjects_and_categories_match_lm_eval() -> None:
    assert len(SUBJECT_CATEGORIES) == 57
    counts = {c: sum(v == c for v in SUBJECT_CATEGORIES.values()) for c in CATEGORIES}
    assert counts == {"stem": 19, "other": 13, "social_sciences": 12, "humanities": 13}
    groups = MMLU().subject_groups()
    assert list(groups) == [
        "mmlu_stem",
        "mmlu_other",
        "mmlu_social_sciences",
        "mmlu_humanities",
        "mmlu",
    ]
    assert len(groups["mmlu"]) == 57
    assert MMLU(subjects=["anatomy"]).subject_groups() == {
        "mmlu_stem": ["anatomy"],
        "mmlu": ["anatomy"],
    }


def test_prompt_is_lm_eval_default_with_first_n_dev_shots() -> None:
    task = MMLU(num_fewshot=5, fewshot_sampler="first_n", subjects=["abstract_algebra"], limit=1)
    (doc,) = list(task.docs(BUNDLED))
    assert doc.context.startswith(
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
        "Find all c in Z_3 such that Z_3[x]/(x^2 + c) is a field.\nA. 0\nB. 1\nC. 2\nD. 3\n"
        "Answer: B\n\n"
    )
    assert doc.context.endswith(
        "Find the degree for the given field extension Q(sqrt(2), sqrt(3), sqrt(18)) over Q."
        "\nA. 0\nB. 4\nC. 2\nD. 6\nAnswer:"
    )
    assert doc.fewshot_ids == (0, 1, 2, 3, 4) and doc.choices == ("A", "B", "C", "D")
    assert doc.gold == 1 and doc.subject == "abstract_algebra"
    assert [r.continuation for r in task.requests(doc)] == [" A", " B", " C", " D"]


def test_bundled_covers_every_subject() -> None:
    docs = list(MMLU(limit=2).docs(BUNDLED))
    assert {d.subject for d in docs} == set(SUBJECT_CATEGORIES) and len(docs) == 114


@pytest.mark.skipif(not (SHARED / "data" / "mmlu").is_dir(), reason="needs ../shared/data")
def test_local_csv_export_loads_as_text() -> None:
    local = DataSource("local", str(SHARED / "data"))
    docs = list(MMLU(subjects=["high_school_computer_science", "anatomy"]).docs(local))
    assert len(docs) == 100 + 135
    # every choice stays text (no int/float/NaN guessing by the CSV reader)
    assert all(isinstance(c, str) for d in docs for c in d.item["choices"])
