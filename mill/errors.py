"""Errors a user can fix. The CLI prints them as one line and exits with code 2."""

from __future__ import annotations


class MillError(Exception):
    """Base class: something in the user's input or environment is wrong, with a fix."""


class ConfigError(MillError):
    """A config value is missing, unknown or inconsistent."""


class TaskError(MillError):
    """A task or its data cannot produce valid requests."""


class DatasetUnavailable(MillError):
    """A dataset cannot be loaded (offline, missing files, bad revision)."""


class ModelError(MillError):
    """A model cannot be loaded or returned an invalid result."""


class ExperimentExists(MillError):
    """The experiment folder already holds a result; Mill never overwrites one."""
