"""What the benchmark tools share: the two drivers (``mill_driver`` and ``lmeval_driver``)
and the tools that time whole processes (``side_by_side``, ``whole_process``,
``bench_served``).

Imports only the standard library, and nothing heavy at import time: ``lmeval_driver`` runs
in lm-eval's own interpreter, which need not have Mill installed. The tools start it (and
every other child of theirs) as ``python -m benchmarks.<module>`` in the checkout's root
(:func:`module_cmd`, ``cwd=REPO``): ``-m`` puts the working directory first on
``sys.path``, so the checkout's ``benchmarks`` (and ``mill``) are found there without any
path edit, and ``benchmarks/__init__.py`` and this module import nothing but the standard
library (``tests/bench/test_driver_common.py`` imports them with ``python -S``: no
site-packages, as in a virtualenv without Mill).
"""

from __future__ import annotations

import os
import resource
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
"""The checkout the tools run from (its ``benchmarks``)."""
SHARED = Path(os.environ.get("MILL_SHARED", REPO.parent / "shared"))
"""``../shared`` beside the checkout, or ``$MILL_SHARED``."""
SHARED_DATA = Path(os.environ.get("MILL_SHARED_DATA", SHARED / "data"))
"""The shared data sets, or ``$MILL_SHARED_DATA``."""


def documented_overrides(pattern: str) -> list[tuple[Path, str]]:
    """Every ``task.dataset_overrides`` example for the task ``pattern`` (``leaderboard_bbh_*``)
    in the README and docs/, as printed: (file, YAML text). A block starts at a line
    ``<pattern>:`` and runs over the lines indented deeper."""
    found = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]:
        lines = doc.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() != f"{pattern}:":
                continue
            indent = len(line) - len(line.lstrip())
            block = [line]
            for more in lines[i + 1 :]:
                if not more.strip() or len(more) - len(more.lstrip()) <= indent:
                    break
                block.append(more)
            found.append((doc, "\n".join(b[indent:] for b in block) + "\n"))
    return found


def documented_recipe(pattern: str, folder: Path, data: Path = SHARED_DATA) -> Path:
    """docs/real-model.md's one ``task.dataset_overrides`` recipe for ``pattern``, as printed,
    written into ``folder`` with its ``<folder>`` the shared data."""
    ((doc, text),) = documented_overrides(pattern)
    if doc.name != "real-model.md":
        raise ValueError(f"the recipe for {pattern} is in {doc}, not docs/real-model.md")
    overrides = folder / "overrides.yaml"
    overrides.write_text(text.replace("<folder>", str(data)))
    return overrides


def lmeval_python() -> Path:
    """The interpreter that runs lm-evaluation-harness 0.4.13 for the side-by-side scripts
    and the parity tests: ``$MILL_LMEVAL_PYTHON``; else the dev virtualenv
    ``<repo>/.venv-lmeval`` (``setup_lmeval_venv.sh``) where it exists; else this
    interpreter when it has lm_eval (the ``dev`` extra installs it, with the torch and
    transformers Mill uses); else the dev virtualenv's path, which callers report missing."""
    import importlib.util
    import sys

    if os.environ.get("MILL_LMEVAL_PYTHON"):
        return Path(os.environ["MILL_LMEVAL_PYTHON"])
    venv = REPO / ".venv-lmeval" / "bin" / "python"
    if not venv.exists() and importlib.util.find_spec("lm_eval") is not None:
        return Path(sys.executable)
    return venv


def import_error(python: Path, module: str) -> str | None:
    """Why ``python`` cannot import ``module`` (the last line it printed), or None when it
    can: a peer's optional parts, checked before a benchmark starts anything."""
    import subprocess

    proc = subprocess.run(
        [str(python), "-c", f"import {module}"], capture_output=True, text=True, timeout=300
    )
    if proc.returncode == 0:
        return None
    lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit {proc.returncode}"


def lighteval_python() -> Path:
    """The interpreter that runs lighteval 0.13 for ``benchmarks.lighteval_math`` and its parity
    test: ``$MILL_LIGHTEVAL_PYTHON``; else the dev virtualenv ``<repo>/.venv-lighteval``
    (``scripts/setup_lighteval_venv.sh``), which callers report missing when it is absent."""
    if os.environ.get("MILL_LIGHTEVAL_PYTHON"):
        return Path(os.environ["MILL_LIGHTEVAL_PYTHON"])
    return REPO / ".venv-lighteval" / "bin" / "python"


def mill_cmd(args: list[str]) -> list[str]:
    """The ``mill`` console script installed beside this interpreter with ``args``
    (``python -m mill`` where there is none)."""
    import sys

    exe = Path(sys.executable).with_name("mill")
    return [*([str(exe)] if exe.exists() else [sys.executable, "-m", "mill"]), *args]


def module_cmd(python: str | Path, module: str, *args: str) -> list[str]:
    """``python -m benchmarks.<module> args``; run it with ``cwd=REPO`` (see above)."""
    return [str(python), "-m", f"benchmarks.{module}", *args]


def write_task_yamls(tasks: list[dict[str, Any]], folder: Path, root: Path) -> Path:
    """Task YAMLs in ``folder`` (lm-eval's ``--include_path``) that ``include`` lm-eval's
    own YAML (``task["include"]``, relative to lm-eval's task folder ``root``) and
    override only what ``task["overrides"]`` names (data source, shots); returns
    ``folder``. ``tasks``: :meth:`benchmarks.workloads.Workload.lmeval_tasks`."""
    import yaml  # lm-eval's interpreter has it (lm-eval needs it)

    folder.mkdir(parents=True, exist_ok=True)
    for task in tasks:
        body: dict[str, Any] = {"task": task["name"], "tag": []}
        if task.get("include"):  # None: a standalone YAML (its overrides say everything)
            body = {"include": str(root / task["include"]), **body}
        body.update(task.get("overrides", {}))
        (folder / f"{task['name']}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return folder


def abs_path(text: str) -> Path:
    """A path argument made absolute (the drivers run in other working directories)."""
    return Path(text).resolve()


def lmeval_batch(text: str) -> int | str:
    """lm-eval's ``--batch_size`` from a command-line argument: a number, or a word such as
    ``auto`` as given."""
    return int(text) if text.isdigit() else text


def child_env(threads: int, **extra: str) -> dict[str, str]:
    """The environment of a timed child process: offline, ``threads`` threads, no progress
    bars, plus ``extra``."""
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
        TQDM_DISABLE="1",
    )
    env.update(extra)
    return env


def best_seconds(fn: Callable[[], object], repeat: int) -> float:
    """The fewest wall seconds of ``repeat`` calls of ``fn``, after one call to warm it."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timed_run(
    argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
) -> tuple[float, int, int]:
    """Run ``argv`` to completion, its output to ``log``; (wall seconds, exit status, the
    child's own peak RSS in KiB)."""
    wall, code, rss, _ = timed_run_cpu(argv, log, env, cwd)
    return wall, code, rss


def timed_run_cpu(
    argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
) -> tuple[float, int, int, float]:
    """:func:`timed_run` and the CPU seconds (user + system) the child used, which other
    processes on a busy machine change less than its wall time."""
    start = time.perf_counter()
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    cpu = usage.ru_utime + usage.ru_stime
    return wall, os.waitstatus_to_exitcode(status), int(usage.ru_maxrss), cpu


def import_model_code(model_dir: str) -> None:
    """Import the model's transformers modules before the clock starts (both drivers do
    this, so library import time is never counted as work)."""
    import transformers
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    config = transformers.AutoConfig.from_pretrained(model_dir)
    MODEL_FOR_CAUSAL_LM_MAPPING[type(config)]
    transformers.AutoTokenizer.from_pretrained(model_dir)


class TokenCounter:
    """Counts token positions entering the transformer body (padding included)."""

    def __init__(self, body: Any) -> None:
        self.tokens = 0
        self.calls = 0
        body.register_forward_pre_hook(self._hook, with_kwargs=True)

    def _hook(self, module: Any, args: Any, kwargs: Any) -> None:
        ids = kwargs.get("input_ids")
        if ids is None and args:
            ids = args[0]
        if ids is None:
            embeds = kwargs.get("inputs_embeds")
            n = 0 if embeds is None else embeds.shape[0] * embeds.shape[1]
        else:
            n = ids.numel()
        self.tokens += int(n)
        self.calls += 1


def peak_rss_kib() -> int:
    """This process's peak resident set size so far, in KiB (Linux ``ru_maxrss``)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
