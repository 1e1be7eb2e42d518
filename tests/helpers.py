"""Helpers shared by the tests (import them from here; fixtures stay in conftest.py files).

* :func:`compose_config`: Mill's real config composed with overrides (the ``compose``
  fixture).
* :func:`run_mill` starts the installed ``mill`` in a subprocess, :func:`run_process` any
  command; only tests marked ``slow`` may call them (the fast tier never starts a process:
  see tests/conftest.py).
* :func:`full_forward_oracle`, :func:`choice_requests` and :func:`docs_requests`: the model
  tests' oracle and requests.
* :func:`make_chat_tokenizer`: a small real tokenizer with a chat template.
* :func:`sample_record`: a hand-made line of ``samples/<task>.jsonl``.
* :func:`write_finished_run`: a hand-made run folder's results.json and manifest.json, with
  the checksums a finished run records.
* :data:`REPO`, :data:`SHARED` and :data:`SHARED_DATA`: the checkout, the shared folder beside
  it (``$MILL_SHARED``) and its data sets (``$MILL_SHARED_DATA``).
* :data:`ARC_ROW` and :func:`write_jsonl`: a data file of ARC rows (or any rows) for
  bad-input tests.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

# the checkout, ../shared (or $MILL_SHARED) and its data sets (or $MILL_SHARED_DATA): one
# definition, the benchmark tools' (their module imports only the standard library)
from benchmarks.driver_common import REPO as REPO
from benchmarks.driver_common import SHARED as SHARED
from benchmarks.driver_common import SHARED_DATA as SHARED_DATA
from mill.record import SampleRecord
from mill.types import DocOutput, OutputType, Request

if TYPE_CHECKING:
    from omegaconf import DictConfig

    from mill.model.hf import HFCausalLM


ARC_ROW: dict[str, Any] = {
    "id": "x1",
    "question": {
        "stem": "Which is a liquid?",
        "choices": [{"text": t, "label": k} for t, k in (("water", "A"), ("sand", "B"))],
    },
    "answerKey": "A",
}
"""One ARC row in the file format (``ai2_arc``'s JSONL)."""

SLOW_ALLOWED = {"now": True}
"""Whether the running test may start processes (set per test by tests/conftest.py)."""


def installed(distribution: str) -> bool:
    """Whether the distribution is installed (not whether some test hid its module)."""
    try:
        importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def run_process(
    *cmd: str | Path,
    cwd: Path | None = None,
    env: dict[str, str | None] | None = None,
    timeout: int = 300,
) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` to the end, its output captured as text, whatever its exit code; the
    environment is this one's with ``env`` on top (a ``None`` value removes the variable).
    Only tests marked ``slow`` may call it."""
    if not SLOW_ALLOWED["now"]:
        import pytest

        pytest.fail("this test starts a process: mark it @pytest.mark.slow")
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env={k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def mill_command() -> list[str]:
    """The ``mill`` console script installed beside this interpreter (``python -m mill``
    where there is none): for tests that start the process themselves."""
    exe = Path(sys.executable).with_name("mill")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "mill"]


def run_mill(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str | None] | None = None,
    timeout: int = 300,
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``mill`` console script in a subprocess (offline, CI=1)."""
    return run_process(
        *mill_command(), *args, cwd=cwd, env={"CI": "1", **(env or {})}, timeout=timeout
    )


def compose_config(*overrides: str) -> DictConfig:
    """Mill's real config composed with ``overrides`` (Hydra compose API)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    import mill.cli  # noqa: F401  (registers the mill_resource resolver)

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("mill.conf", version_base="1.3"):
            return hydra_compose("mill", overrides=list(overrides), return_hydra_config=False)
    finally:
        GlobalHydra.instance().clear()


def full_forward_oracle(model: HFCausalLM, context: str, continuation: str) -> tuple[float, bool]:
    """One full forward over ``(context + continuation)[-(L+1):][:-1]``, as lm-eval computes it:
    (sum of the continuation's log-probabilities, whether every token is the argmax)."""
    import torch

    ctx, cont = model.encode_pair(context, continuation)
    ids = torch.tensor([(ctx + cont)[-(model.max_length + 1) :][:-1]])
    with torch.no_grad():
        logp = torch.log_softmax(model.model(ids).logits[0].float(), -1)[-len(cont) :]
    target = torch.tensor(cont)
    return float(logp.gather(-1, target[:, None]).sum()), bool((logp.argmax(-1) == target).all())


def choice_requests(context: str, choices: list[str], doc: int = 0) -> list[Request]:
    """One LOGPROBS request per choice (a leading space added), all sharing ``context``."""
    return [
        Request(OutputType.LOGPROBS, "t", doc, i, context, " " + c) for i, c in enumerate(choices)
    ]


def docs_requests(contexts: list[str], choices: list[str]) -> list[Request]:
    """:func:`choice_requests` for each context in turn, as docs 0, 1, 2, ..."""
    return [r for doc, ctx in enumerate(contexts) for r in choice_requests(ctx, choices, doc)]


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}"
    "{% if not loop.last or add_generation_prompt %}<|end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def make_chat_tokenizer(folder: Path) -> Path:
    """Copy the stories260k tokenizer into ``folder`` and give it :data:`CHAT_TEMPLATE`."""
    from mill.data.load import bundled_data_dir

    source = bundled_data_dir().parent / "models" / "stories260k"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(source / name, folder / name)
    config: dict[str, Any] = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = CHAT_TEMPLATE
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return folder


def sample_record(
    doc_id: int = 0,
    *,
    gold: Any = 0,
    logprobs: list[float] | None = None,
    metrics: dict[str, Any] | None = None,
    task: str = "t",
    doc_hash: str = "",
) -> SampleRecord:
    """A sample record as the experiment folder writes it, with only what a test sets."""
    logprobs = list(logprobs or [])
    return SampleRecord(
        task=task,
        subject="default",
        doc_id=doc_id,
        fewshot_ids=[],
        choices=[f"choice {i}" for i in range(len(logprobs))],
        gold=gold,
        prediction=0,
        metrics=dict(metrics or {}),
        response=DocOutput(input=f"doc {doc_id}", logprobs=logprobs),
        doc_hash=doc_hash,
        prompt_hash="",
    )


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` as a JSON-lines file at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_finished_run(path: Path, results: dict[str, Any]) -> Path:
    """``results.json`` and a succeeded ``manifest.json`` in ``path`` for a hand-made run
    whose ``samples/<task>.jsonl`` are written: with the schema version and the checksums a
    finished run carries (:data:`mill.results.INTEGRITY_FIELDS`), as the run's own writer
    records them."""
    from mill.files import sha256_file
    from mill.results import SCHEMA_VERSION

    samples = {task: sha256_file(path / "samples" / f"{task}.jsonl") for task in results["tasks"]}
    data = {"schema_version": SCHEMA_VERSION, **results, "samples_sha256": samples}
    (path / "results.json").write_text(json.dumps(data))
    manifest = {"status": "succeeded", "results_sha256": sha256_file(path / "results.json")}
    (path / "manifest.json").write_text(json.dumps(manifest))
    return path
