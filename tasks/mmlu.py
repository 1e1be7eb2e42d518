"""MMLU (Hendrycks et al. 2021), 57 subjects; lm-eval 0.4.13 ``mmlu`` default prompt.

Hub: ``cais/mmlu`` (one config per subject; fields ``question``, ``choices``, ``answer``).
Local files: the CSV export in ``../shared/data/mmlu`` (header
``question,choice0,choice1,choice2,choice3,answer``, answer 0-3), adapted here to the hub
schema. Few-shot examples are the first ``num_fewshot`` rows of the subject's ``dev`` split
(``first_n``, as lm-eval). Results are reported per subject, per category (lm-eval's four
groups) and overall, each micro (size-weighted) and macro.
"""

from __future__ import annotations

from typing import Any

from mill.data.load import DataSource
from mill.task import Task
from mill.types import OutputType

SUBJECT_CATEGORIES: dict[str, str] = {
    "abstract_algebra": "stem",
    "anatomy": "stem",
    "astronomy": "stem",
    "business_ethics": "other",
    "clinical_knowledge": "other",
    "college_biology": "stem",
    "college_chemistry": "stem",
    "college_computer_science": "stem",
    "college_mathematics": "stem",
    "college_medicine": "other",
    "college_physics": "stem",
    "computer_security": "stem",
    "conceptual_physics": "stem",
    "econometrics": "social_sciences",
    "electrical_engineering": "stem",
    "elementary_mathematics": "stem",
    "formal_logic": "humanities",
    "global_facts": "other",
    "high_school_biology": "stem",
    "high_school_chemistry": "stem",
    "high_school_computer_science": "stem",
    "high_school_european_history": "humanities",
    "high_school_geography": "social_sciences",
    "high_school_government_and_politics": "social_sciences",
    "high_school_macroeconomics": "social_sciences",
    "high_school_mathematics": "stem",
    "high_school_microeconomics": "social_sciences",
    "high_school_physics": "stem",
    "high_school_psychology": "social_sciences",
    "high_school_statistics": "stem",
    "high_school_us_history": "humanities",
    "high_school_world_history": "humanities",
    "human_aging": "other",
    "human_sexuality": "social_sciences",
    "international_law": "humanities",
    "jurisprudence": "humanities",
    "logical_fallacies": "humanities",
    "machine_learning": "stem",
    "management": "other",
    "marketing": "other",
    "medical_genetics": "other",
    "miscellaneous": "other",
    "moral_disputes": "humanities",
    "moral_scenarios": "humanities",
    "nutrition": "other",
    "philosophy": "humanities",
    "prehistory": "humanities",
    "professional_accounting": "other",
    "professional_law": "humanities",
    "professional_medicine": "other",
    "professional_psychology": "social_sciences",
    "public_relations": "social_sciences",
    "security_studies": "social_sciences",
    "sociology": "social_sciences",
    "us_foreign_policy": "social_sciences",
    "virology": "other",
    "world_religions": "humanities",
}
"""Subject -> category, as lm-eval's ``mmlu/_generate_configs.py``."""

CATEGORIES = ("stem", "other", "social_sciences", "humanities")
LETTERS = ("A", "B", "C", "D")
_CSV_COLUMNS = ("question", "choice0", "choice1", "choice2", "choice3", "answer")


class MMLU(Task):
    """``{question}\\nA. ..\\nB. ..\\nC. ..\\nD. ..\\nAnswer:`` scored against `` A``..`` D``,
    after the description "The following are multiple choice questions (with answers)
    about {subject}.\\n\\n"."""

    NAME = "mmlu"
    DATASET_PATH = "cais/mmlu"
    # pinned in Aleph-Alpha-Research/eval-framework's hf-dataset-revisions.json
    DATASET_REVISION = "c30699e8356da336a370243923dbaf21066bb9fe"
    LOCAL_FILES = {
        "test": "mmlu/test/{subject}_test.csv",
        "dev": "mmlu/dev/{subject}_dev.csv",
    }
    LOCAL_BUILDER = "csv"
    LOCAL_TEXT_COLUMNS = _CSV_COLUMNS  # as text: no number/NaN guessing ("None", "0.50")
    SAMPLE_SPLIT = "test"
    FEWSHOT_SPLIT = "dev"
    SUBJECTS = list(SUBJECT_CATEGORIES)
    OUTPUT_TYPE = OutputType.LOGPROBS
    METRICS = ["acc"]

    def load_split(self, split: str, source: DataSource, subject: str) -> list[dict[str, Any]]:
        return [{**row, "subject": subject} for row in super().load_split(split, source, subject)]

    def adapt_local_row(self, row: dict[str, Any]) -> dict[str, Any]:
        return {
            "question": row["question"],
            "choices": [row[f"choice{i}"] for i in range(4)],
            "answer": int(row["answer"]),
        }

    def doc_to_description(self, item: dict[str, Any]) -> str:
        subject = " ".join(item["subject"].split("_"))
        return f"The following are multiple choice questions (with answers) about {subject}.\n\n"

    def doc_to_text(self, item: dict[str, Any]) -> str:
        c = item["choices"]
        return f"{item['question'].strip()}\nA. {c[0]}\nB. {c[1]}\nC. {c[2]}\nD. {c[3]}\nAnswer:"

    def doc_to_choice(self, item: dict[str, Any]) -> list[str]:
        return list(LETTERS)

    def doc_to_target(self, item: dict[str, Any]) -> str:
        return LETTERS[int(item["answer"])]

    def gold_index(self, item: dict[str, Any], choices: list[str]) -> int:
        return int(item["answer"])

    def subject_groups(self) -> dict[str, list[str]]:
        """Category groups and the overall group over the selected subjects (lm-eval's
        ``mmlu_stem`` ... and ``mmlu``)."""
        groups = {
            f"{self.name}_{category}": [
                s for s in self.subjects if SUBJECT_CATEGORIES[s] == category
            ]
            for category in CATEGORIES
        }
        groups = {name: members for name, members in groups.items() if members}
        groups[self.name] = list(self.subjects)
        return groups
