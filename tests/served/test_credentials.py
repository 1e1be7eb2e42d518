"""Credentials in ``model.base_url`` against a real llama.cpp server (behind the pass-through
fault proxy, which records what reaches the server): they are sent (HTTP Basic auth from
the user info, the query with every request) and never written or printed: no byte
``secret`` in any file of the sweep folder, its job folders, the response cache, the MLflow
store, the W&B run files, nor on the console; the cache identity ignores them; a failing
run's one error line masks them, also when the server echoes the request's credentials
back in its 401 (a proxy in front of no server answers it: no llama.cpp server needed)."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import run_mill
from tests.served.proxy import FaultProxy
from tests.served.runs import completions_args, error_lines, ok
from tests.support.servers import STORIES, ServerProcess, free_port

pytestmark = pytest.mark.slow

SECRET = b"secret"
BASIC = base64.b64encode(b"alice:secret")
"""The ``Basic`` token of the URL's user and password (holds no byte ``secret`` itself)."""
KEY = "sk-configured-0123456789"
"""An API key given through ``model.api_key_env``."""


def _url(port: int, user: str = "alice", password: str = "secret") -> str:
    return f"http://{user}:{password}@127.0.0.1:{port}/v1?api_key=secret&api-version=1"


def _api(base_url: str, cache: Path, *extra: str) -> list[str]:
    # quoted: Hydra's override grammar takes no bare '=' in a value (the query's);
    # llama-cpp-python takes text prompts (no probe request)
    quoted = f'"{base_url}"'
    args = completions_args(quoted, "model.prompt_ids=false", f"runner.cache={cache}", *extra)
    return ["task=arc_easy", *args]


def _leaks(*roots: Path) -> list[str]:
    """Every file under ``roots`` holding the bytes ``secret``, the Basic token made of
    them (also without its padding), or the configured key (also in base64)."""
    files = [p for root in roots for p in root.rglob("*") if p.is_file()]
    assert files, roots
    forms = (SECRET, BASIC, BASIC.rstrip(b"="), KEY.encode(), base64.b64encode(KEY.encode()))
    return [str(p) for p in files if any(form in p.read_bytes() for form in forms)]


@pytest.fixture(scope="module")
def proxy(llama_server: ServerProcess):
    with FaultProxy(llama_server.root_url) as p:
        yield p


def test_credentials_are_sent_and_never_written_or_printed(
    proxy: FaultProxy, tmp_path: Path
) -> None:
    pytest.importorskip("mlflow")
    pytest.importorskip("wandb")
    sweep, cache, store = tmp_path / "sweep", tmp_path / "cache", tmp_path / "mlruns"
    proc = run_mill(
        "-m",
        *_api(_url(proxy.port), cache),
        "task.limit=2,3",
        "+sink=[mlflow,wandb]",
        f"sink.mlflow.tracking_uri={store}",
        "sink.wandb.mode=offline",
        f"hydra.sweep.dir={sweep}",
    )
    ok(proc)
    # sent: Basic auth from the user info, the query on every request
    auth = "Basic " + base64.b64encode(b"alice:secret").decode()
    assert proxy.headers and all(h.get("Authorization") == auth for _, h in proxy.headers)
    assert all(path.endswith("?api_key=secret&api-version=1") for path, _ in proxy.headers)
    # never written: the sweep (multirun.yaml, summary.md/json), each job's folder
    # (manifest, results, report.html, mill.log, resolved.yaml, .hydra/, samples, wandb/),
    # the response cache and the MLflow store; nor printed
    jobs = sorted(p for p in sweep.iterdir() if p.is_dir())
    assert len(jobs) == 2 and (sweep / "summary.md").is_file()
    assert (sweep / "multirun.yaml").is_file()
    for job in jobs:
        names = {p.relative_to(job).as_posix() for p in job.rglob("*") if p.is_file()}
        assert {
            "manifest.json",
            "results.json",
            "report.html",
            "mill.log",
            "resolved.yaml",
        } <= names
        assert {".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml"} <= names
        assert any(n.startswith("wandb/") for n in names)
    assert _leaks(sweep, cache, store) == []
    assert "secret" not in proc.stdout + proc.stderr
    # what they say instead: the URL with its credentials masked, the identity without them
    masked = f"http://***@127.0.0.1:{proxy.port}/v1?api_key=***&api-version=1"
    assert f"base_url: {masked}" in (jobs[0] / "resolved.yaml").read_text()
    manifest = json.loads((jobs[0] / "manifest.json").read_text())
    assert manifest["model"]["base_url"] == f"http://127.0.0.1:{proxy.port}/v1?api-version=1"
    assert f'model.base_url="{masked}"' in manifest["argv"]

    # the cache identity is the host, port, path (and other query): another user and
    # password, or none, reuse every cached answer
    for name, url in (("bob", _url(proxy.port, "bob", "other")), ("none", proxy.base_url)):
        url += "" if "?" in url else "?api-version=1"
        again = run_mill(*_api(url, cache), "task.limit=3", f"hydra.run.dir={tmp_path / name}")
        ok(again)
        stats = json.loads((tmp_path / name / "manifest.json").read_text())["cache"]
        assert stats["computed"] == 0 and stats["hits"] == 12, (name, stats)


@pytest.fixture()
def refusing_proxy() -> Iterator[FaultProxy]:
    """A proxy in front of no server: what it answers itself (a 401 on /v1/models) is all a
    run that fails at its first request sees, so no llama.cpp server is needed."""
    with FaultProxy(f"http://127.0.0.1:{free_port()}") as p:
        yield p


@pytest.mark.parametrize(
    "fault", ["dead server", "401 from the server", "401 echoing Basic", "401 echoing the key"]
)
def test_a_failing_run_masks_credentials_in_its_one_line(
    refusing_proxy: FaultProxy, tmp_path: Path, fault: str
) -> None:
    """Issue 35, item 3: a server that echoes the request's credentials in its 401 body
    (the Authorization header, its token alone, the query's api_key) puts none of them,
    nor their base64 forms, in the run folder, the cache or the output."""
    proxy = refusing_proxy
    port = free_port() if fault == "dead server" else proxy.port
    if fault.startswith("401"):
        proxy.fail(1, status=401, paths=("/v1/models",), echo="echoing" in fault)
    run, cache = tmp_path / "run", tmp_path / "cache"
    env = {"OPENAI_API_KEY": KEY if fault == "401 echoing the key" else None}
    proc = run_mill(*_api(_url(port), cache), "task.limit=2", f"hydra.run.dir={run}", env=env)
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = error_lines(proc.stderr)
    assert f"model.base_url=http://***@127.0.0.1:{port}/v1?api_key=***&api-version=1" in line
    if "echoing" in fault:
        assert "denied: Authorization: Bearer ***" in line or "Basic ***" in line, line
    output = (proc.stdout + proc.stderr).encode()
    forms = (SECRET, BASIC, BASIC.rstrip(b"="), KEY.encode(), base64.b64encode(KEY.encode()))
    assert not [form for form in forms if form in output]
    assert "Traceback" not in proc.stderr
    assert not (run / "results.json").exists()
    assert json.loads((run / "manifest.json").read_text())["status"] == "failed"
    assert _leaks(run, *([cache] if cache.exists() else [])) == []


def test_a_url_that_is_not_http_is_refused_with_its_credentials_masked(tmp_path: Path) -> None:
    proc = run_mill(
        "task=arc_easy",
        "model=openai_completions",
        "model.base_url=ftp://alice:secret@127.0.0.1:1/v1",
        f"model.tokenizer={STORIES}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert proc.returncode == 2
    (line,) = error_lines(proc.stderr)
    assert "'ftp://***@127.0.0.1:1/v1' is not an http(s) URL" in line
    assert "secret" not in proc.stdout + proc.stderr
    assert _leaks(tmp_path / "run") == []


def test_a_slurm_sweep_writes_no_credential(proxy: FaultProxy, tmp_path: Path) -> None:
    """A sweep through hydra-submitit-launcher (the ``slurm`` preset's plugin; its local
    executor runs the jobs as processes of this machine): submitit pickles the launcher with
    the sweep's config, each job's overrides and Hydra's state into the submitit folder, and
    each job's result beside them. None of them holds the credentials of the sweep's URLs
    (two servers' worth: a sweep over two base_urls), which reach the jobs through their
    environment: the jobs still authenticate, and no file under the sweep folder holds them."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    sweep, cache = tmp_path / "sweep", tmp_path / "cache"
    proxy.headers.clear()
    # two URLs of one sweep (the second reaches the same proxy by another host name)
    other = _url(proxy.port, "bob", "secret2").replace("127.0.0.1", "localhost")
    args = completions_args(
        f'"{_url(proxy.port)}","{other}"', "model.prompt_ids=false", f"runner.cache={cache}"
    )
    proc = run_mill(
        "-m",
        "hydra/launcher=submitit_local",
        "task=arc_easy",
        *args,
        "task.limit=2",
        f"hydra.sweep.dir={sweep}",
    )
    ok(proc)
    alice = "Basic " + base64.b64encode(b"alice:secret").decode()
    bob = "Basic " + base64.b64encode(b"bob:secret2").decode()
    sent = {h.get("Authorization") for _, h in proxy.headers}
    assert sent == {alice, bob}, sent
    assert all(path.endswith("?api_key=secret&api-version=1") for path, _ in proxy.headers)
    summary = json.loads((sweep / "summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["succeeded", "succeeded"]
    pickles = sorted((sweep / ".submitit").rglob("*.pkl"))  # the jobs went through submitit
    assert sum(p.name.endswith("_submitted.pkl") for p in pickles) == 2, pickles
    assert sum(p.name.endswith("_result.pkl") for p in pickles) == 2, pickles
    assert _leaks(sweep, cache) == []
    assert "secret" not in proc.stdout + proc.stderr


def test_a_failing_slurm_job_masks_credentials_in_its_files(tmp_path: Path) -> None:
    """A submitit job whose server is dead fails with the one line that masks the URL: in
    the job's own log files under ``.submitit/`` and its ``mill.log`` too (the job logs in a
    process of its own), and in nothing else of the sweep."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    sweep, port = tmp_path / "sweep", free_port()
    proc = run_mill(
        "-m",
        "hydra/launcher=submitit_local",
        *_api(_url(port), tmp_path / "cache"),
        "task.limit=2",
        f"hydra.sweep.dir={sweep}",
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    masked = f"http://***@127.0.0.1:{port}/v1?api_key=***&api-version=1"
    logs = "".join(p.read_text() for p in (sweep / ".submitit").rglob("*.err"))
    assert f"model.base_url={masked}" in logs, logs[-3000:]
    (job,) = [p for p in sweep.iterdir() if p.is_dir() and not p.name.startswith(".")]
    assert masked in (job / "mill.log").read_text()
    assert _leaks(sweep) == []
    assert "secret" not in proc.stdout + proc.stderr


def test_a_sweep_over_credentials_alone_is_refused_in_one_line(tmp_path: Path) -> None:
    """Two URLs of a sweep that differ only in their credentials would be one masked URL
    (the jobs get their credentials by it): one line, exit 2, before any folder is made."""
    sweep = tmp_path / "sweep"
    urls = f'"{_url(1)}","{_url(1, "bob", "secret2")}"'
    proc = run_mill("-m", "task=arc_easy", *completions_args(urls), f"hydra.sweep.dir={sweep}")
    assert proc.returncode == 2, proc.stderr[-3000:]
    (line,) = error_lines(proc.stderr)
    assert "differ only in their credentials (http://***@127.0.0.1:1/v1?api_key=***" in line
    assert "secret" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr
    assert not sweep.exists()
