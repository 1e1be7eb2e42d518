"""A ``transformers`` tokenizer's chat template as Mill's :data:`~mill.types.ChatTemplate`."""

from __future__ import annotations

from typing import Any

from mill.types import ChatTemplate


def tokenizer_chat_template(
    tokenizer: Any, template_kwargs: dict[str, Any] | None = None
) -> ChatTemplate | None:
    """The chat template of a ``transformers`` tokenizer as a :data:`ChatTemplate`, or None
    when it has none. As lm-eval's HF backend: ``continue_final_message`` is the opposite
    of ``add_generation_prompt``, and a template that rejects the system role is retried
    without the system message. ``template_kwargs`` are the template's own variables
    (``model.chat_template_kwargs``: ``enable_thinking`` of Qwen3-style templates)."""
    if not getattr(tokenizer, "chat_template", None):
        return None

    def render(turns: list[dict[str, str]], add_generation_prompt: bool) -> str:
        import jinja2

        kwargs = dict(
            **(template_kwargs or {}),
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=not add_generation_prompt,
        )
        try:
            return str(tokenizer.apply_chat_template(turns, **kwargs))
        except jinja2.exceptions.TemplateError:
            kept = [t for t in turns if t["role"] != "system"]
            return str(tokenizer.apply_chat_template(kept, **kwargs))

    return render
