"""One in-process HTTP server for the tests that need an OpenAI-compatible peer they
control: stdlib ``ThreadingHTTPServer`` on 127.0.0.1, in a daemon thread, shut down and
joined on exit. A test's handler subclasses :class:`JSONHandler` and answers POSTs with
:meth:`JSONHandler.send_json`; ``GET`` lists the handler's :attr:`JSONHandler.models`."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar


class JSONHandler(BaseHTTPRequestHandler):
    """Quiet, HTTP/1.1, JSON in and out. ``self.server`` is the :class:`JSONServer`."""

    protocol_version = "HTTP/1.1"
    models: ClassVar[tuple[str, ...]] = ("served",)
    server: JSONServer

    def log_message(self, *args: object) -> None:
        return None

    def send_json(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def read_json(self) -> Any:
        """The request's body; recorded in ``server.seen``."""
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with self.server.lock:
            self.server.seen.append(body)
        return body

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self.send_json({"object": "list", "data": [{"id": m} for m in self.models]})


class JSONServer(ThreadingHTTPServer):
    """``url``: the API root (``/v1``); ``seen``: every request body read; ``state``: what
    the test hands its handler."""

    url: str
    seen: list[Any]
    lock: threading.Lock
    state: dict[str, Any]


def chat_reply(text: str, model: str | None) -> dict[str, Any]:
    """A chat completion holding one assistant message."""
    return {
        "id": "x",
        "object": "chat.completion",
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


@contextmanager
def json_server(handler: type[JSONHandler], **state: Any) -> Iterator[JSONServer]:
    """``handler`` serving on a free port of 127.0.0.1 until the block ends."""
    httpd = JSONServer(("127.0.0.1", 0), handler)
    httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.seen, httpd.lock, httpd.state = [], threading.Lock(), state
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
