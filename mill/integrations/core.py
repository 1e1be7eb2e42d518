"""What the three training integrations share: settings, checks, one evaluation, curves.

An evaluation runs on every rank of the training job, inside the job's own process group
(``torch.distributed``'s default group, which the trainer already joined): the runner's
:func:`~mill.runner.job.run_job` with a :class:`GroupDist` deals the docs over the ranks
and gathers the responses on rank 0 exactly as a ``mill`` run under ``torchrun`` does. The
model is the one being trained, unwrapped from DDP / Accelerate, in ``eval`` mode and
``no_grad``; a model sharded over the ranks (FSDP, DeepSpeed ZeRO-3) is first gathered
into a whole copy on every rank (:mod:`mill.integrations.sharded` says why), evaluated,
then dropped. Afterwards the model's train mode and every global RNG stream (Python,
NumPy, torch CPU and CUDA) are as they were, and the optimizer is never seen. The
weights' fingerprint must be the same on every rank, or the evaluation stops.

Each evaluation writes an experiment folder ``<output_dir>/mill/step-<N>/`` whose model
identity names the step and the sha256 of the weights in memory; ``finish`` writes
``<output_dir>/mill/curves.html`` and one PNG per task and metric.
"""

from __future__ import annotations

import hashlib
import logging
import random
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from mill.api import InMemoryModel, compose_tasks
from mill.errors import ConfigError, MillError
from mill.integrations.sharded import gathered_state_dict, sharding, unwrap, whole_copy
from mill.results.format import Results
from mill.runner.dist import Dist

log = logging.getLogger("mill")

BUNDLED_NOTE = (
    "data=bundled: the small excerpts shipped with Mill, not benchmark scores; pass "
    "overrides=['data=local', 'data.dir=...'] or ['data=hub'] for the real sets"
)


@dataclass
class GroupDist(Dist):
    """The training job's own process group (the default one) seen as a :class:`Dist`:
    the same collectives, and ``close`` leaves the group to its owner."""

    def all_gather(self, obj: Any) -> list[Any]:
        import torch.distributed as td

        out: list[Any] = [None] * self.world_size
        td.all_gather_object(out, obj)
        return out

    def broadcast(self, obj: Any) -> Any:
        import torch.distributed as td

        box = [obj]
        td.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        import torch.distributed as td

        td.barrier()

    def close(self) -> None:  # the trainer owns the group
        return None


def job_dist() -> Dist:
    """This process's place in the training job (a lone process: rank 0 of 1)."""
    import torch.distributed as td

    if not (td.is_available() and td.is_initialized()) or td.get_world_size() == 1:
        return Dist()
    return GroupDist(rank=td.get_rank(), world_size=td.get_world_size())


def refusal(model: Any, tokenizer: Any) -> str | None:
    """Why Mill cannot evaluate this model in the training loop (one line), or None."""
    from mill.model.base import LanguageModel

    if isinstance(model, LanguageModel):
        return None
    if model is None:
        return "no model: pass the model being trained"
    inner = unwrap(model)
    name = type(inner).__name__
    import transformers

    if not isinstance(inner, transformers.PreTrainedModel):
        return (
            f"the model is a {name}, not a transformers causal LM; give the callback a "
            "transformers ...ForCausalLM or a mill LanguageModel"
        )
    if inner.get_output_embeddings() is None or not inner.can_generate():
        return (
            f"the model is a {name}, which has no language-modelling head; Mill scores "
            "causal LMs (...ForCausalLM)"
        )
    if tokenizer is None:
        return "no tokenizer: pass tokenizer= (the model's tokenizer) to the callback"
    return None


def fingerprint(module: Any) -> str:
    """sha256 over the names, dtypes, shapes and bytes of every tensor of the state dict."""
    import torch

    digest = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        if not isinstance(tensor, torch.Tensor):
            continue
        flat = tensor.detach().to("cpu").contiguous().reshape(-1)
        digest.update(f"{name}\0{flat.dtype}\0{tuple(tensor.shape)}\n".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()


@contextmanager
def kept_rng() -> Iterator[None]:
    """Python's, NumPy's and torch's global RNG states (every CUDA device's too) as they
    were before the block: the evaluation seeds its own draws, training's streams go on."""
    import numpy as np
    import torch

    py, npy, cpu = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        random.setstate(py)
        np.random.set_state(npy)
        torch.set_rng_state(cpu)
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


class StepModel(InMemoryModel):
    """The model being trained, at one step: its identity names the step and the
    fingerprint of its weights; ``in_memory`` (no response cache) unless ``cache``."""

    def __init__(self, inner: Any, step: int, weights: str, cache: bool) -> None:
        super().__init__(inner)
        self.step, self.weights, self.cache = step, weights, cache

    def identity(self) -> dict[str, Any]:
        out = {**self.inner.identity(), "step": self.step, "weights_fingerprint": self.weights}
        out["name"] = f"step-{self.step}"
        if self.cache:
            out.pop("in_memory", None)
        else:
            out["in_memory"] = True
        return out


class TrainingEvaluator:
    """The settings of an evaluation during training, checked when it is created, and the
    evaluations themselves; the same in the three integrations.

    Args:
        tasks: task config names (``["arc_easy", "hellaswag"]``), evaluated together.
        every_n_steps: evaluate when the global step is a multiple of it (None: never).
        at_epoch_end: evaluate at the end of every epoch.
        at_train_end: evaluate when training ends (a step already evaluated is not redone).
        limit: docs per task.
        overrides: Hydra overrides as for :func:`mill.evaluate` (``["data=hub"]``).
        metrics: metric names to compute and log (default: the tasks' own).
        cache: keep a response cache under ``<output_dir>/mill/cache`` keyed by the weights'
            fingerprint (off by default: weights in memory change every step).
    """

    def __init__(
        self,
        tasks: str | Sequence[str],
        *,
        every_n_steps: int | None = None,
        at_epoch_end: bool = False,
        at_train_end: bool = True,
        limit: int | None = None,
        overrides: Sequence[str] = (),
        metrics: Sequence[str] | None = None,
        cache: bool = False,
    ) -> None:
        names = [tasks] if isinstance(tasks, str) else list(tasks)
        if not names:
            raise ConfigError("tasks=[] names no task; e.g. tasks=['arc_easy']")
        if every_n_steps is not None and (
            isinstance(every_n_steps, bool) or not isinstance(every_n_steps, int)
        ):
            raise ConfigError(f"every_n_steps={every_n_steps!r} must be a whole number")
        if every_n_steps is not None and every_n_steps < 1:
            raise ConfigError(f"every_n_steps={every_n_steps} must be 1 or more (or None)")
        if limit is not None and (isinstance(limit, bool) or int(limit) < 1):
            raise ConfigError(f"limit={limit!r} must be a number of docs, 1 or more")
        self.tasks = names
        self.every_n_steps = every_n_steps
        self.at_epoch_end = bool(at_epoch_end)
        self.at_train_end = bool(at_train_end)
        self.cache = bool(cache)
        extra = [
            *([f"+metrics=[{','.join(metrics)}]"] if metrics else []),
            *([f"task.limit={int(limit)}"] if limit is not None else []),
            *overrides,
            "report.progress=never",
        ]
        self.cfg: DictConfig = compose_tasks(names, extra)  # an unknown task fails here
        self.data_source = str(self.cfg.data.get("source", "hub"))
        self._done: set[int] = set()

    def banner(self) -> str:
        """The one line said when training starts: what is evaluated when, on which data."""
        when = [
            *([f"every {self.every_n_steps} steps"] if self.every_n_steps else []),
            *(["at each epoch's end"] if self.at_epoch_end else []),
            *(["at the end of training"] if self.at_train_end else []),
        ]
        note = BUNDLED_NOTE if self.data_source == "bundled" else f"data={self.data_source}"
        return f"mill: {', '.join(self.tasks)} {', '.join(when) or 'never'}; {note}"

    def check(self, model: Any, tokenizer: Any) -> None:
        """Refuse, before the first training step, a model Mill cannot evaluate."""
        why = refusal(model, tokenizer)
        if why is not None:
            raise ConfigError(f"mill cannot evaluate this model during training: {why}")

    def due(self, step: int) -> bool:
        every = self.every_n_steps
        return bool(every and step > 0 and step % every == 0)

    def evaluate(self, model: Any, tokenizer: Any, step: int, output_dir: str | Path) -> dict:
        """Evaluate ``model`` at ``step`` on every rank (all ranks must call it together);
        returns the metrics to log (the same dict on every rank), empty for a step already
        evaluated."""
        if step in self._done:
            return {}
        import torch

        from mill.model.base import LanguageModel
        from mill.model.hf import HFCausalLM
        from mill.runner.job import run_job

        dist = job_dist()
        lm_given = isinstance(model, LanguageModel)
        module = trained = getattr(model, "model", None) if lm_given else unwrap(model)
        training = getattr(trained, "training", None)
        folder = Path(output_dir) / "mill" / f"step-{step}"
        try:
            with kept_rng(), torch.no_grad():
                kind = None if lm_given else sharding(model)
                if kind is not None:  # every rank gets a whole copy (see sharded.py)
                    module = whole_copy(model, gathered_state_dict(model, kind))
                weights = (
                    fingerprint(module) if callable(getattr(module, "state_dict", None)) else ""
                )
                if len(set(dist.all_gather(weights))) > 1:
                    raise MillError(
                        f"the ranks hold different weights at step {step} (their fingerprints "
                        "differ); Mill evaluates one model: check that every rank trains the "
                        "same model (DDP, FSDP) and calls the evaluation at the same step"
                    )
                inner = (
                    model
                    if lm_given
                    else HFCausalLM.from_transformers(module, tokenizer, name=f"step-{step}")
                )
                lm = StepModel(inner, step, weights, self.cache)
                cfg = self.cfg.copy()
                OmegaConf.set_struct(cfg, False)
                cfg.model = {"name": f"step-{step}", "step": step, "weights_fingerprint": weights}
                cfg.model.in_memory = not self.cache
                if self.cache:
                    cfg.runner.cache = str(Path(output_dir) / "mill" / "cache")
                else:
                    cfg.runner.cache = False
                with above_progress_bars():  # the trainer's tqdm bar stays whole
                    results = run_job(cfg, folder, None, model=cast(LanguageModel, lm), dist=dist)
        finally:
            if training is not None:
                assert trained is not None  # its training flag was read
                trained.train(training)
        self._done.add(step)
        # rank 0 holds the results (run_job returns None on the other ranks)
        return cast(dict, dist.broadcast(to_log(results) if results is not None else None))

    def finish(self, output_dir: str | Path) -> Path | None:
        """``curves.html`` and its PNGs under ``<output_dir>/mill/``, from every finished
        ``step-<N>`` folder there (a run resumed from a checkpoint included); None when
        there is none. Call it on one rank."""
        from mill.integrations.curves import step_results, write_curves

        root = Path(output_dir) / "mill"
        history = step_results(root)
        return write_curves(root, history, self.data_source) if history else None


@contextmanager
def above_progress_bars() -> Iterator[None]:
    """Mill's lines (progress, the results table) printed above the training loop's tqdm
    bars (the Trainer's, Lightning's, a loop's own) instead of into them: the bars on
    stdout and stderr are cleared for the evaluation and drawn again after it (tqdm's
    ``external_write_mode``, what ``tqdm.write`` does for one line)."""
    try:
        from tqdm import tqdm
    except ImportError:  # no tqdm, no bars
        yield
        return
    # nolock: the evaluation's own threads and helpers must not wait for tqdm's lock
    with tqdm.external_write_mode(file=sys.stderr, nolock=True):
        yield


def to_log(results: Results) -> dict[str, float]:
    """``mill/<task>/<metric>`` and ``mill/<task>/<metric>_stderr`` for every task metric."""
    out: dict[str, float] = {}
    for task, body in results.tasks.items():
        for metric, row in body.metrics.items():
            if row.value is not None:
                out[f"mill/{task}/{metric}"] = float(row.value)
            if row.stderr is not None:
                out[f"mill/{task}/{metric}_stderr"] = float(row.stderr)
    return out
