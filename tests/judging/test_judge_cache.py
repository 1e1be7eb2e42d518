"""A served judge is named by its model and base URL (no credentials) and its calls are
cached under ``$MILL_CACHE/judge`` by judge identity and prompt: judging the same answers
again with the same judge (a new run, or ``mill judge`` of the finished run) makes no
call; a changed judge (model, revision, sampling, template) never reuses one; and
``judge.cache=false`` opts out. The judge is the deterministic server of
:mod:`tests.runner.judge_server` on 127.0.0.1, which counts what it receives."""

from __future__ import annotations

from pathlib import Path

import pytest

from mill.judging import JudgeSettings, judge_job
from mill.report.load import RunFolder
from mill.runner.job import run_job
from tests.runner.judge_server import judge_server

pytestmark = pytest.mark.slow

SECRET = "hunter2secret"


def _judge_calls(server) -> int:  # noqa: ANN001
    return sum(1 for b in server.seen if b.get("model") in ("gpt-4", "cand") and "[[" in str(b))


def test_the_same_judge_is_never_asked_twice_and_a_changed_one_always_is(
    compose, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "cache"))
    with judge_server() as server:
        url = server.url.replace("http://", f"http://user:{SECRET}@")

        def run(out: str, *extra: str):  # noqa: ANN202
            before = _judge_calls(server)
            cfg = compose(
                "task=mt_bench", "task.limit=4", "model=fake", "judge=openai_chat",
                f"judge.base_url={url}", "judge.model=gpt-4", "judge.max_invalid=1.0",
                "report.progress=never", *extra,
            )  # fmt: skip
            results = run_job(cfg, tmp_path / out)
            return results, _judge_calls(server) - before

        first, calls = run("a")
        assert calls == 8  # 4 questions, 2 turns
        report = (tmp_path / "a/report.txt").read_text()
        host = server.url.removeprefix("http://")
        assert f"judge: gpt-4 at http://{host};" in report
        assert SECRET not in report and "judge: ?" not in report
        again, calls = run("b")
        assert calls == 0  # a new run, the same judge and prompts: every reply cached
        row = lambda r: r.tasks["mt_bench"].metrics["mt_bench_score"]  # noqa: E731
        assert row(again).value == row(first).value
        # mill judge of the finished run's answers with the same judge: no call either
        before = _judge_calls(server)
        cfg = compose_judge(f"run={tmp_path / 'a'}", url)
        rejudged = run_job(judge_job(cfg, RunFolder.open), tmp_path / "rejudged")
        assert _judge_calls(server) == before
        assert row(rejudged).value == row(first).value
        # a changed judge never reuses a call
        for extra in (
            ("judge.revision=v2",),
            ("judge.generation.max_gen_toks=1000",),
            ("judge.generation.do_sample=true", "judge.generation.temperature=0.7"),
            ("judge.model=cand",),
            (
                "+metrics=[mt_bench_score]",
                "+metrics.mt_bench_score.templates.single.prompt_template="
                "'Grade [[rating]]: {question} {answer}'",
            ),
        ):  # fmt: skip
            _, calls = run(f"changed-{len(server.seen)}", *extra)
            assert calls > 0, extra
        _, calls = run("off", "judge.cache=false")
        assert calls == 8  # opted out: every call made


def compose_judge(run: str, url: str):  # noqa: ANN201
    """``mill judge run=<run> judge=openai_chat ...`` as the CLI composes it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    overrides = [
        run, "judge=openai_chat", f"judge.base_url={url}", "judge.model=gpt-4",
        "judge.max_invalid=1.0", "report.progress=never",
    ]  # fmt: skip
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module("mill.conf", version_base="1.3"):
            return hydra_compose("judge", overrides=overrides)
    finally:
        GlobalHydra.instance().clear()


def test_bad_judge_cache_setting_is_one_line(compose, tmp_path: Path) -> None:
    from mill.errors import ConfigError

    cfg = compose("task=mt_bench", "model=fake", "judge=fake", "judge.cache=3")
    with pytest.raises(ConfigError, match="judge.cache=3") as err:
        JudgeSettings.parse(cfg.judge)
    assert "\n" not in str(err.value)


def test_judge_cache_true_is_the_shared_cache_as_composition_accepted_it(
    compose, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The schema takes judge.cache=true (a flag) at composition; the judge reads it as
    the default, $MILL_CACHE/judge, instead of refusing it later."""
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "cache"))
    on = JudgeSettings.parse(
        compose("task=mt_bench", "model=fake", "judge=fake", "judge.cache=true").judge
    )
    assert on.cache == "shared" and on.record()["cache"] == "shared"
    assert on.cache_folder(tmp_path / "run") == tmp_path / "cache" / "judge"
    off = JudgeSettings.parse(
        compose("task=mt_bench", "model=fake", "judge=fake", "judge.cache=false").judge
    )
    assert off.cache is None and off.record()["cache"] is False
    assert off.cache_folder(tmp_path / "run") is None
    run = JudgeSettings.parse(
        compose("task=mt_bench", "model=fake", "judge=fake", "judge.cache=run").judge
    )
    assert run.cache_folder(tmp_path / "run") == tmp_path / "run"
