"""The random GPT-2 (mill.model.random): built once into Mill's cache, quietly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import run_mill

# a third-party logger's own line: DeepSpeed's "[2026-01-01 00:00:00,000] [WARNING] [...]"
FOREIGN_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d |DeepSpeed|accelerator", re.IGNORECASE)


@pytest.mark.slow
def test_a_first_build_prints_no_third_party_line(tmp_path: Path) -> None:
    """The build saves the model with ``save_pretrained``, whose unwrapping through
    accelerate imports DeepSpeed where it is installed (the dev extra), and DeepSpeed's
    import warns on stdout that it found no accelerator. A CPU run that builds the model
    (an empty cache) prints Mill's lines and its table only."""
    done = run_mill(
        "task=arc_easy",
        "model=gpt2_random",
        "task.limit=2",
        cwd=tmp_path,
        env={"MILL_CACHE": str(tmp_path / "cache")},
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "cache" / "models").is_dir()  # the model was built by this run
    foreign = [
        line for line in (done.stdout + done.stderr).splitlines() if FOREIGN_LINE.search(line)
    ]
    assert foreign == []
    assert all(
        line.startswith(("[mill] ", "mill: ")) for line in done.stderr.splitlines() if line
    ), done.stderr
