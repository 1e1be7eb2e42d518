"""Model converters, each a command of its own: ``mill-convert-gguf`` (a Hugging Face Llama
folder into an F32 GGUF file for llama.cpp, :mod:`mill.convert.gguf`) and
``mill-convert-llama2c`` (a llama2.c checkpoint into a Hugging Face Llama folder,
:mod:`mill.convert.llama2c`); ``python -m mill.convert.<name>`` runs the same.

Offline, never on a run's path: nothing of ``mill`` imports them, and ``mill --help`` stays
free of their numpy, ``gguf`` and ``tokenizers`` imports.
"""
