"""The documentation: README.md and the site's pages under docs/.

Every fenced YAML snippet parses; the configuration reference is what ``conf/`` says; the
site's home page is the README; every example marked runnable (an HTML comment
``<!-- runnable -->`` on the line before its fence) runs. CI also builds the site with
``mkdocs build --strict`` (broken links and missing pages fail it)."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, run_process

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<mark>```|~~~)(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=mark)\s*$", re.M | re.S
)


def _blocks(lang: str, *, runnable: bool = False) -> list[tuple[str, str]]:
    """(page:line, code) of every fenced block in ``lang`` (only those marked runnable)."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match.group("lang") != lang:
                continue
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if runnable and before.strip() != "<!-- runnable -->":
                continue
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", match.group("body")))
    return found


def test_the_pages_have_yaml_snippets_and_runnable_examples() -> None:
    assert len(_blocks("yaml")) >= 50  # the configuration reference alone has ~85
    assert _blocks("python", runnable=True) and _blocks("bash", runnable=True)


@pytest.mark.parametrize(("where", "code"), _blocks("yaml"), ids=lambda v: str(v)[:60])
def test_every_yaml_snippet_parses(where: str, code: str) -> None:
    try:
        yaml.safe_load(code)
    except yaml.YAMLError as err:
        pytest.fail(f"{where}: not valid YAML as printed: {err}")


def test_the_configuration_reference_is_generated_from_conf() -> None:
    from scripts.config_reference import reference_markdown

    page = (REPO / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    assert page == reference_markdown(), (
        "regenerate: python -m scripts.config_reference > docs/reference/config.md"
    )


def test_the_reference_shows_every_config_file() -> None:
    page = (REPO / "docs" / "reference" / "config.md").read_text(encoding="utf-8")
    for path in sorted((REPO / "conf").rglob("*.yaml")):
        assert f"`conf/{path.relative_to(REPO / 'conf').as_posix()}`" in page, path


def test_every_readme_link_is_a_page_of_the_site() -> None:
    """The README's links into docs/ are pages the site builds (the home page is the README
    with those links made relative: mkdocs_hooks.py)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    links = re.findall(r"\]\(docs/([^)#]+)", readme)
    assert links
    for link in links:
        assert (REPO / "docs" / link).is_file(), link
        assert f" {link}" in nav, f"{link} is not in mkdocs.yml's nav"


def test_the_readme_is_one_page() -> None:
    assert len((REPO / "README.md").read_bytes()) <= 8 * 1024


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "code"), _blocks("python", runnable=True), ids=lambda v: str(v)[:60]
)
def test_runnable_python_examples_run(where: str, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = run_process(sys.executable, script, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, f"{where}:\n{proc.stderr[-2000:]}"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "code"), _blocks("bash", runnable=True), ids=lambda v: str(v)[:60]
)
def test_runnable_shell_examples_run(where: str, code: str, tmp_path: Path) -> None:
    """Each runs with bash -e in a copy of examples/ (commands use paths relative to the
    repository, as a user in a clone would)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "MILL_REPO": str(REPO)}
    bash = shutil.which("bash") or "/bin/bash"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    proc = run_process(bash, "-e", "-c", code, cwd=tmp_path, env={**env, "PATH": path}, timeout=600)
    assert proc.returncode == 0, f"{where}:\n{proc.stderr[-2000:]}"
