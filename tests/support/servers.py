"""Servers only the tests start: ``transformers serve`` on a chat-templated stories260k.

The llama.cpp servers, :class:`ServerProcess` and :func:`free_port` stay in
``mill/bench/servers.py``: the served benchmarks start them too.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mill.bench.servers import STORIES, ServerProcess, free_port

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
