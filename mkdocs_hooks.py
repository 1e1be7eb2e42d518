"""MkDocs hooks of Mill's documentation site (mkdocs.yml: ``hooks``).

The site's home page is the repository's README.md, its links rewritten from the
repository's layout (``docs/x.md``) to the site's (``x.md``), so the two never differ.
A block of commands that the tests do not run says why on the line before its fence,
``<!-- not run: <why> -->``: the site shows it as a line above the block
(tests/test_docs.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

README = Path(__file__).parent / "README.md"


def home_page_markdown() -> str:
    """README.md with its ``docs/`` links made relative to the site's root."""
    return re.sub(r"\]\(docs/", "](", README.read_text(encoding="utf-8"))


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "index.md", content=home_page_markdown()))
    return files


NOT_RUN = re.compile(r"^<!-- not run: (?P<why>.+?) -->$", re.M)


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """``<!-- not run: <why> -->`` before a fence shown on the page."""
    return NOT_RUN.sub(lambda m: f"*Not run by the tests: {m.group('why')}.*\n", markdown)
