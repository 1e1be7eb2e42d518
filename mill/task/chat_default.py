"""Tasks whose prompts go through the model's chat template by default (IFEval, the math
tasks: lighteval uses the template whenever the tokenizer has one)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

from mill.data.load import DataSource
from mill.task.base import Task
from mill.types import ChatTemplate, Doc

log = logging.getLogger("mill")


class ChatTemplateByDefault(Task):
    """``task.chat_template`` is on unless set; a model without a template gets each prompt
    as plain text, with one warning, and the task's settings say which
    (``conversation_format``: ``chat_template``, ``plain_text`` or ``messages``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("chat_template", True)
        super().__init__(**kwargs)
        self.conversation_format = "chat_template" if self.chat_template else "plain_text"

    def _build_docs(
        self, source: DataSource, chat: ChatTemplate | None, messages: bool = False
    ) -> Iterator[Doc]:
        if not (self.chat_template and chat is None and not messages):
            self.conversation_format = (
                "messages" if messages else "chat_template" if self.chat_template else "plain_text"
            )
            yield from super()._build_docs(source, chat, messages)
            return
        log.warning(
            "task %s: the model has no chat template; each prompt is sent as plain text",
            self.name,
        )
        self.conversation_format = "plain_text"
        self.chat_template = False
        try:
            yield from super()._build_docs(source, None, messages)
        finally:
            self.chat_template = True

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out.update(conversation_format=self.conversation_format)
        return out
