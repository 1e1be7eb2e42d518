"""Mill: a declarative, fast, exact evaluation harness for language models.

Importing ``mill`` is cheap: torch, transformers and datasets load only when a model or a
dataset does.
"""

__version__ = "0.1.0"
