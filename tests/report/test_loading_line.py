"""The model phase says what it is doing: the HF loader's steps, shown by LoadingLine."""

from __future__ import annotations

from importlib import resources

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
