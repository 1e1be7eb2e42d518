"""Fixtures of the served-model tests: stories260k as GGUF and real llama.cpp servers.

``llama_server`` (llama-cpp-python) and ``native_llama_server`` (llama.cpp's ``llama-server``)
are shared by the session (never stop them in a test); ``start_llama_server`` starts a
private llama-cpp-python server (for tests that kill or restart it), stopped at the end of
the test. They skip, with the reason, only when the server is not installed (see
tests/support/servers.py); CI builds both and sets ``MILL_LLAMA_PYTHON`` and
``MILL_LLAMA_SERVER``, which turn a server that cannot start into a failure.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.runs import GSM8K, ok
from tests.support.servers import (
    ServerProcess,
    ServerUnavailable,
    build_chat_model,
    convert_stories_gguf,
    llama_python,
    llama_server_binary,
    transformers_server,
)
from tests.support.servers import (
    llama_server as make_llama_server,
)
from tests.support.servers import native_llama_server as make_native_server


def _require(find: Callable[[], str]) -> None:
    """Skip when the server is not installed (``find`` raises ServerUnavailable)."""
    try:
        find()
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
    _require(llama_python)
    server = make_llama_server(stories_gguf, tmp_path_factory.mktemp("llama") / "server.log")
    with server:
        yield server


@pytest.fixture(scope="session")
def native_llama_server(
    stories_gguf: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    """A running llama.cpp ``llama-server`` for stories260k, shared by the whole session."""
    _require(llama_server_binary)
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with make_native_server(stories_gguf, log) as server:
        yield server


@pytest.fixture(scope="session")
def gsm8k_hf_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``GSM8K`` on the in-process HF backend: the greedy generations to match."""
    run = tmp_path_factory.mktemp("gsm8k") / "hf"
    ok(run_mill(*GSM8K, "model=stories260k", f"hydra.run.dir={run}"))
    return run


@pytest.fixture()
def start_llama_server(
    stories_gguf: Path, tmp_path: Path
) -> Iterator[Callable[..., ServerProcess]]:
    """Start private llama.cpp servers (``start_llama_server(port=None, **kw)``); all stopped
    when the test ends."""
    _require(llama_python)
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
    """stories260k with a chat template on its tokenizer (see ``tests/support/servers.py``)."""
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
