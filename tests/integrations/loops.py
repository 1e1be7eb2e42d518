"""Real training loops for the integration tests: stories260k fine-tuned on the bundled
WikiText-2 excerpt, with or without Mill's evaluation, in one process or under torchrun.

    python tests/integrations/loops.py {hf,lightning,accelerate} OUT [--no-eval] [--both]
    torchrun --nproc-per-node 2 tests/integrations/loops.py hf OUT
    torchrun --nproc-per-node 2 tests/integrations/loops.py {fsdp1,fsdp2,zero3} OUT

Attention dropout is on, so training draws from torch's RNG every step: an evaluation
that disturbed the training RNG streams would change the loss curve. The model is saved
to ``OUT/checkpoint-<N>`` at every evaluated step, for standalone ``mill`` runs. Rank 0
writes ``OUT/losses.json``: the loss per step and what was logged.

``--both`` trains twice in this process, each time from the same seed and freshly loaded
weights: first without Mill into ``OUT/plain``, then with Mill's evaluation into
``OUT/eval`` (one start of the interpreter, the ranks and their imports instead of two;
the run without Mill comes first, so nothing of Mill has run when its curve is drawn). Not
for the hand-written loops under torchrun: ``accelerator.end_training()`` destroys the
process group, and a second one does not join again in the same ranks.
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


def recorder(logged: list[dict[str, Any]]) -> Any:
    """An Accelerate tracker that keeps what is logged to it."""
    from accelerate.tracking import GeneralTracker

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

    return Recorder()


def shard(model: Any, kind: str, size: int) -> tuple[Any, Any]:
    """The model sharded over the ranks, one FSDP unit or ZeRO partition per decoder layer,
    and its optimizer: torch's FSDP1 (``FullyShardedDataParallel(device_id=cpu,
    use_orig_params=True)``), FSDP2 (``fully_shard`` on a CPU mesh) or a DeepSpeed ZeRO-3
    engine (which is its own optimizer)."""
    import torch

    if kind == "zero3":
        import deepspeed

        config = {
            "train_micro_batch_size_per_gpu": BATCH // size,
            "gradient_accumulation_steps": 1,
            "zero_optimization": {"stage": 3},
            "optimizer": {"type": "AdamW", "params": {"lr": LR, "torch_adam": True}},
        }
        engine, _, _, _ = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=config
        )
        return engine, engine
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer

    if kind == "fsdp1":
        import functools

        from torch.distributed.fsdp import FullyShardedDataParallel
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        policy = functools.partial(
            transformer_auto_wrap_policy, transformer_layer_cls={LlamaDecoderLayer}
        )
        model = FullyShardedDataParallel(
            model, device_id=torch.device("cpu"), use_orig_params=True, auto_wrap_policy=policy
        )
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard

        mesh = init_device_mesh("cpu", (size,))
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
    return model, torch.optim.AdamW(model.parameters(), lr=LR)


def whole_state(model: Any, kind: str) -> dict[str, Any]:
    """A sharded model's whole state dict on rank 0 (empty elsewhere), gathered by the
    framework's own checkpoint call; every rank calls it."""
    if kind == "zero3":
        return model._zero3_consolidated_16bit_state_dict() or {}
    if kind == "fsdp1":
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        # offload_to_cpu=True crashes (SIGSEGV in the clone of a gathered parameter) when
        # the FSDP device is the CPU, torch 2.13
        config = FullStateDictConfig(offload_to_cpu=False, rank0_only=True)
        with FSDP.state_dict_type(model, StateDictType.FULL_STATE_DICT, config):
            return model.state_dict()
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options)


def accelerate(out: Path, evaluate: bool, kind: str = "ddp") -> dict[str, Any]:
    """A hand-written loop: Accelerate joins the process group (gloo), deals the batches and
    is the tracker. ``kind="ddp"``: Accelerate prepares the model; otherwise the model is
    sharded by :func:`shard` (Accelerate's FSDP and DeepSpeed plugins need an accelerator
    device, so the sharding is torch's or DeepSpeed's own, as a CPU user would write it).
    Rank 0 saves the whole model at every evaluated step."""
    import torch
    from accelerate import Accelerator

    from mill.integrations.accelerate import evaluate_during_training

    logged: list[dict[str, Any]] = []
    accelerator = Accelerator(cpu=True, log_with=[recorder(logged)])
    accelerator.init_trackers("loops")
    torch.manual_seed(0)
    model, tokenizer = load()
    _, size = world()
    loader = torch.utils.data.DataLoader(blocks(tokenizer), batch_size=BATCH // size, shuffle=True)
    if kind == "ddp":
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
        model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    else:
        plain, _ = load()  # the checkpoints' vessel
        loader = accelerator.prepare(loader)
        model, optimizer = shard(model, kind, size)
    settings = {**SETTINGS, "output_dir": out}
    if evaluate:
        evaluate_during_training(model, tokenizer, accelerator, step=0, **settings)
    losses = []
    step = 0
    model.train()
    for batch in loader:
        loss = model(**batch).loss
        if kind == "zero3":
            model.backward(loss)
            model.step()
        else:
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
        step += 1
        losses.append(float(loss.detach()))
        if step % EVERY == 0 and kind == "ddp" and accelerator.is_main_process:
            save(accelerator.unwrap_model(model), tokenizer, out, step)
        elif step % EVERY == 0 and kind != "ddp":
            state = whole_state(model, kind)
            if accelerator.is_main_process:
                missing, _ = plain.load_state_dict(state, strict=False)
                assert set(missing) <= {"lm_head.weight"}, missing  # tied to the embeddings
                save(plain, tokenizer, out, step)
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


LOOPS = ("hf", "lightning", "accelerate", "fsdp1", "fsdp2", "zero3")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("loop", choices=LOOPS)
    parser.add_argument("out", type=Path)
    parser.add_argument("--no-eval", action="store_true")
    parser.add_argument("--both", action="store_true", help="OUT/plain, then OUT/eval")
    args = parser.parse_args()
    runs = (
        [(args.out / "plain", False), (args.out / "eval", True)]
        if args.both
        else [(args.out, not args.no_eval)]
    )
    for out, evaluate in runs:
        if args.loop in ("fsdp1", "fsdp2", "zero3"):
            result = accelerate(out, evaluate, args.loop)
        else:
            loop = {"hf": hf, "lightning": lightning, "accelerate": accelerate}[args.loop]
            result = loop(out, evaluate)
        if world()[0] == 0:
            out.mkdir(parents=True, exist_ok=True)
            (out / "losses.json").write_text(json.dumps(result, indent=1))
    leave_process_group()


def leave_process_group() -> None:
    """Destroy the process group the Trainer or Lightning joined and left standing (the
    hand-written loops' ``end_training()`` already did): a process that exits with gloo's
    worker threads alive can abort in the interpreter's finalization ("terminate called
    without an active exception", SIGABRT: one 2-rank Trainer run in CI), as Mill's own
    runner knows (``mill.runner.dist.Dist.close``)."""
    if world()[1] == 1:
        return
    import torch.distributed as torch_dist

    if torch_dist.is_initialized():
        torch_dist.barrier()
        torch_dist.destroy_process_group()


if __name__ == "__main__":
    main()
