"""A real OpenAI-compatible server on 127.0.0.1 (stdlib, in a thread) that answers every
chat request with the ``Authorization`` header it received, in a 200: what a proxy or a
server that echoes the request does. With the secrets the tests give it and the helpers
that search a run's files and response cache for them."""

from __future__ import annotations

import base64
import json
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KEY = "sk-echoed-7f3a9c1e5b"
USER = "alice"
PASSWORD = "pw-echoed-4d8e2b6a"
ENV = "MILL_TEST_ECHO_KEY"


def secret_forms() -> list[str]:
    """Every form in which the run's secrets could leak: as sent, and base64."""
    basic = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    return [
        KEY,
        PASSWORD,
        f"{USER}:{PASSWORD}",
        basic,
        basic.rstrip("="),
        base64.b64encode(KEY.encode()).decode().rstrip("="),
    ]


class _Echo(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

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
        self._send({"object": "list", "data": [{"id": "echo"}]})

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = str(self.headers.get("Authorization"))
        text = f"You sent Authorization: {auth} (that is, {auth.split(' ', 1)[-1]})"
        self._send(
            {
                "id": "x",
                "object": "chat.completion",
                "model": "echo",
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


@contextmanager
def echo_server() -> Iterator[str]:
    """The server's API root, its user info holding :data:`USER` and :data:`PASSWORD`."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://{USER}:{PASSWORD}@127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def cache_entries(folder: Path) -> str:
    """Every stored response (zlib-compressed JSON) and model record of the cache."""
    texts = []
    for path in sorted((folder / "cache").glob("responses-*.sqlite")):
        with sqlite3.connect(path) as conn:
            texts += [
                zlib.decompress(b).decode()
                for (b,) in conn.execute("SELECT response FROM responses")
            ]
            texts += [i for (i,) in conn.execute("SELECT identity FROM models")]
    assert texts, "the run cached nothing"
    return "\n".join(texts)


def whole_folder(folder: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in sorted(folder.rglob("*")) if p.is_file()
    )
