"""A real OpenAI-compatible server on 127.0.0.1 (stdlib, in a thread) that answers every
chat request with the ``Authorization`` header it received, in a 200: what a proxy or a
server that echoes the request does. With the secrets the tests give it and the helpers
that search a run's files and response cache for them."""

from __future__ import annotations

import base64
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.json_server import JSONHandler, chat_reply, json_server

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


class _Echo(JSONHandler):
    models = ("echo",)

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        self.read_json()
        auth = str(self.headers.get("Authorization"))
        text = f"You sent Authorization: {auth} (that is, {auth.split(' ', 1)[-1]})"
        self.send_json(chat_reply(text, "echo"))


@contextmanager
def echo_server() -> Iterator[str]:
    """The server's API root, its user info holding :data:`USER` and :data:`PASSWORD`."""
    with json_server(_Echo) as httpd:
        yield httpd.url.replace("http://", f"http://{USER}:{PASSWORD}@")


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
