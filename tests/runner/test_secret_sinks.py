"""The run's secrets (the API key of ``model.api_key_env``, the URL's password, the
``Basic`` token made of them) appear in no sink, even when the server echoes them back in a
successful answer: a real HTTP server on 127.0.0.1 (in a thread) answers every chat request
with the ``Authorization`` header it received, once authenticated with ``Bearer <key>`` and
once with the URL's ``Basic`` credentials. Each sink of the run (samples, the response
cache's entries, results, manifest, resolved config, reports, the folder as a whole) is
searched for every form of every secret; the console, ``mill.log``, Hydra's printouts and
a failing run's one line are the CLI's: ``tests/test_cli_secrets.py``."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mill.redact import register_config_secrets
from mill.runner.job import run_job
from tests.helpers import compose_config
from tests.support.echo import ENV, KEY, cache_entries, echo_server, secret_forms, whole_folder


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with echo_server() as url:
        yield url


@pytest.fixture(scope="module", params=["bearer", "basic"])
def run_folder(
    request: pytest.FixtureRequest, echo_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """One run against the echo server: with the API key (``Bearer``), or without one
    (the URL's user info, sent as ``Basic``)."""
    out = tmp_path_factory.mktemp(request.param) / "run"
    if request.param == "bearer":
        os.environ[ENV] = KEY
    try:
        cfg = compose_config(
            "task=gsm8k", "task.limit=2", "model=openai_chat", f"model.base_url={echo_url}",
            "model.model=echo", f"model.api_key_env={ENV}", "model.name=echoed",
            "report.progress=never",
        )  # fmt: skip
        run_job(cfg, out)
    finally:
        os.environ.pop(ENV, None)
    samples = (out / "samples" / "gsm8k.jsonl").read_text()
    assert "You sent Authorization: " in samples, "the server's echo did not reach the samples"
    return out


SINKS: dict[str, Callable[[Path], str]] = {
    "samples file": lambda f: (f / "samples" / "gsm8k.jsonl").read_text(),
    "response cache": cache_entries,
    "results.json": lambda f: (f / "results.json").read_text(),
    "manifest.json": lambda f: (f / "manifest.json").read_text(),
    "resolved.yaml": lambda f: (f / "resolved.yaml").read_text(),
    "report.txt": lambda f: (f / "report.txt").read_text(),
    "report.html": lambda f: (f / "report.html").read_text(),
    "every file of the folder": whole_folder,
}


@pytest.mark.parametrize("sink", SINKS)
def test_no_secret_reaches_a_sink_even_echoed_in_a_200_answer(run_folder: Path, sink: str) -> None:
    text = SINKS[sink](run_folder)
    assert text.strip(), f"{sink} is empty: nothing was checked"
    leaked = [form for form in secret_forms() if form in text]
    assert not leaked, f"{sink} holds {leaked}"


def test_the_echo_is_kept_with_only_the_secret_masked(run_folder: Path) -> None:
    scheme = "Bearer" if run_folder.parent.name.startswith("bearer") else "Basic"
    rows = [json.loads(line) for line in (run_folder / "samples" / "gsm8k.jsonl").open()]
    texts = {text for row in rows for text in row["response"]["text"]}
    assert texts == {f"You sent Authorization: {scheme} *** (that is, ***)"}


def test_the_registry_is_built_from_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every URL's credentials and every ``*api_key_env``'s value, nested anywhere."""
    from mill.redact import mask_secrets, redact_text

    monkeypatch.setenv("MILL_TEST_JUDGE_KEY", "judge-key-5e1f0a")
    register_config_secrets(
        {
            "model": {"base_url": "http://bob:model-pass-91c2@h/v1"},
            "judge": {"model": {"api_key_env": "MILL_TEST_JUDGE_KEY"}},
            "list": ["https://h/v1?api_key=query-key-77ab"],
        }
    )
    for secret in ("model-pass-91c2", "judge-key-5e1f0a", "query-key-77ab", "bob:model-pass-91c2"):
        assert redact_text(f"said {secret}.") == "said ***."
        assert mask_secrets({"a": [f"x{secret}y"]}) == {"a": ["x***y"]}
    # an answer's other words are left as they are: no pattern is applied to them
    answer = {"text": "password = 'hunter22', api_key: abcdefgh"}
    assert mask_secrets(answer) == answer
