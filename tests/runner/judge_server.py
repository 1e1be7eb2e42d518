"""A deterministic OpenAI-compatible server on 127.0.0.1 for the judged end-to-end tests:
every reply is a function of the conversation it is sent (sha256 of its messages), so
Mill and a reference implementation that send the same prompt get the same reply.

It serves two models: ``cand`` answers questions (a short text naming the prompt's hash)
and ``gpt-4`` judges: an MT-Bench single rubric gets ``Rating: [[k]]`` (sometimes the
backup ``[k]``, sometimes no grade), an MT-Bench pairwise rubric ``[[A]]``/``[[B]]``/
``[[C]]`` (sometimes two verdicts, sometimes none), an Arena-Hard rubric one of its ten
labels (sometimes two, sometimes none). ``seen`` keeps every request body.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.support.json_server import JSONHandler, JSONServer, chat_reply, json_server

ARENA_LABELS = ("A>>B", "A>B", "A=B", "B>A", "B>>A", "A<<B", "A<B", "B=A", "B<<A", "B<A")


def digest(messages: list[dict[str, Any]]) -> int:
    """The conversation's hash as an integer (the reply's only input)."""
    text = json.dumps(messages, ensure_ascii=False, sort_keys=True)
    return int(hashlib.sha256(text.encode()).hexdigest(), 16)


def reply(messages: list[dict[str, Any]]) -> str:
    """The server's answer to a conversation."""
    h = digest(messages)
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    user = messages[-1]["content"]
    if "<|The Start of Assistant A's Answer|>" in user:  # Arena-Hard
        kind = h % 20
        if kind == 0:
            return "I cannot decide."
        first, last = ARENA_LABELS[h // 20 % 10], ARENA_LABELS[h // 200 % 10]
        if kind == 1:
            return f"Tempting: [[{first}]]. On reflection my final verdict is [[{last}]]."
        if kind == 2:
            return f"My final verdict is [{last.lower()}]"
        return f"My final verdict is [[{last}]]"
    if "[[A]]" in system or "[[A]]" in user:  # MT-Bench pairwise
        kind = h % 25
        if kind == 0:
            return "Both are fine."
        if kind == 1:
            return "At first I thought [[B]]. Final verdict: [[A]]"
        return "Verdict: [[" + "ABC"[h // 25 % 3] + "]]"
    if "[[rating]]" in system or "[[rating]]" in user or "Rating: [[" in user:  # single
        kind = h % 25
        grade = 1 + h // 25 % 10
        if kind == 0:
            return "I will not grade this."
        if kind == 1:
            return f"Rating: [{grade}]"
        if kind == 2:
            return f"Rating: [[{grade}.5]]" if grade < 10 else "Rating: [[10]]"
        return f"The answer is adequate. Rating: [[{grade}]]"
    return f"Answer {h % 10**8:08d} {{x}} to: {user[:40]}"


class _Handler(JSONHandler):
    models = ("cand", "gpt-4")

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        payload = self.read_json()
        self.send_json(chat_reply(reply(payload["messages"]), payload.get("model")))


@contextmanager
def judge_server() -> Iterator[JSONServer]:
    """The server, listening on 127.0.0.1 (``server.url``: its API root)."""
    with json_server(_Handler) as httpd:
        yield httpd
