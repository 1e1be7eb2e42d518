"""lighteval 0.13's math scoring as the reference for Mill's math tasks (MATH-500, AIME24,
AIME25, AMC23): per-completion verdicts and per-task aggregates computed by lighteval's own
code, for completions produced elsewhere.

Runs in lighteval's own interpreter (the dev virtualenv of ``scripts/setup_lighteval_venv.sh``,
``$MILL_LIGHTEVAL_PYTHON``), which need not have Mill installed: it imports nothing from Mill
but :mod:`benchmarks.driver_common` (standard library only)::

    .venv-lighteval/bin/python -m benchmarks.lighteval_math --task math500 \\
        --data /work/shared/data --completions FILE --out OUT.jsonl [--k 1,4] [--aggregates A.json]
    .venv-lighteval/bin/python -m benchmarks.lighteval_math --task aime24 --data DIR \\
        --dump-prompts 3

The data file is ``<data>/<task>/test.jsonl``. FILE holds JSON lines ``{"task_id", "completion"}``
(several lines with one id are its n samples, in order); the id is the row's ``unique_id``
(math500), ``id`` (aime24, amc23) or 0-based line number (aime25).

What is lighteval's and what is this script's:

- the Doc of each row is made by lighteval's own prompt function (``math_500_prompt``,
  ``aime_prompt``) from the row mapped onto the fields of the hub dataset lighteval loads
  (:func:`lighteval_line`: that mapping is this script's, the only thing it decides);
- every completion becomes a ``ModelResponse(text=[completion])`` whose ``text_post_processed``
  is lighteval's ``remove_reasoning_tags`` with the pipeline's default tags, as
  ``Pipeline._post_process_outputs`` does;
- the task's metrics are the task config's own metric objects (deep copies), computed per doc
  over all the doc's completions with ``Metric.compute_sample``, aggregated with the metric's
  corpus function and lighteval's ``get_stderr_function``;
- ``verdict`` is lighteval's ``pass_at_k_math`` with k=1, n=1 on that completion alone
  (reasoning removed); ``verdict_avg`` is ``avg_at_n_math`` with n=1 on it (which, in 0.13,
  scores the text *before* reasoning removal: ``ModelResponse.__getitem__`` drops
  ``text_post_processed``); ``pred_extracted`` / ``gold_extracted`` are the strings that
  ``MultilingualExtractiveMatchMetric.compute`` stores in ``doc.specific`` when called the way
  ``PassAtK.compute`` calls it;
- with the same number n of completions for every id, also pass@k (``pass_at_k_math``,
  k in ``--k``, that n), avg@n (``avg_at_n_math``) and maj@n (lighteval's ``MajAtN`` with the
  math scorer of ``pass_at_k_math``: it votes on the whole stripped completion string).

AMC23 is not a lighteval 0.13 task: it is scored as ``aime24`` is (``aime_prompt``, its metrics).
"""

from __future__ import annotations

import argparse
import copy
import functools
import importlib.metadata
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TASKS = ("math500", "aime24", "aime25", "amc23")
AIME25_SUFFIX = "\nPlease reason step by step, and put your final answer within \\boxed{}."
"""QwQ's instruction, appended to every problem of the shared aime25 file; the hub dataset
lighteval loads (yentinglin/aime_2025) has the bare problem, so it is taken off."""


def read_rows(task: str, data: Path) -> list[tuple[str, dict[str, Any]]]:
    """(task_id, row) of ``<data>/<task>/test.jsonl`` in file order."""
    path = data / task / "test.jsonl"
    rows = [
        json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
    ]
    if task == "math500":
        return [(str(r["unique_id"]), r) for r in rows]
    if task == "aime25":
        return [(str(i), r) for i, r in enumerate(rows)]
    return [(str(r["id"]), r) for r in rows]


def lighteval_line(task: str, row: dict[str, Any]) -> dict[str, Any]:
    """The row as the hub dataset lighteval loads for ``task`` has it (the fields its prompt
    function reads): MATH-500 as is (problem, solution, answer); AIME/AMC ``problem`` and
    ``answer`` as a string (the hub sets have strings; AMC23's 27.0 stays "27.0")."""
    if task == "math500":
        return dict(row)
    if task == "aime25":
        problem = row["prompt"]
        if not problem.endswith(AIME25_SUFFIX):
            raise ValueError(f"aime25 row without QwQ's instruction at its end: {problem[-80:]!r}")
        return {"problem": problem[: -len(AIME25_SUFFIX)], "answer": str(row["answer"])}
    return {"problem": row["problem"], "answer": str(row["answer"])}


def task_config(task: str) -> Any:  # noqa: ANN401
    """lighteval's own LightevalTaskConfig for ``task`` (AMC23: aime24's)."""
    from lighteval.tasks.tasks import aime, math_500

    return {
        "math500": math_500.math_500,
        "aime24": aime.aime24,
        "aime25": aime.aime25,
        "amc23": aime.aime24,
    }[task]


def make_docs(task: str, rows: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """task_id -> lighteval Doc, made as ``LightevalTask._get_docs_from_split`` and
    ``get_docs`` make it (prompt function, id, generation parameters)."""
    config = task_config(task)
    num_samples = [1]
    for metric in config.metrics:
        if hasattr(metric.sample_level_fn, "num_samples"):
            num_samples.append(metric.sample_level_fn.num_samples() or 1)
    docs = {}
    for ix, (task_id, row) in enumerate(rows):
        line = lighteval_line(task, row)
        line["__few_shots"] = False
        line["__index"] = ix
        doc = config.prompt_function(line, config.name)
        doc.id = str(ix)
        doc.task_name = f"{config.name}|{config.num_fewshots}"
        doc.generation_size = config.generation_size
        doc.stop_sequences = config.stop_sequence
        doc.num_samples = max(num_samples)
        docs[task_id] = doc
    return docs


def read_completions(path: Path) -> dict[str, list[str]]:
    """task_id -> its completions in file order."""
    found: dict[str, list[str]] = {}
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        item = json.loads(line)
        if not isinstance(item.get("completion"), str) or "task_id" not in item:
            raise ValueError(f"{path}:{n}: a line needs task_id and a string completion")
        found.setdefault(str(item["task_id"]), []).append(item["completion"])
    return found


@functools.cache
def pipeline_defaults() -> Any:  # noqa: ANN401
    """lighteval's default PipelineParameters (its reasoning-tag settings parsed)."""
    from lighteval.pipeline import ParallelismManager, PipelineParameters

    return PipelineParameters(launcher_type=ParallelismManager.NONE)


def response(completions: list[str]) -> Any:  # noqa: ANN401
    """A ModelResponse post-processed as lighteval's pipeline does by default
    (``remove_reasoning_tags=True``, ``reasoning_tags="[('<think>', '</think>')]"``)."""
    from lighteval.models.model_output import ModelResponse
    from lighteval.utils.utils import remove_reasoning_tags

    params = pipeline_defaults()
    resp = ModelResponse(text=list(completions))
    if params.remove_reasoning_tags:
        resp.text_post_processed = [
            remove_reasoning_tags(text=t, tag_pairs=params.reasoning_tags) for t in resp.text
        ]
    return resp


def completion_record(task_id: str, index: int, doc: Any, completion: str) -> dict[str, Any]:  # noqa: ANN401
    """One completion's verdicts and what math-verify extracted (see the module docstring)."""
    from lighteval.metrics.metrics import Metrics
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    resp = response([completion])
    pass1 = Metrics.pass_at_k_math(sample_params={"k": 1, "n": 1})
    verdict = pass1.compute_sample(doc=doc, model_response=resp)[pass1.metric_name]
    avg1 = Metrics.avg_at_n_math(sample_params={"n": 1})
    verdict_avg = avg1.compute_sample(doc=doc, model_response=resp)[avg1.metric_name]
    # The scorer as PassAtK.compute calls it: preprocessed gold and prediction in fresh objects.
    passk = pass1.sample_level_fn
    probe = Doc(
        choices=[passk.preprocess(g) for g in doc.choices],
        query=doc.query,
        gold_index=doc.gold_index,
    )
    scored = passk.compute_score(
        doc=probe, model_response=ModelResponse(text=[passk.preprocess(resp.final_text[0])])
    )
    if float(scored) != float(verdict):
        raise AssertionError(f"{task_id}[{index}]: the scorer says {scored}, pass@1 says {verdict}")
    specific = probe.specific or {}
    return {
        "task_id": task_id,
        "index": index,
        "verdict": int(verdict),
        "verdict_avg": int(verdict_avg),
        "pred_extracted": specific.get("extracted_predictions"),
        "gold_extracted": specific.get("extracted_golds"),
        "post_processed": resp.text_post_processed[0],
    }


def extra_metrics(n: int, ks: list[int]) -> list[Any]:
    """pass@k for each k, avg@n and maj@n with the math scorer, for n samples per doc."""
    import numpy as np
    from lighteval.metrics.metrics import Metrics
    from lighteval.metrics.metrics_sample import MajAtN
    from lighteval.metrics.utils.metric_utils import SampleLevelMetric, SamplingMethod

    metrics = [Metrics.pass_at_k_math(sample_params={"k": k, "n": n}) for k in ks]
    metrics.append(Metrics.avg_at_n_math(sample_params={"n": n}))
    scorer = Metrics.pass_at_k_math.value.sample_level_fn.compute_score
    maj = SampleLevelMetric(
        metric_name="maj@n",
        sample_level_fn=MajAtN(strip_strings=True, sample_scoring_function=scorer),
        category=SamplingMethod.GENERATIVE,
        corpus_level_fn=np.mean,
        higher_is_better=True,
    )
    metrics.append(maj(sample_params={"n": n}))
    return metrics


def aggregate(metrics: list[Any], per_doc: list[dict[str, float]]) -> dict[str, float]:
    """Corpus values and stderrs as lighteval's ``MetricsLogger.aggregate`` computes them."""
    from lighteval.metrics.utils.stderr import get_stderr_function

    out: dict[str, float] = {}
    for metric in metrics:
        for name, fn in metric.get_corpus_aggregations().items():
            values = [d[name] for d in per_doc]
            out[name] = float(fn(values))
            stderr: Callable[[list[float]], float] | None = get_stderr_function(aggregation=fn)
            if stderr is not None and len(values) > 1:
                out[f"{name}_stderr"] = float(stderr(values))
    return out


def versions() -> dict[str, str | None]:
    """The versions of what computes the verdicts (math-verify is not a dependency of lighteval
    0.13: it carries its own copy in lighteval.metrics.utils)."""
    found: dict[str, str | None] = {}
    for name in ("lighteval", "latex2sympy2_extended", "sympy", "math-verify"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    return found


def score(
    task: str, data: Path, completions: Path, ks: list[int]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(per-completion records, per-task aggregates) for ``completions`` of ``task``."""
    rows = read_rows(task, data)
    docs = make_docs(task, rows)
    found = read_completions(completions)
    unknown = sorted(set(found) - set(docs))
    if unknown:
        raise ValueError(f"{completions}: task_id {unknown[0]!r} is not a row of {task}")
    ids = [task_id for task_id, _ in rows if task_id in found]
    records = [completion_record(i, j, docs[i], c) for i in ids for j, c in enumerate(found[i])]

    config = task_config(task)
    metrics = [copy.deepcopy(m) for m in config.metrics]
    counts = {len(found[i]) for i in ids}
    n = counts.pop() if len(counts) == 1 else None
    if n is not None:
        metrics += extra_metrics(n, ks)
    per_doc = []
    for i in ids:
        values: dict[str, float] = {}
        for metric in metrics:
            values.update(
                {
                    k: float(v)
                    for k, v in metric.compute_sample(
                        doc=docs[i], model_response=response(found[i])
                    ).items()
                }
            )
        per_doc.append(values)
    aggregates = {
        "task": task,
        "lighteval_task": config.name,
        "versions": versions(),
        "docs": len(ids),
        "completions": len(records),
        "samples_per_doc": n,
        "pass@1_mean_of_verdicts": sum(r["verdict"] for r in records) / len(records)
        if records
        else None,
        "metrics": aggregate(metrics, per_doc),
        "per_doc": {i: v for i, v in zip(ids, per_doc, strict=True)},
    }
    return records, aggregates


def dump_prompts(task: str, data: Path, count: int) -> None:
    """The first ``count`` prompts as lighteval builds them without a chat template
    (``PromptManager(use_chat_template=False).prepare_prompt``; for these tasks the Doc's query):
    one ``task_id<TAB>repr(prompt)`` line each."""
    from lighteval.tasks.prompt_manager import PromptManager

    manager = PromptManager(use_chat_template=False)
    for task_id, doc in list(make_docs(task, read_rows(task, data)).items())[:count]:
        print(f"{task_id}\t{manager.prepare_prompt(doc)!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument(
        "--data", type=Path, required=True, help="the folder holding <task>/test.jsonl"
    )
    parser.add_argument("--completions", type=Path, help="JSON lines {task_id, completion}")
    parser.add_argument("--out", type=Path, help="per-completion JSON lines")
    parser.add_argument(
        "--aggregates", type=Path, help="per-task JSON (default: OUT with .aggregates.json)"
    )
    parser.add_argument("--k", default="1", help="pass@k for these k, comma-separated (default 1)")
    parser.add_argument(
        "--dump-prompts", type=int, metavar="N", help="print the first N prompts and exit"
    )
    args = parser.parse_args(argv)
    logging.getLogger("lighteval").setLevel(logging.ERROR)  # one warning per unparsed answer
    if not (args.data / args.task / "test.jsonl").is_file():
        parser.exit(
            2,
            f"error: no {args.task}/test.jsonl under --data {args.data}: "
            "give the shared data folder\n",
        )
    if args.dump_prompts is not None:
        dump_prompts(args.task, args.data, args.dump_prompts)
        return 0
    if args.completions is None or args.out is None:
        parser.exit(2, "error: --completions and --out are needed (or --dump-prompts N)\n")
    try:
        ks = [int(k) for k in args.k.split(",")]
    except ValueError:
        parser.exit(2, f"error: --k {args.k!r}: give integers separated by commas, e.g. 1,4\n")
    try:
        records, aggregates = score(args.task, args.data, args.completions, ks)
    except ValueError as e:
        parser.exit(2, f"error: {e}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8"
    )
    tmp.replace(args.out)
    agg_path = args.aggregates or args.out.with_name(
        args.out.name.removesuffix(".jsonl") + ".aggregates.json"
    )
    agg_path.write_text(json.dumps(aggregates, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
