"""Local CSV/TSV files whose columns a task reads as text (MMLU, OpenBookQA) read without
``datasets`` give exactly the rows ``datasets`` gives them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mill.data.load import DatasetSpec, DataSource, load_rows, read_text_csv
from tests.helpers import REPO, SHARED_DATA

MMLU = ("question", "choice0", "choice1", "choice2", "choice3", "answer")
OBQA = ("ID", "Question Stem", "Choices", "Complete Question", "Answer Key")
FILES = (
    [(p, MMLU, ",") for p in sorted((SHARED_DATA / "mmlu").rglob("*.csv"))]
    + [(p, OBQA, "\t") for p in sorted((SHARED_DATA / "openbookqa").glob("*.tsv"))]
    if SHARED_DATA.is_dir()
    else []
)


def _datasets_rows(path: Path, columns: tuple[str, ...], sep: str = ",") -> list[dict]:
    import datasets

    datasets.disable_progress_bars()
    features = datasets.Features({c: datasets.Value("string") for c in columns})
    return datasets.load_dataset(
        "csv",
        data_files={"x": str(path)},
        split="x",
        features=features,
        keep_default_na=False,
        **({} if sep == "," else {"sep": sep}),
    ).to_list()


def _exact(rows: list[dict]) -> list[list[tuple[str, str]]]:
    """Values and key order."""
    return [list(row.items()) for row in rows]


def test_shared_csv_files_are_there() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no shared data folder at {SHARED_DATA} (set MILL_SHARED_DATA)")
    assert len(FILES) >= 115  # 57 MMLU subjects x (dev, test) + OpenBookQA's test
    assert all(read_text_csv(p, cols, sep) is not None for p, cols, sep in FILES)


@pytest.mark.parametrize("case", FILES, ids=lambda c: f"{c[0].parent.name}/{c[0].name}")
def test_direct_rows_equal_datasets_rows(case: tuple[Path, tuple[str, ...], str]) -> None:
    path, columns, sep = case
    direct = read_text_csv(path, columns, sep)
    assert direct is not None
    assert _exact(direct) == _exact(_datasets_rows(path, columns, sep))


COLS = ("q", "a", "n")


@pytest.mark.parametrize(
    "text",
    [
        'q,a,n\n"x, with a comma","say ""hi""",None\n"two\nlines",0.50,NA\n',
        "q,a,n\r\nfirst,1,2\r\n\r\nsecond,3,4\r\n",  # CRLF and a blank line
        'q,a,n\n"kept\r\ninside",é ü 中文,nan\nno newline at the end,True,-1e5',
        "q,a,n\n\n\nx,  spaced  ,#N/A\n\n",
    ],
    ids=["quotes-and-na-words", "crlf-blank-line", "cr-in-quotes-unicode", "blank-lines-spaces"],
)
def test_text_edge_cases_equal_datasets(tmp_path: Path, text: str) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(text.encode("utf-8"))
    direct = read_text_csv(path, COLS)
    assert direct is not None
    assert _exact(direct) == _exact(_datasets_rows(path, COLS))


def test_a_tsv_equals_datasets(tmp_path: Path) -> None:
    path = tmp_path / "rows.tsv"
    path.write_text('q\ta\tn\n"a, b"\t"x\ty"\t1\n')
    direct = read_text_csv(path, COLS, "\t")
    assert direct == [{"q": "a, b", "a": "x\ty", "n": "1"}]
    assert _exact(direct) == _exact(_datasets_rows(path, COLS, "\t"))


@pytest.mark.parametrize(
    "data",
    [
        "\ufeffq,a,n\nx,y,z\n".encode(),  # byte-order mark
        b"q,a\nx,y\n",  # not the task's columns
        b"q,a,n,n\nx,y,z,w\n",  # an extra column
        b"q,a,n\nx,y\n",  # a ragged row
        b"q,a,n\nx,,z\n",  # an empty field
        b'q,a,n\n"x"y,b,c\n',  # text after a closing quote
        b"q,a,n\nx\x00,y,z\n",  # NUL
        b"q,a,n\nx\xff,y,z\n",  # not UTF-8
        b"q,a,n\n",  # no rows
    ],
    ids=[
        "bom",
        "header",
        "extra-column",
        "ragged",
        "empty-field",
        "quoting",
        "nul",
        "latin1",
        "empty",
    ],
)
def test_anything_unusual_goes_through_datasets(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(data)
    assert read_text_csv(path, COLS) is None


def test_load_rows_reads_text_columns_directly_and_falls_back(tmp_path: Path) -> None:
    plain, empty = tmp_path / "plain.csv", tmp_path / "empty.csv"
    plain.write_text("q,a,n\nx,None,0.50\n")
    empty.write_text("q,a,n\nx,,0.50\n")

    def spec(path: Path) -> DatasetSpec:
        return DatasetSpec(
            "mine", local_builder="csv", text_columns=COLS, data_files={"test": str(path)}
        )

    got = load_rows(spec(plain), "test", DataSource("hub"))
    assert got.rows == [{"q": "x", "a": "None", "n": "0.50"}]  # text, as written
    assert "fingerprint" not in got.origin and len(got.origin["sha256"]) == 64
    via = load_rows(spec(empty), "test", DataSource("hub"))
    assert via.rows == [{"q": "x", "a": "", "n": "0.50"}]  # datasets: strings, no NaN
    assert "fingerprint" in via.origin


@pytest.mark.slow  # a fresh interpreter
def test_mmlu_loads_without_importing_datasets() -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"no shared data folder at {SHARED_DATA} (set MILL_SHARED_DATA)")
    code = (
        "import sys\n"
        "from tasks.mmlu import MMLU\n"
        "from mill.data.load import DataSource\n"
        f"docs = list(MMLU(num_fewshot=5).docs(DataSource('local', {str(SHARED_DATA)!r})))\n"
        "assert len(docs) == 14042, len(docs)\n"
        "assert 'datasets' not in sys.modules and 'pyarrow' not in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
