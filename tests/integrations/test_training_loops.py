"""Evaluation during training on real loops (tests/integrations/loops.py): stories260k
fine-tuned for 20 steps by the Trainer, by Lightning and by a hand-written Accelerate loop,
in one process and under torchrun with two ranks (gloo, CPU); and, with two ranks, with
its weights sharded over the ranks by torch's FSDP1, FSDP2 and DeepSpeed ZeRO-3.

For each: the loss curve is identical with and without the evaluation (dropout is on, so a
disturbed RNG stream would show; one process runs both, the one without Mill first, where
the loop allows), and at steps 10 and 20 the callback's results equal a standalone ``mill``
run on the checkpoint saved at that step (metrics to 1e-6, predictions equal,
log-probabilities to 1e-6), what the trainer logged is those numbers, and the weights'
fingerprint is that of the checkpoint loaded whole (under FSDP and ZeRO-3: of the weights
gathered from the shards; every rank's fingerprint was the same, or the evaluation would
have stopped).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mill.results import Results, read_samples
from tests.helpers import REPO, run_mill, run_process

LOOPS = Path(__file__).with_name("loops.py")
STEPS = (10, 20)


# One torch thread per process: the two xdist workers share two cores, and torch's default
# (a thread per core) in each 1-rank loop and standalone run spins at every op's barrier
# while the other worker holds a core (20 steps took 4-5x the CPU time with 2 threads on a
# loaded machine). torchrun already gives each of its ranks one thread. The loss curves are
# compared between runs with the same thread count; the standalone runs to 1e-6, as before.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def train(loop: str, ranks: int, out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The loop without Mill into OUT/plain, then with Mill's evaluation into OUT/eval. Their
    losses.json each. Both in one process (loops.py --both) where the loop allows it: all
    but the hand-written loops under torchrun, whose end_training() ends the process group."""
    launcher = (
        [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"]
        if ranks > 1
        else [sys.executable]
    )
    both = loop in ("hf", "lightning") or ranks == 1
    runs = [("--both",)] if both else [("--no-eval",), ()]
    for extra in runs:
        target = out if both else out / ("plain" if extra else "eval")
        done = run_process(
            *launcher, LOOPS, loop, target, *extra, cwd=REPO, env=ONE_THREAD, timeout=900
        )
        assert done.returncode == 0, done.stderr[-3000:]
    return tuple(json.loads((out / run / "losses.json").read_text()) for run in ("eval", "plain"))


@pytest.fixture(
    scope="module",
    params=[
        *[(loop, n) for loop in ("hf", "lightning", "accelerate") for n in (1, 2)],
        *[(loop, 2) for loop in ("fsdp1", "fsdp2", "zero3")],
    ],
    ids=lambda p: f"{p[0]}-{p[1]}rank",
)
def trained(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    loop, ranks = request.param
    root = tmp_path_factory.mktemp(f"{loop}{ranks}")
    with_eval, without = train(loop, ranks, root)
    sweep = root / "standalone"
    checkpoints = ",".join(str(root / "eval" / f"checkpoint-{s}") for s in STEPS)
    done = run_mill(
        "-m",
        "task=arc_easy",
        "task.limit=16",
        "model=hf",
        f"model.pretrained={checkpoints}",
        "report.progress=never",
        f"hydra.sweep.dir={sweep}",
        "hydra.sweep.subdir=${hydra.job.num}",
        cwd=root,
        env=ONE_THREAD,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root, with_eval, without


@pytest.mark.slow
def test_loss_curve_is_identical_with_and_without_evaluation(trained) -> None:
    _, with_eval, without = trained
    assert len(with_eval["loss"]) == 20
    assert with_eval["loss"] == without["loss"]


@pytest.mark.slow
def test_each_evaluation_equals_a_standalone_mill_run_on_its_checkpoint(trained) -> None:
    root, with_eval, _ = trained
    prints = set()
    for job, step in enumerate(STEPS):
        mine = root / "eval" / "mill" / f"step-{step}"
        theirs = root / "standalone" / str(job)
        got, want = Results.read(mine / "results.json"), Results.read(theirs / "results.json")
        assert got.tasks.keys() == want.tasks.keys() == {"arc_easy"}
        for name, row in want.tasks["arc_easy"].metrics.items():
            ours = got.tasks["arc_easy"].metrics[name]
            assert ours.n == row.n == 16
            assert ours.value == pytest.approx(row.value, abs=1e-6)
            assert ours.stderr == pytest.approx(row.stderr, abs=1e-6)
        a = sorted(read_samples(mine / "samples" / "arc_easy.jsonl"), key=lambda s: s.doc_id)
        b = sorted(read_samples(theirs / "samples" / "arc_easy.jsonl"), key=lambda s: s.doc_id)
        assert [s.doc_id for s in a] == list(range(16))
        assert [s.prediction for s in a] == [s.prediction for s in b]
        for x, y in zip(a, b, strict=True):
            assert x.response.logprobs == pytest.approx(y.response.logprobs, abs=1e-6)
        assert got.model["step"] == step and got.model["name"] == f"step-{step}"
        assert got.model["in_memory"] is True  # no cache: nothing served across steps
        prints.add(got.model["weights_fingerprint"])
        logged = [h for h in with_eval["logged"] if h["step"] == step]
        assert len(logged) == 1
        for name, row in got.tasks["arc_easy"].metrics.items():
            assert logged[0][f"mill/arc_easy/{name}"] == pytest.approx(row.value, abs=1e-12)
            assert logged[0][f"mill/arc_easy/{name}_stderr"] == pytest.approx(row.stderr)
    assert len(prints) == 2 and all(len(p) == 64 for p in prints)


@pytest.mark.slow
def test_curves_page_and_pngs_at_the_end(trained) -> None:
    root = trained[0] / "eval" / "mill"
    page = (root / "curves.html").read_text()
    assert "step 10" in page and "step 20" in page and "acc_norm" in page
    for metric in ("acc", "acc_norm"):
        png = (root / "curves" / f"{metric}.png").read_bytes()
        assert png.startswith(b"\x89PNG")
    assert sorted(p.name for p in root.glob("step-*")) == ["step-10", "step-20"]


@pytest.mark.slow
def test_the_fingerprint_is_the_checkpoints_weights(trained) -> None:
    import transformers

    from mill.integrations.core import fingerprint

    root = trained[0] / "eval"
    for step in STEPS:
        whole = transformers.AutoModelForCausalLM.from_pretrained(root / f"checkpoint-{step}")
        got = Results.read(root / "mill" / f"step-{step}" / "results.json")
        assert got.model["weights_fingerprint"] == fingerprint(whole)
