"""The server fixtures themselves: interpreter and binary lookup, restart on the same port,
teardown."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support import servers
from tests.support.servers import ServerProcess, ServerUnavailable, http_json

FINDERS = {
    # name: (environment variable, lookup, module default, a default that is not there)
    "llama-cpp-python": (
        servers.LLAMA_PYTHON_ENV,
        servers.llama_python,
        "LLAMA_PYTHON_DEFAULTS",
        lambda tmp: (tmp / "a", tmp / "b"),
    ),
    "llama-server": (
        servers.LLAMA_SERVER_ENV,
        servers.llama_server_binary,
        "LLAMA_SERVER_DEFAULT",
        lambda tmp: tmp / "llama-server",
    ),
}


@pytest.fixture(params=sorted(FINDERS))
def finder(request: pytest.FixtureRequest) -> Any:
    """Each server lookup, its cache cleared before and after the test."""
    found = FINDERS[request.param]
    found[1].cache_clear()
    yield found
    found[1].cache_clear()


def test_an_explicit_server_that_is_missing_is_an_error(
    finder: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env, find, _, _ = finder
    monkeypatch.setenv(env, str(tmp_path / "nope" / "server"))
    with pytest.raises(RuntimeError, match="does not exist"):
        find()


@pytest.mark.slow  # runs a process
def test_an_explicit_server_that_cannot_run_is_an_error(
    finder: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    env, find, _, _ = finder
    # Mill's interpreter has no llama_cpp; /bin/false has no --version
    broken = sys.executable if env == servers.LLAMA_PYTHON_ENV else "/bin/false"
    monkeypatch.setenv(env, broken)
    with pytest.raises(RuntimeError, match="cannot import llama_cpp.server|--version failed"):
        find()


def test_no_server_at_all_skips_with_the_reason(
    finder: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    env, find, default, missing = finder
    monkeypatch.delenv(env, raising=False)
    monkeypatch.setattr(servers, default, missing(tmp_path))
    with pytest.raises(ServerUnavailable, match=env):
        find()


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
