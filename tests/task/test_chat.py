"""Every task renders with and without a chat template (a real tokenizer's template)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.model.chat import tokenizer_chat_template
from mill.runner.build import build_tasks
from mill.types import OutputType
from tests.helpers import compose_config, make_chat_tokenizer

BUNDLED = DataSource("bundled")
TASKS = sorted(
    p.name.removesuffix(".yaml")
    for p in resources.files("mill.conf").joinpath("task").iterdir()
    # lm-eval's own renderer; tasks.yaml is task=[...] (its members are these tasks)
    if p.name.endswith(".yaml") and p.name not in ("lm_eval.yaml", "tasks.yaml")
)


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory):
    import transformers

    folder = make_chat_tokenizer(tmp_path_factory.mktemp("chat") / "tok")
    return tokenizer_chat_template(transformers.AutoTokenizer.from_pretrained(folder))


@pytest.fixture(scope="module")
def task_config():
    """A task's composed config (``task.limit=2``), composed once for both renderings
    (nothing here changes it)."""
    configs: dict[str, Any] = {}

    def get(name: str) -> Any:
        if name not in configs:
            configs[name] = compose_config(f"task={name}", "task.limit=2")
        return configs[name]

    return get


@pytest.mark.parametrize("multiturn", [True, False])
@pytest.mark.parametrize(
    "name",  # MMLU renders 57 subjects: seconds of compute, slow tier
    [pytest.param(t, marks=pytest.mark.slow) if t.startswith("mmlu") else t for t in TASKS],
)
def test_every_task_renders_plain_and_chat(task_config, chat, name: str, multiturn: bool) -> None:
    cfg = task_config(name)
    plain_tasks, _ = build_tasks(cfg.task, [])
    chat_tasks, _ = build_tasks(cfg.task, [])
    for plain_task, chat_task in zip(plain_tasks, chat_tasks, strict=True):
        chat_task.chat_template = True
        chat_task.fewshot_as_multiturn = multiturn
        chat_task.system_prompt = "Be brief."
        plain = list(plain_task.docs(BUNDLED))
        chatted = list(chat_task.docs(BUNDLED, chat=chat))
        assert plain and len(plain) == len(chatted)
        for p, c in zip(plain, chatted, strict=True):
            assert p.fewshot_ids == c.fewshot_ids and p.choices == c.choices
            if plain_task.OUTPUT_TYPE is OutputType.PERPLEXITY:
                assert c.context == p.context == "" and c.continuation == p.continuation
                continue
            assert "<|user|>" not in p.context
            for ctx in c.contexts or (c.context,):
                assert ctx.startswith("<s><|system|>\nBe brief.")
                # a task's gen_prefix (humaneval_instruct) starts the answer: continued
                prefix = chat_task.doc_to_prefix(c.item) or ""
                assert ctx.endswith("<|end|>\n<|assistant|>\n" + prefix)
                turns = ctx.count("<|user|>")
                assert turns == (len(c.fewshot_ids) + 1 if multiturn else 1)
            # the question itself is in both renderings (a judged task's plain-text
            # conversation ends with its "### Assistant:" cue, after the question)
            lines = [x for x in p.context.rstrip().splitlines() if not x.startswith("### ")]
            last_line = [x for x in lines if x][-1]
            assert last_line in c.context
            plain_reqs, chat_reqs = plain_task.requests(p), chat_task.requests(c)
            if plain_task.OUTPUT_TYPE is OutputType.LOGPROBS and name != "lambada_openai":
                # lm-eval drops the target delimiter when a chat template is applied
                assert [r.continuation for r in chat_reqs] == [
                    r.continuation.removeprefix(" ") for r in plain_reqs
                ]


def test_chat_template_needs_a_model_template() -> None:
    from mill.tasks.arc import ArcEasy

    with pytest.raises(TaskError, match="no chat template"):
        next(ArcEasy(chat_template=True, limit=1).docs(BUNDLED, chat=None))


def test_model_exposes_its_tokenizer_template(tmp_path: Path) -> None:
    from mill.model.hf import HFCausalLM

    source = resources.files("mill.resources").joinpath("models", "stories260k")
    folder = tmp_path / "model"
    folder.mkdir()
    for item in Path(str(source)).iterdir():
        (folder / item.name).write_bytes(item.read_bytes())
    assert HFCausalLM(str(folder), device="cpu").chat_template() is None
    make_chat_tokenizer(folder)
    template = HFCausalLM(str(folder), device="cpu").chat_template()
    assert template is not None
    assert template([{"role": "user", "content": "hi"}], True) == (
        "<s><|user|>\nhi<|end|>\n<|assistant|>\n"
    )
