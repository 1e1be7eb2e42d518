"""``model=hf``'s ``model.tokenizer``: a checkpoint saved without its tokenizer (a Trainer's
default without ``processing_class``) evaluated with the tokenizer from elsewhere, as
lm-eval's ``tokenizer=``; a local path that does not exist said as such, and a hub id
offline that is not in the cache."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

import pytest

import mill
from mill.errors import ModelError

DEMO = Path(str(resources.files("mill.resources").joinpath("models/stories260k")))


def test_a_checkpoint_without_tokenizer_scores_as_the_full_folder(tmp_path: Path) -> None:
    bare = tmp_path / "checkpoint"
    bare.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(DEMO / name, bare / name)
    model = ["model=hf", "model.name=demo", f"model.pretrained={DEMO}"]
    whole = mill.evaluate("arc_easy", limit=5, overrides=model)
    with pytest.raises(ModelError, match=r"model.tokenizer=<folder or hub id>"):
        mill.evaluate("arc_easy", limit=5, overrides=[*model[:2], f"model.pretrained={bare}"])
    split = mill.evaluate(
        "arc_easy",
        limit=5,
        overrides=[*model[:2], f"model.pretrained={bare}", f"model.tokenizer={DEMO}"],
    )
    assert split.tasks["arc_easy"].metrics == whole.tasks["arc_easy"].metrics
    assert split.model["tokenizer"]["source"] == str(DEMO)
    assert split.model["tokenizer"]["fingerprint"]  # the folder's files, in the identity
    assert "tokenizer" not in whole.model


@pytest.mark.parametrize("setting", ["pretrained", "tokenizer"])
def test_a_local_path_that_does_not_exist_is_said_so(setting: str, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    overrides = ["model=hf", f"model.pretrained={DEMO}", f"model.{setting}={missing}"]
    with pytest.raises(ModelError, match=rf"the folder {missing} does not exist"):
        mill.evaluate("arc_easy", limit=2, overrides=overrides)


def test_a_hub_id_offline_and_not_cached_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # an empty cache
    with pytest.raises(ModelError) as caught:
        mill.evaluate("arc_easy", limit=2, overrides=["model=hf", "model.pretrained=nobody/none"])
    line = str(caught.value)
    assert line.startswith("cannot load hub model 'nobody/none' (revision None): OSError.")
    assert "HF_HUB_OFFLINE is set and the model is not in the Hugging Face cache" in line
    assert "\n" not in line
