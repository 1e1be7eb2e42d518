"""Models: the interface, the registry of backends, the backends and the HF engine.

- The interface: :class:`~mill.model.base.LanguageModel` (:mod:`mill.model.base`), one
  method per output type; :class:`~mill.model.tokenizing.TokenizingLM`
  (:mod:`mill.model.tokenizing`, with :mod:`mill.model.rolling`) writes lm-eval's request
  semantics once for every backend that tokenizes locally; :mod:`mill.model.chat` (a
  tokenizer's chat template) and :mod:`mill.model.identity` (the content digests a response
  cache keys scores by) serve them all.
- The registry: this package's face. Each backend's class is listed below and imported from
  its module on first use (backends import torch lazily); ``conf/model/*.yaml`` names it in
  ``_target_``.
- The backends, one module each: :mod:`mill.model.hf` (``transformers`` causal LMs,
  :class:`HFCausalLM`), :mod:`mill.model.gguf` (a llama.cpp GGUF dequantized into a
  ``transformers`` folder), :mod:`mill.model.random` (a seeded random GPT-2),
  :mod:`mill.model.served` (OpenAI-compatible servers, :class:`OpenAICompletions`,
  :class:`OpenAIChat`: a subpackage with its protocol, transport and HTTP client),
  :mod:`mill.model.replay` (saved completions), :mod:`mill.model.saved` (a finished run's
  answers, for ``mill judge``), :mod:`mill.model.fake` (the pipeline tests' deterministic
  model). A new backend is a module here, a class of the interface, an entry below and a
  ``conf/model/`` file.
- The HF engine: :mod:`mill.model.engine` (shared prefixes, the head only on scored
  positions, continuous batching), which only :mod:`mill.model.hf` drives.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mill.exports import lazy_exports
from mill.model.base import LanguageModel

if TYPE_CHECKING:
    from mill.model.fake import FakeLM
    from mill.model.hf import HFCausalLM
    from mill.model.replay import ReplayLM
    from mill.model.saved import SavedAnswers
    from mill.model.served.api_client import APIError, JSONClient
    from mill.model.served.openai_api import OpenAIChat, OpenAICompletions
    from mill.model.served.remote_tokenizer import RemoteTokenizer
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
        "mill.model.served.api_client": ("APIError", "JSONClient"),
        "mill.model.fake": ("FakeLM",),
        "mill.model.hf": ("HFCausalLM",),
        "mill.model.served.openai_api": ("OpenAIChat", "OpenAICompletions"),
        "mill.model.served.remote_tokenizer": ("RemoteTokenizer",),
        "mill.model.replay": ("ReplayLM",),
        "mill.model.saved": ("SavedAnswers",),
        "mill.model.tokenizing": ("TokenizingLM",),
    },
)
