"""Dataset loading: the Hugging Face hub at a pinned revision, or local files, one code path."""

from mill.data.load import DatasetSpec, DataSource, load_rows

__all__ = ["DataSource", "DatasetSpec", "load_rows"]
