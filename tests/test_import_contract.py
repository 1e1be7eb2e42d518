"""The import-layer contract (``[tool.importlinter]`` in pyproject.toml) covers every module
of ``mill`` and the task library (tasks/, installed as ``mill.tasks``): a module left out of
the layers is a module nothing checks; and the package never imports the tools of
``benchmarks/``. Every import, lazy ones included, closes no cycle between modules of
``mill`` and takes no other module's private name."""

from __future__ import annotations

import ast
import pkgutil
import sys
from collections.abc import Iterator
from pathlib import Path

import mill

if sys.version_info >= (3, 11):
    import tomllib
else:  # import-linter depends on tomli where tomllib is missing
    import tomli as tomllib

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _contracts() -> list[dict]:
    return tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _mill_modules() -> set[str]:
    """The modules of the ``mill`` package but those the install maps in from other folders
    (``[tool.setuptools.package-dir]``: mill.conf and mill.tasks, from conf/ and tasks/),
    which a checkout may link into mill/ and an editable install does not."""
    tool = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]
    mapped = {k for k, v in tool["setuptools"]["package-dir"].items() if k != "mill"}
    return {f"mill.{m.name}" for m in pkgutil.iter_modules(mill.__path__)} - mapped


def _layered() -> list[str]:
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    names = []
    for layer in layers:
        for name in layer.replace(":", "|").split("|"):
            names.append(name.strip().strip("()"))
    return names


def test_every_mill_module_is_in_a_layer() -> None:
    modules = _mill_modules()
    layered = _layered()
    assert len(layered) == len(set(layered)), "a module is in two layers"
    assert modules <= set(layered), sorted(modules - set(layered))
    assert layered[0] == "benchmarks"  # the tools: above everything


def test_the_task_library_and_the_configs_are_layered_under_both_names() -> None:
    """tasks/ is the root ``tasks`` wherever lint-imports runs (the repository root is on its
    path), and ``mill.tasks`` too in a checkout that links it into mill/ (optional there, as
    ``mill.conf``, whose Python is a docstring: its YAML's targets are checked by
    tests/conf/test_targets.py)."""
    tool = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]
    roots = tool["importlinter"]["root_packages"]
    assert roots == ["mill", "tasks", "benchmarks"]
    assert all((PYPROJECT.parent / root / "__init__.py").is_file() for root in roots)
    (layers,) = [c["layers"] for c in _contracts() if c["type"] == "layers"]
    assert "tasks : (mill.tasks)" in layers  # one layer: tasks.idk imports mill.tasks.arc
    assert "(mill.conf)" in layers[-1]
    assert set(tool["setuptools"]["package-dir"]) == {"mill", "mill.tasks", "mill.conf"}


def test_the_package_is_forbidden_to_import_the_tools() -> None:
    """The second contract: nothing of ``mill`` (the task library included) imports
    ``benchmarks``, a new module included as soon as it exists."""
    (forbidden,) = [c for c in _contracts() if c["type"] == "forbidden"]
    assert forbidden["forbidden_modules"] == ["benchmarks"]
    assert forbidden["source_modules"] == ["mill", "tasks"]


# ----- every import, lazy ones included: no cycle, no private name ---------------------------
# lint-imports sees the layers between packages; a cycle inside one package (a function-level
# import from a module that imports this one) and an import of another module's private name
# pass it. These tests parse every module of mill/ with ``ast`` and read every import, at the
# top of the module or inside a function. Imports under ``if TYPE_CHECKING:`` are skipped: they
# never run (the contract skips them too, ``exclude_type_checking_imports``).


def _module_files(root: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every module under ``root`` (a package folder), but the
    packages the install maps in from other folders (mill.conf, mill.tasks)."""
    tool = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]
    mapped = {k for k in tool["setuptools"]["package-dir"] if k != "mill"}
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if ".".join(parts[:2]) not in mapped:
            files[".".join(parts)] = path
    return files


def _is_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, type_only: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement of ``tree``, at any depth, but those under ``if TYPE_CHECKING``
    (with ``type_only``, those too)."""
    for child in ast.iter_child_nodes(tree):
        if _is_type_checking(child) and not type_only:
            for node in child.orelse:
                yield from _imports(node, type_only)
            continue
        if isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from _imports(child, type_only)


def _import_graph(root: Path, type_only: bool = False) -> tuple[dict[str, set[str]], list[str]]:
    """The modules each module of ``root`` imports (a ``from package import name`` counts as
    the submodule where ``name`` is one, else as the package; with ``type_only``, imports under
    ``if TYPE_CHECKING`` too), and every import of a private name (``from x import _name``) as
    "module:line imports x._name"."""
    files = _module_files(root)
    top = root.name
    edges: dict[str, set[str]] = {name: set() for name in files}
    private = []

    def owner(dotted: str) -> str:
        while dotted not in files and "." in dotted:
            dotted = dotted.rpartition(".")[0]
        return dotted

    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), type_only):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.split(".")[0] == top]
                edges[name].update(owner(t) for t in targets)
                continue
            source = node.module or ""
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                source = ".".join([*base, *([source] if source else [])])
            if source.split(".")[0] != top:
                continue
            for alias in node.names:
                full = f"{source}.{alias.name}"
                edges[name].add(full if full in files else owner(source))
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    private.append(f"{name}:{node.lineno} imports {source}.{alias.name}")
    for name in edges:
        edges[name].discard(name)
    return edges, private


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


MILL = Path(mill.__file__).resolve().parent


def test_no_import_cycle_in_mill_lazy_imports_included() -> None:
    edges, _ = _import_graph(MILL)
    assert len(edges) > 100 and "mill.runner.execute" in edges["mill.runner.job"]
    assert _cycles(edges) == []


def test_no_module_imports_another_modules_private_name() -> None:
    _, private = _import_graph(MILL)
    assert private == []


def test_the_import_checks_see_lazy_cycles_and_private_names(tmp_path: Path) -> None:
    """On a package made for it: a cycle closed by a function-level import and a relative
    import, a private name imported, and an import under TYPE_CHECKING that is not counted."""
    pkg = tmp_path / "mill"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from mill.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "sub" / "c.py").write_text("def g():\n    from mill.a import _helper\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from mill.e import _x\n"
    )
    (pkg / "e.py").write_text("import mill.d\n")
    edges, private = _import_graph(pkg)
    assert _cycles(edges) == [["mill.a", "mill.sub.b", "mill.sub.c"]]
    assert private == ["mill.sub.c:2 imports mill.a._helper"]


def test_no_import_cycle_in_mill_type_only_imports_included() -> None:
    """Not even a type annotation closes a cycle: ``mill.task``'s pipeline modules (spec,
    loading, prompts, requests) take data and import no ``Task``, not even under
    ``TYPE_CHECKING`` (they once formed a five-module cycle with ``mill.task.base``)."""
    edges, _ = _import_graph(MILL, type_only=True)
    assert "mill.task.spec" in edges["mill.task.prompts"]  # the edge the cycle ran along
    assert _cycles(edges) == []
