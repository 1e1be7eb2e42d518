"""Evaluation during training, in process: settings checked when a callback is created, a
model refused before the first step, one evaluation's folder, identity, cache, train mode
and RNG streams, and the curves page."""

from __future__ import annotations

import random
import re
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

import mill
from mill.errors import ConfigError
from mill.integrations.core import TrainingEvaluator, fingerprint
from mill.integrations.sharded import sharding, unwrap
from mill.results import Manifest, Results
from tests.helpers import REPO, run_process

DEMO = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))


@pytest.fixture(scope="module")
def stories() -> tuple[transformers.PreTrainedModel, transformers.PreTrainedTokenizerBase]:
    model = transformers.AutoModelForCausalLM.from_pretrained(DEMO)
    return model, transformers.AutoTokenizer.from_pretrained(DEMO)


def _classifier() -> transformers.PreTrainedModel:
    config = transformers.LlamaConfig(
        vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
        num_attention_heads=2, num_labels=2, pad_token_id=0,
    )  # fmt: skip
    return transformers.LlamaForSequenceClassification(config)


@pytest.mark.slow  # imports Lightning: ~5 s
def test_an_unknown_task_fails_when_the_callback_is_created() -> None:
    from mill.integrations.hf import MillCallback as HFCallback
    from mill.integrations.lightning import MillCallback as LightningCallback

    for make in (
        lambda: HFCallback(tasks=["arc_easy", "nope"], every_n_steps=10),
        lambda: LightningCallback(tasks="nope", tokenizer=None, every_n_steps=10),
    ):
        with pytest.raises(ConfigError) as err:
            make()
        assert "unknown task 'nope'" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"tasks": []}, "names no task"),
        ({"tasks": ["arc_easy"], "every_n_steps": 0}, "every_n_steps=0"),
        ({"tasks": ["arc_easy"], "every_n_steps": 2.5}, "whole number"),
        ({"tasks": ["arc_easy"], "limit": 0}, "limit=0"),
        ({"tasks": ["arc_easy"], "overrides": ["data=nowhere"]}, "data"),
    ],
)
def test_bad_settings_fail_at_creation_in_one_line(settings: dict, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        TrainingEvaluator(**settings)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_the_trainer_refuses_a_model_without_a_language_modelling_head(tmp_path: Path) -> None:
    from mill.integrations.hf import MillCallback

    steps = []

    class Counter(transformers.TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            steps.append(state.global_step)

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path), max_steps=2, report_to=[], use_cpu=True, disable_tqdm=True
    )
    data = [{"input_ids": torch.tensor([1, 2, 3]), "labels": torch.tensor(1)}] * 4
    trainer = transformers.Trainer(
        model=_classifier(),
        args=args,
        train_dataset=data,
        callbacks=[MillCallback(tasks=["arc_easy"], every_n_steps=1), Counter()],
    )
    with pytest.raises(ConfigError) as err:
        trainer.train()
    assert "LlamaForSequenceClassification, which has no language-modelling head" in str(err.value)
    assert steps == []  # before the first training step


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_lightning_refuses_at_setup_before_the_first_step(tmp_path: Path, stories) -> None:
    import lightning as L

    from mill.integrations.lightning import MillCallback

    class Lit(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = _classifier()
            self.steps = 0

        def training_step(self, batch, index):  # type: ignore[no-untyped-def]
            self.steps += 1
            return self.net(input_ids=batch).logits.sum()

        def configure_optimizers(self):  # type: ignore[no-untyped-def]
            return torch.optim.SGD(self.parameters(), lr=0.1)

    lit = Lit()
    trainer = L.Trainer(
        max_steps=1, accelerator="cpu", logger=False, enable_checkpointing=False,
        enable_progress_bar=False, enable_model_summary=False, default_root_dir=tmp_path,
        callbacks=[MillCallback(tasks="arc_easy", tokenizer=stories[1], model_attr="net")],
    )  # fmt: skip
    with pytest.raises(ConfigError) as err:
        trainer.fit(lit, torch.utils.data.DataLoader(torch.ones(4, 3, dtype=torch.long)))
    assert "no language-modelling head" in str(err.value) and lit.steps == 0


def test_accelerate_refuses_a_missing_tokenizer_at_its_first_call(tmp_path: Path, stories) -> None:
    from accelerate import Accelerator

    from mill.integrations.accelerate import evaluate_during_training

    with pytest.raises(ConfigError) as err:
        evaluate_during_training(
            stories[0], None, Accelerator(cpu=True), step=0, tasks="arc_easy", output_dir=tmp_path
        )
    assert "no tokenizer" in str(err.value)


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_one_evaluation_equals_mill_evaluate_and_leaves_training_as_it_was(
    tmp_path: Path, stories
) -> None:
    model, tokenizer = stories
    model.train()
    evaluator = TrainingEvaluator(["arc_easy", "piqa"], every_n_steps=5, limit=4)
    states = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    logged = evaluator.evaluate(model, tokenizer, 5, tmp_path)
    assert model.training
    assert random.getstate() == states[0]
    assert (np.random.get_state()[1] == states[1]).all()
    assert torch.equal(torch.get_rng_state(), states[2])
    folder = tmp_path / "mill" / "step-5"
    got = Results.read(folder / "results.json")
    want = mill.evaluate(["arc_easy", "piqa"], model, tokenizer=tokenizer, limit=4)
    for task in ("arc_easy", "piqa"):
        for name, row in want.tasks[task].metrics.items():
            assert got.metric(task, name).value == pytest.approx(row.value, abs=1e-9)
            assert logged[f"mill/{task}/{name}"] == got.metric(task, name).value
    assert got.model["step"] == 5 and got.model["weights_fingerprint"] == fingerprint(model)
    assert Manifest.read(folder / "manifest.json").cache is None
    assert evaluator.evaluate(model, tokenizer, 5, tmp_path) == {}  # once per step


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_the_cache_is_keyed_by_the_weights(tmp_path: Path) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(DEMO)
    tokenizer = transformers.AutoTokenizer.from_pretrained(DEMO)
    before = fingerprint(model)

    def run(out: Path) -> Manifest:
        evaluator = TrainingEvaluator("arc_easy", limit=3, cache=True)
        evaluator.evaluate(model, tokenizer, 7, out)
        return Manifest.read(out / "mill" / "step-7" / "manifest.json")

    first = run(tmp_path)
    assert first.cache and first.cache["hits"] == 0 and first.cache["computed"] > 0
    assert "in_memory" not in (first.model or {})
    (tmp_path / "mill" / "step-7").rename(tmp_path / "mill" / "first")
    again = run(tmp_path)  # the same step and weights (resumed training): served
    assert again.cache and again.cache["computed"] == 0 and again.cache["hits"] > 0
    with torch.no_grad():
        model.lm_head.weight[0, 0] += 1.0
    assert fingerprint(model) != before
    (tmp_path / "mill" / "step-7").rename(tmp_path / "mill" / "second")
    changed = run(tmp_path)  # the same step, other weights: nothing reused
    assert changed.cache and changed.cache["hits"] == 0


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_curves_from_the_step_folders(tmp_path: Path, stories) -> None:
    model, tokenizer = stories
    evaluator = TrainingEvaluator("arc_easy", limit=3)
    for step in (2, 4):
        evaluator.evaluate(model, tokenizer, step, tmp_path)
    page = evaluator.finish(tmp_path)
    assert page == tmp_path / "mill" / "curves.html"
    html = page.read_text()
    assert "step 2" in html and "step 4" in html and "Bundled sample data" in html
    for step in (2, 4):  # each step's report, linked relative to the page
        assert f"<a href='step-{step}/report.html'>step {step}</a>" in html
        assert (tmp_path / "mill" / f"step-{step}" / "report.html").is_file()
    assert (tmp_path / "mill" / "curves" / "acc.png").read_bytes().startswith(b"\x89PNG")
    assert "data=bundled" in evaluator.banner() and "every" not in evaluator.banner()


@pytest.mark.slow  # DeepSpeedStrategy imports DeepSpeed: about 20 s
def test_lightning_refuses_the_strategies_that_shard_the_lightning_module() -> None:
    from lightning.pytorch.strategies import DDPStrategy, DeepSpeedStrategy, FSDPStrategy

    from mill.integrations.lightning import strategy_refusal

    for strategy in (FSDPStrategy(), DeepSpeedStrategy(stage=3)):
        why = strategy_refusal(strategy)
        assert why is not None and type(strategy).__name__ in why and "\n" not in why
    assert strategy_refusal(DDPStrategy()) is None


def test_a_whole_model_is_neither_sharded_nor_wrapped(stories) -> None:
    model = stories[0]
    assert sharding(model) is None and unwrap(model) is model
    assert unwrap(torch.nn.DataParallel(model)) is model


DIVERGED = """
import sys
import torch, torch.distributed as td, transformers
from mill.errors import MillError
from mill.integrations.core import TrainingEvaluator
td.init_process_group("gloo")
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
tokenizer = transformers.AutoTokenizer.from_pretrained(sys.argv[1])
if td.get_rank() == 1:
    with torch.no_grad():
        model.lm_head.weight[0, 0] += 1.0
try:
    TrainingEvaluator("arc_easy", limit=2).evaluate(model, tokenizer, 3, sys.argv[2])
except MillError as err:
    print(f"rank {td.get_rank()} refused: {err}")
td.destroy_process_group()
"""


@pytest.mark.slow  # two ranks under torchrun
def test_ranks_with_different_weights_stop_the_evaluation_on_every_rank(tmp_path: Path) -> None:
    script = tmp_path / "diverged.py"
    script.write_text(DIVERGED)
    done = run_process(
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
        script, DEMO, tmp_path / "out", cwd=REPO, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # each rank prints one line; two ranks share the pipe, so their lines may interleave
    said = re.findall(r"rank (\d) refused: the ranks hold different weights at step 3", done.stdout)
    assert sorted(said) == ["0", "1"], done.stdout
    assert not (tmp_path / "out" / "mill" / "step-3").exists()  # nothing half-written


FLAT = """
import functools, sys
import torch, torch.distributed as td, transformers
from torch.distributed.fsdp import FullyShardedDataParallel
from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy
from transformers.models.llama.modeling_llama import LlamaDecoderLayer
from mill.integrations.core import fingerprint
from mill.integrations.sharded import gathered_state_dict, sharding, whole_copy
td.init_process_group("gloo")
model = transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])
want = fingerprint(model)
policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer})
wrapped = FullyShardedDataParallel(
    model, device_id=torch.device("cpu"), use_orig_params=False, auto_wrap_policy=policy
)
kind = sharding(wrapped)
whole = whole_copy(wrapped, gathered_state_dict(wrapped, kind))
print(f"rank {td.get_rank()}: {kind} {fingerprint(whole) == want} {whole.training}")
td.destroy_process_group()
"""


@pytest.mark.slow  # two ranks under torchrun
def test_fsdp1_flat_parameters_are_gathered_whole(tmp_path: Path) -> None:
    """The training loops shard with use_orig_params=True; FSDP1's flat parameters
    (use_orig_params=False) are gathered into the same whole model."""
    script = tmp_path / "flat.py"
    script.write_text(FLAT)
    done = run_process(
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
        script, DEMO, cwd=REPO, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    # the two ranks share the pipe: one's line can land inside the other's (seen once:
    # "rank 0: fsdp True Falserank 1: fsdp True False"), so the lines are found, not split
    said = sorted(re.findall(r"rank \d: \w+ (?:True|False) (?:True|False)", done.stdout))
    assert said == ["rank 0: fsdp True False", "rank 1: fsdp True False"]


def _shown(text: str) -> list[str]:
    """What a terminal shows of ``text``: each line from its last carriage return."""
    return [line.rsplit("\r", 1)[-1] for line in text.split("\n")]


@pytest.mark.slow  # evaluates or trains in process: seconds, not ms
def test_mill_prints_above_the_training_bar_not_into_it(
    tmp_path: Path, stories, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Trainer's tqdm bar on stderr mid-epoch: Mill's progress lines and table (stderr,
    stdout) each start on a line of their own, and the bar is drawn again afterwards."""
    import io

    from tqdm import tqdm

    model, tokenizer = stories
    screen = io.StringIO()  # stdout and stderr, as a terminal shows them, interleaved
    monkeypatch.setattr(sys, "stdout", screen)
    monkeypatch.setattr(sys, "stderr", screen)
    bar = tqdm(total=10, file=sys.stderr, desc="training", mininterval=0)
    bar.update(3)
    TrainingEvaluator("arc_easy", limit=3).evaluate(model, tokenizer, 3, tmp_path)
    bar.update(1)
    bar.close()
    shown = _shown(screen.getvalue())
    mill_lines = [x for x in shown if "[mill]" in x or "arc_easy" in x]
    assert any(x.startswith("[mill] building requests") for x in mill_lines), shown
    assert all("training" not in x for x in mill_lines), shown  # never inside the bar
    assert any(x.startswith("training:  40%") for x in shown), shown  # drawn again
