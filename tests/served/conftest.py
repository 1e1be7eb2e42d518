"""Fixtures of the served-model tests: stories260k as GGUF and real llama.cpp servers.

``llama_server`` is one server shared by the session (never stop it in a test);
``start_llama_server`` starts a private one (for tests that kill or restart it), stopped at
the end of the test. Both skip, with the reason, only when no llama-cpp-python interpreter is
installed (see tests/served/servers.py); CI builds one and sets ``MILL_LLAMA_PYTHON``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.served.servers import (
    ServerProcess,
    ServerUnavailable,
    build_chat_model,
    convert_stories_gguf,
    llama_python,
    transformers_server,
)
from tests.served.servers import (
    llama_server as make_llama_server,
)


def _require_llama_python() -> None:
    try:
        llama_python()
    except ServerUnavailable as e:
        pytest.skip(str(e))


@pytest.fixture(scope="session")
def stories_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled stories260k model converted to GGUF (F32) in a temporary folder."""
    pytest.importorskip("gguf", reason="the gguf package (extra 'served') is not installed")
    return convert_stories_gguf(tmp_path_factory.mktemp("gguf") / "stories260k.gguf")


@pytest.fixture(scope="session")
def llama_server(
    stories_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """A running llama-cpp-python server for stories260k, shared by the whole session."""
    _require_llama_python()
    server = make_llama_server(stories_gguf, tmp_path_factory.mktemp("llama") / "server.log")
    with server:
        yield server


@pytest.fixture()
def start_llama_server(
    stories_gguf: Path, tmp_path: Path
) -> Iterator[Callable[..., ServerProcess]]:
    """Start private llama.cpp servers (``start_llama_server(port=None, **kw)``); all stopped
    when the test ends."""
    _require_llama_python()
    started: list[ServerProcess] = []

    def start(**kwargs: object) -> ServerProcess:
        log = tmp_path / f"llama-server-{len(started)}.log"
        server = make_llama_server(stories_gguf, log, **kwargs)  # type: ignore[arg-type]
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def chat_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """stories260k with a chat template on its tokenizer (see ``servers.CHAT_TEMPLATE``)."""
    return build_chat_model(tmp_path_factory.mktemp("chat") / "stories260k-chat")


@pytest.fixture(scope="session")
def transformers_chat_server(
    chat_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """``transformers serve`` pinned to ``chat_model_dir`` (requests name it by that path)."""
    for module in ("fastapi", "uvicorn", "openai"):
        pytest.importorskip(module, reason="transformers[serving] is not installed")
    log = tmp_path_factory.mktemp("transformers-serve") / "server.log"
    with transformers_server(chat_model_dir, log) as server:
        yield server
