"""Running the model's programs: each in its own bubblewrap sandbox, in parallel, cached.

The interface the code tasks and pass@k build on (see docs/sandbox.md):
:class:`ExecutionSettings` (the ``execution`` config group), :class:`Verdict`,
:func:`check_sandbox` (start-up) and :func:`run_programs`. No torch, no Hydra here.
"""

from mill.execution.runner import run_programs, verdict_key
from mill.execution.sandbox import SandboxUnavailable, check_sandbox, find_bwrap
from mill.execution.settings import STATUSES, ExecutionSettings, Verdict

__all__ = [
    "STATUSES",
    "ExecutionSettings",
    "SandboxUnavailable",
    "Verdict",
    "check_sandbox",
    "find_bwrap",
    "run_programs",
    "verdict_key",
]
