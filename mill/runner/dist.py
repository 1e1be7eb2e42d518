"""Which process this is among the data-parallel workers, and the few collectives Mill uses.

Workers are started by a launcher (``accelerate launch``, ``torchrun``, or Mill's own
driver) that sets ``RANK``/``WORLD_SIZE``. Accelerate's :class:`~accelerate.PartialState`
joins the process group; ``rank`` is the **global** rank, so multi-node runs shard by it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from mill import errors
from mill.errors import ConfigError, MillError

T = TypeVar("T")


def launched_world_size() -> int:
    """``WORLD_SIZE`` set by a launcher (1 when started directly)."""
    try:
        return int(os.environ.get("WORLD_SIZE", "1"))
    except ValueError:
        return 1


def launched_rank() -> int:
    """``RANK`` set by a launcher (0 when started directly), before any process group."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


@dataclass
class Dist:
    """This process's place among the workers; a single process is rank 0 of 1."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: str | None = None
    """Accelerate's device for this rank (``cuda:<local rank>`` or ``cpu``); None alone."""
    _state: Any = field(default=None, repr=False)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order, on every rank."""
        if self.world_size == 1:
            return [obj]
        from accelerate.utils import gather_object

        return list(gather_object([obj]))

    def broadcast(self, obj: T) -> T:
        """Rank 0's ``obj`` on every rank."""
        if self.world_size == 1:
            return obj
        from accelerate.utils import broadcast_object_list

        box = [obj]
        broadcast_object_list(box, from_process=0)
        return box[0]

    def barrier(self) -> None:
        if self._state is not None:
            self._state.wait_for_everyone()

    def close(self) -> None:
        """Leave the process group together (all ranks, after the last collective):
        exiting with gloo/NCCL threads alive can abort the interpreter. Not for a rank that
        crashed: the launcher ends the others then."""
        if self._state is not None and self.world_size > 1:
            import torch.distributed as torch_dist

            self.barrier()
            if torch_dist.is_initialized():
                torch_dist.destroy_process_group()
            self._state = None


def init_dist(cpu: bool, timeout_s: int = 1800) -> Dist:
    """Join the launcher's process group (gloo on CPU, NCCL on GPUs), or stay alone.

    On CPU under torchrun, PartialState must be told ``cpu=True``: without it Accelerate
    falls back to a single-process state and every rank would evaluate everything. The
    check below catches that, and any launcher/state mismatch, instead of silently
    duplicating work.
    """
    world = launched_world_size()
    if world <= 1:
        return Dist()
    from accelerate import PartialState

    state = PartialState(cpu=cpu, timeout=timedelta(seconds=timeout_s))
    if state.num_processes != world:
        raise ConfigError(
            f"the launcher started {world} processes but Accelerate joined "
            f"{state.num_processes} ({state.distributed_type}); on CPU set runner.cpu=true"
        )
    return Dist(
        rank=state.process_index,
        world_size=state.num_processes,
        local_rank=state.local_process_index,
        device=str(state.device),
        _state=state,
    )


def encode_error(err: MillError) -> tuple[str, str]:
    """A user error as (class name, message), to send to the other ranks or processes."""
    return type(err).__name__, str(err)


def decode_error(encoded: tuple[str, str]) -> MillError:
    """The error :func:`encode_error` sent, rebuilt as its class (MillError if unknown)."""
    name, message = encoded
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, MillError)):
        cls = MillError
    return cls(message)


def agree(dist: Dist, step: Callable[[], T]) -> T:
    """Run ``step`` on every rank; if it raised a MillError anywhere, raise it everywhere.

    Collectives would hang if one rank gave up alone, so a user error on any rank is
    shared at the next collective and every rank stops with the same one-line message.
    """
    value: T | None = None
    failure: tuple[str, str] | None = None
    try:
        value = step()
    except MillError as err:
        if dist.world_size == 1:
            raise
        failure = encode_error(err)
    if dist.world_size > 1:
        failures = [f for f in dist.all_gather(failure) if f is not None]
        if failures:
            raise decode_error(failures[0])
    return value  # type: ignore[return-value]
