"""mill.dotted.flatten: the one flattening of nested settings (sinks' parameters, compare's
and report.html's settings, the settings a resume may not change)."""

from __future__ import annotations

from omegaconf import OmegaConf

from mill.dotted import flatten
from mill.runner.job import config_changes
from mill.sinks import RunRecord

SETTINGS = {
    "model": {"name": "gpt2", "sampling": {}, "dtype": None},
    "task": {"limit": 10, "until": ["\n", "Q:"], "generation": {"do_sample": False}},
    "seed": 1234,
}


def test_nested_keys_become_dotted_and_lists_stay_values() -> None:
    assert flatten(SETTINGS) == {
        "model.name": "gpt2",
        "model.dtype": None,
        "task.limit": 10,
        "task.until": ["\n", "Q:"],
        "task.generation.do_sample": False,
        "seed": 1234,
    }
    assert flatten(OmegaConf.create(SETTINGS)) == flatten(SETTINGS)  # any mapping
    assert flatten(3) == {"": 3} and flatten({}) == {} and flatten({}, keep_empty=True) == {}


def test_an_empty_mapping_is_dropped_or_kept_as_a_value() -> None:
    kept = flatten(SETTINGS, keep_empty=True)  # what compare and report.html show
    assert kept["model.sampling"] == {} and list(kept)[:3] == [
        "model.name",
        "model.sampling",
        "model.dtype",
    ]
    assert "model.sampling" not in flatten(SETTINGS)  # sinks and resume: no key
    params = RunRecord(name="run", results=None, settings=SETTINGS).params()  # type: ignore[arg-type]
    assert params["model.dtype"] == "null" and "model.sampling" not in params
    assert params["task.until"] == "['\\n', 'Q:']"


def test_a_resume_compares_the_flattened_settings() -> None:
    new = {**SETTINGS, "model": {**SETTINGS["model"], "sampling": {"top_k": 1}}}
    assert config_changes(SETTINGS, new) == ["model.sampling.top_k"]
