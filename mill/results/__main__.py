"""``python -m mill.results``: print docs/results-schema.md."""

from mill.results.markdown import schema_markdown

print(schema_markdown(), end="")
