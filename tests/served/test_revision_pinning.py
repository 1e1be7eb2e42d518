"""README "Served models": a server can swap weights behind one name, and ``model.revision``
pins what was evaluated: the same label reuses the shared response cache, a new label never
reads responses computed under another."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.servers import SERVED_NAME, STORIES, ServerProcess

pytestmark = pytest.mark.slow


def _run(server: ServerProcess, folder: Path, cache: Path, *extra: str) -> dict:
    proc = run_mill(
        "task=arc_easy",
        "task.limit=2",
        "model=openai_completions",
        f"model.base_url={server.base_url}",
        f"model.model={SERVED_NAME}",
        f"model.tokenizer={STORIES}",
        "model.max_length=510",
        f"runner.cache={cache}",
        f"hydra.run.dir={folder}",
        *extra,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    manifest = json.loads((folder / "manifest.json").read_text())
    return {
        "cache": manifest["cache"],
        "results": json.loads((folder / "results.json").read_text())["tasks"]["arc_easy"][
            "metrics"
        ],
    }


def test_revision_label_separates_cached_responses(
    llama_server: ServerProcess, tmp_path: Path
) -> None:
    cache = tmp_path / "shared-cache"
    first = _run(llama_server, tmp_path / "a", cache, "model.revision=weights-v1")
    assert first["cache"]["computed"] == 8 and first["cache"]["hits"] == 0

    again = _run(llama_server, tmp_path / "b", cache, "model.revision=weights-v1")
    assert again["cache"]["hits"] == 8 and again["cache"]["computed"] == 0
    assert again["results"] == first["results"]

    relabelled = _run(llama_server, tmp_path / "c", cache, "model.revision=weights-v2")
    assert relabelled["cache"]["hits"] == 0 and relabelled["cache"]["computed"] == 8
