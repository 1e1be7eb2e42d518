"""Every cache that can change a score is verified on read (issue 53, class 2).

Each case builds a real entry of one cache the way a run does, tampers with it the way the
issue's tester did (an edited verdict, a flipped byte in a converted model, a forged digest
row, ...), reads it back as a run does and expects one line naming the file and how to
rebuild it (``ConfigError``: exit 2 at the CLI,
:func:`test_cli_refuses_a_tampered_model_folder_in_one_line`). The shared mechanism is
:mod:`mill.files` (sealed records, sealed folders, checksums)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from mill.errors import ConfigError
from mill.files import SEAL, check_folder
from tests.helpers import run_mill

# ----- building real entries ---------------------------------------------------------------


def tiny_llama_gguf(path: Path) -> Path:
    """A real llama GGUF with a byte-level BPE vocabulary: one layer of random weights."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(path, "llama")
    hidden, ffn = 8, 16
    tokens = ["a", "b", "c", "ab", "<s>", "</s>"]
    writer.add_context_length(32)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(2)
    writer.add_head_count_kv(2)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([1, 1, 1, 1, 3, 3])
    writer.add_token_merges(["a b"])
    writer.add_bos_token_id(4)
    writer.add_eos_token_id(5)
    rng = np.random.default_rng(0)
    shapes = {
        "token_embd.weight": (len(tokens), hidden),
        "output_norm.weight": (hidden,),
        "blk.0.attn_norm.weight": (hidden,),
        "blk.0.attn_q.weight": (hidden, hidden),
        "blk.0.attn_k.weight": (hidden, hidden),
        "blk.0.attn_v.weight": (hidden, hidden),
        "blk.0.attn_output.weight": (hidden, hidden),
        "blk.0.ffn_norm.weight": (hidden,),
        "blk.0.ffn_gate.weight": (ffn, hidden),
        "blk.0.ffn_up.weight": (ffn, hidden),
        "blk.0.ffn_down.weight": (hidden, ffn),
    }
    for name, shape in shapes.items():
        writer.add_tensor(name, rng.standard_normal(shape).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@dataclass(frozen=True)
class Folder:
    """A cache folder Mill builds, built once per session in its own cache: ``make()``
    builds (or finds) it in the current ``$MILL_CACHE`` and returns it."""

    make: Callable[[], Path]
    weights: str  # the file whose bytes decide scores


def _gguf_folder() -> Path:
    from mill.model.gguf import prepare

    source = Path(os.environ["MILL_CACHE"]).parent / "tiny.gguf"
    if not source.exists():
        tiny_llama_gguf(source)
    return prepare(source, None, log=lambda _: None)


def _random_folder() -> Path:
    from mill.model.random import random_gpt2_dir

    return random_gpt2_dir(n_layer=1, n_embd=8, n_head=2, seed=7)


def _punkt_folder() -> Path:
    pytest.importorskip("punkt")
    from mill.ifeval.text import punkt_tab_root

    return punkt_tab_root() / "tokenizers" / "punkt_tab" / "english"


FOLDERS = {
    "gguf": Folder(_gguf_folder, "model.safetensors"),
    "random model": Folder(_random_folder, "model.safetensors"),
    "punkt": Folder(_punkt_folder, "abbrev_types.txt"),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each folder kind built once, by Mill, into a cache of this module."""
    cache = tmp_path_factory.mktemp("built") / "cache"
    old = os.environ.get("MILL_CACHE")
    os.environ["MILL_CACHE"] = str(cache)
    try:
        return {name: kind.make() for name, kind in FOLDERS.items()}
    finally:
        if old is None:
            del os.environ["MILL_CACHE"]
        else:
            os.environ["MILL_CACHE"] = old


def _fresh(built: dict[str, Path], kind: str, tmp_path: Path, monkeypatch: Any) -> Path:
    """A copy of the built folder in this test's own ``$MILL_CACHE`` (where ``make`` finds
    it): a copied folder has new inodes and ctimes, so it is hashed once and passes."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MILL_CACHE", str(cache))
    source = built[kind]
    target = cache / source.relative_to(_cache_of(source))
    shutil.copytree(source, target)
    if kind == "gguf":
        shutil.copy(_cache_of(source).parent / "tiny.gguf", tmp_path / "tiny.gguf")
    assert FOLDERS[kind].make() == target  # found, checked, not built again
    return target


def _cache_of(folder: Path) -> Path:
    return next(p for p in folder.parents if p.name == "cache")


# ----- tampering ---------------------------------------------------------------------------


def _flip(path: Path, keep_mtime: bool = False) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    if keep_mtime:  # the mtime put back: the ctime still moved
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def _flip_byte(folder: Path, weights: str) -> Path:
    _flip(folder / weights)
    return folder / weights


def _flip_byte_keep_mtime(folder: Path, weights: str) -> Path:
    _flip(folder / weights, keep_mtime=True)
    return folder / weights


def _add_file(folder: Path, weights: str) -> Path:
    added = folder / "model.safetensors.index.json"
    added.write_text("{}")
    return added


def _remove_file(folder: Path, weights: str) -> Path:
    (folder / weights).unlink()
    return folder / weights


def _edit_the_seal(folder: Path, weights: str) -> Path:
    seal = folder / SEAL
    record = json.loads(seal.read_text())
    record["data"]["files"][weights]["sha256"] = "0" * 64
    seal.write_text(json.dumps(record))
    return seal


TAMPERS = {
    "a flipped byte": _flip_byte,
    "a flipped byte, mtime put back": _flip_byte_keep_mtime,
    "an added file": _add_file,
    "a removed file": _remove_file,
    "an edited seal": _edit_the_seal,
}


def _refused(read: Callable[[], object], named: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        read()
    message = str(caught.value)
    assert str(named) in message and "fails its check" in message, message
    assert "delete" in message and "\n" not in message
    return message


@pytest.mark.parametrize("tamper", TAMPERS)
@pytest.mark.parametrize("kind", FOLDERS)
def test_a_tampered_cache_folder_is_refused(
    built: dict[str, Path], kind: str, tamper: str, tmp_path: Path, monkeypatch: Any
) -> None:
    folder = _fresh(built, kind, tmp_path, monkeypatch)
    named = TAMPERS[tamper](folder, FOLDERS[kind].weights)
    message = _refused(FOLDERS[kind].make, named)
    assert f"delete the folder {folder}" in message


def test_a_folder_from_before_seals_is_built_again(
    built: dict[str, Path], tmp_path: Path, monkeypatch: Any
) -> None:
    folder = _fresh(built, "random model", tmp_path, monkeypatch)
    (folder / SEAL).unlink()
    (folder / "model.safetensors").write_bytes(b"not the weights")
    assert check_folder(folder, "fix") is None
    assert FOLDERS["random model"].make() == folder
    assert check_folder(folder, "fix") is not None
    assert (folder / "model.safetensors").read_bytes() == (
        built["random model"] / "model.safetensors"
    ).read_bytes()


# ----- entries: the verdict, response and index caches, the digest store -------------------


def _verdict_entry(tmp_path: Path) -> tuple[Callable[[], object], Path, Callable[[], None]]:
    from mill.execution import runner
    from mill.execution.settings import ExecutionSettings, Verdict

    settings = ExecutionSettings()
    program = "assert 1 + 1 == 3\n"
    key = runner.verdict_key(program, settings)
    failed = Verdict("failed", "AssertionError", 0.05, "")
    runner._store(tmp_path, key, runner.made_from(program, settings), failed)
    path = runner._cache_path(tmp_path, key)
    assert runner.run_programs([program], settings, cache_dir=tmp_path) == [failed]

    def read() -> object:
        return runner.run_programs([program], settings, cache_dir=tmp_path)

    def edit() -> None:  # the wrong program marked passed
        record = json.loads(path.read_text())
        record["data"]["status"] = "passed"
        path.write_text(json.dumps(record))

    return read, path, edit


def _verdict_of_another_program(
    tmp_path: Path,
) -> tuple[Callable[[], object], Path, Callable[[], None]]:
    from mill.execution import runner
    from mill.execution.settings import ExecutionSettings, Verdict

    settings = ExecutionSettings()
    wrong, right = "assert False\n", "pass\n"
    for program, verdict in (
        (wrong, Verdict("failed", "AssertionError", 0.05, "")),
        (right, Verdict("passed", "", 0.05, "")),
    ):
        key = runner.verdict_key(program, settings)
        runner._store(tmp_path, key, runner.made_from(program, settings), verdict)
    path = runner._cache_path(tmp_path, runner.verdict_key(wrong, settings))
    source = runner._cache_path(tmp_path, runner.verdict_key(right, settings))

    def read() -> object:
        return runner.run_programs([wrong], settings, cache_dir=tmp_path)

    def edit() -> None:  # a passing program's sealed verdict copied over the failing one's
        shutil.copy(source, path)

    return read, path, edit


def _response_entry(tmp_path: Path) -> tuple[Callable[[], object], Path, Callable[[], None]]:
    from mill.runner.cache import ResponseStore
    from mill.types import Response

    store = ResponseStore(tmp_path / "responses", {"model": "tiny"})
    store.put("a" * 64, Response(request_id="r0", logprob=-3.5, is_greedy=False))
    assert store.get_many(["a" * 64])["a" * 64]["logprob"] == -3.5

    def edit() -> None:
        with sqlite3.connect(store.path) as conn:
            (blob,) = conn.execute("SELECT response FROM responses").fetchone()
            body = json.loads(zlib.decompress(blob))
            body["logprob"], body["is_greedy"] = 0.0, True
            conn.execute(
                "UPDATE responses SET response = ?", (zlib.compress(json.dumps(body).encode()),)
            )

    return (lambda: store.get_many(["a" * 64])), store.path, edit


def _digest_row(tmp_path: Path) -> tuple[Callable[[], object], Path, Callable[[], None]]:
    from mill.files import sha256_file
    from mill.model import identity

    os.environ["MILL_CACHE"] = str(tmp_path / "cache")  # restored by the test's monkeypatch
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"the new model's weights")
    old = tmp_path / "old.safetensors"
    old.write_bytes(b"an older model's weights")
    settled = weights.stat().st_mtime_ns - int(10 * 1e9)
    os.utime(weights, ns=(settled, settled))
    assert identity.file_digests([weights])[weights] == sha256_file(weights)

    def edit() -> None:  # the older model's digest served for the new file
        with sqlite3.connect(identity.memo_path()) as conn:
            conn.execute("UPDATE file_sha256 SET sha256 = ?", (sha256_file(old),))

    return (lambda: identity.file_digests([weights])), identity.memo_path(), edit


def _index_entry(tmp_path: Path) -> tuple[Callable[[], object], Path, Callable[[], None]]:
    pytest.importorskip("lm_eval")
    from mill.lm_eval.index_cache import cache_folder, task_manager

    os.environ["MILL_CACHE"] = str(tmp_path / "cache")  # restored by the test's monkeypatch
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in ("honest", "other"):
        (tasks / f"{name}.yaml").write_text(
            f"task: {name}\ndataset_path: json\noutput_type: loglikelihood\n"
            "doc_to_text: '{{q}}'\ndoc_to_target: '{{a}}'\n"
        )
    task_manager([str(tasks)], include_defaults=False)
    (path,) = cache_folder().glob("index-*.json")

    def edit() -> None:  # the name "honest" pointed at another task's YAML
        record = json.loads(path.read_text())
        for name, entry in record["data"]:
            if name == "honest":
                entry["yaml_path"] = str(tasks / "other.yaml")
        path.write_text(json.dumps(record))

    return (lambda: task_manager([str(tasks)], include_defaults=False)), path, edit


ENTRIES = {
    "execution verdict edited to passed": _verdict_entry,
    "execution verdict of another program": _verdict_of_another_program,
    "response cache entry": _response_entry,
    "file-digest store row": _digest_row,
    "lm-eval task index entry": _index_entry,
}


@pytest.mark.parametrize("case", ENTRIES)
def test_a_tampered_cache_entry_is_refused(case: str, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("MILL_CACHE", os.environ.get("MILL_CACHE", str(tmp_path / "c")))
    read, path, edit = ENTRIES[case](tmp_path)
    read()  # the entry as built is read back without complaint
    edit()
    with pytest.raises(ConfigError) as caught:
        read()
    message = str(caught.value)
    assert str(path) in message and "\n" not in message, message
    assert "delete" in message, message


@pytest.mark.slow
def test_a_verdict_of_a_real_run_edited_to_passed_is_refused(tmp_path: Path) -> None:
    """The verdict of a program run in the sandbox, edited from failed to passed."""
    from mill.execution import runner
    from mill.execution.settings import ExecutionSettings

    settings = ExecutionSettings(timeout_s=10.0)
    program = "assert sorted([3, 1, 2]) == [3, 2, 1]\n"
    (verdict,) = runner.run_programs([program], settings, cache_dir=tmp_path)
    assert verdict.status == "failed"
    path = runner._cache_path(tmp_path, runner.verdict_key(program, settings))
    record = json.loads(path.read_text())
    record["data"]["status"] = "passed"
    path.write_text(json.dumps(record))
    _refused(lambda: runner.run_programs([program], settings, cache_dir=tmp_path), path)


@pytest.mark.slow
def test_cli_refuses_a_tampered_model_folder_in_one_line(tmp_path: Path) -> None:
    """A run over a random model whose cached weights were edited: one line naming the file
    and the fix, exit 2, no results."""
    cache = tmp_path / "cache"
    args = (
        "task=arc_easy",
        "model=gpt2_random",
        "task.limit=2",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    first = run_mill(*args, env={"MILL_CACHE": str(cache)})
    assert first.returncode == 0, first.stderr[-2000:]
    (weights,) = cache.glob("models/random-gpt2-*/model.safetensors")
    _flip(weights, keep_mtime=True)
    again = run_mill(
        *args[:-1], f"hydra.run.dir={tmp_path / 'again'}", env={"MILL_CACHE": str(cache)}
    )
    assert again.returncode == 2, again.stderr[-2000:]
    lines = [line for line in again.stderr.splitlines() if str(weights) in line]
    assert len(lines) == 1 and "fails its check" in lines[0] and "delete the folder" in lines[0]
    assert "Traceback" not in again.stderr
    assert not (tmp_path / "again" / "results.json").exists()
