"""Real training loops for the integration tests: stories260k fine-tuned on the bundled
WikiText-2 excerpt, with or without Mill's evaluation, in one process or under torchrun.

    python tests/integrations/loops.py {hf,lightning,accelerate} OUT [--no-eval]
    torchrun --nproc-per-node 2 tests/integrations/loops.py hf OUT

Attention dropout is on, so training draws from torch's RNG every step: an evaluation
that disturbed the training RNG streams would change the loss curve. The model is saved
to ``OUT/checkpoint-<N>`` at every evaluated step, for standalone ``mill`` runs. Rank 0
writes ``OUT/losses.json``: the loss per step and what was logged.
"""

from __future__ import annotations

import argparse
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

STEPS = 20
EVERY = 10
TASKS = ["arc_easy"]
LIMIT = 16
BATCH = 4
BLOCK = 64
LR = 3e-3
MODEL = Path(str(resources.files("mill.resources").joinpath("models", "stories260k")))
TEXT = Path(str(resources.files("mill.resources").joinpath("data", "wikitext2", "test.txt")))
SETTINGS: dict[str, Any] = {"tasks": TASKS, "every_n_steps": EVERY, "limit": LIMIT}


def world() -> tuple[int, int]:
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def load() -> tuple[Any, Any]:
    import transformers

    model = transformers.AutoModelForCausalLM.from_pretrained(MODEL)
    model.config.attention_dropout = 0.1
    for layer in model.model.layers:
        layer.self_attn.attention_dropout = 0.1
    return model, transformers.AutoTokenizer.from_pretrained(MODEL)


def blocks(tokenizer: Any) -> list[dict[str, Any]]:
    """The excerpt in blocks of BLOCK tokens, each its own labels."""
    import torch

    ids = tokenizer(TEXT.read_text(encoding="utf-8"))["input_ids"]
    n = len(ids) // BLOCK
    rows = torch.tensor(ids[: n * BLOCK]).view(n, BLOCK)
    return [{"input_ids": r, "labels": r} for r in rows]


def save(model: Any, tokenizer: Any, out: Path, step: int) -> None:
    folder = out / f"checkpoint-{step}"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def hf(out: Path, evaluate: bool) -> dict[str, Any]:
    import transformers

    from mill.integrations.hf import MillCallback

    model, tokenizer = load()
    _, size = world()
    args = transformers.TrainingArguments(
        output_dir=str(out),
        max_steps=STEPS,
        per_device_train_batch_size=BATCH // size,
        learning_rate=LR,
        logging_steps=1,
        save_strategy="steps",
        save_steps=EVERY,
        save_only_model=True,
        report_to=[],
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
        dataloader_num_workers=0,
        **({"ddp_backend": "gloo"} if size > 1 else {}),
    )
    callbacks = [MillCallback(**SETTINGS)] if evaluate else []
    trainer = transformers.Trainer(
        model=model,
        args=args,
        train_dataset=blocks(tokenizer),
        processing_class=tokenizer,
        data_collator=transformers.default_data_collator,
        callbacks=callbacks,
    )
    trainer.train()
    history = trainer.state.log_history
    return {
        "loss": [h["loss"] for h in history if "loss" in h],
        "logged": [h for h in history if any(k.startswith("mill/") for k in h)],
    }


def lightning(out: Path, evaluate: bool) -> dict[str, Any]:
    import lightning as L
    import torch
    from lightning.pytorch.loggers import CSVLogger

    from mill.integrations.lightning import MillCallback

    model, tokenizer = load()
    rank, size = world()

    class LitLM(L.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.losses: list[float] = []

        def training_step(self, batch: dict[str, Any], index: int) -> Any:
            loss = self.model(**batch).loss
            self.losses.append(float(loss.detach()))
            return loss

        def configure_optimizers(self) -> Any:
            return torch.optim.AdamW(self.parameters(), lr=LR)

    class Saver(L.Callback):
        def on_train_batch_end(self, trainer: Any, module: Any, *args: Any) -> None:
            if trainer.global_step % EVERY == 0 and trainer.is_global_zero:
                save(module.model, tokenizer, out, trainer.global_step)

    L.seed_everything(0, verbose=False)
    logged: list[dict[str, Any]] = []

    class Recorder(CSVLogger):
        def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
            if any(k.startswith("mill/") for k in metrics):
                logged.append({**metrics, "step": step})
            super().log_metrics(metrics, step)

    lit = LitLM()
    callbacks: list[Any] = [Saver()]
    if evaluate:
        callbacks.append(MillCallback(tokenizer=tokenizer, **SETTINGS))
    trainer = L.Trainer(
        max_steps=STEPS,
        accelerator="cpu",
        devices=size,
        strategy="ddp" if size > 1 else "auto",
        callbacks=callbacks,
        logger=Recorder(str(out)),
        default_root_dir=str(out),
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    loader = torch.utils.data.DataLoader(blocks(tokenizer), batch_size=BATCH // size)
    trainer.fit(lit, loader)
    return {"loss": lit.losses, "logged": logged}


def accelerate(out: Path, evaluate: bool) -> dict[str, Any]:
    import torch
    from accelerate import Accelerator
    from accelerate.tracking import GeneralTracker

    from mill.integrations.accelerate import evaluate_during_training

    logged: list[dict[str, Any]] = []

    class Recorder(GeneralTracker):
        name = "recorder"
        requires_logging_directory = False

        def __init__(self) -> None:
            super().__init__()

        @property
        def tracker(self) -> Any:
            return None

        def store_init_configuration(self, values: dict[str, Any]) -> None:
            return None

        def log(self, values: dict[str, Any], step: int | None = None, **kwargs: Any) -> None:
            logged.append({**values, "step": step})

    accelerator = Accelerator(cpu=True, log_with=[Recorder()])
    accelerator.init_trackers("loops")
    torch.manual_seed(0)
    model, tokenizer = load()
    _, size = world()
    loader = torch.utils.data.DataLoader(blocks(tokenizer), batch_size=BATCH // size, shuffle=True)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    settings = {**SETTINGS, "output_dir": out}
    if evaluate:
        evaluate_during_training(model, tokenizer, accelerator, step=0, **settings)
    losses = []
    step = 0
    model.train()
    for batch in loader:
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        losses.append(float(loss.detach()))
        if step % EVERY == 0 and accelerator.is_main_process:
            save(accelerator.unwrap_model(model), tokenizer, out, step)
        if evaluate:
            evaluate_during_training(model, tokenizer, accelerator, step=step, **settings)
        if step == STEPS:
            break
    if evaluate:
        evaluate_during_training(
            model, tokenizer, accelerator, step=step, event="train_end", **settings
        )
    accelerator.end_training()
    return {"loss": losses, "logged": logged}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("loop", choices=["hf", "lightning", "accelerate"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--no-eval", action="store_true")
    args = parser.parse_args()
    result = {"hf": hf, "lightning": lightning, "accelerate": accelerate}[args.loop](
        args.out, not args.no_eval
    )
    if world()[0] == 0:
        (args.out / "losses.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
