"""What the ``mill`` command prints and logs holds none of the run's secrets: a run against
a real server that echoes the ``Authorization`` header in its 200 answers, with the URL as
the model's name (printed at load), Hydra's ``--cfg job``, ``--cfg all``, ``--help`` and
``--info``, and a run refused with a message quoting the URL. For each, the output
(stdout and stderr), the run folder (``mill.log`` included) and the cache folder, its
SQLite entries decompressed, are searched for every form of every secret. The run's files
sink by sink: ``tests/runner/test_secret_sinks.py``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.support.echo import ENV, KEY, cache_entries, echo_server, secret_forms, whole_folder

pytestmark = pytest.mark.slow

COMMANDS: dict[str, tuple[list[str], int]] = {
    "a run, the URL as the model's name": (["model.name=${model.base_url}"], 0),
    "--cfg job": (["--cfg", "job"], 0),
    "--cfg all": (["--cfg", "all"], 0),
    "--help": (["--help"], 0),
    "--info": (["--info"], 0),
    "a refused run (its one line, manifest, mill.log)": (
        ["model.max_gen_toks=${model.base_url}"],
        2,
    ),
}


@pytest.fixture(scope="module")
def echo_url() -> Iterator[str]:
    with echo_server() as url:
        yield url


@pytest.mark.parametrize("command", COMMANDS)
def test_no_secret_is_printed_logged_or_written(
    command: str, echo_url: str, tmp_path: Path
) -> None:
    extra, code = COMMANDS[command]
    out = tmp_path / "run"
    proc = run_mill(
        "task=gsm8k", "task.limit=2", "model=openai_chat", f"model.base_url={echo_url}",
        "model.model=echo", f"model.api_key_env={ENV}", "report.progress=never",
        f"hydra.run.dir={out}", *extra,
        env={ENV: KEY, "MILL_CACHE": str(tmp_path / "mill-cache")},
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr[-2000:]
    printed = proc.stdout + proc.stderr
    assert printed.strip(), "nothing was printed: nothing was checked"
    where = {"output": printed}
    if out.exists():
        where["run folder"] = whole_folder(out)
    if command.startswith("a run"):
        assert "You sent Authorization: Bearer ***" in where["run folder"]
        assert "loading model http://***@127.0.0.1" in printed
        assert (out / "mill.log").read_text().strip()
        where["response cache"] = cache_entries(out)
    if code == 2:
        errors = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and "model.max_gen_toks=" in errors[0], proc.stderr
        assert "http://***@127.0.0.1" in errors[0]
    if tmp_path.joinpath("mill-cache").exists():
        where["MILL_CACHE"] = whole_folder(tmp_path / "mill-cache")
    leaked = {name: [f for f in secret_forms() if f in text] for name, text in where.items()}
    assert not any(leaked.values()), leaked
