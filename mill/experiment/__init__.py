"""The experiment folder: resolved config, manifest, incremental samples, results, report."""

from mill.experiment.folder import ExperimentFolder

__all__ = ["ExperimentFolder"]
