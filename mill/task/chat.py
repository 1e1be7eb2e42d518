"""Prompts as messages, rendered as plain text or through a tokenizer's chat template.

A prompt is a list of :class:`Message` (lm-eval 0.4.13's ``build_qa_turn`` layout): an
optional system message (system prompt + task description), then per few-shot example a
user turn (the query) and an assistant turn (its answer), then the user turn of the
evaluated question. Plain text joins each message with its delimiter; a chat template
renders the turns either as they are (few-shot as multi-turn) or collapsed into one user
message (lm-eval's ``multiturn_to_singleturn``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mill.types import ChatTemplate


@dataclass(frozen=True)
class Message:
    """One turn. ``delimiter`` follows the content in plain-text rendering only."""

    role: str
    content: str
    delimiter: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}

    def to_text(self) -> str:
        return self.content + self.delimiter


def join_delimited(prefix: str | None, suffix: str | None, delimiter: str) -> str:
    """``prefix + delimiter + suffix``, without the delimiter when either side already has
    whitespace at the join (lm-eval's ``maybe_delimit``)."""
    if not prefix:
        return suffix or ""
    if not suffix:
        return prefix
    if prefix[-1].isspace() or suffix[0].isspace():
        return prefix + suffix
    return prefix + delimiter + suffix


def render_text(messages: Sequence[Message]) -> str:
    """Plain text: every message's content followed by its delimiter."""
    return "".join(m.to_text() for m in messages)


def single_turn(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Collapse the user/assistant turns into one user message, keeping a leading system
    message and a trailing assistant message apart (lm-eval's ``multiturn_to_singleturn``)."""
    system = messages[0] if messages and messages[0].role == "system" else None
    rest = list(messages[1:] if system else messages)
    tail: list[dict[str, str]] = []
    if rest and rest[-1].role == "assistant":
        tail = [rest[-1].to_dict()]
        rest = rest[:-1]
    body = "".join(m.to_text() for m in rest[:-1]) + (rest[-1].content if rest else "")
    out = [{"role": "user", "content": body}, *tail]
    return [system.to_dict(), *out] if system else out


def render_chat(messages: Sequence[Message], template: ChatTemplate, multiturn: bool) -> str:
    """Render through a chat template, few-shot examples as separate turns or collapsed. A
    trailing assistant message (a task's ``gen_prefix``) is continued, not closed: no
    generation prompt (lm-eval's ``add_generation_prompt=not gen_prefix``)."""
    turns = [m.to_dict() for m in messages] if multiturn else single_turn(messages)
    return template(turns, not (turns and turns[-1]["role"] == "assistant"))


PLAIN_ROLES = {"system": "System", "user": "User", "assistant": "Assistant"}


def plain_conversation(turns: Sequence[dict[str, str]]) -> str:
    """A conversation for a model without a chat template (base models, stories260k):
    each turn as ``### <Role>:`` on its own line, then its content and a blank line; the
    text ends with ``### Assistant:`` and a newline, where the model answers. A system
    turn comes first as ``### System:``. Mill records this format in the manifest and
    warns once when it is used."""
    parts = [
        f"### {PLAIN_ROLES.get(t['role'], t['role'].title())}:\n{t['content']}\n\n" for t in turns
    ]
    return "".join(parts) + "### Assistant:\n"
