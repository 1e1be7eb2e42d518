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
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.servers import free_port

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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: object) -> None:
        return None

    def _send(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self._send({"object": "list", "data": [{"id": "cand"}, {"id": "gpt-4"}]})

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length))
        with self.server.lock:
            self.server.seen.append(payload)
        text = reply(payload["messages"])
        self._send(
            {
                "id": "x",
                "object": "chat.completion",
                "model": payload.get("model"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )


class _Server(ThreadingHTTPServer):
    seen: list[dict[str, Any]]
    lock: threading.Lock


@contextmanager
def judge_server() -> Iterator[_Server]:
    """The server, listening on 127.0.0.1 (``server.url``: its API root)."""
    httpd = _Server(("127.0.0.1", free_port()), _Handler)
    httpd.seen, httpd.lock = [], threading.Lock()
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
