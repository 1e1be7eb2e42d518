"""The chat template as Mill renders it (:mod:`mill.model.chat`): the template's own
variables (``model.chat_template_kwargs``) reach it, and the identity records them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import transformers

from mill.model.chat import tokenizer_chat_template
from mill.model.hf import HFCausalLM

STORIES = Path(__file__).resolve().parents[2] / "mill" / "resources" / "models" / "stories260k"

# a Qwen3-style template: with enable_thinking false, the answer starts after an empty block
TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>"
    "{% if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n"
    "{% endif %}{% endif %}"
)


@pytest.fixture(scope="module")
def tokenizer() -> transformers.PreTrainedTokenizerBase:
    tok = transformers.AutoTokenizer.from_pretrained(str(STORIES))
    tok.chat_template = TEMPLATE
    return tok


def test_the_templates_variables_reach_it(tokenizer) -> None:
    turns = [{"role": "user", "content": "2+2?"}]
    thinking = tokenizer_chat_template(tokenizer)
    quiet = tokenizer_chat_template(tokenizer, {"enable_thinking": False})
    assert thinking is not None and quiet is not None
    assert thinking(turns, True) == "<|user|>2+2?\n<|assistant|>"
    assert quiet(turns, True) == "<|user|>2+2?\n<|assistant|><think>\n\n</think>\n\n"


def test_a_model_without_a_template_has_none(tokenizer) -> None:
    plain = transformers.AutoTokenizer.from_pretrained(str(STORIES))
    plain.chat_template = None
    assert tokenizer_chat_template(plain, {"enable_thinking": False}) is None


def test_the_model_passes_them_and_its_identity_records_them(tmp_path: Path) -> None:
    def model(**kwargs: Any) -> HFCausalLM:
        built = HFCausalLM(str(STORIES), device="cpu", **kwargs)
        built.tokenizer.chat_template = TEMPLATE
        return built

    quiet, plain = model(chat_template_kwargs={"enable_thinking": False}), model()
    assert quiet.identity()["chat_template_kwargs"] == {"enable_thinking": False}
    assert "chat_template_kwargs" not in plain.identity()  # older identities unchanged
    template = quiet.chat_template()
    assert template is not None
    assert template([{"role": "user", "content": "hi"}], True).endswith("</think>\n\n")
