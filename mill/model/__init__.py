"""Models: the interface (:class:`LanguageModel`) and backends. Backends import torch lazily."""

from mill.model.base import LanguageModel

__all__ = ["LanguageModel"]
