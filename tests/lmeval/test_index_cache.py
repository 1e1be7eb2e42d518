"""The bridge's cache of lm-eval's task index: the cached index is the one lm-eval builds, a
second construction reads it instead of parsing YAMLs, and a changed YAML folder rebuilds it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from mill.data.load import DataSource
from tests.lmeval.conftest import skip_without_lm_eval, skip_without_shared

pytestmark = [skip_without_lm_eval]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "mill-cache"
    monkeypatch.setenv("MILL_CACHE", str(folder))
    return folder


class Spy:
    """Counts, around lm-eval's real functions, the index builds given folders and the YAML
    parses of its index builder."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from lm_eval.tasks import _index

        self.builds: list[list[Path]] = []
        self.parses = 0
        real_build = _index.TaskIndex.build
        real_load = _index.load_yaml

        def build(paths: Any, **kwargs: Any) -> Any:
            paths = list(paths)
            if paths:
                self.builds.append(paths)
            return real_build(paths, **kwargs)

        def load_yaml(*args: Any, **kwargs: Any) -> Any:
            self.parses += 1
            return real_load(*args, **kwargs)

        monkeypatch.setattr(_index.TaskIndex, "build", staticmethod(build))
        monkeypatch.setattr(_index, "load_yaml", load_yaml)

    def reset(self) -> None:
        self.builds.clear()
        self.parses = 0


def _fresh(folder: Path) -> Any:
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(folder), include_defaults=False)


def _same(manager: Any, fresh: Any) -> None:
    """Same index (entries and their order) and the same name lists as lm-eval's own."""
    assert manager.task_index == fresh.task_index
    assert list(manager.task_index) == list(fresh.task_index)
    assert manager.all_tasks == fresh.all_tasks
    assert manager.all_subtasks == fresh.all_subtasks
    assert manager.all_groups == fresh.all_groups
    assert manager.all_tags == fresh.all_tags


def test_cached_index_equals_the_one_lm_eval_builds(local_tasks: Path, cache: Path) -> None:
    from mill.lm_eval.index_cache import task_manager

    cold = task_manager([str(local_tasks)], include_defaults=False)
    (written,) = (cache / "lm_eval").glob("index-*.json")
    data = json.loads(written.read_text())
    assert data["made_from"]["lm_eval"] == "0.4.13"
    names = [name for name, _ in data["data"]]
    assert {"mill_arc_easy", "mill_arc_group", "mill_wikitext"} <= set(names)
    warm = task_manager([str(local_tasks)], include_defaults=False)
    fresh = _fresh(local_tasks)
    _same(cold, fresh)
    _same(warm, fresh)
    # the `!function` strings lm-eval's index keeps are kept, as strings
    assert warm.task_index["mill_arc_easy"].cfg["process_docs"].endswith("utils.ai2_to_hf")


def test_second_construction_reads_the_cache(local_tasks: Path, cache: Path, monkeypatch) -> None:
    from mill.lm_eval.index_cache import task_manager

    spy = Spy(monkeypatch)
    task_manager([str(local_tasks)], include_defaults=False)
    assert spy.builds == [[local_tasks]] and spy.parses >= 4
    spy.reset()
    warm = task_manager([str(local_tasks)], include_defaults=False)
    assert spy.builds == [] and spy.parses == 0
    assert warm.include_path == [str(local_tasks)]
    spy.reset()
    _same(warm, _fresh(local_tasks))


@skip_without_shared
def test_bridge_builds_the_same_requests_from_the_cache(
    local_tasks: Path, cache: Path, monkeypatch
) -> None:
    from mill.lm_eval.bridge import LMEvalSuite

    spy = Spy(monkeypatch)

    def requests() -> list[tuple[Any, ...]]:
        suite = LMEvalSuite(
            tasks=["mill_arc_group", "mill_wikitext"],
            include_path=str(local_tasks),
            include_defaults=False,
            limit=3,
            num_fewshot=2,
        )
        out = [tuple(sorted(suite.lm_groups))]
        for task in suite.tasks:
            for doc in task.docs(DataSource("bundled")):
                out += [(r.task, r.doc_id, r.index, r.context, r.continuation, r.output_type)
                        for r in task.requests(doc)]  # fmt: skip
        return out

    cold = requests()
    assert len(spy.builds) == 1
    spy.reset()
    warm = requests()
    assert spy.builds == []  # the index was not built again
    assert warm == cold and len(cold) > 10


def test_changed_yaml_folder_rebuilds_the_index(
    local_tasks: Path, cache: Path, monkeypatch
) -> None:
    from mill.lm_eval.index_cache import task_manager

    spy = Spy(monkeypatch)

    def manager() -> Any:
        spy.reset()
        return task_manager([str(local_tasks)], include_defaults=False)

    manager()
    manager()
    assert spy.builds == []
    # touched: same bytes, another mtime
    yaml = local_tasks / "mill_wikitext.yaml"
    st = yaml.stat()
    os.utime(yaml, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    manager()
    assert spy.builds == [[local_tasks]]
    assert manager() is not None and spy.builds == []
    # added (in a subfolder): the new task is indexed
    (local_tasks / "more").mkdir()
    text = (local_tasks / "mill_arc_easy.yaml").read_text()
    (local_tasks / "more" / "mill_arc_easy_copy.yaml").write_text(
        text.replace("task: mill_arc_easy", "task: mill_arc_easy_copy")
    )
    added = manager()
    assert spy.builds == [[local_tasks]] and "mill_arc_easy_copy" in added.all_tasks
    assert manager().all_tasks == added.all_tasks and spy.builds == []
    # removed: gone from the index
    shutil.rmtree(local_tasks / "more")
    removed = manager()
    assert spy.builds == [[local_tasks]] and "mill_arc_easy_copy" not in removed.all_tasks
    spy.reset()
    _same(removed, _fresh(local_tasks))


def test_other_lm_eval_version_rebuilds(local_tasks: Path, cache: Path, monkeypatch) -> None:
    import lm_eval

    from mill.lm_eval.index_cache import task_manager

    spy = Spy(monkeypatch)
    task_manager([str(local_tasks)], include_defaults=False)
    monkeypatch.setattr(lm_eval, "__version__", "0.4.99")
    spy.reset()
    task_manager([str(local_tasks)], include_defaults=False)
    assert spy.builds == [[local_tasks]]


def test_values_json_cannot_keep_are_parsed_again(tmp_path: Path, cache: Path, monkeypatch) -> None:
    """A YAML value JSON would change (a date) is not stored: the entry's YAML is parsed again
    on load, so the index still equals lm-eval's."""
    import datetime

    from mill.lm_eval.index_cache import task_manager

    folder = tmp_path / "dated"
    folder.mkdir()
    (folder / "dated.yaml").write_text(
        "task: dated_task\ntag: [dated_tag]\ndataset_path: json\noutput_type: loglikelihood\n"
        "doc_to_text: '{{q}}'\ndoc_to_target: '{{a}}'\nmetadata:\n  released: 2024-01-02\n"
    )
    task_manager([str(folder)], include_defaults=False)
    (written,) = (cache / "lm_eval").glob("index-*.json")
    rows = dict(json.loads(written.read_text())["data"])
    assert rows["dated_task"].get("reparse") is True and "cfg" not in rows["dated_task"]
    assert rows["dated_tag"]["tags"] == ["dated_task"]
    spy = Spy(monkeypatch)
    warm = task_manager([str(folder)], include_defaults=False)
    assert spy.builds == []
    cfg = warm.task_index["dated_task"].cfg
    assert cfg["metadata"]["released"] == datetime.date(2024, 1, 2)
    _same(warm, _fresh(folder))


def test_damaged_cache_is_refused_and_rebuilt_once_deleted(local_tasks: Path, cache: Path) -> None:
    """A damaged index file fails closed (one line naming it and the fix); deleted, it is
    built again. Edits that keep it JSON: tests/test_cache_integrity.py."""
    from mill.errors import ConfigError
    from mill.lm_eval.index_cache import task_manager

    task_manager([str(local_tasks)], include_defaults=False)
    (written,) = (cache / "lm_eval").glob("index-*.json")
    written.write_text(written.read_text()[:1000])
    with pytest.raises(ConfigError, match=f"{written} fails its check .*; delete it"):
        task_manager([str(local_tasks)], include_defaults=False)
    written.unlink()
    _same(task_manager([str(local_tasks)], include_defaults=False), _fresh(local_tasks))
    assert json.loads(written.read_text())["data"]  # rewritten whole


@pytest.mark.slow
def test_default_tasks_index_cached_equals_lm_evals(
    local_tasks: Path, cache: Path, monkeypatch
) -> None:
    """lm-eval's own ~14,000 YAMLs (about 12 s of CPU per build, so slow), kept once: an
    include path adds its own part; the merge is lm-eval's."""
    import lm_eval.tasks
    from lm_eval.tasks import TaskManager

    from mill.lm_eval.index_cache import task_manager

    spy = Spy(monkeypatch)
    task_manager([], include_defaults=True)
    (defaults,) = spy.builds
    spy.reset()
    warm = task_manager([], include_defaults=True)
    assert spy.builds == [] and spy.parses == 0
    with_include = task_manager([str(local_tasks)], include_defaults=True)
    assert spy.builds == [[local_tasks]]  # the defaults' part came from the cache
    assert len(list((cache / "lm_eval").glob("index-*.json"))) == 2
    monkeypatch.undo()
    fresh = TaskManager(include_path=str(local_tasks))
    assert len(fresh.task_index) > 10_000
    _same(with_include, fresh)
    # the defaults alone: lm-eval's index less the include folder's own names
    local = set(_fresh(local_tasks).task_index)
    assert local and not local & set(warm.task_index)
    assert list(warm.task_index.items()) == [
        (k, e) for k, e in fresh.task_index.items() if k not in local
    ]
    assert defaults == [Path(lm_eval.tasks.__file__).parent]


def test_index_files_keep_their_names(cache: Path) -> None:
    # the name digests the folder's two spellings (ASCII-escaped JSON, as ever): an index
    # built before keeps being found
    import hashlib

    from mill.lm_eval.index_cache import cache_file

    root = cache / "tâches"
    spec = json.dumps([str(root), str(root.resolve())])
    assert cache_file(root).name == f"index-{hashlib.sha256(spec.encode()).hexdigest()[:24]}.json"
