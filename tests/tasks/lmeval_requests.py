"""Dump lm-evaluation-harness 0.4.13's requests for a task built on given local files.

Run with the dev-only lm-eval venv (never imported by Mill or its default tests):

    python tests/tasks/lmeval_requests.py spec.json out.json   # an interpreter with lm_eval 0.4.13

spec.json: a list of specs (out.json: the list of their outputs, from one process), or one
spec {"task": lm-eval task name, "data_files": {split: jsonl}, "overrides": {...},
"num_fewshot": int, "limit": int, "chat_tokenizer": dir or null, "multiturn": bool,
"gen_kwargs": bool}.
out.json: per doc, the request arguments [context, continuation-or-stop-strings] (with
"gen_kwargs": [context, generation kwargs]); with "model": a model folder, lm-eval's
metrics and per-doc responses instead.

lm-eval's code tasks (humaneval, mbpp) load HF evaluate's ``code_eval`` from the Hub when
their ``utils.py`` is imported, which fails offline; building requests needs no metric, so
``evaluate.load("code_eval")`` answers a stand-in that never runs code.
"""

from __future__ import annotations

import json
import sys


def main(spec_path: str, out_path: str) -> None:
    from lm_eval.tasks import TaskManager

    spec = json.loads(open(spec_path).read())
    _no_code_eval()
    manager = TaskManager()
    specs = spec if isinstance(spec, list) else [spec]
    # many tasks in one process: one task index, one start-up
    outs = [
        _evaluate(_task(manager, one), one) if one.get("model") else _requests(manager, one)
        for one in specs
    ]
    open(out_path, "w").write(json.dumps(outs if isinstance(spec, list) else outs[0]))


def _task(manager, spec: dict):
    from lm_eval.api.task import ConfigurableTask

    entry = manager._entry(spec["task"])
    overrides = {
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": spec["data_files"]},
        "num_fewshot": spec["num_fewshot"],
        **spec.get("overrides", {}),
    }
    config = manager._factory._load_full_config(entry, overrides)
    for key in ("tag", "group", "task_list"):
        config.pop(key, None)
    return ConfigurableTask(config=config)


def _requests(manager, spec: dict, task=None) -> list:
    """Per doc, the request arguments lm-eval builds for ``spec``."""
    task = task if task is not None else _task(manager, spec)
    chat = None
    if spec.get("chat_tokenizer"):
        import transformers

        tokenizer = transformers.AutoTokenizer.from_pretrained(spec["chat_tokenizer"])

        def chat(history, add_generation_prompt=True):
            return tokenizer.apply_chat_template(
                history,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                continue_final_message=not add_generation_prompt,
            )

    task.build_all_requests(
        limit=spec["limit"],
        rank=0,
        world_size=1,
        apply_chat_template=chat is not None,
        fewshot_as_multiturn=bool(spec.get("multiturn")),
        chat_template=chat,
    )
    out: dict[int, list] = {}
    for inst in sorted(task.instances, key=lambda i: (i.doc_id, i.idx)):
        args = list(inst.arguments)
        if inst.request_type == "generate_until" and spec.get("gen_kwargs"):
            args = [args[0], dict(args[1])]
        elif inst.request_type == "generate_until":
            args = [args[0], list(args[1].get("until", []))]
        elif inst.request_type == "loglikelihood_rolling":
            args = ["", args[0]]
        out.setdefault(inst.doc_id, []).append(args)
    return [out[k] for k in sorted(out)]


def _no_code_eval() -> None:
    """``evaluate.load("code_eval")`` returns an object whose ``compute`` refuses to run."""
    import evaluate

    load = evaluate.load

    class NoCodeEval:
        def compute(self, **kwargs):
            return [{"pass@1": 0.0}], {}

    def offline_load(path, *args, **kwargs):
        return NoCodeEval() if path == "code_eval" else load(path, *args, **kwargs)

    evaluate.load = offline_load


def _evaluate(task, spec: dict) -> dict:
    """Score the task with lm-eval's HF backend: metrics and per-request responses."""
    from lm_eval.evaluator import simple_evaluate

    results = simple_evaluate(
        model="hf",
        model_args=f"pretrained={spec['model']},dtype=float32",
        tasks=[task],
        limit=spec["limit"],
        device="cpu",
        batch_size=1,
        log_samples=True,
        bootstrap_iters=0,
    )
    name = task.config.task
    metrics = {k: v for k, v in results["results"][name].items() if "," in k and "_stderr" not in k}
    by_doc: dict[int, dict] = {}
    for sample in results["samples"][name]:  # one per (doc, filter): keep one per doc
        by_doc.setdefault(sample["doc_id"], sample)
    resps = [[r[0] for r in by_doc[d]["resps"]] for d in sorted(by_doc)]
    return {"metrics": metrics, "resps": resps}


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
