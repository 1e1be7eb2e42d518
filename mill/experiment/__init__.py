"""The experiment folder: resolved config, manifest, incremental samples, results, report."""

from mill.experiment.folder import ExperimentFolder
from mill.experiment.manifest import base_manifest, mark_failed, record_failure

__all__ = ["ExperimentFolder", "base_manifest", "mark_failed", "record_failure"]
