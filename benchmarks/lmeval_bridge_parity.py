"""Prove that ``mill task=lm_eval`` computes what ``lm_eval.simple_evaluate`` computes.

The same lm-eval tasks run twice on the same model folder and the same local data: once
through lm-eval 0.4.13 itself (``simple_evaluate`` with its ``hf`` model, in this
interpreter) and once through the Mill CLI (``mill task=lm_eval ...``). Then, per task,
doc and request: |delta log-likelihood| <= 1e-4 with identical is_greedy, identical
generations and filtered answers, identical per-doc metric values (numbers within the
log-likelihood tolerance), and per task and group the aggregate values: exactly equal when
every per-doc value is, else within a relative 1e-4. Prints a markdown table; exits 1 on
any mismatch.

Workloads (task YAMLs in tests/lmeval/tasks point lm-eval's tasks at ../shared/data):
a multiple-choice task with a ``!function process_docs`` (mill_arc_easy), a group with
``aggregate_metric_list`` (mill_arc_group), GSM8K ``generate_until`` with its strict and
flexible filters (lm-eval's ``gsm8k`` on the shared files), a ``loglikelihood_rolling``
task (mill_wikitext), and ``leaderboard_bbh`` on the original BIG-Bench-Hard files.

    python -m benchmarks.lmeval_bridge_parity --limit 10
    python -m benchmarks.lmeval_bridge_parity --workloads gsm8k --model gpt2_random
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mill
from benchmarks.driver_common import REPO, SHARED, mill_cmd
from benchmarks.side_by_side import hf_model_overrides, model_dir, same_numbers

TASKS_DIR = REPO / "tests" / "lmeval" / "tasks"
TOL = 1e-4
"""Numbers (log-likelihoods, per-doc and aggregate metrics): relative, and absolute below 1."""


def shared_dir() -> Path:
    """../shared beside the repo, or $MILL_SHARED."""
    return SHARED


def workloads(shared: Path) -> dict[str, dict[str, Any]]:
    """name -> lm-eval task names and the dataset overrides they need."""
    data = shared / "data"
    return {
        "arc_easy_mc": {"tasks": ["mill_arc_easy"]},
        "arc_group": {"tasks": ["mill_arc_group"]},
        "gsm8k": {
            "tasks": ["gsm8k"],
            "overrides": {
                "gsm8k": {
                    "dataset_path": "json",
                    "dataset_name": None,
                    "dataset_kwargs": {
                        "data_files": {
                            "test": str(data / "gsm8k" / "test.jsonl"),
                            "train": str(data / "gsm8k" / "train.jsonl"),
                        }
                    },
                }
            },
        },
        "wikitext_rolling": {"tasks": ["mill_wikitext"]},
        "leaderboard_bbh": {"tasks": ["leaderboard_bbh"], "overrides": bbh_overrides(data)},
    }


def bbh_overrides(data: Path) -> dict[str, dict[str, Any]]:
    """lm-eval's leaderboard_bbh subtasks on the original BIG-Bench-Hard files."""
    return {
        "leaderboard_bbh_*": {
            "dataset_path": "json",
            "dataset_name": None,
            "dataset_kwargs": {
                "data_files": {"test": str(data / "bbh" / "{dataset_name}.json")},
                "field": "examples",
            },
        }
    }


def prepare_tasks(dest: Path, shared: Path) -> Path:
    """A copy of the test-tree task YAMLs whose ``../shared/`` paths point at ``shared``."""
    dest.mkdir(parents=True, exist_ok=True)
    for path in TASKS_DIR.iterdir():
        if path.suffix == ".yaml":
            text = path.read_text().replace("../shared/", f"{shared}/")
            (dest / path.name).write_text(text)
        elif path.suffix == ".py":
            shutil.copy(path, dest / path.name)
    return dest


def select(names: list[str], workdir: Path) -> tuple[list[str], dict[str, dict[str, Any]], Path]:
    """The union of the named workloads, offline: (lm-eval task names, their dataset
    overrides, the folder of test-tree task YAMLs pointed at the shared data)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    shared = shared_dir()
    table = workloads(shared)
    tasks: list[str] = []
    overrides: dict[str, dict[str, Any]] = {}
    for name in names:
        tasks += table[name]["tasks"]
        overrides.update(table[name].get("overrides", {}))
    return tasks, overrides, prepare_tasks(workdir / "tasks", shared)


def model_path(name: str) -> Path:
    """A named test model's folder (stories260k, gpt2_random, ...) or a model folder."""
    return Path(name) if Path(name).is_dir() else model_dir(name)


def chat_settings(
    chat_template: bool, fewshot_as_multiturn: bool = True, system_prompt: str | None = None
) -> dict[str, Any]:
    """lm-eval's chat arguments of ``simple_evaluate`` (``apply_chat_template``,
    ``fewshot_as_multiturn``, ``system_instruction``); Mill's are ``task.chat_template``,
    ``task.fewshot_as_multiturn`` and ``task.system_prompt``."""
    return {
        "apply_chat_template": chat_template,
        "fewshot_as_multiturn": fewshot_as_multiturn,
        "system_instruction": system_prompt,
    }


def lmeval_manager(include: Path, overrides: dict[str, dict[str, Any]], workdir: Path) -> Any:
    """lm-eval's TaskManager over the test-tree YAMLs and the override YAMLs."""
    from lm_eval.tasks import TaskManager

    from mill.lm_eval.overrides import write_overrides

    paths = [str(include)]
    if overrides:
        folder = workdir / "lmeval_overrides"
        folder.mkdir(parents=True, exist_ok=True)
        write_overrides(TaskManager(include_path=[str(include)]), overrides, folder)
        paths.append(str(folder))
    return TaskManager(include_path=paths)


def run_lmeval(
    model: str,
    tasks: list[str],
    include: Path,
    overrides: dict[str, dict[str, Any]],
    limit: float | None,
    num_fewshot: int | None,
    batch_size: int,
    workdir: Path,
    engine: str = "hf",
    manager: Any = None,
    chat: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """lm-eval's own run: its TaskManager (include path + override YAMLs) and its ``hf``
    model, or (``engine="mill"``) Mill's engine as an lm-eval model; ``chat``: see
    :func:`chat_settings`."""
    import lm_eval

    manager = manager or lmeval_manager(include, overrides, workdir)
    if engine == "mill":
        from mill.lm_eval.model import MillLM

        lm: Any = MillLM(pretrained=str(model_path(model)), dtype="float32", device="cpu")
    else:
        lm = "hf"
    start = time.perf_counter()
    out = lm_eval.simple_evaluate(
        model=lm,
        model_args={"pretrained": str(model_path(model)), "dtype": "float32"},
        tasks=tasks,
        num_fewshot=num_fewshot,
        batch_size=batch_size,
        device="cpu",
        limit=limit,
        log_samples=True,
        task_manager=manager,
        bootstrap_iters=0,
        **(chat or {}),
    )
    out["_wall_s"] = time.perf_counter() - start
    return out


def as_mill_like(lm: dict[str, Any]) -> dict[str, Any]:
    """An lm-eval result in the shape :func:`compare` reads on Mill's side (results.json with
    samples whose ``extra.lm_eval`` holds the raw and filtered responses)."""
    tasks: dict[str, Any] = {}
    samples: dict[str, list[dict[str, Any]]] = {}
    for task, rows in lm.get("samples", {}).items():
        by_doc: dict[int, dict[str, Any]] = {}
        for s in rows:
            entry = by_doc.setdefault(
                int(s["doc_id"]),
                {
                    "doc_id": int(s["doc_id"]),
                    "metrics": {},
                    "extra": {
                        "lm_eval": {
                            "arguments": [list(a) for a in s["arguments"]],
                            "resps": s["resps"],
                            "filtered_resps": {},
                        }
                    },
                },
            )
            entry["extra"]["lm_eval"]["filtered_resps"][s["filter"]] = s["filtered_resps"]
            for metric in s["metrics"]:
                entry["metrics"][f"{metric},{s['filter']}"] = s[metric]
        samples[task] = list(by_doc.values())
        values = lm["results"][task]
        tasks[task] = {
            "metrics": {
                k: {"value": _num(v)} for k, v in values.items() if "," in k and "_stderr," not in k
            }
        }
    return {"tasks": tasks, "groups": {}, "_samples": samples}


def run_mill(
    model: str,
    tasks: list[str],
    include: Path,
    overrides: dict[str, dict[str, Any]],
    limit: float | None,
    num_fewshot: int | None,
    run_dir: Path,
    chat: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The bridge through the real CLI; returns results.json (read with ``mill.load``) with
    the samples attached."""
    import yaml

    folder = Path(model)
    models = hf_model_overrides(folder, "cpu", "float32") if folder.is_dir() else [f"model={model}"]
    args = [
        f"task.tasks=[{','.join(tasks)}]",
        f"task.include_path={include}",
        *models,
        f"hydra.run.dir={run_dir}",
        "runner.cache=false",
    ]
    if chat:
        args.append(f"task.chat_template={str(bool(chat['apply_chat_template'])).lower()}")
        args.append(f"task.fewshot_as_multiturn={str(chat['fewshot_as_multiturn']).lower()}")
        if chat.get("system_instruction") is not None:
            args.append(f"task.system_prompt={json.dumps(chat['system_instruction'])}")
    if overrides:
        file = run_dir.parent / f"{run_dir.name}_overrides.yaml"
        file.write_text(yaml.safe_dump(overrides))
        args.append(f"task.dataset_overrides={file}")
    if limit is not None:
        args.append(f"task.limit={limit}")
    if num_fewshot is not None:
        args.append(f"task.num_fewshot={num_fewshot}")
    proc = subprocess.run(
        mill_cmd(["task=lm_eval", *args]), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"mill failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    run = mill.load(run_dir)
    results = run.results.to_dict()
    results["_samples"] = {
        task: [record.to_json() for record in run.samples(task)]
        for task in sorted(run.results.samples_sha256)
    }
    return results


def _close(a: Any, b: Any) -> bool:
    """:func:`~benchmarks.side_by_side.same_numbers` at this tool's tolerance."""
    return same_numbers(a, b, TOL, TOL)


def _num(value: Any) -> Any:
    """numpy scalars as Python numbers (for equality and printing)."""
    return float(value) if hasattr(value, "item") and not isinstance(value, str) else value


def _lls(resps: Any) -> list[float]:
    """Every log-likelihood in a doc's raw responses (pairs or rolling floats)."""
    out: list[float] = []
    for per_instance in resps:
        for r in per_instance:
            if isinstance(r, (list, tuple)) and r and isinstance(r[0], (int, float)):
                out.append(float(r[0]))
            elif isinstance(r, (int, float)) and not isinstance(r, bool):
                out.append(float(r))
    return out


def compare(lm: dict[str, Any], mill: dict[str, Any]) -> dict[str, Any]:
    """Per task: requests, generations, filtered answers, per-doc and aggregate metrics."""
    rows = []
    ok = True
    lm_samples = lm.get("samples", {})
    for task, body in mill["tasks"].items():
        row: dict[str, Any] = {"task": task, "problems": []}
        ours = {s["doc_id"]: s for s in mill["_samples"].get(task, [])}
        theirs: dict[int, dict[str, dict[str, Any]]] = {}
        for s in lm_samples.get(task, []):
            theirs.setdefault(int(s["doc_id"]), {})[s["filter"]] = s
        row["docs"] = len(ours)
        if set(ours) != set(theirs):
            row["problems"].append(f"doc ids differ: {sorted(set(ours) ^ set(theirs))[:5]}")
        max_dll, requests, generations, docs_equal = 0.0, 0, 0, True
        for doc_id in sorted(set(ours) & set(theirs)):
            mine = ours[doc_id]["extra"]["lm_eval"]
            for filter_name, sample in theirs[doc_id].items():
                if filter_name == next(iter(theirs[doc_id])):
                    if not _close(mine["arguments"], [list(a) for a in sample["arguments"]]):
                        row["problems"].append(f"doc {doc_id}: request arguments differ")
                    a, b = _lls(mine["resps"]), _lls(sample["resps"])
                    requests += len(sample["resps"])
                    if len(a) != len(b):
                        row["problems"].append(f"doc {doc_id}: response shapes differ")
                    else:
                        max_dll = max([max_dll, *(abs(x - y) for x, y in zip(a, b, strict=True))])
                    if not _close(mine["resps"], sample["resps"]):
                        row["problems"].append(f"doc {doc_id}: responses differ")
                    texts = [r for inst in sample["resps"] for r in inst if isinstance(r, str)]
                    generations += len(texts)
                if not _close(mine["filtered_resps"].get(filter_name), sample["filtered_resps"]):
                    row["problems"].append(f"doc {doc_id} [{filter_name}]: filtered answers differ")
                for metric in sample["metrics"]:
                    key = f"{metric},{filter_name}"
                    value = ours[doc_id]["metrics"].get(key)
                    if value != sample[metric]:
                        docs_equal = False
                        if not _close(value, sample[metric]):
                            row["problems"].append(
                                f"doc {doc_id} {key}: {value} != {sample[metric]}"
                            )
        row.update(requests=requests, generations=generations, max_abs_dll=max_dll)
        row["metrics"] = {}
        lm_row = lm["results"].get(task, {})
        for key, m in body["metrics"].items():
            theirs_value = _num(lm_row.get(key))
            mine_value = m["value"]
            equal = theirs_value == mine_value
            row["metrics"][key] = {"mill": mine_value, "lm_eval": theirs_value, "equal": equal}
            if not equal and (docs_equal or not _close(mine_value, theirs_value)):
                row["problems"].append(f"{key}: mill {mine_value} != lm-eval {theirs_value}")
        ok = ok and not row["problems"]
        rows.append(row)
    groups = []
    for group, body in mill.get("groups", {}).items():
        if group not in lm["results"]:
            continue  # Mill's own additions (the leaderboard's normalised scores)
        lm_row = lm["results"].get(group, {})
        for key, kinds in body["metrics"].items():
            for kind in ("micro", "macro"):
                if kind not in kinds:
                    continue
                mine_value, theirs_value = kinds[kind]["value"], _num(lm_row.get(key))
                equal = mine_value == theirs_value
                close = _close(mine_value, theirs_value)
                groups.append(
                    {
                        "group": group,
                        "metric": key,
                        "kind": kind,
                        "mill": mine_value,
                        "lm_eval": theirs_value,
                        "equal": equal,
                        "close": close,
                    }
                )
                ok = ok and close
    return {"ok": ok, "tasks": rows, "groups": groups}


def markdown(report: dict[str, Any], model: str) -> str:
    lines = [
        f"model: {model}",
        "",
        "| task | docs | requests | generations | max abs dLL | metric | Mill | lm-eval | equal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["tasks"]:
        for i, (key, m) in enumerate(row["metrics"].items()):
            head = (
                f"{row['task']} | {row['docs']} | {row['requests']} | {row['generations']} | "
                f"{row['max_abs_dll']:.2e}"
                if i == 0
                else " | | | | "
            )
            lines.append(f"| {head} | {key} | {m['mill']!r} | {m['lm_eval']!r} | {m['equal']} |")
    if report["groups"]:
        lines += [
            "",
            "| group | metric | kind | Mill | lm-eval | equal |",
            "|---|---|---|---|---|---|",
        ]
        for g in report["groups"]:
            lines.append(
                f"| {g['group']} | {g['metric']} | {g['kind']} | {g['mill']!r} | "
                f"{g['lm_eval']!r} | {g['equal']} |"
            )
    problems = [f"- {r['task']}: {p}" for r in report["tasks"] for p in r["problems"][:5]]
    lines += ["", "problems:" if problems else "no mismatches", *problems]
    return "\n".join(lines)


def run(
    names: list[str],
    model: str,
    limit: float | None,
    num_fewshot: int | None,
    batch_size: int,
    workdir: Path,
    chat: dict[str, Any] | None = None,
    engine: bool = False,
) -> dict[str, Any]:
    """Both harnesses on the union of the named workloads; the comparison report.

    lm-eval with its ``hf`` model against the bridge (``mill task=lm_eval``), or
    (``engine``) against lm-eval with Mill's engine as its model (``MillLM``, on the same
    TaskManager), with the wall time of both ``simple_evaluate`` calls."""
    tasks, overrides, include = select(names, workdir)
    common = (model, tasks, include, overrides, limit, num_fewshot)
    if not engine:
        lm = run_lmeval(*common, batch_size, workdir, chat=chat)
        return compare(lm, run_mill(*common, workdir / "mill_run", chat=chat))
    manager = lmeval_manager(include, overrides, workdir)
    hf = run_lmeval(*common, batch_size, workdir, engine="hf", manager=manager, chat=chat)
    mill = run_lmeval(*common, batch_size, workdir, engine="mill", manager=manager, chat=chat)
    report = compare(hf, as_mill_like(mill))
    report["wall_s"] = {"hf": hf["_wall_s"], "mill": mill["_wall_s"]}
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", nargs="+", default=None)
    parser.add_argument(
        "--model", default="stories260k", help="stories260k, gpt2_random or a model folder"
    )
    parser.add_argument("--limit", type=float, default=10)
    parser.add_argument("--num-fewshot", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=8, help="lm-eval's hf batch size")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    parser.add_argument("--keep", type=Path, default=None, help="keep both runs here")
    parser.add_argument(
        "--engine",
        action="store_true",
        help="compare lm-eval's hf model with Mill's engine inside lm-eval (MillLM) instead",
    )
    parser.add_argument("--chat-template", action="store_true", help="apply the chat template")
    parser.add_argument(
        "--no-fewshot-as-multiturn",
        action="store_true",
        help="with --chat-template: few-shot examples in one user turn",
    )
    parser.add_argument("--system-prompt", default=None)
    args = parser.parse_args(argv)
    chat = chat_settings(args.chat_template, not args.no_fewshot_as_multiturn, args.system_prompt)
    if not (shared_dir() / "data").is_dir():
        print(f"parity: no shared data at {shared_dir()}; set MILL_SHARED", file=sys.stderr)
        return 2
    names = args.workloads or list(workloads(shared_dir()))
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="mill-bridge-parity-"))
    limit = args.limit if args.limit else None
    if limit is not None and limit >= 1:
        limit = int(limit)
    report = run(
        names,
        args.model,
        limit,
        args.num_fewshot,
        args.batch_size,
        workdir,
        chat=chat,
        engine=args.engine,
    )
    print(markdown(report, args.model))
    if "wall_s" in report:
        wall = report["wall_s"]
        print(f"\nsimple_evaluate wall s: hf {wall['hf']:.1f}, mill {wall['mill']:.1f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
