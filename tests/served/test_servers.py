"""The server fixtures themselves: interpreter lookup, restart on the same port, teardown."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable

import pytest

from tests.served import servers
from tests.served.servers import ServerProcess, ServerUnavailable, http_json


@pytest.fixture()
def fresh_lookup():
    servers.llama_python.cache_clear()
    servers.llama_server_binary.cache_clear()
    yield
    servers.llama_python.cache_clear()
    servers.llama_server_binary.cache_clear()


def test_an_explicit_interpreter_that_is_missing_is_an_error(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv(servers.LLAMA_PYTHON_ENV, str(tmp_path / "nope" / "python"))
    with pytest.raises(RuntimeError, match="does not exist"):
        servers.llama_python()


@pytest.mark.slow  # runs an interpreter
def test_an_explicit_interpreter_without_llama_cpp_is_an_error(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setenv(servers.LLAMA_PYTHON_ENV, sys.executable)  # Mill's, no llama_cpp
    with pytest.raises(RuntimeError, match="cannot import llama_cpp.server"):
        servers.llama_python()


def test_no_interpreter_at_all_skips_with_the_reason(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.delenv(servers.LLAMA_PYTHON_ENV, raising=False)
    monkeypatch.setattr(servers, "LLAMA_PYTHON_DEFAULTS", (tmp_path / "a", tmp_path / "b"))
    with pytest.raises(ServerUnavailable, match="MILL_LLAMA_PYTHON"):
        servers.llama_python()


def test_an_explicit_llama_server_that_is_missing_is_an_error(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv(servers.LLAMA_SERVER_ENV, str(tmp_path / "nope" / "llama-server"))
    with pytest.raises(RuntimeError, match="does not exist"):
        servers.llama_server_binary()


@pytest.mark.slow  # runs a process
def test_an_explicit_llama_server_that_cannot_run_is_an_error(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(servers.LLAMA_SERVER_ENV, "/bin/false")
    with pytest.raises(RuntimeError, match="--version failed"):
        servers.llama_server_binary()


def test_no_llama_server_at_all_skips_with_the_reason(
    fresh_lookup: None, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.delenv(servers.LLAMA_SERVER_ENV, raising=False)
    monkeypatch.setattr(servers, "LLAMA_SERVER_DEFAULT", tmp_path / "llama-server")
    with pytest.raises(ServerUnavailable, match="MILL_LLAMA_SERVER"):
        servers.llama_server_binary()


@pytest.mark.slow
def test_killed_server_restarts_on_the_same_port(
    start_llama_server: Callable[..., ServerProcess],
) -> None:
    server = start_llama_server()
    assert http_json(server.base_url + "/models")[0] == 200
    pid = server.proc.pid
    server.kill()
    assert not server.running
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        urllib.request.urlopen(server.base_url + "/models", timeout=5)
    server.start()
    assert server.proc.pid != pid
    assert http_json(server.base_url + "/models")[0] == 200
    server.stop()
    server.stop()  # idempotent
    assert server.proc is None


@pytest.mark.slow
def test_a_server_that_cannot_start_reports_its_log(
    start_llama_server: Callable[..., ServerProcess], tmp_path
) -> None:
    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"not gguf")
    server = servers.llama_server(bad, tmp_path / "bad.log")
    with pytest.raises(RuntimeError, match="exited with code"):
        server.start()
    assert server.proc is None
