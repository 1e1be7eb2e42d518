"""The model phase says what it is doing: the HF loader's steps, shown by LoadingLine."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from rich.console import Console

from mill.model.hf import HFCausalLM
from mill.progress import loading_steps
from mill.report.progress import LoadingLine

DEMO = str(resources.files("mill.resources").joinpath("models/stories260k"))


def test_the_hf_loader_says_its_steps_in_order() -> None:
    console = Console(record=True, width=200, no_color=True, markup=False, highlight=False)
    with LoadingLine(console, False, "demo") as line, loading_steps(line.step):
        HFCausalLM(DEMO, name="demo")
    lines = console.export_text().splitlines()
    assert lines[0] == "[mill] loading model demo"
    assert [x.removeprefix("[mill] loading model demo: ") for x in lines[1:-1]] == [
        "importing torch and transformers",
        "tokenizer",
        "weights",
        "fingerprint of the weights",
    ]
    last = lines[-1]
    assert last.startswith("[mill] loaded model demo in ")
    for step in ("importing torch and transformers ", "tokenizer ", "weights ", "fingerprint"):
        assert step in last


def test_without_a_line_the_steps_go_nowhere() -> None:
    HFCausalLM(DEMO, name="demo")  # no loading_steps: nothing to report to, no error


def test_a_model_without_steps_gets_the_total_alone() -> None:
    console = Console(record=True, width=200, no_color=True, markup=False, highlight=False)
    with LoadingLine(console, False, "fake"):
        pass
    assert console.export_text().splitlines()[-1].startswith("[mill] loaded model fake in ")


def test_a_one_time_build_is_its_own_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt2_random's weights, built once into Mill's cache: the build is itemised on the
    loaded line (15 s of a 17 s first load here), and a later load has no such step."""
    from mill.model.random import random_gpt2

    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "cache"))
    said: list[list[str]] = []
    for _ in range(2):
        console = Console(record=True, width=400, no_color=True, markup=False, highlight=False)
        with LoadingLine(console, False, "g") as line, loading_steps(line.step):
            random_gpt2(n_layer=1, n_embd=8, n_head=2)
        said.append(console.export_text().splitlines())
    first, later = said
    assert first[1] == "[mill] loading model g: building the random weights once"
    assert "building the random weights once " in first[-1]
    assert not any("building" in x for x in later)
    assert "Writing model shards" not in "\n".join(first)  # transformers' bar, not here
