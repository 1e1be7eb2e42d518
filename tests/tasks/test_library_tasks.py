"""The task library: local adapters, preprocessing, IDK marking, and every task's docs from
the bundled samples and (when present) the full local files."""

from __future__ import annotations

from importlib import import_module, resources
from pathlib import Path

import pytest
from mill.tasks.hellaswag import HellaSwag, capitalise_last_fragment, preprocess
from mill.tasks.idk import IDK_CHOICE, MMLUIDK, PIQAIDK, ArcEasyIDK
from mill.tasks.lambada import LambadaOpenAI
from mill.tasks.openbookqa import split_choices
from mill.tasks.piqa import PIQA

from mill.data.load import DataSource
from mill.errors import TaskError
from mill.task import Task
from tests.helpers import SHARED, write_jsonl

BUNDLED = DataSource("bundled")
# task class, docs in the full local files (../shared/data/SOURCES.md)
LIBRARY = {
    "arc.ArcEasy": 2376,
    "arc.ArcChallenge": 1172,
    "hellaswag.HellaSwag": 10042,
    "piqa.PIQA": 1838,
    "winogrande.WinoGrande": 1267,
    "boolq.BoolQ": 3270,
    "openbookqa.OpenBookQA": 500,
    "mmlu.MMLU": 14042,
    "gsm8k.GSM8K": 1319,
    "gsm8k.GSM8KCoT": 1319,
    "lambada.LambadaOpenAI": 5153,
    "wikitext.WikiText": 62,
    "idk.ArcEasyIDK": 2376,
    "idk.ArcChallengeIDK": 1172,
    "idk.MMLUIDK": 14042,
    "idk.PIQAIDK": 1838,
}


def _task(path: str, **kwargs):
    module, name = path.rsplit(".", 1)
    return getattr(import_module(f"mill.tasks.{module}"), name)(**kwargs)


def test_hellaswag_preprocessing_as_lm_eval() -> None:
    # strip first, then drop markers: a trailing marker leaves its space (as lm-eval)
    assert preprocess(" How to x [title] Do it. [step] Then  more [header] ") == (
        "How to x. Do it. Then more "
    )
    row = {
        "activity_label": "Roof shingle removal",
        "ctx_a": "A man is sitting on a roof.",
        "ctx_b": "he",
        "endings": ["is using wrap to wrap a pair of skis.", "x [step] y"],
        "label": "1",
    }
    (doc,) = HellaSwag().process_docs([row])
    assert doc["query"] == "Roof shingle removal: A man is sitting on a roof. He"
    assert doc["choices"][1] == "x y" and doc["gold"] == 1
    # the local text lost ctx_a/ctx_b: the trailing lower-case fragment is capitalised
    assert capitalise_last_fragment("A: Two women row. the child and a Man") == (
        "A: Two women row. The child and a man"
    )
    assert capitalise_last_fragment("A: He sits. He stands.") == "A: He sits. He stands."
    docs = list(HellaSwag(limit=2).docs(BUNDLED))
    assert docs[0].context == "Roof shingle removal: A man is sitting on a roof. He"
    assert docs[0].gold == 3 and len(docs[0].choices) == 4


def test_openbookqa_choices_and_lambada_text() -> None:
    labels, texts = split_choices("(A) a marsh (B) a tundra (C) the plains (D) a desert")
    assert labels == ["A", "B", "C", "D"]
    assert texts == ["a marsh", "a tundra", "the plains", "a desert"]
    row = LambadaOpenAI().adapt_local_row({"context": "I don't care about", "continuation": "x"})
    assert row == {"text": "I don't care about x"}


def test_piqa_side_file_must_be_line_aligned(tmp_path: Path) -> None:
    rows = [{"goal": f"g{i}", "sol1": "a", "sol2": "b"} for i in range(3)]
    write_jsonl(tmp_path / "valid.jsonl", rows)
    (tmp_path / "labels.lst").write_text("0\n1\n")
    files = {"validation": str(tmp_path / "valid.jsonl")}
    with pytest.raises(TaskError, match="give its label file"):
        next(PIQA(dataset={"data_files": files}).docs(DataSource("hub")))
    files["validation_label"] = str(tmp_path / "labels.lst")
    with pytest.raises(TaskError, match="line-aligned"):
        next(PIQA(dataset={"data_files": files}).docs(DataSource("hub")))
    (tmp_path / "labels.lst").write_text("0\n1\n1\n")
    assert [d.gold for d in PIQA(dataset={"data_files": files}).docs(DataSource("hub"))] == [
        0,
        1,
        1,
    ]


@pytest.mark.parametrize("cls", [ArcEasyIDK, PIQAIDK, MMLUIDK])
def test_idk_variants_mark_their_choice(cls) -> None:
    kwargs = {"subjects": ["anatomy"]} if cls is MMLUIDK else {}
    for doc in cls(limit=3, **kwargs).docs(BUNDLED):
        assert doc.idk_index is not None and doc.choices[doc.idk_index] == IDK_CHOICE
        assert doc.gold != doc.idk_index
        assert "I don't know" in doc.context.split("\n\n")[0]


@pytest.mark.parametrize("path", sorted(LIBRARY))
def test_every_task_builds_docs_from_bundled_samples(path: str) -> None:
    kwargs = {"num_fewshot": 8, "fewshot_sampler": "first_n"} if path.endswith("CoT") else {}
    docs = list(_task(path, limit=3, **kwargs).docs(BUNDLED))
    assert docs and all(d.context or d.continuation for d in docs)


@pytest.mark.slow  # reads every full benchmark file: 16 s (HellaSwag's 10,042 rows 4 s)
@pytest.mark.skipif(not (SHARED / "data").is_dir(), reason="needs ../shared/data")
@pytest.mark.parametrize("path", sorted(LIBRARY))
def test_every_task_loads_the_full_local_files(path: str) -> None:
    local = DataSource("local", str(SHARED / "data"))
    task = _task(path)
    rows = sum(len(task.load_split(task.sample_split, local, s)) for s in task.subjects)
    assert rows == LIBRARY[path]


def _task_configs() -> list[str]:
    folder = resources.files("mill.conf").joinpath("task")
    names = [p.name.removesuffix(".yaml") for p in folder.iterdir() if p.name.endswith(".yaml")]
    # lm-eval's own tasks: tests/lmeval; tasks.yaml is task=[a,b] (tests/test_cli.py)
    return sorted(n for n in names if n not in ("lm_eval", "tasks"))


@pytest.mark.parametrize("name", _task_configs())
def test_every_task_config_builds_docs_from_its_bundled_excerpt(compose, name: str) -> None:
    """A new conf/task/<name>.yaml is checked here without being listed anywhere."""
    from mill.runner.build import build_tasks

    tasks, _ = build_tasks(compose(f"task={name}").task, [])
    for task in tasks:
        docs = list(task.docs(BUNDLED))
        assert docs and all(d.context or d.continuation for d in docs), task.name


def test_every_bundled_excerpt_has_a_row_in_its_readme() -> None:
    """Each folder of mill/resources/data/ is named (source, size, license) in its README."""
    data = resources.files("mill.resources").joinpath("data")
    readme = data.joinpath("README.md").read_text(encoding="utf-8")
    folders = sorted(p.name for p in data.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert folders
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    missing = [f for f in folders if not any(row.startswith(f"| `{f}/") for row in rows)]
    assert not missing, f"add a row for each to mill/resources/data/README.md: {missing}"


def test_no_task_of_the_library_overrides_an_underscore_name() -> None:
    """The library's tasks are written against the public hooks only: no class of tasks/
    defines an underscore name that a class it derives from defines too."""
    library = Path(str(resources.files("mill.tasks")))
    classes = [
        value
        for module in sorted(p.stem for p in library.glob("*.py") if p.stem != "__init__")
        for value in vars(import_module(f"mill.tasks.{module}")).values()
        if isinstance(value, type) and value.__module__ == f"mill.tasks.{module}"
    ]
    assert len([c for c in classes if issubclass(c, Task)]) > 20
    overrides = [
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in classes
        for name in vars(cls)
        if name.startswith("_")
        and not name.startswith("__")
        and any(name in vars(base) for base in cls.__mro__[1:])
    ]
    assert overrides == []
