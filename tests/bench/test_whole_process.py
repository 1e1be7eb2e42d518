"""benchmarks.whole_process times the floor (floor_driver) next to Mill and lm-eval, and
its columns are computed from what it timed: Mill's phases from its runs' manifests."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.driver_common import REPO, SHARED_DATA, lmeval_python, module_cmd
from benchmarks.side_by_side import model_dir

LMEVAL = lmeval_python()

pytestmark = pytest.mark.slow  # starts mill, lm_eval and the floor driver as processes


def _model() -> Path:
    return model_dir("gpt2_random")


@pytest.mark.parametrize(("dtype", "device"), [("float32", "cpu"), ("bfloat16", "auto")])
def test_the_floor_driver_loads_the_model_as_mill_does(dtype: str, device: str) -> None:
    import torch
    import transformers

    model = _model()
    cmd = module_cmd(
        sys.executable, "floor_driver", str(model), "--dtype", dtype, "--device", device
    )
    where = "cuda:0" if device == "auto" and torch.cuda.is_available() else "cpu"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    expected = transformers.AutoModelForCausalLM.from_pretrained(model)
    params = sum(p.numel() for p in expected.parameters())
    tokens = len(transformers.AutoTokenizer.from_pretrained(model))
    assert proc.stdout.strip() == (
        f"loaded {type(expected).__name__} ({params} parameters, {getattr(torch, dtype)}, {where}) "
        f"and GPT2Tokenizer ({tokens} tokens)"
    )


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")
def test_the_table_puts_the_floor_next_to_mill(tmp_path: Path) -> None:
    out = tmp_path / "whole.json"
    sides = [] if LMEVAL.exists() else ["--only", "mill"]
    cmd = module_cmd(sys.executable, "whole_process", "--model", "gpt2_random")
    cmd += ["--workloads", "arc_easy_0shot", "--limit", "3", "--data-dir", str(SHARED_DATA)]
    cmd += [*sides, "--demo", "1", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    timed = json.loads(out.read_text())
    (entry,) = timed["workloads"]
    (demo,), (demo_floor,) = timed["demo"], timed["demo_floor"]
    assert demo["code"] == 0 and demo_floor > 0
    assert re.search(r"^demo floor: median \d+\.\d\d s", proc.stdout, re.M)
    (mill,), (floor,) = entry["mill"], entry["floor"]
    assert mill["wall_s"] > 0 and floor["wall_s"] > 0 and floor["peak_rss_kib"] > 0
    scoring = mill["phases"]["scoring"]
    assert entry["floor_s"] == floor["wall_s"]
    assert entry["mill_own_s"] == pytest.approx(mill["wall_s"] - scoring - floor["wall_s"])
    row = next(x for x in proc.stdout.splitlines() if x.startswith("| arc_easy_0shot"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = next(x for x in proc.stdout.splitlines() if x.startswith("| workload"))
    names = [c.strip() for c in header.strip("|").split("|")]
    got = dict(zip(names, cells, strict=True))
    assert got["floor s"] == f"{floor['wall_s']:.2f}"
    assert got["Mill own s"] == f"{entry['mill_own_s']:.2f}"
    if LMEVAL.exists():
        (lm,) = entry["lmeval"]
        assert entry["ratio_at_floor"] == pytest.approx(lm["wall_s"] / (floor["wall_s"] + scoring))
        assert got["ratio at the floor"] == f"{entry['ratio_at_floor']:.1f}x"
    else:
        assert got["ratio at the floor"] == "-"
    assert re.search(r"^floor: floor_driver's wall time", proc.stdout, re.M)


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")
def test_no_floor_leaves_it_out(tmp_path: Path) -> None:
    out = tmp_path / "whole.json"
    cmd = module_cmd(sys.executable, "whole_process", "--model", "gpt2_random")
    cmd += ["--workloads", "arc_easy_0shot", "--limit", "2", "--data-dir", str(SHARED_DATA)]
    cmd += ["--only", "mill", "--no-floor", "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    (entry,) = json.loads(out.read_text())["workloads"]
    assert len(entry["mill"]) == 1 and entry["floor"] == [] and "floor_s" not in entry
    assert entry["mill_set"] == []


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason=f"no shared data at {SHARED_DATA}")
def test_mill_set_reaches_mills_run(tmp_path: Path) -> None:
    """``--mill-set`` overrides go to Mill's command after the workload's: a refused value
    fails Mill's side with Mill's own one line, and an accepted one is recorded."""
    base = module_cmd(sys.executable, "whole_process", "--model", "gpt2_random")
    base += ["--workloads", "arc_easy_0shot", "--limit", "2", "--data-dir", str(SHARED_DATA)]
    base += ["--only", "mill", "--no-floor"]
    bad = subprocess.run(
        [*base, "--mill-set", "model.batch_size=0"],
        capture_output=True, text=True, timeout=600, check=False, cwd=REPO,
    )  # fmt: skip
    assert bad.returncode == 1 and "model.batch_size=0 is not allowed" in bad.stdout
    out = tmp_path / "whole.json"
    good = subprocess.run(
        [*base, "--mill-set", "model.batch_size=1", "--json", str(out)],
        capture_output=True, text=True, timeout=600, check=False, cwd=REPO,
    )  # fmt: skip
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-2000:]
    (entry,) = json.loads(out.read_text())["workloads"]
    assert entry["mill_set"] == ["model.batch_size=1"] and entry["mill"][0]["wall_s"] > 0


def test_lmeval_gets_the_chat_template_where_mill_does() -> None:
    """lm-eval's command line turns the template on exactly where the workload's Mill
    overrides do (IFEval's prompts as the user turn; few-shot turns only with shots)."""
    from benchmarks.whole_process import lmeval_flags
    from benchmarks.workloads import ALL_WORKLOADS

    ifeval = ALL_WORKLOADS["ifeval_100"]
    assert "++task.chat_template=true" in ifeval.mill_overrides(Path("/data"))
    assert lmeval_flags(ifeval) == ["--log_samples", "--apply_chat_template"]
    assert lmeval_flags(ALL_WORKLOADS["gsm8k_5shot_chat"]) == [
        "--log_samples",
        "--apply_chat_template",
        "--fewshot_as_multiturn",
    ]
    assert lmeval_flags(ALL_WORKLOADS["arc_easy_full"]) == []
    assert lmeval_flags(ALL_WORKLOADS["humaneval_n10"])[-1] == "--predict_only"


def test_the_distance_of_two_models_on_the_same_requests(tmp_path: Path) -> None:
    """``loglik_distance`` pairs the two runs' requests doc by doc and choice by choice:
    stories260k against itself is 0 everywhere; against the random GPT-2 it counts every
    request once and reports both sides' metrics."""
    from benchmarks.whole_process import distance_line, loglik_distance
    from mill.results import load

    runs = {}
    for model in ("stories260k", "gpt2_random"):
        runs[model] = tmp_path / model
        argv = ["mill", "task=arc_easy", f"model={model}", "task.limit=4"]
        proc = subprocess.run(
            [*argv, f"hydra.run.dir={runs[model]}"],
            capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
    same = loglik_distance(runs["stories260k"], runs["stories260k"])
    assert (same["max_abs"], same["same_prediction"], same["docs"]) == (0.0, 4, 4)
    other = loglik_distance(runs["stories260k"], runs["gpt2_random"])
    choices = sum(len(s.choices) for s in load(runs["stories260k"]).samples("arc_easy"))
    assert other["requests"] == same["requests"] == choices
    assert other["max_abs"] > other["median_abs"] > 0
    assert set(other["metrics"]) == {"arc_easy/acc", "arc_easy/acc_norm"}
    assert "the same prediction on" in distance_line(other)
