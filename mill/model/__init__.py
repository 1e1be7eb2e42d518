"""Models: the interface (:class:`LanguageModel`) and backends. Backends import torch lazily:
the names below are imported from their modules on first use.

- :mod:`mill.model.hf`: Hugging Face causal LMs with Mill's engine (:class:`HFCausalLM`);
- :mod:`mill.model.openai_api`: models behind an OpenAI-compatible server
  (:class:`OpenAICompletions`, :class:`OpenAIChat`), with their protocol
  (:mod:`mill.model.openai_protocol`) and transport (:mod:`mill.model.openai_transport`,
  :mod:`mill.model.api_client`);
- :mod:`mill.model.fake`, :mod:`mill.model.replay`, :mod:`mill.model.saved`: the fake model
  of the pipeline tests, a recorded run replayed, saved answers (judging).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports
from mill.model.base import LanguageModel

if TYPE_CHECKING:
    from mill.model.api_client import APIError, JSONClient
    from mill.model.fake import FakeLM
    from mill.model.hf import HFCausalLM
    from mill.model.openai_api import OpenAIChat, OpenAICompletions
    from mill.model.remote_tokenizer import RemoteTokenizer
    from mill.model.replay import ReplayLM
    from mill.model.saved import SavedAnswers
    from mill.model.tokenizing import TokenizingLM

__all__ = [
    "APIError",
    "FakeLM",
    "HFCausalLM",
    "JSONClient",
    "LanguageModel",
    "OpenAIChat",
    "OpenAICompletions",
    "RemoteTokenizer",
    "ReplayLM",
    "SavedAnswers",
    "TokenizingLM",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "mill.model.api_client": ("APIError", "JSONClient"),
        "mill.model.fake": ("FakeLM",),
        "mill.model.hf": ("HFCausalLM",),
        "mill.model.openai_api": ("OpenAIChat", "OpenAICompletions"),
        "mill.model.remote_tokenizer": ("RemoteTokenizer",),
        "mill.model.replay": ("ReplayLM",),
        "mill.model.saved": ("SavedAnswers",),
        "mill.model.tokenizing": ("TokenizingLM",),
    },
)
