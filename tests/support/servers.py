"""Real model servers for the served-model tests and the served benchmarks
(``benchmarks/bench_served.py``, ``bench_judge``, ``whole_process``), started on 127.0.0.1
and torn down reliably; and ``transformers serve`` on a chat-templated stories260k, which
only the tests start.

llama.cpp, two ways, both with an F32 KV cache and flash attention off, so their per-token
log-probs agree with transformers fp32 to ~1e-5 (see ../shared/reference/served-models.md):

* ``llama-cpp-python[server]`` (text prompts, one per request; echoes prompt log-probs) runs
  from its own interpreter (built from source into a separate virtualenv, see ``.ci/run``),
  found in this order:

  1. the environment variable ``MILL_LLAMA_PYTHON`` (an error, not a skip, if it is set and
     the interpreter cannot import ``llama_cpp.server``: CI sets it);
  2. ``.venv-llama/bin/python`` in the repository root;
  3. ``/tmp/llama-venv/bin/python``.

* llama.cpp's own ``llama-server`` (token-id prompts and several prompts per request; no
  prompt log-probs), built by ``.ci/run`` from the llama.cpp sources vendored in the same
  llama-cpp-python release, found in this order:

  1. the environment variable ``MILL_LLAMA_SERVER`` (an error, not a skip, if it is set and
     the binary cannot run: CI sets it);
  2. ``.llama-server/bin/llama-server`` in the repository root.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
"""The checkout (its ``tests/support``)."""


STORIES = REPO / "mill" / "resources" / "models" / "stories260k"
LLAMA_PYTHON_ENV = "MILL_LLAMA_PYTHON"
LLAMA_PYTHON_DEFAULTS = (
    REPO / ".venv-llama" / "bin" / "python",
    Path("/tmp/llama-venv/bin/python"),
)
LLAMA_SERVER_ENV = "MILL_LLAMA_SERVER"
LLAMA_SERVER_DEFAULT = REPO / ".llama-server" / "bin" / "llama-server"
SERVED_NAME = "stories260k"
"""The model name the llama.cpp server answers to (``--model_alias``)."""

READY_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the test process dies, so a killed
    pytest leaves no server behind."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


class ServerUnavailable(RuntimeError):
    """The server is not installed and no environment variable asks for it (tests skip)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@cache
def llama_python() -> str:
    """The interpreter that runs ``python -m llama_cpp.server``.

    Raises:
        ServerUnavailable: ``MILL_LLAMA_PYTHON`` is unset and no default interpreter exists.
        RuntimeError: The interpreter named by ``MILL_LLAMA_PYTHON`` (or a default one) exists
            but cannot import ``llama_cpp.server``.
    """
    explicit = os.environ.get(LLAMA_PYTHON_ENV)
    if explicit:
        candidates = [Path(explicit)]
    else:
        candidates = [p for p in LLAMA_PYTHON_DEFAULTS if p.exists()]
        if not candidates:
            raise ServerUnavailable(
                f"no llama-cpp-python server interpreter: set {LLAMA_PYTHON_ENV} or build "
                f"{LLAMA_PYTHON_DEFAULTS[0]} (bash .ci/run does)"
            )
    exe = candidates[0]
    if not exe.is_file():
        raise RuntimeError(f"{LLAMA_PYTHON_ENV}={exe} does not exist")
    check = subprocess.run(
        [str(exe), "-c", "import llama_cpp, llama_cpp.server.app; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if check.returncode != 0:
        tail = (check.stderr or check.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{exe} cannot import llama_cpp.server: {tail[0]}")
    return str(exe)


@cache
def llama_server_binary() -> str:
    """llama.cpp's ``llama-server`` executable.

    Raises:
        ServerUnavailable: ``MILL_LLAMA_SERVER`` is unset and there is no default binary.
        RuntimeError: The binary named by ``MILL_LLAMA_SERVER`` (or the default one) is
            missing or cannot run (``--version`` fails).
    """
    explicit = os.environ.get(LLAMA_SERVER_ENV)
    exe = Path(explicit) if explicit else LLAMA_SERVER_DEFAULT
    if not explicit and not exe.exists():
        raise ServerUnavailable(
            f"no llama-server binary: set {LLAMA_SERVER_ENV} or build {LLAMA_SERVER_DEFAULT} "
            "(bash .ci/run does)"
        )
    if not exe.is_file():
        raise RuntimeError(f"{LLAMA_SERVER_ENV}={exe} does not exist")
    try:
        check = subprocess.run(
            [str(exe), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError as err:
        raise RuntimeError(f"{exe} cannot run: {err}") from err
    if check.returncode != 0:
        tail = (check.stderr or check.stdout).strip().splitlines()[-1:] or ["no output"]
        raise RuntimeError(f"{exe} --version failed: {tail[0]}")
    return str(exe)


def http_json(
    url: str, payload: dict[str, Any] | None = None, timeout: float = 60.0
) -> tuple[int, Any]:
    """GET (``payload`` None) or POST JSON; returns (status, decoded JSON or text)."""
    data = None if payload is None else json.dumps(payload).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as e:
        status, body = e.code, e.read()
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode("utf-8", "replace")


def echo_logprobs(server: ServerProcess, text: str) -> dict[str, Any]:
    """The ``logprobs`` object of ``server``'s completion of ``text`` with the prompt echoed
    (one greedy token, top-1 log-probs), as a scoring request asks for it."""
    status, body = http_json(
        server.base_url + "/completions",
        {
            "model": SERVED_NAME,
            "prompt": text,
            "echo": True,
            "logprobs": 1,
            "max_tokens": 1,
            "temperature": 0.0,
        },
    )
    assert status == 200, body
    return dict(body["choices"][0]["logprobs"])


class LocalEndpoint:
    """The URLs of an HTTP server listening on ``127.0.0.1:port``."""

    port: int

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``model.base_url``)."""
        return f"{self.root_url}/v1"


class ServerProcess(LocalEndpoint):
    """A server subprocess on 127.0.0.1 with a bounded readiness wait and reliable teardown.

    ``stop()`` and ``kill()`` end it; ``start()`` brings it back on the same port (resume
    tests kill a server mid-run and restart it). Its stdout and stderr go to ``log``.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        port: int,
        log: Path,
        ready_path: str,
        env: dict[str, str] | None = None,
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        self.argv = list(argv)
        self.port = port
        self.log = log
        self.ready_path = ready_path
        self.env = env
        self.ready_timeout_s = ready_timeout_s
        self.proc: subprocess.Popen[bytes] | None = None

    def log_tail(self, n: int = 30) -> str:
        try:
            lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(lines[-n:])

    def start(self) -> ServerProcess:
        """Start the process and wait until ``ready_path`` answers 200.

        Raises:
            RuntimeError: The process exited, or did not become ready in time (log tail
                included); the process is stopped first.
        """
        if self.proc is not None and self.proc.poll() is None:
            raise RuntimeError(f"server on port {self.port} is already running")
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                self.argv,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(self.env or {})},
                start_new_session=True,  # its own process group, ended as a whole
                preexec_fn=_die_with_parent,
            )
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise RuntimeError(
                    f"server exited with code {code} before it was ready:\n{self.log_tail()}"
                )
            try:
                status, _ = http_json(self.root_url + self.ready_path, timeout=2.0)
                if status == 200:
                    return self
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(
            f"server not ready after {self.ready_timeout_s:.0f} s:\n{self.log_tail()}"
        )

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL the server (a crash, as a fault test needs it) and reap it."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        self.proc.wait(timeout=STOP_TIMEOUT_S)
        self.proc = None

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after ``STOP_TIMEOUT_S``; idempotent."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._signal(signal.SIGKILL)
                self.proc.wait(timeout=STOP_TIMEOUT_S)
        self.proc = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> ServerProcess:
        return self.start() if not self.running else self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def llama_server(
    gguf_path: Path,
    log: Path,
    *,
    port: int | None = None,
    n_ctx: int = 512,
    threads: int = 1,
    extra_args: Sequence[str] = (),
) -> ServerProcess:
    """A (not yet started) llama-cpp-python server for ``gguf_path`` named ``SERVED_NAME``.

    F32 KV cache (``--type_k 0 --type_v 0``), flash attention off, ``threads`` threads (one
    by default: the CI machine has 2 cores and the model is tiny).
    """
    port = port or free_port()
    argv = [
        llama_python(),
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf_path),
        "--model_alias",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
        "--type_k",
        "0",
        "--type_v",
        "0",
        "--flash_attn",
        "false",
        "--n_threads",
        str(threads),
        "--n_threads_batch",
        str(threads),
        *extra_args,
    ]
    return ServerProcess(argv, port=port, log=log, ready_path="/v1/models")


def native_llama_server(
    gguf_path: Path,
    log: Path,
    *,
    port: int | None = None,
    slots: int = 2,
    n_ctx: int = 512,
    threads: int = 1,
    extra_args: Sequence[str] = (),
) -> ServerProcess:
    """A (not yet started) llama.cpp ``llama-server`` for ``gguf_path`` named ``SERVED_NAME``.

    F32 KV cache, flash attention off, ``slots`` sequences decoded together with one unified
    KV cache of ``slots * n_ctx`` cells (each slot may hold ``n_ctx`` tokens), ``threads``
    threads.
    """
    port = port or free_port()
    argv = [
        llama_server_binary(),
        "--model",
        str(gguf_path),
        "--alias",
        SERVED_NAME,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--ctx-size",
        str(n_ctx * slots),
        "--parallel",
        str(slots),
        "--kv-unified",
        "--cache-type-k",
        "f32",
        "--cache-type-v",
        "f32",
        "--flash-attn",
        "off",
        "--threads",
        str(threads),
        "--threads-batch",
        str(threads),
        "--no-webui",
        *extra_args,
    ]
    return ServerProcess(argv, port=port, log=log, ready_path="/health")


def convert_stories_gguf(out: Path) -> Path:
    """Convert the bundled stories260k model to GGUF at ``out``."""
    from mill.convert.gguf import convert

    convert(STORIES, out)
    return out


# A plain chat template for a story model: each message's text on its own line; the answer
# continues the story. Enough to exercise /v1/chat/completions end to end.
CHAT_TEMPLATE = "{{ bos_token }}{% for message in messages %}{{ message['content'] }}\n{% endfor %}"


def build_chat_model(out: Path) -> Path:
    """stories260k with ``CHAT_TEMPLATE`` set on its tokenizer, written to ``out``."""
    import shutil

    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy2(STORIES / name, out / name)
    tok = AutoTokenizer.from_pretrained(STORIES)
    tok.chat_template = CHAT_TEMPLATE
    tok.save_pretrained(out)
    return out


def transformers_server(model_dir: Path, log: Path, *, port: int | None = None) -> ServerProcess:
    """A (not yet started) ``transformers serve`` pinned to ``model_dir`` on CPU, fp32.

    Requests name the model by its path (``str(model_dir)``): a pinned server refuses others.
    """
    port = port or free_port()
    argv = [
        sys.executable,
        "-m",
        "transformers.cli.transformers",
        "serve",
        str(model_dir),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--device",
        "cpu",
        "--dtype",
        "float32",
        "--log-level",
        "info",
    ]
    env = {"HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    return ServerProcess(argv, port=port, log=log, ready_path="/v1/models", env=env)


def main() -> None:
    """``python -m tests.support.servers OUT_DIR``: convert and serve until Ctrl-C (debugging)."""
    out = Path(sys.argv[1])
    gguf_path = convert_stories_gguf(out / "stories260k.gguf")
    with llama_server(gguf_path, out / "llama-server.log") as server:
        print(f"serving {SERVED_NAME} at {server.base_url}", flush=True)
        try:
            while server.running:
                time.sleep(1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
