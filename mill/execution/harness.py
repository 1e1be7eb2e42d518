"""The code that runs inside each sandbox, around one program (run as ``python -I -S -c``).

``-S``: the interpreter's ``site`` is not imported, so no ``.pth`` file runs (they cost a
quarter of a second per program where many packages are installed, and run code that is
not the program's); the interpreter's own site-packages folders are still on ``sys.path``,
so the program can import what that interpreter has installed (they come as the last
arguments).

It sets the program's resource limits, reads the program from stdin, runs it the way
OpenAI's reference executor does (``exec`` in an empty namespace, the timeout as a timer
signal inside the process) and reports how it ended on the file descriptor given as its
last argument: ``passed``, ``failed<TAB>first line``, ``timed_out`` or ``out_of_memory``.
A program that ends the process itself (``os._exit``, a signal) writes no report: the
parent calls that a failure or a kill. Arguments: timeout seconds, address space, file
size, open files, processes, the report's file descriptor.
"""

# Kept as source text, not imported: the sandbox runs it with the programs' interpreter,
# which may be another Python than Mill's.
HARNESS = r"""
import os, resource, sys
import _signal as signal  # the C module: `signal` would import enum, functools, collections
timeout, address, fsize, nofile, nproc, fd = (float(a) for a in sys.argv[1:7])
fd = int(fd)
sys.path.extend(sys.argv[7:])
for limit, value in ((resource.RLIMIT_AS, address), (resource.RLIMIT_FSIZE, fsize),
                     (resource.RLIMIT_NOFILE, nofile), (resource.RLIMIT_NPROC, nproc),
                     (resource.RLIMIT_CPU, int(timeout) + 2), (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(limit, (int(value), int(value)))
source = sys.stdin.buffer.read()
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
class TimeoutException(Exception):
    pass
def expire(signum, frame):
    raise TimeoutException("timed out")
signal.signal(signal.SIGALRM, expire)
def line(err):
    text = str(err).strip().splitlines()
    name = type(err).__name__
    return (name + ": " + text[0] if text else name)[:500]
outcome = "passed"
try:
    code = compile(source, "<string>", "exec")  # the name exec(str) gives, as the reference
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        exec(code, {})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
except TimeoutException:
    outcome = "timed_out"
except MemoryError:
    outcome = "out_of_memory"
except BaseException as err:
    try:
        outcome = "failed\t" + line(err).replace("\t", " ").replace("\n", " ")
    except BaseException:
        outcome = "failed\t" + type(err).__name__
try:
    sys.stdout.flush()
    sys.stderr.flush()
except BaseException:
    pass
os.write(fd, (outcome + "\n").encode("utf-8", "replace"))
os._exit(0)
"""
