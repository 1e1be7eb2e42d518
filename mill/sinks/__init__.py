"""Result sinks: send a finished run's typed results to an experiment tracker.

``+sink=mlflow`` and ``+sink=wandb`` (``conf/sink/``) add ``sink.<name>`` nodes; each
builds a :class:`Sink` (checked when the run starts, so a misspelt setting is bad input)
and gets the run once it succeeded: its settings, every metric with its stderr, and the
report and samples as artifacts. A sweep logs one tracker run per job. A sink that fails
(tracker unreachable, store unwritable, library missing) warns in ``mill.log`` and on the
console and never fails the evaluation: the experiment folder stays the record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports
from mill.sinks.base import RunRecord, Sink, build_sinks, safe_key, send

if TYPE_CHECKING:
    from mill.sinks.mlflow import MLflowSink
    from mill.sinks.wandb import WandbSink

__all__ = ["MLflowSink", "RunRecord", "Sink", "WandbSink", "build_sinks", "safe_key", "send"]

__getattr__ = lazy_exports(
    __name__, {"mill.sinks.mlflow": ("MLflowSink",), "mill.sinks.wandb": ("WandbSink",)}
)
