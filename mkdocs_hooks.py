"""MkDocs hooks of Mill's documentation site (mkdocs.yml: ``hooks``).

The site's home page is the repository's README.md, its links rewritten from the
repository's layout (``docs/x.md``) to the site's (``x.md``), so the two never differ.
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
