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

import atexit
import contextlib
import difflib
import fnmatch
import logging
import os
import random
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mill.data.load import DataSource
from mill.errors import ConfigError, DatasetUnavailable, TaskError, yaml_syntax
from mill.lm_eval import require_lm_eval
from mill.lm_eval.code_eval import CODE_EVAL
from mill.lm_eval.code_eval import supplied as code_eval_supplied
from mill.metrics.base import CorpusMetric, Metric
from mill.metrics.stats import interval, mean_stderr
from mill.task.base import Task, TaskGroup
from mill.types import Doc, GenerationArgs, OutputType, Request, Response

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


def _index_suggestions(name: str, names: Sequence[str]) -> list[str]:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if not close:
        close = sorted(n for n in names if name.lower() in n.lower())[:5]
    return close


def _dataset_of(err: BaseException) -> str | None:
    match = re.search(r"'([\w.\-]+/[\w.\-]+)'", str(err))
    return match.group(1) if match else None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _reason(err: BaseException) -> str:
    """Why a task YAML cannot be read, in one phrase (file and line for a syntax error)."""
    import yaml

    if isinstance(err, yaml.YAMLError):
        return yaml_syntax(err)
    return _first_line(err)


def broken_yamls(paths: Sequence[str]) -> list[tuple[Path, BaseException]]:
    """The YAMLs under ``paths`` that cannot be read as lm-eval reads them (a syntax error,
    a missing ``include``, not a mapping), with the error. lm-eval's index skips them
    silently, so their tasks look unknown; this names them (on the error path only)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    out = []
    for root in paths:
        for path in sorted(Path(root).glob("**/*.yaml")):
            try:
                load_yaml(path, resolve_func=False, recursive=True)
            except Exception as err:  # noqa: BLE001 - reported, as lm-eval's index skips it
                out.append((path, err))
    return out


def _declares(path: Path, name: str) -> bool:
    """The file's text has a ``task: <name>`` or ``group: <name>`` line (it may not parse)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    pattern = rf"^\s*-?\s*(task|group)\s*:\s*['\"]?{re.escape(name)}['\"]?\s*(#.*)?$"
    return re.search(pattern, text, re.MULTILINE) is not None


def unknown_task_error(spec: str, names: Sequence[str], paths: Sequence[str]) -> ConfigError:
    """The one line for a ``task.tasks`` name lm-eval's index lacks: the YAML error when a
    file of the include path that declares it cannot be read, else close names (and the
    include path's unreadable files, which may hold it)."""
    broken = broken_yamls(paths)
    for path, err in broken:
        if _declares(path, spec):
            reason = _reason(err)
            where = "" if str(path) in reason else f" ({path})"
            return ConfigError(
                f"task.tasks: lm-eval task {spec!r}{where} cannot be read: {reason}; "
                "fix the file and rerun"
            )
    close = _index_suggestions(spec, names)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    unread = ""
    if broken:
        path, err = broken[0]
        unread = (
            f"; {len(broken)} YAML file(s) under task.include_path cannot be read, "
            f"e.g. {path}: {_reason(err)}"
        )
    return ConfigError(
        f"task.tasks: {spec!r} is not an lm-eval task, group or tag{hint} "
        f"(see `lm-eval ls tasks`, or add your YAML folder with task.include_path){unread}"
    )


def _walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf) of a parsed YAML."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{key}[{i}]")
    else:
        yield key, value


def _where(manager: Any, match: Callable[[Any], bool]) -> str:
    """``lm-eval task 'name' (file), key`` for the first indexed task YAML holding a value
    that ``match``es, or an empty string."""
    for name, entry in manager.task_index.items():
        if entry.cfg is None or entry.yaml_path is None:
            continue
        for key, leaf in _walk(entry.cfg):
            if isinstance(leaf, str) and match(leaf):
                return f"lm-eval task {name!r} ({entry.yaml_path}), {key}: "
    return ""


def _missing_file(err: BaseException) -> str | None:
    """The local file a data loader could not find, if ``err`` is about one: a
    FileNotFoundError naming an absolute path that does not exist (``datasets`` resolves
    ``data_files``; a Hub id such as ``org/name`` is never absolute)."""
    if not isinstance(err, FileNotFoundError) or type(err).__name__ == "DatasetNotFoundError":
        return None
    candidates = [str(err.filename)] if err.filename else []
    candidates += re.findall(r"'([^']+)'", str(err))
    for path in candidates:
        if os.path.isabs(path) and not os.path.exists(path):
            return path
    return None


def _format(value: Any, fields: dict[str, str]) -> Any:
    """``{task}`` and ``{dataset_name}`` in override strings become the task's own."""
    if isinstance(value, str):
        for key, field in fields.items():
            value = value.replace("{" + key + "}", field)
        return value
    if isinstance(value, dict):
        return {k: _format(v, fields) for k, v in value.items()}
    if isinstance(value, list):
        return [_format(v, fields) for v in value]
    return value


def generation_args(gen_kwargs: dict[str, Any] | None) -> GenerationArgs:
    """lm-eval ``generate_until`` kwargs as Mill's, normalised as lm-eval's HF model does:
    ``until`` (a string or list), ``max_gen_toks`` (or max_new_tokens / max_tokens /
    max_completion_tokens; default 256), greedy unless ``do_sample`` with a temperature."""
    kwargs = dict(gen_kwargs or {})
    until = kwargs.pop("until", None) or []
    if isinstance(until, str):
        until = [until]
    max_gen = kwargs.pop("max_gen_toks", None)
    for alias in ("max_new_tokens", "max_tokens", "max_completion_tokens"):
        value = kwargs.pop(alias, None)
        if max_gen is None and value is not None:
            max_gen = value
    temperature = float(kwargs.pop("temperature", 0.0) or 0.0)
    do_sample = bool(kwargs.pop("do_sample", False)) and temperature > 0.0
    return GenerationArgs(
        until=tuple(str(u) for u in until),
        max_gen_toks=int(max_gen if max_gen is not None else 256),
        do_sample=do_sample,
        temperature=temperature,
    )


def aggregation_name(fn: Any) -> str | None:
    """The name lm-eval registered an aggregation function under (None: the task's own)."""
    from lm_eval.api.registry import AGGREGATION_REGISTRY

    for name, registered in AGGREGATION_REGISTRY.items():
        if registered is fn:
            return str(name)
    return None


def rebuild_metric(name: str, settings: dict[str, Any]) -> LMEvalMetric:
    """An lm-eval task's metric from a run folder's task settings (``mill compare``)."""
    require_lm_eval()
    import lm_eval.api.metrics  # noqa: F401 - registers lm-eval's aggregations
    from lm_eval.api.registry import AGGREGATION_REGISTRY

    metric, _, filter_name = name.partition(",")
    aggregation = (settings.get("aggregations") or {}).get(metric)
    if aggregation not in AGGREGATION_REGISTRY:
        raise ConfigError(
            f"lm-eval metric {name!r} aggregates with the task's own function "
            f"({aggregation or 'unrecorded'}), which a run folder cannot rebuild"
        )
    higher = (settings.get("higher_is_better") or {}).get(metric)
    return LMEvalMetric(metric, filter_name, higher, AGGREGATION_REGISTRY[aggregation])


def read_overrides(value: Any) -> dict[str, dict[str, Any]]:
    """``task.dataset_overrides``: a mapping, or the path of a YAML file holding one."""
    if not value:
        return {}
    if isinstance(value, (str, Path)):
        import yaml

        path = Path(value)
        if not path.is_file():
            raise ConfigError(
                f"task.dataset_overrides: {path} is not a file; give a mapping "
                "{task or glob: {dataset_path: ..., ...}} or a YAML file holding one"
            )
        try:
            with path.open(encoding="utf-8") as stream:  # the error names the file
                value = yaml.safe_load(stream) or {}
        except yaml.YAMLError as err:
            raise ConfigError(
                f"task.dataset_overrides: {yaml_syntax(err)}; fix the file (a value holding "
                "{...}, such as {dataset_name}, must be quoted or written in block style)"
            ) from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ConfigError(
            "task.dataset_overrides must map task names or globs to TaskConfig keys, e.g. "
            "{gsm8k: {dataset_path: json, dataset_kwargs: {data_files: {test: f.jsonl}}}}"
        )
    return {str(k): dict(v) for k, v in value.items()}


def write_overrides(manager: Any, overrides: dict[str, dict[str, Any]], folder: Path) -> int:
    """Write into ``folder``, per lm-eval YAML task whose name matches a pattern of
    ``overrides``, a YAML that ``include``s the task's own YAML and sets the pattern's keys
    (``{task}`` and ``{dataset_name}`` in strings become the task's own). lm-eval's
    ``include_path`` then finds them before the originals. Returns the number written."""
    import yaml
    from lm_eval.tasks._index import Kind
    from lm_eval.tasks._yaml_loader import load_yaml

    written = 0
    for pattern, keys in overrides.items():
        matched = [
            name
            for name, entry in manager.task_index.items()
            if entry.kind is Kind.TASK and entry.yaml_path and fnmatch.fnmatch(name, pattern)
        ]
        if not matched:
            raise ConfigError(
                f"task.dataset_overrides: pattern {pattern!r} matches no lm-eval YAML task"
            )
        for name in matched:
            path = Path(manager.task_index[name].yaml_path).resolve()
            original = load_yaml(path, resolve_func=False)
            fields = {"task": name, "dataset_name": str(original.get("dataset_name") or "")}
            body = {"include": str(path), "task": name, **_format(dict(keys or {}), fields)}
            text = yaml.safe_dump(body, sort_keys=False)
            (folder / f"{written:05d}_{name}.yaml").write_text(text)
            written += 1
    return written


class LMEvalMetric(CorpusMetric):
    """One lm-eval metric under one filter (``acc,none``, ``exact_match,strict-match``).

    The per-sample value is what the task's ``process_results`` returned; the aggregate is
    the task's own aggregation function. The stderr is Mill's: closed form for lm-eval's
    ``mean``, a seeded bootstrap of the aggregation otherwise (lm-eval reports none for
    some, e.g. ``bits_per_byte``)."""

    output_types = frozenset(OutputType)

    def __init__(
        self,
        metric: str,
        filter_name: str,
        higher_is_better: bool | None,
        aggregation: Callable[[list[Any]], float] | None = None,
        scorer: Callable[[Doc, Sequence[Response]], dict[str, Any]] | None = None,
    ) -> None:
        from lm_eval.api.metrics import mean

        self.metric = metric
        self.filter_name = filter_name
        self.name = f"{metric},{filter_name}"  # type: ignore[misc]
        self.higher_is_better = True if higher_is_better is None else bool(higher_is_better)  # type: ignore[misc]
        self._aggregation = aggregation or mean
        self._scorer = scorer

    @property
    def is_mean(self) -> bool:
        from lm_eval.api.metrics import mean

        return self._aggregation is mean

    def score(self, doc: Doc, responses: Sequence[Response]) -> Any:
        if self._scorer is None:
            raise TaskError(f"metric {self.name!r} was rebuilt from a run folder; it cannot score")
        return self._scorer(doc, responses).get(self.name)

    def aggregate(self, values: Sequence[Any]) -> float:
        present = [v for v in values if v is not None]
        return float(self._aggregation(present))

    def stderr(self, values: Sequence[Any], *, iters: int, seed: int) -> float | None:
        present = [v for v in values if v is not None]
        if len(present) < 2:
            return None
        if self.is_mean:
            return mean_stderr([float(v) for v in present])
        return super().stderr(present, iters=iters, seed=seed)


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
        self.OUTPUT_TYPE = _TASK_OUTPUT_TYPES[output_type]  # type: ignore[misc]
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
    def docs(self, source: DataSource, chat: Any = None) -> Iterator[Doc]:
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
        chances: list[float] = []
        for doc_id, instances in by_doc.items():
            doc = instances[0].doc
            first = instances[0].arguments
            choices: tuple[str, ...] = ()
            gold: Any = None
            try:
                if task.get_config("output_type") == "multiple_choice":
                    choices = tuple(str(c) for c in task.doc_to_choice(doc))
                gold = task.doc_to_target(doc)
            except Exception:  # noqa: BLE001 - a target is for the record only
                gold = None
            if choices:
                chances.append(1.0 / len(choices))
            if isinstance(gold, list):
                gold = tuple(str(g) for g in gold)
            elif gold is not None and not isinstance(gold, (int, str)):
                gold = str(gold)
            yield Doc(
                task=self.name,
                id=int(doc_id),
                subject="default",
                context=str(first[0]),
                continuation=str(first[1]) if len(first) > 1 and isinstance(first[1], str) else "",
                choices=choices,
                gold=gold,
                item=dict(doc) if isinstance(doc, dict) else {"doc": doc},
            )
        # random guessing's expected accuracy (the leaderboard's normalisation baseline)
        self.chance = sum(chances) / len(chances) if chances else 0.0

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
                    instance.resps.append(response.text or "")
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
        if limit is not None and float(limit) <= 0:
            raise ConfigError("task.limit must be > 0 (a count, or a fraction below 1)")
        self.limit = None if limit is None else (float(limit) if float(limit) < 1 else int(limit))
        self.chat_template = bool(chat_template)
        self.fewshot_as_multiturn = bool(fewshot_as_multiturn)
        self.system_prompt = system_prompt
        self.seeds = {
            "random": random_seed,
            "numpy": numpy_random_seed,
            "torch": torch_random_seed,
            "fewshot": fewshot_random_seed,
        }
        paths = [include_path] if isinstance(include_path, str) else list(include_path or [])
        for path in paths:
            if not Path(path).is_dir():
                raise ConfigError(
                    f"task.include_path: {path} is not a folder; give the folder holding "
                    "your lm-eval task YAMLs"
                )
        manager = self._manager(paths, metadata, include_defaults)
        known = set(manager.all_tasks)
        for spec in names:
            if spec not in known and not Path(spec).is_file():
                raise unknown_task_error(spec, manager.all_tasks, paths)
        overrides = read_overrides(dataset_overrides)
        if overrides:
            self._apply_overrides(manager, overrides)
        self._state = self._seed(random_seed, numpy_random_seed, torch_random_seed)
        with self.random_state():
            loaded = self._load(manager, names)
        self.lm_groups = dict(loaded.get("groups") or {})
        self.requested = names
        lm_tasks = dict(loaded["tasks"])
        members = []
        for task_name, task_obj in lm_tasks.items():
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
                    task_obj.set_config(key="num_fewshot", value=int(num_fewshot))
            elif task_obj.get_config("num_fewshot") is None:
                task_obj.set_config(key="num_fewshot", value=0)
            task_obj.set_fewshot_seed(seed=fewshot_random_seed)
            members.append(LMEvalTask(task_obj, self))
        super().__init__(name=name, tasks=members)

    # ----- loading ------------------------------------------------------------------------
    def _manager(
        self, paths: list[str], metadata: dict[str, Any] | None, include_defaults: bool
    ) -> Any:
        from mill.lm_eval.index_cache import task_manager

        self._tmp: Path | None = None
        if not include_defaults and not paths:
            raise ConfigError("task.include_defaults=false leaves no tasks: give task.include_path")
        return task_manager(paths, bool(include_defaults), metadata)

    def _apply_overrides(self, manager: Any, overrides: dict[str, dict[str, Any]]) -> None:
        tmp = Path(tempfile.mkdtemp(prefix="mill-lm-eval-"))
        atexit.register(shutil.rmtree, tmp, True)
        self._tmp = tmp
        write_overrides(manager, overrides, tmp)
        from lm_eval.tasks._index import TaskIndex

        manager._index.update(TaskIndex().build([tmp]))

    def _load(self, manager: Any, names: list[str]) -> dict[str, Any]:
        import datasets
        import yaml

        # the tasks' splits load (and process_docs maps them) without datasets' bars
        datasets.disable_progress_bars()
        try:
            ifeval_supplied()  # lm-eval's ifeval utils download punkt_tab at import
            with code_eval_supplied():  # code tasks' utils.py load code_eval at import
                return manager.load(names)
        except yaml.YAMLError as err:  # a task named by its YAML's path
            raise ConfigError(f"task.tasks: {yaml_syntax(err)}; fix the file and rerun") from None
        except ImportError as err:
            raise self._code_error(manager, err) from None
        except AttributeError as err:
            if "(from YAML in" not in str(err):
                raise
            raise self._code_error(manager, err) from None
        except (ConnectionError, FileNotFoundError, OSError) as err:
            raise self._dataset_error(manager, err) from None
        except Exception as err:
            name = type(err).__name__
            if name in ("DatasetNotFoundError", "GatedRepoError", "OfflineModeIsEnabled"):
                raise self._dataset_error(manager, err) from None
            raise

    @staticmethod
    def _code_error(manager: Any, err: ImportError | AttributeError) -> ConfigError:
        """A ``!function`` that names a missing module or function, or task code that
        imports a package which is not installed, as one line."""
        found = re.search(
            r"module '([^']+)' for function '([^']+)' \(from YAML in (.+)\)$", str(err)
        ) or re.search(  # fmt: skip
            r"Module '([^']+)' has no function '([^']+)' \(from YAML in (.+)\)$", str(err)
        )
        if found is None:
            missing = getattr(err, "name", None)
            return ConfigError(
                f"lm-eval task code cannot be imported: {_first_line(err)}; install the "
                f"package{f' that provides {missing!r}' if missing else ''} and rerun"
            )
        module, function, folder = found.groups()
        spec = str(Path(folder).expanduser() / f"{module}.{function}")
        where = _where(manager, lambda leaf: leaf == spec) or "lm-eval task YAML: "
        return ConfigError(
            f"{where}!function {module}.{function}: {_first_line(err)}; a !function is "
            f"looked up in {module.replace('.', '/')}.py beside the YAML, then in the "
            "installed packages: fix the name or add the file"
        )

    @staticmethod
    def _dataset_error(manager: Any, err: BaseException) -> DatasetUnavailable:
        missing = _missing_file(err)
        if missing is not None:
            # datasets reads a relative path from the current folder
            target = os.path.abspath(missing)
            where = _where(manager, lambda leaf: os.path.abspath(leaf) == target)
            return DatasetUnavailable(
                f"{where or 'lm-eval task data: '}data file {missing} does not exist; fix the "
                "path in the task YAML's dataset_kwargs.data_files or task.dataset_overrides"
            )
        dataset = _dataset_of(err)
        what = f"lm-eval dataset {dataset}" if dataset else "an lm-eval task's dataset"
        return DatasetUnavailable(
            f"{what} cannot be loaded ({_first_line(err)}); it is gated or unreachable "
            "offline: log in / go online once to cache it, or give local files with "
            "task.dataset_overrides={<task or pattern>: {dataset_path: json, "
            "dataset_name: null, dataset_kwargs: {data_files: {test: /path/file.jsonl}}}}"
        )

    @staticmethod
    def _seed(random_seed: int | None, numpy_seed: int | None, torch_seed: int | None) -> Any:
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

        metrics: dict[str, dict[str, Any]] = {}
        for task in self.tasks:
            result = per_task[task.name]
            row: dict[str, Any] = {"name": task.name, "alias": task.name, "sample_len": 0}
            for key, body in result.metrics.items():
                if body["value"] is None:
                    continue
                metric, _, filter_name = key.partition(",")
                row[key] = body["value"]
                row[f"{metric}_stderr,{filter_name}"] = (
                    body["stderr"] if body["stderr"] is not None else "N/A"
                )
                row["sample_len"] = max(row["sample_len"], int(body["n"]))
            metrics[task.name] = row
        acc = aggregate_groups(EvalAcc(metrics=metrics, groups=dict(self.lm_groups)))
        out: dict[str, dict[str, Any]] = {}
        for group_name, group in self.lm_groups.items():
            values = acc.metrics.get(group_name, {})
            weights = {a.metric: a.weight_by_size for a in group.aggregate_metric_list or []}
            higher = {}
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
