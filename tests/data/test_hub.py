"""A hub id without the hub: one line within seconds, naming the cause and the ways round it
(HF_HUB_OFFLINE=1, a local folder, data=local), instead of the hub client's minute of
retries. The hub is a real socket on this machine: a closed port, a listener that never
answers, a server that answers 404."""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mill.data.hub import _hub_ids, check_hub, hub_unreachable
from mill.errors import DatasetUnavailable, ModelError
from tests.helpers import run_mill


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def silent() -> Iterator[str]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def answering() -> Iterator[str]:
    """An HTTP server that answers every request 404 (an answer: the hub is there)."""
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_closed_port_is_unreachable_at_once() -> None:
    start = time.monotonic()
    why = hub_unreachable(f"http://127.0.0.1:{_closed_port()}", 5.0)
    assert why is not None and "Connection refused" in why
    assert time.monotonic() - start < 2


def test_silence_is_bounded(silent: str) -> None:
    start = time.monotonic()
    why = hub_unreachable(silent, 0.5)
    took = time.monotonic() - start
    assert why is not None and "timed out" in why, why
    assert 0.4 < took < 2.5


def test_any_answer_is_reachable(answering: str) -> None:
    assert hub_unreachable(answering, 5.0) is None


@pytest.mark.parametrize(
    ("model", "ids"),
    [
        ({"pretrained": "gpt2"}, ["model.pretrained=gpt2"]),
        ({"pretrained": "org/name", "tokenizer": "gpt2"},
         ["model.pretrained=org/name", "model.tokenizer=gpt2"]),
        ({"pretrained": "/models/nope"}, []),  # a path: the model's own error says it is missing
        ({"pretrained": "./nope"}, []),
        ({"pretrained": "~/nope"}, []),
        ({"pretrained": "a/b/c"}, []),
        ({"pretrained": None, "tokenizer": "remote"}, []),  # built, or the server's /tokenize
        ({}, []),
    ],
)  # fmt: skip
def test_which_settings_name_a_hub_id(model: dict[str, str | None], ids: list[str]) -> None:
    assert _hub_ids(model) == ids


def test_an_existing_folder_is_no_hub_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mymodel").mkdir()
    monkeypatch.chdir(tmp_path)
    assert _hub_ids({"pretrained": "mymodel"}) == []


@pytest.mark.parametrize(
    ("resolved", "error", "said"),
    [
        ({"model": {"pretrained": "gpt2"}, "data": {"source": "bundled"}}, ModelError,
         ["model.pretrained=gpt2 needs the Hugging Face hub", "HF_HUB_OFFLINE=1",
          "model.pretrained at a local folder"]),
        ({"model": {"pretrained": None}, "data": {"source": "hub"}}, DatasetUnavailable,
         ["data=hub needs the Hugging Face hub", "HF_HUB_OFFLINE=1", "data=local data.dir="]),
        ({"model": {"pretrained": "org/m"}, "data": {"source": "hub"}}, ModelError,
         ["model.pretrained=org/m and data=hub need", "data=bundled"]),
    ],
)  # fmt: skip
def test_a_run_that_needs_the_hub_is_refused_without_it(
    monkeypatch: pytest.MonkeyPatch, resolved: dict, error: type, said: list[str]
) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    with pytest.raises(error) as raised:
        check_hub(resolved)
    text = str(raised.value)
    assert "\n" not in text and f"({endpoint}), which cannot be reached" in text
    assert all(s in text for s in said), text


@pytest.mark.parametrize(
    "resolved",
    [
        {"model": {"pretrained": "/abs/folder"}, "data": {"source": "bundled"}},
        {"model": {"_target_": "mill.model.fake.FakeLM"}, "data": {"source": "local"}},
    ],
)
def test_a_run_that_needs_no_hub_asks_nothing(
    monkeypatch: pytest.MonkeyPatch, resolved: dict
) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    check_hub(resolved)


def test_offline_asks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the clients read their cache, fast
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    check_hub({"model": {"pretrained": "gpt2"}, "data": {"source": "hub"}})
    check_hub({"model": {"pretrained": "gpt2"}}, with_model=False)  # mill.evaluate(model)


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("mill: error:")]
    assert len(errors) == 1, stderr
    assert "Retrying" not in stderr and "WARNING" not in stderr, stderr
    return errors[0]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["model=hf", "model.pretrained=gpt2"],
         ["model.pretrained=gpt2 needs the Hugging Face hub", "HF_HUB_OFFLINE=1"]),
        (["data=hub", "model=fake"], ["data=hub needs the Hugging Face hub", "data=local"]),
        # the README's headline command, offline: the model and ARC's data are on the hub
        (["task=arc", "model=llama3", "+metrics=[acc,acc_norm]"],
         ["model.pretrained=meta-llama/Meta-Llama-3-8B and data=hub need", "HF_HUB_OFFLINE=1"]),
    ],
)  # fmt: skip
def test_the_cli_without_the_hub(tmp_path: Path, args: list[str], said: list[str]) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    env: dict[str, str | None] = {"HF_HUB_OFFLINE": None, "HF_ENDPOINT": endpoint}
    start = time.monotonic()
    proc = run_mill(*args, "task.limit=2", cwd=tmp_path, env=env, timeout=120)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert all(s in line for s in said), line
    assert "[mill] loading model" not in proc.stderr  # refused before anything loads
    assert not (tmp_path / "outputs").exists()  # and before it claimed a folder
    assert took < 60, took  # a process start and a refused connection, not 50 s of retries


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["model=hf", "model.pretrained=gpt2"],
         ["cannot load hub model 'gpt2'", "HF_HUB_OFFLINE is set", "local folder"]),
        (["data=hub", "model=fake"],
         ["allenai/ai2_arc", "HF_HUB_OFFLINE is set", "data=local data.dir="]),
    ],
)  # fmt: skip
def test_the_cli_offline(tmp_path: Path, args: list[str], said: list[str]) -> None:
    # HF_HUB_OFFLINE=1 and nothing in the cache: the load's own one line, no probe
    env: dict[str, str | None] = {"HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    proc = run_mill(*args, "task.limit=2", cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc.stderr)
    assert all(s in line for s in said), line
