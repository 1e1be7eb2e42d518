"""Data files bundled with Mill: the demo's data, tiny models and tokenizers (no code)."""
