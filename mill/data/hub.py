"""Whether the Hugging Face hub can be reached, asked once in a few seconds before a run
that needs it: a hub id without the hub is one line, not a minute of the hub client's
retries (``model.pretrained=gpt2`` offline: 50 s of warnings, printed twice, then the
error), nor a half-built run."""

from __future__ import annotations

import os
import threading
import time
from functools import cache
from pathlib import Path
from typing import Any

from mill.errors import DatasetUnavailable, ModelError

PROBE_SECONDS = 5.0
"""How long the hub gets to answer (its name looked up, a connection, any HTTP answer)."""

_FALSE = ("", "0", "false", "False", "no", "off")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set: the hub clients read their cache and never ask the hub."""
    return os.environ.get("HF_HUB_OFFLINE", "0") not in _FALSE


def hub_endpoint() -> str:
    """The hub's address as its clients use it (``HF_ENDPOINT``, else huggingface.co)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


@cache
def hub_unreachable(endpoint: str, seconds: float = PROBE_SECONDS) -> str | None:
    """Why ``endpoint`` cannot be reached (``'URLError: [Errno -2] Name or service not
    known'``, ``'no answer in 5 s'``), or None when it answers anything at all (an HTTP
    error status is an answer). The request honours the proxy variables, as the hub clients
    do; it runs in a thread so that a name lookup that hangs is bounded too."""
    import urllib.error
    import urllib.request

    found: list[str | None] = []

    def ask() -> None:
        try:
            request = urllib.request.Request(endpoint, method="HEAD")
            with urllib.request.urlopen(request, timeout=seconds):
                pass
            found.append(None)
        except urllib.error.HTTPError:  # the hub answered
            found.append(None)
        except (OSError, ValueError) as err:  # URLError, a timeout, a malformed address
            reason = getattr(err, "reason", None) or err
            found.append(f"{type(err).__name__}: {reason}")

    start = time.monotonic()
    thread = threading.Thread(target=ask, name="mill-hub-probe", daemon=True)
    thread.start()
    thread.join(seconds + 1)  # urlopen's own timeout first; a hung name lookup then
    if not found:
        return f"no answer in {seconds + 1:g} s"
    took = time.monotonic() - start
    return None if found[0] is None else f"{found[0]}, after {took:.1f} s"


def _hub_ids(model: dict[str, Any]) -> list[str]:
    """The settings of ``model`` that name a hub id (``model.pretrained=gpt2``): a text that
    is no existing folder and is written like an id, ``name`` or ``org/name``."""
    said = []
    for key in ("pretrained", "tokenizer"):
        value = model.get(key)
        if not isinstance(value, str) or not value or value == "remote":
            continue
        if value.startswith(("/", "./", "../", "~")) or value.count("/") > 1:
            continue  # a path (a missing one is the model's own one-line error)
        if Path(value).expanduser().exists():
            continue
        said.append(f"model.{key}={value}")
    return said


def check_hub(resolved: dict[str, Any], with_model: bool = True) -> None:
    """Before anything loads: when the run needs the hub (``data=hub``, a hub id in
    ``model.pretrained`` or ``model.tokenizer``; ``with_model`` False: the model is built
    already) and ``HF_HUB_OFFLINE`` is not set, ask the hub once; unreachable, the run is
    refused with one line naming the cause and the ways round it (HF_HUB_OFFLINE=1 for what
    is in the cache already, a local folder, data=local or data=bundled)."""
    if hub_offline():
        return
    model = resolved.get("model") if with_model else None
    ids = _hub_ids(model) if isinstance(model, dict) else []
    data = resolved.get("data") or {}
    data_hub = isinstance(data, dict) and data.get("source") == "hub"
    if not ids and not data_hub:
        return
    endpoint = hub_endpoint()
    why = hub_unreachable(endpoint)
    if why is None:
        return
    needs = [*ids, *(["data=hub"] if data_hub else [])]
    fixes = ["with them in the Hugging Face cache already, run with HF_HUB_OFFLINE=1"]
    if ids:
        fixes.append("point model.pretrained at a local folder of the model")
    if data_hub:
        fixes.append("use data=local data.dir=/path/to/data or data=bundled")
    error = ModelError if ids else DatasetUnavailable
    raise error(
        f"{' and '.join(needs)} need{'s' if len(needs) == 1 else ''} the Hugging Face hub "
        f"({endpoint}), which cannot be reached ({why}); {'; or '.join(fixes)}"
    )
