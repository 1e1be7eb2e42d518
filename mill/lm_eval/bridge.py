"""lm-eval tasks run by Mill: ``mill task=lm_eval task.tasks=[hellaswag,gsm8k] model=...``.

lm-evaluation-harness 0.4.13 does what it is good at -- task definitions: its
``TaskManager`` (with ``include_path``) loads tasks and groups, its own code builds the
documents and requests (``process_docs``, ``doc_to_*``, few-shot samplers, chat templates),
and its filters, ``process_results`` and aggregation functions turn the model's answers into
metric values, so the values are lm-eval's by construction. Mill does the rest: its
runner and engine answer the requests (cache, sharding, progress), and it adds a stderr to
every value, samples JSONL, results.json and report.html. Progress is Mill's alone: the
libraries' own bars (``datasets`` generating and mapping splits, lm-eval's bar per task
while it builds contexts) are off, as in Mill's own data loading.

Mapping: ``loglikelihood`` requests (multiple_choice and loglikelihood tasks) are Mill
LOGPROBS requests, ``loglikelihood_rolling`` PERPLEXITY, ``generate_until`` GENERATIVE.
Filters run per document (lm-eval's built-in filters are per-document maps).
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from mill.data.load import DataSource
from mill.errors import ConfigError, TaskError, yaml_syntax
from mill.lm_eval.adapters import LMEvalMetric, aggregation_name, generation_args
from mill.lm_eval.code_eval import CODE_EVAL
from mill.lm_eval.code_eval import supplied as code_eval_supplied
from mill.lm_eval.errors import code_error, dataset_error, unknown_task_error
from mill.lm_eval.overrides import apply_overrides, read_overrides
from mill.lm_eval.requirement import require_lm_eval
from mill.metrics.base import Metric
from mill.metrics.stats import interval
from mill.schema import checked, task_rules
from mill.task.base import Task, TaskGroup
from mill.types import ChatTemplate, Doc, OutputType, Request, Response

log = logging.getLogger("mill")

_OUTPUT_TYPES = {
    "loglikelihood": OutputType.LOGPROBS,
    "loglikelihood_rolling": OutputType.PERPLEXITY,
    "generate_until": OutputType.GENERATIVE,
}
_TASK_OUTPUT_TYPES = {
    "multiple_choice": OutputType.LOGPROBS,
    "loglikelihood": OutputType.LOGPROBS,
    "loglikelihood_rolling": OutputType.PERPLEXITY,
    "generate_until": OutputType.GENERATIVE,
}
_MISSING = object()


def ifeval_supplied() -> None:
    """What lm-eval's ``ifeval`` checker needs offline, given before its tasks load: NLTK's
    English ``punkt_tab`` from Mill's cache (:func:`mill.ifeval.text.punkt_tab_root`) on
    NLTK's data path, so its module-level ``nltk.download`` is not called, and
    ``langdetect`` seeded 0 as Mill's checker is (lm-eval leaves it unseeded: the same text
    could get another language on another run). Nothing when the libraries are absent (a
    run without IFEval tasks needs neither)."""
    import importlib.util

    from mill.ifeval.text import LANGDETECT_SEED, MissingDependency, punkt_tab_root

    if importlib.util.find_spec("nltk") is None:
        return
    try:
        root = str(punkt_tab_root())
    except MissingDependency:
        return
    nltk_data = sys.modules.get("nltk.data")
    if nltk_data is not None:  # already imported: its path list is read at import
        if root not in nltk_data.path:
            nltk_data.path.insert(0, root)
    elif root not in os.environ.get("NLTK_DATA", "").split(os.pathsep):
        os.environ["NLTK_DATA"] = os.pathsep.join(
            p for p in (root, os.environ.get("NLTK_DATA")) if p
        )
    if importlib.util.find_spec("langdetect") is not None:
        import langdetect

        langdetect.DetectorFactory.seed = LANGDETECT_SEED


@contextlib.contextmanager
def _lm_eval_bars_off() -> Iterator[None]:
    """lm-eval's tqdm bar while ``Task.build_all_requests`` builds a task's contexts (one
    bar per task, 24 for ``leaderboard_bbh``) off: Mill's progress counts the tasks. The
    bar is ``lm_eval.api.task``'s module-level ``tqdm``, disabled for the call only."""
    import functools

    import lm_eval.api.task as lm_eval_task

    bar = lm_eval_task.tqdm
    lm_eval_task.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        lm_eval_task.tqdm = bar


class LMEvalTask(Task):
    """One lm-eval leaf task, as a Mill task: documents and requests built by lm-eval."""

    def __init__(self, lm_task: Any, suite: LMEvalSuite) -> None:
        self.lm_task = lm_task
        self.suite = suite
        output_type = lm_task.get_config("output_type")
        if output_type not in _TASK_OUTPUT_TYPES:
            raise TaskError(
                f"lm-eval task {lm_task.task_name!r} has output_type {output_type!r}, which "
                f"Mill does not run (supported: {', '.join(_TASK_OUTPUT_TYPES)})"
            )
        self.OUTPUT_TYPE = _TASK_OUTPUT_TYPES[output_type]
        super().__init__(
            name=lm_task.task_name,
            chat_template=suite.chat_template,
            system_prompt=suite.system_prompt,
            fewshot_as_multiturn=suite.fewshot_as_multiturn,
        )
        self.lm_limit = suite.limit
        # lm-eval's code tasks: their programs run in Mill's sandbox (mill.lm_eval.code_eval)
        self.EXECUTES = bool(getattr(lm_task, "UNSAFE_CODE", False))  # type: ignore[misc]
        self._programs: dict[int, list[str]] = {}
        self.chance = 0.0
        self._instances: dict[int, list[Any]] = {}
        self._scores: dict[int, dict[str, Any]] = {}
        self._extra: dict[int, dict[str, Any]] = {}
        self.origins = {
            "lm_eval": {
                "dataset_path": lm_task.get_config("dataset_path"),
                "dataset_name": lm_task.get_config("dataset_name"),
                "dataset_kwargs": lm_task.get_config("dataset_kwargs"),
            }
        }

    # ----- metrics -------------------------------------------------------------------
    def filter_names(self) -> list[str]:
        filters = getattr(self.lm_task, "_filters", None) or []
        return [f.name for f in filters] or ["none"]

    def lm_eval_metrics(self) -> list[Metric]:
        """Every (metric, filter) pair this task reports, as Mill metrics."""
        higher = self.lm_task.higher_is_better() or {}
        aggregations = self.lm_task.aggregation()
        return [
            LMEvalMetric(filter_name=f, metric=key, higher_is_better=higher.get(m),
                         aggregation=aggregations.get(m), scorer=self.scores)
            for f in self.filter_names()
            for m in aggregations
            for key in self._result_keys(m)
        ]  # fmt: skip

    def _result_keys(self, metric: str) -> list[str]:
        """The keys ``process_results`` reports for ``metric``: itself, or for the code
        tasks' ``pass_at_k`` (code_eval's dict) one ``pass@k`` per k, as lm-eval reports."""
        kwargs = (getattr(self.lm_task, "_metric_fn_kwargs", None) or {}).get(metric) or {}
        if metric == "pass_at_k" and "k" in kwargs:
            ks = kwargs["k"] if isinstance(kwargs["k"], (list, tuple)) else [kwargs["k"]]
            return [f"pass@{k}" for k in ks]
        return [metric]

    def programs(self, doc: Doc, texts: list[str]) -> list[str] | None:
        """Code tasks (lm-eval's ``unsafe_code``): the programs lm-eval's filters and
        metric build from the generations (:mod:`mill.lm_eval.code_eval`), for Mill's
        sandbox to run; scored later from their verdicts."""
        if not self.EXECUTES:
            return None
        responses = [Response(request_id="", text=text) for text in texts]
        with CODE_EVAL.collecting() as found:
            self.scores(doc, responses)
        self._scores.pop(doc.id, None)
        self._extra.pop(doc.id, None)
        self._programs[doc.id] = list(found)
        return list(found)

    # ----- docs and requests -----------------------------------------------------------
    def docs(
        self, source: DataSource, chat: ChatTemplate | None = None, messages: bool = False
    ) -> Iterator[Doc]:
        if messages:
            raise TaskError(
                f"lm-eval task {self.name!r} builds its own prompts and cannot hand chat turns "
                "to a chat endpoint; use model=openai_completions (with task.chat_template="
                "true for lm-eval's chat prompts) or model=hf"
            )
        by_doc = self._build_instances(chat)
        chances: list[float] = []
        for doc_id, instances in by_doc.items():
            doc = self._doc(int(doc_id), instances[0])
            if doc.choices:
                chances.append(1.0 / len(doc.choices))
            yield doc
        # random guessing's expected accuracy (the leaderboard's normalisation baseline)
        self.chance = sum(chances) / len(chances) if chances else 0.0

    def _build_instances(self, chat: ChatTemplate | None) -> dict[int, list[Any]]:
        """lm-eval builds every request of the task (its few-shot sampling under the suite's
        random state, through the model's chat template with ``chat_template``); its
        instances by doc id, in request order (kept for :meth:`requests`)."""
        from lm_eval.evaluator_utils import get_sample_size

        task = self.lm_task
        template = None
        if self.chat_template:
            if chat is None:
                raise TaskError(
                    f"task {self.name!r}: chat_template=true but the model has no chat "
                    "template; drop task.chat_template or use a chat model"
                )

            def template(history: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
                return chat(history, add_generation_prompt)

        limit = get_sample_size(task, self.lm_limit)
        with self.suite.random_state(), _lm_eval_bars_off():
            task.build_all_requests(
                limit=limit,
                rank=0,
                world_size=1,
                system_instruction=self.system_prompt,
                apply_chat_template=self.chat_template,
                fewshot_as_multiturn=self.fewshot_as_multiturn,
                chat_template=template,
                tokenizer_name="",
            )
        by_doc: dict[int, list[Any]] = {}
        for instance in task.instances:
            by_doc.setdefault(instance.doc_id, []).append(instance)
        for instances in by_doc.values():
            instances.sort(key=lambda x: x.idx)
        self._instances = by_doc
        return by_doc

    def _doc(self, doc_id: int, instance: Any) -> Doc:
        """The Mill doc of lm-eval's doc ``doc_id`` from its first instance: the context
        and continuation of its first request, its choices and target (for the record)."""
        task = self.lm_task
        doc = instance.doc
        first = instance.arguments
        choices: tuple[str, ...] = ()
        if task.get_config("output_type") == "multiple_choice":
            choices = _text_choices(self.name, doc_id, task.doc_to_choice(doc))
        gold: Any = None
        try:
            gold = task.doc_to_target(doc)
        except Exception:  # noqa: BLE001 - a target is for the record only
            gold = None
        if isinstance(gold, list):
            gold = tuple(str(g) for g in gold)
        elif gold is not None and not isinstance(gold, (int, str)):
            gold = str(gold)
        return Doc(
            task=self.name,
            id=doc_id,
            subject="default",
            context=str(first[0]),
            continuation=str(first[1]) if len(first) > 1 and isinstance(first[1], str) else "",
            choices=choices,
            gold=gold,
            item=dict(doc) if isinstance(doc, dict) else {"doc": doc},
        )

    def requests(self, doc: Doc, unconditioned: bool = False) -> list[Request]:
        out = []
        for instance in self._instances[doc.id]:
            repeats = int(instance.repeats or 1)
            kind = _OUTPUT_TYPES.get(instance.request_type)
            if kind is None:
                raise TaskError(
                    f"lm-eval task {self.name!r} issues {instance.request_type!r} requests, "
                    "which Mill does not run"
                )
            args = instance.arguments
            for r in range(repeats):
                index = instance.idx * repeats + r
                base = dict(task=self.name, doc_id=doc.id, index=index)
                if kind is OutputType.LOGPROBS:
                    out.append(
                        Request(kind, context=str(args[0]), continuation=str(args[1]), **base)
                    )
                elif kind is OutputType.PERPLEXITY:
                    out.append(Request(kind, context="", continuation=str(args[0]), **base))
                else:
                    gen = generation_args(args[1] if len(args) > 1 else {})
                    out.append(Request(kind, context=str(args[0]), generation=gen, **base))
        return out

    # ----- scoring ------------------------------------------------------------------------
    def scores(self, doc: Doc, responses: Sequence[Response]) -> dict[str, Any]:
        """lm-eval's filters and ``process_results`` on one doc's responses (cached per
        doc: every metric of the doc reads the same dict)."""
        if doc.id in self._scores:
            return self._scores[doc.id]
        task = self.lm_task
        instances = self._instances[doc.id]
        position = 0
        for instance in instances:
            repeats = int(instance.repeats or 1)
            instance.resps = []
            instance.filtered_resps = {}
            for response in responses[position : position + repeats]:
                if instance.request_type == "loglikelihood":
                    logprob = float(response.logprob or 0.0)
                    instance.resps.append((logprob, bool(response.is_greedy)))
                elif instance.request_type == "loglikelihood_rolling":
                    instance.resps.append(float(response.logprob or 0.0))
                else:
                    instance.resps.append(response.answer)
            position += repeats
        if position != len(responses):
            raise TaskError(
                f"task {self.name!r}, doc {doc.id}: {len(responses)} responses for "
                f"{position} requests"
            )
        filters = getattr(task, "_filters", None) or []
        for ensemble in filters:
            ensemble.apply(instances)
        if not filters:
            for instance in instances:
                instance.filtered_resps["none"] = instance.resps[0]
        lm_doc = instances[0].doc
        out: dict[str, Any] = {}
        filtered: dict[str, list[Any]] = {}
        verdicts = getattr(responses, "verdicts", None)
        run = (
            CODE_EVAL.scoring(dict(zip(self._programs.pop(doc.id, []), verdicts, strict=True)))
            if verdicts is not None
            else contextlib.nullcontext()
        )
        with run:
            for filter_name in self.filter_names():
                resps = [instance.filtered_resps[filter_name] for instance in instances]
                filtered[filter_name] = resps
                for metric, value in task.process_results(lm_doc, resps).items():
                    out[f"{metric},{filter_name}"] = value
        self._scores[doc.id] = out
        self._extra[doc.id] = {
            "doc": lm_doc,
            "target": doc.gold,
            "arguments": [list(i.args) for i in instances],
            "resps": [list(i.resps) for i in instances],
            "filtered_resps": filtered,
        }
        return out

    def sample_extra(self, doc: Doc) -> dict[str, Any]:
        """What a sample line adds for lm-eval tasks: the lm-eval doc, its requests'
        arguments, raw and filtered responses (then forgotten)."""
        self._scores.pop(doc.id, None)
        return {"lm_eval": self._extra.pop(doc.id, {})}

    def describe(self) -> dict[str, Any]:
        config = self.lm_task.get_config
        return {
            "name": self.name,
            "class": "mill.lm_eval.bridge.LMEvalTask",
            "lm_eval_version": self.suite.lm_eval_version,
            "output_type": self.OUTPUT_TYPE.value,
            "lm_eval_output_type": config("output_type"),
            "num_fewshot": config("num_fewshot"),
            "limit": self.lm_limit,
            "dataset": {
                "path": config("dataset_path"),
                "name": config("dataset_name"),
            },
            "version": self.lm_task.VERSION,
            "chat_template": self.chat_template,
            "system_prompt": self.system_prompt,
            "fewshot_as_multiturn": self.fewshot_as_multiturn if self.chat_template else None,
            "seeds": self.suite.seeds,
            "aggregations": {
                m: aggregation_name(fn) for m, fn in self.lm_task.aggregation().items()
            },
            "higher_is_better": dict(self.lm_task.higher_is_better() or {}),
        }


class _RandomState:
    """Python's global ``random`` as lm-eval's ``simple_evaluate`` leaves it, carried between
    the bridge's lm-eval calls (tasks such as GPQA shuffle with it in ``process_docs``)."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def __enter__(self) -> None:
        self.outer = random.getstate()
        random.setstate(self.state)

    def __exit__(self, *exc: Any) -> None:
        self.state = random.getstate()
        random.setstate(self.outer)


_RULES = task_rules("mill.lm_eval.bridge.LMEvalSuite")
"""The rules of the bridge's task settings (the schema's, with its own ``task.limit``)."""


def _text_choices(task: str, doc_id: int, choices: Any) -> tuple[str, ...]:
    """A multiple-choice doc's choices, which lm-eval's ``process_results`` measures as text:
    a choice that is not (a missing cell, a number) is said before any request runs, not
    after the model has scored the task."""
    for i, choice in enumerate(choices):
        if not isinstance(choice, str):
            raise TaskError(
                f"lm-eval task {task!r}, doc {doc_id}: choice {i} is {choice!r}, not text; "
                "fix its doc_to_choice or data (a local CSV read with dataset_kwargs "
                "na_filter: true turns cells such as 'None' or 'NA' into missing values)"
            )
    return tuple(choices)


def _limit(limit: float | None) -> int | float | None:
    """``task.limit`` as lm-eval's ``--limit``: a count, or a fraction below 1 (checked by
    the schema's rule for the bridge's tasks)."""
    value = checked("task.limit", limit, _RULES["task.limit"])
    if value is None:
        return None
    return float(value) if float(value) < 1 else int(value)


def _include_paths(include_path: str | Sequence[str] | None) -> list[str]:
    """``task.include_path`` as a list of folders, each checked to exist."""
    paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
    for path in paths:
        if not Path(path).is_dir():
            raise ConfigError(
                f"task.include_path: {path} is not a folder; give the folder holding "
                "your lm-eval task YAMLs"
            )
    return paths


class LMEvalSuite(TaskGroup):
    """The lm-eval tasks and groups named in ``tasks``, as a Mill task group.

    Settings map to lm-eval's: ``num_fewshot`` (as ``--num_fewshot``: a task whose YAML pins
    0 keeps 0), ``limit`` (``--limit``: a count, or a fraction below 1), ``chat_template``
    (``--apply_chat_template``), ``fewshot_as_multiturn``, ``system_prompt``
    (``--system_instruction``), ``include_path`` (``--include_path``; ``include_defaults=false``
    indexes only those folders, which starts faster), the seeds
    (``--seed``: python ``random``, numpy, torch, few-shot; lm-eval's defaults).
    ``dataset_overrides`` maps task-name patterns to TaskConfig keys (e.g. ``dataset_path:
    json`` and ``dataset_kwargs.data_files``) to run tasks on local files.
    """

    _tmp: Path | None
    """The folder of the override YAMLs (:func:`~mill.lm_eval.overrides.apply_overrides`)."""

    def __init__(
        self,
        name: str = "lm_eval",
        tasks: Sequence[str] = (),
        include_path: str | Sequence[str] | None = None,
        include_defaults: bool = True,
        num_fewshot: int | None = None,
        limit: float | None = None,
        chat_template: bool = False,
        fewshot_as_multiturn: bool = True,
        system_prompt: str | None = None,
        dataset_overrides: dict[str, dict[str, Any]] | str | None = None,
        random_seed: int = 0,
        numpy_random_seed: int = 1234,
        torch_random_seed: int = 1234,
        fewshot_random_seed: int = 1234,
        confirm_run_unsafe_code: bool = False,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        lm_eval = require_lm_eval()
        self.lm_eval_version = str(getattr(lm_eval, "__version__", ""))
        names = [str(t) for t in (tasks or [])]
        if not names:
            raise ConfigError(
                "task=lm_eval needs lm-eval task or group names: task.tasks=[hellaswag,gsm8k]"
            )
        self.limit = _limit(limit)
        num_fewshot = checked("task.num_fewshot", num_fewshot, _RULES["task.num_fewshot"])
        self.chat_template = bool(chat_template)
        self.fewshot_as_multiturn = bool(fewshot_as_multiturn)
        self.system_prompt = system_prompt
        self.seeds = {
            "random": random_seed,
            "numpy": numpy_random_seed,
            "torch": torch_random_seed,
            "fewshot": fewshot_random_seed,
        }
        paths = _include_paths(include_path)
        manager = self._manager(paths, metadata, include_defaults)
        known = set(manager.all_tasks)
        for spec in names:
            if spec not in known and not Path(spec).is_file():
                raise unknown_task_error(spec, manager.all_tasks, paths)
        overrides = read_overrides(dataset_overrides)
        if overrides:
            self._tmp = apply_overrides(manager, overrides)
        self._state = self._seed(random_seed, numpy_random_seed, torch_random_seed)
        with self.random_state():
            loaded = self._load(manager, names)
        self.lm_groups = dict(loaded.get("groups") or {})
        self.requested = names
        members: list[Task] = [
            self._member(key, task, num_fewshot, fewshot_random_seed, confirm_run_unsafe_code)
            for key, task in dict(loaded["tasks"]).items()
        ]
        super().__init__(name=name, tasks=members)

    def _member(
        self,
        task_name: str,
        task_obj: Any,
        num_fewshot: int | None,
        fewshot_seed: int,
        confirm_run_unsafe_code: bool,
    ) -> LMEvalTask:
        """One loaded lm-eval task as a member: refused if it runs code without consent or is
        multimodal; its few-shot count and seed set as lm-eval's CLI sets them."""
        if getattr(task_obj, "UNSAFE_CODE", False) and not confirm_run_unsafe_code:
            raise ConfigError(
                f"lm-eval task {task_name!r} runs model-written code; allow it with "
                "task.confirm_run_unsafe_code=true"
            )
        if getattr(task_obj, "MULTIMODAL", False):
            raise ConfigError(
                f"lm-eval task {task_name!r} is multimodal; Mill runs text tasks only"
            )
        if num_fewshot is not None:
            if task_obj.get_config("num_fewshot") != 0:
                task_obj.set_config(key="num_fewshot", value=num_fewshot)
        elif task_obj.get_config("num_fewshot") is None:
            task_obj.set_config(key="num_fewshot", value=0)
        task_obj.set_fewshot_seed(seed=fewshot_seed)
        return LMEvalTask(task_obj, self)

    # ----- loading ------------------------------------------------------------------------
    def _manager(
        self, paths: list[str], metadata: dict[str, Any] | None, include_defaults: bool
    ) -> Any:
        from mill.lm_eval.index_cache import task_manager

        self._tmp = None
        if not include_defaults and not paths:
            raise ConfigError("task.include_defaults=false leaves no tasks: give task.include_path")
        return task_manager(paths, bool(include_defaults), metadata)

    def _load(self, manager: Any, names: list[str]) -> dict[str, Any]:
        import datasets
        import yaml

        # the tasks' splits load (and process_docs maps them) without datasets' bars
        datasets.disable_progress_bars()
        try:
            ifeval_supplied()  # lm-eval's ifeval utils download punkt_tab at import
            with code_eval_supplied():  # code tasks' utils.py load code_eval at import
                loaded: dict[str, Any] = manager.load(names)
                return loaded
        except yaml.YAMLError as err:  # a task named by its YAML's path
            raise ConfigError(f"task.tasks: {yaml_syntax(err)}; fix the file and rerun") from None
        except ImportError as err:
            raise code_error(manager, err) from None
        except AttributeError as err:
            if "(from YAML in" not in str(err):
                raise
            raise code_error(manager, err) from None
        except (ConnectionError, FileNotFoundError, OSError) as err:
            raise dataset_error(manager, err) from None
        except Exception as err:
            name = type(err).__name__
            if name in ("DatasetNotFoundError", "GatedRepoError", "OfflineModeIsEnabled"):
                raise dataset_error(manager, err) from None
            raise

    @staticmethod
    def _seed(
        random_seed: int | None, numpy_seed: int | None, torch_seed: int | None
    ) -> _RandomState:
        """lm-eval ``simple_evaluate``'s seeding; returns python ``random``'s state after it
        (the global state is restored, so the rest of Mill is unaffected)."""
        outer = random.getstate()
        if random_seed is not None:
            random.seed(random_seed)
        if numpy_seed is not None:
            import numpy as np

            np.random.seed(numpy_seed)
        if torch_seed is not None and "torch" in sys.modules:
            sys.modules["torch"].manual_seed(torch_seed)
        state = random.getstate()
        random.setstate(outer)
        return _RandomState(state)

    def random_state(self) -> _RandomState:
        return self._state

    # ----- groups --------------------------------------------------------------------------
    def aggregate_results(
        self, per_task: dict[str, Any], iters: int, seed: int
    ) -> dict[str, dict[str, Any]]:
        """lm-eval's group aggregates (``aggregate_metric_list``), bottom-up, over Mill's task
        values and stderrs: size-weighted means are ``micro`` rows, unweighted ``macro``."""
        from lm_eval.evaluator_utils import EvalAcc, aggregate_groups

        metrics = {task.name: _lm_eval_row(task.name, per_task[task.name]) for task in self.tasks}
        acc = aggregate_groups(EvalAcc(metrics=metrics, groups=dict(self.lm_groups)))
        out: dict[str, dict[str, Any]] = {}
        for group_name, group in self.lm_groups.items():
            rows = _group_rows(group, acc.metrics.get(group_name, {}), per_task)
            if rows:
                out[group_name] = {
                    "tasks": [t.task_name for t in group.get_all_tasks()],
                    "metrics": rows,
                }
        normalised = self.leaderboard(per_task)
        if normalised is not None:
            out["leaderboard_normalised"] = normalised
        return out

    def leaderboard(self, per_task: dict[str, Any]) -> dict[str, Any] | None:
        """Open LLM Leaderboard v2 normalised scores of the leaderboard tasks run, as a
        results group (with every subtask's raw value, baseline and score), or None."""
        from mill.lm_eval.leaderboard import TASKS, as_group_rows, leaderboard_scores

        names = {t.name for t in self.tasks}
        subtasks: dict[str, list[str]] = {}
        for task in TASKS:
            if task in self.lm_groups:
                subtasks[task] = [t.task_name for t in self.lm_groups[task].get_all_tasks()]
            elif task in names:
                subtasks[task] = [task]
        if not subtasks:
            return None
        rows = {name: per_task[name].metrics for name in names}
        baselines = {t.name: t.chance for t in self.tasks if isinstance(t, LMEvalTask)}
        scores = leaderboard_scores(subtasks, rows, baselines)
        if not scores["tasks"]:
            return None
        return {**as_group_rows(scores), "details": scores}


def _lm_eval_row(name: str, result: Any) -> dict[str, Any]:
    """A task's metrics as lm-eval's results row (``<metric>,<filter>`` and its
    ``_stderr``, ``"N/A"`` without one; ``sample_len`` the largest n), for its group
    aggregation."""
    row: dict[str, Any] = {"name": name, "alias": name, "sample_len": 0}
    for key, body in result.metrics.items():
        if body["value"] is None:
            continue
        metric, _, filter_name = key.partition(",")
        row[key] = body["value"]
        row[f"{metric}_stderr,{filter_name}"] = (
            body["stderr"] if body["stderr"] is not None else "N/A"
        )
        row["sample_len"] = max(row["sample_len"], int(body["n"]))
    return row


def _group_rows(group: Any, values: dict[str, Any], per_task: dict[str, Any]) -> dict[str, Any]:
    """One group's aggregated values (lm-eval's) as Mill's group rows: ``micro`` when
    weighted by size, ``macro`` otherwise, with the stderr, n and interval."""
    weights = {a.metric: a.weight_by_size for a in group.aggregate_metric_list or []}
    higher: dict[str, Any] = {}
    for leaf in group.get_all_tasks():
        for metric, h in (leaf.higher_is_better() or {}).items():
            higher.setdefault(metric, h)
    rows: dict[str, Any] = {}
    for key, value in values.items():
        if "," not in key or "_stderr," in key or key == "sample_count":
            continue
        metric, _, filter_name = key.partition(",")
        stderr = values.get(f"{metric}_stderr,{filter_name}")
        kind = "micro" if weights.get(metric, True) else "macro"
        n = values.get("sample_count", {}).get(key, values.get("sample_len", 0))
        body = {
            "value": value,
            "stderr": None if stderr in (None, "N/A") else float(stderr),
            "n": n if kind == "micro" else len(group.get_all_tasks()),
        }
        leaves = [per_task.get(t.task_name) for t in group.get_all_tasks()]
        members = [leaf.metrics.get(key) if leaf else None for leaf in leaves]
        # a group of 0/1 means (accuracies) is inside [0, 1]: its interval too
        binary = all(m and m.get("ci_method") == "wilson" for m in members)
        found = interval(
            [], value, body["stderr"], is_mean=False,
            bounds=(0.0, 1.0) if binary else None, iters=0, seed=0,
        )  # fmt: skip
        if found is not None:
            body["ci"], body["ci_method"] = list(found[0]), found[1]
        rows[key] = {kind: body, "higher_is_better": bool(higher.get(metric, True))}
    return rows
