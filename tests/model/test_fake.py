"""The fake model: deterministic, torch-free, every request type, callbacks as they finish."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mill.model.fake import FakeLM
from mill.types import GenerationArgs, OutputType, Request


def _requests() -> list[Request]:
    gen = GenerationArgs(until=("\n",), max_gen_toks=2)
    return [
        Request(OutputType.LOGPROBS, "t", 0, 0, "Q: sky?", " blue"),
        Request(OutputType.LOGPROBS, "t", 0, 1, "Q: sky?", " green"),
        Request(OutputType.PERPLEXITY, "t", 1, 0, "", "a whole page"),
        Request(OutputType.GENERATIVE, "t", 2, 0, "2+2=", generation=gen),
    ]


def _answers(model: FakeLM) -> list:
    reqs = _requests()
    seen: list[str] = []
    out = [
        *model.loglikelihood(reqs[:2], lambda q, r: seen.append(r.request_id)),
        *model.loglikelihood_rolling(reqs[2:3], lambda q, r: seen.append(r.request_id)),
        *model.generate_until(reqs[3:], lambda q, r: seen.append(r.request_id)),
    ]
    assert seen == [r.id for r in reqs]
    return out


def test_answers_are_deterministic_per_seed_and_well_formed() -> None:
    first, again, other = _answers(FakeLM()), _answers(FakeLM()), _answers(FakeLM(seed=1))
    assert first == again and first != other
    blue, green, page, gen = first
    assert blue.output_tokens == list(b" blue") and blue.input_tokens == list(b"Q: sky?")
    assert -len(b" blue") * 1.5 <= blue.logprob <= -len(b" blue") * 0.5
    assert blue.logprob != green.logprob and isinstance(blue.is_greedy, bool)
    assert page.input_tokens == [] and page.logprob < 0
    assert gen.text is not None and len(gen.text.encode()) <= 2 and gen.logprob is None
    fixed = FakeLM(answer=" 4\nmore").generate_until(_requests()[3:])[0]
    assert fixed.text == " 4"  # cut at the stop string
    assert FakeLM().identity() != FakeLM(seed=1).identity()


@pytest.mark.slow  # starts a Python process
def test_importing_and_using_it_never_imports_torch() -> None:
    code = (
        "import sys; from mill.model.fake import FakeLM; from mill.types import *; "
        "FakeLM().loglikelihood([Request(OutputType.LOGPROBS, 't', 0, 0, 'a', 'b')]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
