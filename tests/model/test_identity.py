"""Model identity: every byte of weights, tokenizer files and generation config counts;
later runs only stat the files (the memo table answers)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mill.errors import ConfigError
from mill.files import sha256_file
from mill.model import identity
from mill.model.hf import HFCausalLM
from mill.model.random import random_gpt2_dir
from mill.runner.cache import CachedModel, ResponseStore
from mill.types import Request
from tests.helpers import docs_requests

HOUR_AGO = time.time() - 3600


@pytest.fixture()
def memo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh $MILL_CACHE for the digest memo (models stay in the session's cache)."""
    random_gpt2_dir(seed=0), random_gpt2_dir(seed=1)  # built before the cache moves
    monkeypatch.setenv("MILL_CACHE", str(tmp_path / "mill-cache"))
    return identity.memo_path()


def _rows(memo: Path) -> list[tuple]:
    if not memo.exists():
        return []
    with sqlite3.connect(memo) as conn:
        return conn.execute(f"SELECT * FROM {identity._TABLE} ORDER BY path").fetchall()


def _doctor(memo: Path) -> None:
    """Give every remembered digest another first character (a digest may start with "f"
    already: the tokenizer's does, and random weights' 1 time in 16)."""
    with sqlite3.connect(memo) as conn:
        conn.execute(
            f"UPDATE {identity._TABLE} SET sha256 = CASE WHEN substr(sha256, 1, 1) = 'f'"
            " THEN '0' ELSE 'f' END || substr(sha256, 2)"
        )


def _settle(folder: Path) -> None:
    """Date every file an hour back, as a checkpoint saved earlier would be."""
    for p in folder.iterdir():
        os.utime(p, (HOUR_AGO, HOUR_AGO))


def _copy_model(seed: int, to: Path) -> Path:
    shutil.copytree(random_gpt2_dir(seed=seed), to)
    _settle(to)
    return to


def _overwrite_in_place(target: Path, source: Path) -> None:
    """Write ``source``'s bytes into ``target`` through the same inode (no new file)."""
    before = target.stat()
    data = source.read_bytes()
    assert len(data) == before.st_size  # same shapes: same size
    with open(target, "r+b") as f:
        f.write(data)
    after = target.stat()
    assert (after.st_ino, after.st_size) == (before.st_ino, before.st_size)


def test_second_look_only_stats_the_files(memo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    big = folder / "model.safetensors"
    big.write_bytes(os.urandom(1024) * (65 << 10))  # 65 MiB: over the old name+size limit
    (folder / "tokenizer.json").write_text('{"a": 1}')
    _settle(folder)
    first = identity.folder_digest(folder)
    rows = _rows(memo)
    # one row per file, keyed by (real path, size, mtime_ns, inode, ctime_ns)
    assert sorted(r[:5] for r in rows) == sorted(identity.file_key(p) for p in folder.iterdir())
    assert {r[5] for r in rows} == {sha256_file(p) for p in folder.iterdir()}
    # the memo is the only source a second look uses: a doctored row fails its checksum
    assert identity.folder_digest(folder) == first
    _doctor(memo)
    with pytest.raises(ConfigError, match="digests.sqlite fails its check") as err:
        identity.folder_digest(folder)
    assert "delete it" in str(err.value) and "\n" not in str(err.value)
    memo.unlink()  # the fix the line names
    assert identity.folder_digest(folder) == first and len(_rows(memo)) == 2
    _doctor(memo)
    doctored_rows = {r[5] for r in _rows(memo)}
    memo_rows = _rows(memo)
    with sqlite3.connect(memo) as conn:  # doctored, checksums gone: computed again
        conn.execute(f"UPDATE {identity._TABLE} SET checksum = NULL")
    assert identity.folder_digest(folder) == first and len(memo_rows) == 2

    # the 65 MiB file overwritten in place, same size and inode, one byte different
    data = bytearray(big.read_bytes())
    data[-1] ^= 0xFF
    replacement = tmp_path / "new.bin"
    replacement.write_bytes(bytes(data))
    _overwrite_in_place(big, replacement)
    changed = identity.file_digests([big])[big]
    # hashed afresh, not served from the memo (a digest may start with "f" by chance)
    assert changed == sha256_file(big) and changed not in doctored_rows


def test_a_file_just_written_is_hashed_but_not_remembered(memo: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh.bin"
    fresh.write_bytes(b"abc")
    assert identity.file_digests([fresh])[fresh] == sha256_file(fresh)
    assert _rows(memo) == []  # a second write in the same clock tick could keep every stat
    os.utime(fresh, (HOUR_AGO, HOUR_AGO))
    identity.file_digests([fresh])
    assert len(_rows(memo)) == 1


def _requests() -> list[Request]:
    contexts = [f"Question {d}: pick one.\nAnswer:" for d in range(3)]
    return docs_requests(contexts, ["red", "green", "a blue whale"])


@pytest.mark.slow  # real model, seconds of compute
def test_checkpoint_overwritten_in_place_is_another_model(memo: Path, tmp_path: Path) -> None:
    folder = _copy_model(0, tmp_path / "ckpt")
    cache = tmp_path / "cache"
    reqs = _requests()
    old = HFCausalLM(str(folder))
    first = CachedModel(old, ResponseStore(cache, old.identity()))
    before = first.loglikelihood(reqs)
    first.store.close()
    assert first.stats()["computed"] == len(reqs)

    # a fine-tuning loop saves same-shaped weights over the same file
    _overwrite_in_place(folder / "model.safetensors", random_gpt2_dir(seed=1) / "model.safetensors")
    new = HFCausalLM(str(folder))
    assert new.identity()["weights_fingerprint"] != old.identity()["weights_fingerprint"]
    second = CachedModel(new, ResponseStore(cache, new.identity()))
    after = second.loglikelihood(reqs)
    second.store.close()
    assert second.stats() == {"hits": 0, "computed": len(reqs), "shared": 0}
    for a, b in zip(before, after, strict=True):
        assert abs(a.logprob - b.logprob) > 1e-3  # the new weights' numbers, not the old
    # and they are exactly what the other checkpoint scores on its own
    reference = HFCausalLM(str(random_gpt2_dir(seed=1))).loglikelihood(reqs)
    assert [r.logprob for r in after] == pytest.approx([r.logprob for r in reference], abs=1e-5)


@pytest.mark.slow  # real model, seconds of compute
@pytest.mark.parametrize(
    ("name", "edit"),
    [
        ("tokenizer_config.json", lambda t: t.replace('"model_max_length"', ' "model_max_length"')),
        ("merges.txt", lambda t: t + "\n"),
        ("generation_config.json", lambda t: t.replace("}", ', "temperature": 0.7}', 1)),
    ],
)
def test_tokenizer_and_generation_config_edits_change_the_identity(
    memo: Path, tmp_path: Path, name: str, edit
) -> None:
    folder = _copy_model(0, tmp_path / "m")
    before = HFCausalLM(str(folder)).identity()
    path = folder / name
    path.write_text(edit(path.read_text()))
    after = HFCausalLM(str(folder)).identity()
    assert after["weights_fingerprint"] != before["weights_fingerprint"], name
    # training state and docs beside a checkpoint are not the model
    (folder / "optimizer.pt").write_bytes(b"state")
    (folder / "README.md").write_text("notes")
    assert HFCausalLM(str(folder)).identity() == after


@pytest.mark.slow
def test_hub_snapshot_identity_is_commit_plus_file_hashes(tmp_path: Path) -> None:
    """A hub model from the local Hugging Face cache (offline): its identity holds the
    resolved commit and the digest of the snapshot's files; a new commit with other weights
    moves both."""
    hub = tmp_path / "hub"
    repo = hub / "models--mill-test--tiny"
    blobs = repo / "blobs"
    blobs.mkdir(parents=True)
    commits = ["a" * 40, "b" * 40]
    for commit, seed in zip(commits, (0, 1), strict=True):
        snap = repo / "snapshots" / commit
        snap.mkdir(parents=True)
        for src in random_gpt2_dir(seed=seed).iterdir():
            blob = blobs / sha256_file(src)
            if not blob.exists():
                shutil.copyfile(src, blob)
            (snap / src.name).symlink_to(os.path.relpath(blob, snap))
    (repo / "refs").mkdir()
    script = (
        "import json; from mill.model.hf import HFCausalLM;"
        "print(json.dumps(HFCausalLM('mill-test/tiny').identity()))"
    )
    env = {**os.environ, "HF_HUB_CACHE": str(hub), "HF_HUB_OFFLINE": "1"}
    env["MILL_CACHE"] = str(tmp_path / "mill-cache")
    seen = []
    for commit in commits:
        (repo / "refs" / "main").write_text(commit)
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        seen.append(json.loads(out.stdout.strip().splitlines()[-1]))
    for got, commit, seed in zip(seen, commits, (0, 1), strict=True):
        assert got["commit"] == commit
        # the snapshot's files are the random model's: the same digest as that local folder
        local = identity.weights_identity(str(random_gpt2_dir(seed=seed)), None, None)
        assert got["weights_fingerprint"] == local["weights_fingerprint"]
    assert seen[0]["weights_fingerprint"] != seen[1]["weights_fingerprint"]


def test_a_second_model_load_takes_digests_from_the_memo(memo: Path, tmp_path: Path) -> None:
    folder = _copy_model(0, tmp_path / "m")
    first = HFCausalLM(str(folder)).identity()
    rows = _rows(memo)
    files = identity.model_files(folder)
    assert sorted(r[0] for r in rows) == sorted(os.path.realpath(p) for p in files)
    assert HFCausalLM(str(folder)).identity() == first
    _doctor(memo)  # a second load reads the memo: its doctored rows fail their checksums
    with pytest.raises(ConfigError, match=r"digests\.sqlite fails its check"):
        HFCausalLM(str(folder))


def test_a_local_folder_is_hashed_beside_the_load(
    memo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """start_weights_identity hashes in its own thread (so a first run's hashing overlaps
    the imports and the load) and gives what weights_identity gives."""
    import threading

    folder = _copy_model(0, tmp_path / "m")
    hashed_in: list[str] = []
    real = sha256_file

    def recording(path: Path) -> str:
        hashed_in.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(identity, "sha256_file", recording)
    finish = identity.start_weights_identity(str(folder), None)
    got = finish("abc")
    assert hashed_in and set(hashed_in) == {"mill-fingerprint"}  # nothing remembered yet
    assert got == {**identity.weights_identity(str(folder), None, None), "commit": "abc"}
    assert got["weights_fingerprint"] == identity.folder_digest(folder) != "abc"
    assert len(_rows(memo)) == len(identity.model_files(folder))  # remembered by the thread


def test_a_failed_background_hash_fails_the_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(files: list[Path]) -> str:
        raise OSError("disk went away")

    monkeypatch.setattr(identity, "_combine", broken)
    finish = identity.start_weights_identity(str(_copy_model(0, tmp_path / "m")), None)
    with pytest.raises(OSError, match="disk went away"):
        finish(None)
