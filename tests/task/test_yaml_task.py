"""Tasks written as YAML alone (fields + Jinja templates) behave like Python tasks."""

from __future__ import annotations

import pytest
from mill.tasks.gsm8k import GSM8K
from mill.tasks.winogrande import WinoGrande
from omegaconf import OmegaConf

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.instantiate import instantiate
from mill.task import YamlTask
from mill.types import OutputType

BUNDLED = DataSource("bundled")

GSM8K_YAML = """
_target_: mill.task.YamlTask
name: gsm8k
output_type: generative
dataset:
  path: openai/gsm8k
  name: main
  local_files: {test: gsm8k/test.jsonl, train: gsm8k/train.jsonl}
sample_split: test
fewshot_split: train
doc_to_text: "Question: {{question}}\\nAnswer:"
doc_to_target: "{{answer}}"
generation: {until: ["Question:", "</s>", "<|im_end|>"], max_gen_toks: 256}
metrics: [exact_match_strict, exact_match_flexible]
num_fewshot: 3
fewshot_sampler: first_n
limit: 4
"""


def test_yaml_gsm8k_equals_the_python_class() -> None:
    task = instantiate(OmegaConf.create(GSM8K_YAML), _convert_="all")
    assert isinstance(task, YamlTask) and task.OUTPUT_TYPE is OutputType.GENERATIVE
    python = GSM8K(num_fewshot=3, fewshot_sampler="first_n", limit=4)
    mine, theirs = list(task.docs(BUNDLED)), list(python.docs(BUNDLED))
    assert [d.context for d in mine] == [d.context for d in theirs]
    assert [d.gold for d in mine] == [d.gold for d in theirs]
    assert task.requests(mine[0]) == python.requests(theirs[0])
    assert task.METRICS == python.METRICS


def test_yaml_choices_from_a_literal_template_and_index_target() -> None:
    task = YamlTask(
        name="winogrande_yaml",
        doc_to_text="{{sentence}}",
        doc_to_choice="{{[option1, option2]}}",
        doc_to_target="{{ answer | int - 1 }}",
        description="Fill the blank.\n\n",
        dataset={"path": "allenai/winogrande", "local_files": {"test": "winogrande/dev.jsonl"}},
        limit=3,
    )
    docs = list(task.docs(BUNDLED))
    reference = list(WinoGrande(limit=3).docs(BUNDLED))
    assert [d.choices for d in docs] == [(r.item["option1"], r.item["option2"]) for r in reference]
    assert [d.gold for d in docs] == [r.gold for r in reference]
    assert docs[0].context == "Fill the blank.\n\n" + reference[0].item["sentence"]
    assert task.METRICS == ["acc", "acc_norm"]


def test_yaml_task_errors_name_the_field() -> None:
    common = dict(name="t", doc_to_text="{{q}}", doc_to_target="{{a}}")
    with pytest.raises(TaskError, match="output_type='mc'"):
        YamlTask(output_type="mc", doc_to_choice=["a"], **common)
    with pytest.raises(TaskError, match="needs doc_to_choice"):
        YamlTask(**common)
    with pytest.raises(TaskError, match="doc_to_text is not a valid template"):
        YamlTask(name="t", doc_to_text="{{q", doc_to_target="x", doc_to_choice=["a"])
    task = YamlTask(
        doc_to_choice="{{q}}", dataset={"path": "x", "local_files": {"test": "gsm8k/test.jsonl"}},
        name="t", doc_to_text="{{question}}", doc_to_target="0",
    )  # fmt: skip
    with pytest.raises(TaskError, match="doc_to_choice"):
        next(task.docs(BUNDLED))
