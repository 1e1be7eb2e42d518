"""Fixtures of the benchmark tools' tests."""

from __future__ import annotations

import importlib.util

import pytest

from tests.support.servers import ServerUnavailable, llama_server_binary


@pytest.fixture
def llama_server_bin() -> str:
    """llama.cpp's ``llama-server`` and the ``gguf`` package to convert a model for it; the
    test skips without them (CI sets ``MILL_LLAMA_SERVER``: a broken binary fails there)."""
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package (extra 'served') missing")
    try:
        return llama_server_binary()
    except ServerUnavailable as e:
        pytest.skip(str(e))
