"""Proof of isolation: hostile programs, each run in Mill's sandbox, all in one batch.

Every program tries one escape and ends by failing (or timing out); the batch completes; a
harmless program in the same batch passes; and nothing outside the sandbox changes: no file
appears in the run folder, the cache, $HOME, /tmp or the current folder, no connection
reaches the test's listener, no secret shows in any verdict, the test's own processes live,
and no process a program left behind is alive when its verdict is written.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from mill.execution import ExecutionSettings, Verdict, check_sandbox, run_programs

pytestmark = pytest.mark.slow

FAILED = {"failed"}
ENDED = {"failed", "timed_out"}


def _processes_with(marker: str) -> list[int]:
    """PIDs (on this machine, outside any sandbox) whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if marker.encode() in cmdline and int(entry) != os.getpid():
            found.append(int(entry))
    return found


@pytest.fixture()
def listener():
    """A TCP listener on 127.0.0.1 that records every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(addr)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join(5)
    server.close()


def test_hostile_programs_end_failed_and_change_nothing(tmp_path, listener, monkeypatch):
    port, accepted = listener
    token = uuid.uuid4().hex
    canary = f"sk-canary-{token}"
    marker = f"mill-daemon-{token}"
    run = tmp_path / "run"
    cache = tmp_path / "cache"
    run.mkdir()
    cache.mkdir()
    secret_file = run / "api_key.txt"
    secret_file.write_text(canary)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    home = Path(os.path.expanduser("~"))
    name = f"mill-hostile-{token}"
    targets = {
        "run folder": run / name,
        "cache": cache / name,
        "$HOME": home / name,
        "/tmp": Path("/tmp") / name,
        "cwd": Path.cwd() / name,
    }
    # a process of the test's own, as a target for "kill every visible PID"
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    settings = ExecutionSettings(timeout_s=3.0, workers=2)
    check_sandbox(settings)
    table: list[tuple[str, str, set[str]]] = [
        (
            "connect to the test's listener",
            f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)",
            FAILED,
        ),
        *(
            (
                f"write to the {where}",
                f"open({str(path)!r}, 'w').write('pwned')",
                FAILED,
            )
            for where, path in targets.items()
        ),
        (
            "read the API key from the environment",
            "import os\nprint(os.environ.get('OPENAI_API_KEY'))\n"
            "assert os.environ['OPENAI_API_KEY'].startswith('sk-')",
            FAILED,
        ),
        (
            "read the API key from a file in the run folder",
            f"print(open({str(secret_file)!r}).read())",
            FAILED,
        ),
        ("fork bomb", "import os\nwhile True:\n    os.fork()", ENDED),
        ("allocate 20 GiB", "block = bytearray(20 * 2**30)\nblock[-1] = 1", {"out_of_memory"}),
        ("spin forever", "while True:\n    pass", {"timed_out"}),
        ("spin forever, catching the timeout", _CATCH_TIMEOUT, {"timed_out"}),
        ("print 1 GB", "import sys\nsys.stdout.write('x' * 10**9)", ENDED),
        (
            "kill its parent",
            "import os, time\nparent = os.getppid()\nos.kill(parent, 9)\ntime.sleep(0.5)\n"
            "os.kill(parent, 0)\nraise AssertionError('the parent survived SIGKILL')",
            FAILED,
        ),
        ("kill every visible PID", _KILL_ALL, FAILED),
        ("leave a daemonised child behind", _DAEMON.replace("MARKER", marker), FAILED),
        (
            "follow a symlink out of the working folder",
            f"import os\nos.symlink({str(secret_file)!r}, 'key')\nprint(open('key').read())",
            FAILED,
        ),
        (
            "ctypes: become root, mount, chroot, a new user namespace",
            _CTYPES,
            FAILED,
        ),
        (
            "subprocess: a shell that writes outside and reaches the network",
            "import subprocess\nsubprocess.run(['/bin/sh', '-c', "
            f"{'echo pwned > ' + str(targets['/tmp']) + '; env; cat ' + str(secret_file)!r}"
            "], check=True)",
            FAILED,
        ),
    ]
    programs = [program for _, program, _ in table] + ["assert sum([1, 2]) == 3"]
    alive_at_verdict: dict[int, list[int]] = {}

    def on_verdict(index: int, verdict: Verdict) -> None:
        alive_at_verdict[index] = _processes_with(marker)

    try:
        verdicts = run_programs(programs, settings, cache_dir=cache, on_verdict=on_verdict)
        assert bystander.poll() is None, "a program killed a process outside its sandbox"
    finally:
        bystander.kill()
        bystander.wait()

    assert verdicts[-1].passed, verdicts[-1]  # the batch completed around the hostile ones
    for (what, _, expected), verdict in zip(table, verdicts[:-1], strict=True):
        assert verdict.status in expected, f"{what}: {verdict}"
        assert canary not in verdict.output_tail + verdict.message, f"{what} read the secret"
    for what, path in targets.items():
        assert not path.exists(), f"a program wrote to the {what}: {path}"
    assert not accepted, "a program connected to 127.0.0.1"
    daemon = next(i for i, (what, _, _) in enumerate(table) if "daemon" in what)
    assert alive_at_verdict[daemon] == [], "the daemon outlived its sandbox"
    assert not _processes_with(marker)
    assert sorted(p.name for p in run.iterdir()) == ["api_key.txt"]
    assert sorted(p.name for p in cache.iterdir()) == ["verdicts"]  # Mill's own verdicts only
    # what the programs saw of the machine, in their own words
    by_name = {what: verdict for (what, _, _), verdict in zip(table, verdicts[:-1], strict=True)}
    # the sandbox's own loopback: nothing listens there, the test's listener is not reachable
    assert by_name["connect to the test's listener"].message.startswith("ConnectionRefusedError")
    assert by_name["read the API key from the environment"].message.startswith("KeyError")
    assert by_name["kill its parent"].message == "AssertionError: the parent survived SIGKILL"
    assert by_name["ctypes: become root, mount, chroot, a new user namespace"].message.startswith(
        "AssertionError: every privileged call was refused"
    )


_CATCH_TIMEOUT = """
while True:
    try:
        while True:
            pass
    except BaseException:
        pass
"""

_KILL_ALL = """
import os, time
me = os.getpid()
seen = [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != me]
for pid in seen:
    try:
        os.kill(pid, 9)
    except OSError:
        pass
for pid in range(1, 70000):
    if pid != me:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
time.sleep(0.5)
raise AssertionError(f'still here after killing {seen}')
"""

_DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', 'MARKER'])
    os._exit(0)
time.sleep(0.5)
raise AssertionError('left a daemon behind')
"""

_CTYPES = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
results = {
    'setuid0': libc.setuid(0),
    'mount': libc.mount(b'/', b'/tmp', None, 4096 | 16384, None),  # MS_BIND | MS_REC
    'unshare': libc.unshare(0x10000000 | 0x20000),  # CLONE_NEWUSER | CLONE_NEWNS
    'chroot': libc.chroot(b'/'),
}
assert any(code == 0 for code in results.values()), f'every privileged call was refused {results}'
"""
