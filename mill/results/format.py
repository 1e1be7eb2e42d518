"""The results files' format, typed: ``results.json``, ``manifest.json`` and the lines of
``samples/<task>.jsonl``. Every class has ``from_dict`` (reading what ``to_dict`` wrote, and
results written before ``schema_version`` existed) and ``to_dict`` (the JSON written).

Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from mill import files
from mill.errors import MillError
from mill.record import SampleRecord
from mill.redact import redact_url
from mill.types import DocOutput

SCHEMA_VERSION = 2
"""Version of ``results.json``. Files without ``schema_version`` predate it and read as 1."""

INTEGRITY_SINCE = 2
"""The first schema version whose finished runs carry their checksums (``INTEGRITY_FIELDS``):
a folder of an older version has nothing that proves it unedited, and reads as edited."""

INTEGRITY_FIELDS = (
    "manifest.json: results_sha256 (SHA-256 of results.json)",
    "results.json: samples_sha256, one entry per task in `tasks` (SHA-256 of its samples file)",
)
"""What a finished run of schema version ``INTEGRITY_SINCE`` or later must carry; a run that
lacks any of them is treated as edited (refused unless ``trust_edited``)."""


class ResultsError(MillError):
    """A results folder or file that does not follow the schema."""


def _doc(text: str, default: Any = MISSING, factory: Any = MISSING) -> Any:
    """A dataclass field with a one-line description (rendered in docs/results-schema.md)."""
    if factory is not MISSING:
        return field(default_factory=factory, metadata={"doc": text})
    if default is not MISSING:
        return field(default=default, metadata={"doc": text})
    return field(metadata={"doc": text})


def _need(data: Any, where: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ResultsError(f"{where} must be a JSON object, got {type(data).__name__}")
    return data


# --- results.json -----------------------------------------------------------------------


@dataclass
class MetricValue:
    """One aggregated metric: the corpus value, its standard error and the sample count."""

    value: float | None = _doc("corpus-level value; null when no sample was scored")
    stderr: float | None = _doc("standard error of `value` (closed form or seeded bootstrap)")
    n: int = _doc("number of samples (docs) behind `value`; members for a macro aggregate")
    higher_is_better: bool | None = _doc(
        "direction of the metric; absent inside group micro/macro rows", None
    )
    ci: list[float] | None = _doc(
        "95% interval [low, high], inside the metric's bounds (see `ci_method`); absent in "
        "results written before Mill recorded it",
        None,
    )
    ci_method: str | None = _doc(
        "wilson (means of 0/1 values), percentile bootstrap (other bounded means), normal, "
        "clipped (other bounded aggregates: value +- 1.96 stderr cut to the bounds), "
        "normal, log scale (perplexities: exp(log value +- 1.96 stderr of the log)) or "
        "normal (other unbounded aggregates)",
        None,
    )
    details: dict[str, Any] | None = _doc(
        "judged metrics: n_invalid (judgments that did not parse), per-turn scores, CI "
        "bounds, position_bias; absent for other metrics",
        None,
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetricValue:
        data = _need(data, "a metric row")
        ci = data.get("ci")
        return cls(
            value=data.get("value"),
            stderr=data.get("stderr"),
            n=int(data.get("n", 0)),
            higher_is_better=data.get("higher_is_better"),
            ci=None if ci is None else [float(x) for x in ci],
            ci_method=data.get("ci_method"),
            details=data.get("details"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "stderr": self.stderr, "n": self.n}
        if self.higher_is_better is not None:
            out["higher_is_better"] = self.higher_is_better
        if self.ci is not None:
            out["ci"] = self.ci
            out["ci_method"] = self.ci_method
        if self.details is not None:
            out["details"] = self.details
        return out

    @property
    def better_is_higher(self) -> bool:
        """:attr:`higher_is_better`, True when not stated."""
        return True if self.higher_is_better is None else bool(self.higher_is_better)


@dataclass
class GroupMetric:
    """A metric aggregated over a group's members. Mill's groups have both aggregates;
    lm-eval groups (``task=lm_eval``) have the one their config asks for."""

    micro: MetricValue | None = _doc("pooled over all samples of all members (n: samples)", None)
    macro: MetricValue | None = _doc("unweighted mean of the member values (n: members)", None)
    higher_is_better: bool = _doc("direction of the metric", True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupMetric:
        data = _need(data, "a group metric")
        micro, macro = data.get("micro"), data.get("macro")
        return cls(
            None if micro is None else MetricValue.from_dict(micro),
            None if macro is None else MetricValue.from_dict(macro),
            bool(data.get("higher_is_better", True)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.micro is not None:
            out["micro"] = self.micro.to_dict()
        if self.macro is not None:
            out["macro"] = self.macro.to_dict()
        out["higher_is_better"] = self.higher_is_better
        return out

    def kinds(self) -> list[tuple[str, MetricValue]]:
        """``("micro", row)`` and ``("macro", row)``, for the aggregates present."""
        both = (("micro", self.micro), ("macro", self.macro))
        return [(kind, row) for kind, row in both if row is not None]


def _metrics(data: Any) -> dict[str, MetricValue]:
    return {k: MetricValue.from_dict(v) for k, v in _need(data or {}, "metrics").items()}


@dataclass
class TaskResults:
    """The results of one task."""

    metrics: dict[str, MetricValue] = _doc("metric name -> aggregate", factory=dict)
    subjects: dict[str, dict[str, MetricValue]] = _doc(
        "subject -> metric name -> aggregate, for tasks with several subjects (MMLU); "
        "absent otherwise",
        factory=dict,
    )
    settings: dict[str, Any] = _doc(
        "the task's settings as run (output type, prompt, few-shot, split, limit, ...)",
        factory=dict,
    )
    data: dict[str, Any] = _doc(
        "where each split came from (source, path or hub id, revision, fingerprint)",
        factory=dict,
    )
    skipped_rows: dict[str, Any] | None = _doc(
        "with data.skip_bad_rows=true: count and rows (split, index, why) left out", None
    )
    generations: dict[str, Any] | None = _doc(
        "generative tasks: how their generations ended: `generations` (count), "
        "`hit_max_gen_toks` (ended at the length budget), `truncation_rate` (of those whose "
        "end is known), `unknown` (saved completions), `reasoning_unfinished` (reasoning "
        "block never closed: no answer, scored 0); absent for other tasks and older runs",
        None,
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskResults:
        data = _need(data, "a task's results")
        skipped = data.get("skipped_rows")
        generations = data.get("generations")
        return cls(
            metrics=_metrics(data.get("metrics")),
            subjects={s: _metrics(m) for s, m in (data.get("subjects") or {}).items()},
            settings=dict(data.get("settings") or {}),
            data=dict(data.get("data") or {}),
            skipped_rows=None if skipped is None else dict(skipped),
            generations=None if generations is None else dict(generations),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"metrics": {k: v.to_dict() for k, v in self.metrics.items()}}
        if self.subjects:
            out["subjects"] = {
                s: {k: v.to_dict() for k, v in m.items()} for s, m in self.subjects.items()
            }
        out["settings"] = self.settings
        out["data"] = self.data
        if self.skipped_rows is not None:
            out["skipped_rows"] = self.skipped_rows
        if self.generations is not None:
            out["generations"] = self.generations
        return out

    @property
    def output_type(self) -> str:
        return str(self.settings.get("output_type", ""))


@dataclass
class GroupResults:
    """Aggregates over a group: the tasks of a task group (``task=arc``) or the subjects
    of one task (MMLU's categories and overall)."""

    metrics: dict[str, GroupMetric] = _doc("metric name -> micro and macro", factory=dict)
    tasks: list[str] | None = _doc("member tasks, for a task group", None)
    subjects: list[str] | None = _doc("member subjects, for a subject group", None)
    source: str | None = _doc("where a derived group's definition comes from (a URL)", None)
    details: dict[str, Any] | None = _doc(
        "per-member parts of a derived group (leaderboard: raw, baseline, score)", None
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupResults:
        data = _need(data, "a group's results")
        tasks, subjects = data.get("tasks"), data.get("subjects")
        return cls(
            metrics={k: GroupMetric.from_dict(v) for k, v in (data.get("metrics") or {}).items()},
            tasks=None if tasks is None else [str(t) for t in tasks],
            subjects=None if subjects is None else [str(s) for s in subjects],
            source=data.get("source"),
            details=data.get("details"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.tasks is not None:
            out["tasks"] = self.tasks
        if self.subjects is not None:
            out["subjects"] = self.subjects
        out["metrics"] = {k: v.to_dict() for k, v in self.metrics.items()}
        if self.source is not None:
            out["source"] = self.source
        if self.details is not None:
            out["details"] = self.details
        return out

    @property
    def members(self) -> list[str]:
        return list(self.tasks or self.subjects or [])


@dataclass
class DataOrigin:
    """Where the datasets were read from: what the run actually read, per task, and the
    run's ``data=`` option."""

    source: str = _doc(
        "what was read: bundled, local, hub, files (the user's own data files: "
        "`task.dataset.data_files`), lm-eval (a bridged task: lm-eval's dataset or its "
        "`dataset_kwargs` files, named in `tasks`), several joined by +"
    )
    dir: str | None = _doc("the data folder of the `data=` option (local, bundled)", None)
    option: str | None = _doc(
        "the run's `data=` option (bundled, local or hub); absent in results written "
        "before it was recorded, whose `source` is the option",
        None,
    )
    tasks: dict[str, str] = _doc(
        "task -> what it read: bundled, local <dir>, hub, files <paths>, lm-eval dataset "
        "<path>[, files <paths>] (several joined by ; when its splits differ)",
        factory=dict,
    )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DataOrigin:
        data = _need(data or {}, "data_source")
        tasks = data.get("tasks") or {}
        return cls(
            str(data.get("source", "?")),
            data.get("dir"),
            None if data.get("option") is None else str(data["option"]),
            {str(k): str(v) for k, v in tasks.items()} if isinstance(tasks, dict) else {},
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"source": self.source, "dir": self.dir}
        if self.option is not None:
            out["option"] = self.option
        if self.tasks:
            out["tasks"] = self.tasks
        return out


@dataclass
class Truncation:
    """Requests whose context was cut to the model's context window."""

    requests: int = _doc("number of truncated requests", 0)
    tokens: int = _doc("tokens cut from the left, summed", 0)
    by_task: dict[str, int] = _doc("task -> truncated requests", factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Truncation:
        data = _need(data or {}, "truncation")
        return cls(
            int(data.get("requests", 0)),
            int(data.get("tokens", 0)),
            {str(k): int(v) for k, v in (data.get("by_task") or {}).items()},
        )

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "tokens": self.tokens, "by_task": self.by_task}


@dataclass
class Results:
    """``results.json``: written once, atomically, when a run succeeds."""

    tasks: dict[str, TaskResults] = _doc("task name -> its results", factory=dict)
    groups: dict[str, GroupResults] = _doc(
        "group name -> aggregates (task groups and subject groups)", factory=dict
    )
    model: dict[str, Any] = _doc(
        "the model's identity (backend, path, file digests, dtype, max_length, ...; "
        "`in_memory: true` for a model passed to `mill.evaluate`)",
        factory=dict,
    )
    data_source: DataOrigin = _doc(
        "where the datasets were read from", factory=lambda: DataOrigin("?")
    )
    truncation: Truncation = _doc("contexts cut to the context window", factory=Truncation)
    seconds: float = _doc("wall-clock seconds of the evaluation", 0.0)
    usage: dict[str, Any] | None = _doc(
        "served models only: per task, requests sent and prompt/completion token totals as "
        "the server reported them; absent for in-process backends",
        None,
    )
    samples_sha256: dict[str, str] = _doc(
        "task -> SHA-256 of `samples/<task>.jsonl` as the run wrote it; `mill.load`, "
        "`report` and `compare` refuse a file that no longer matches",
        factory=dict,
    )
    judge: dict[str, Any] | None = _doc(
        "judged runs: the judge's identity, its settings, the rubric templates' sha256, the "
        "conversation format, judgment counts (and, for `mill judge`, the source run); "
        "absent for runs without a judge",
        None,
    )
    schema_version: int = _doc("version of this schema", SCHEMA_VERSION)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Results:
        data = _need(data, "results")
        version = int(data.get("schema_version", 1))
        if version > SCHEMA_VERSION:
            raise ResultsError(
                f"results schema_version {version} is newer than this Mill reads "
                f"({SCHEMA_VERSION}); upgrade mill-eval to read it"
            )
        return cls(
            tasks={k: TaskResults.from_dict(v) for k, v in (data.get("tasks") or {}).items()},
            groups={k: GroupResults.from_dict(v) for k, v in (data.get("groups") or {}).items()},
            model=dict(data.get("model") or {}),
            data_source=DataOrigin.from_dict(data.get("data_source") or {}),
            truncation=Truncation.from_dict(data.get("truncation") or {}),
            seconds=float(data.get("seconds", 0.0)),
            usage=None if data.get("usage") is None else dict(data["usage"]),
            samples_sha256={str(k): str(v) for k, v in (data.get("samples_sha256") or {}).items()},
            judge=None if data.get("judge") is None else dict(data["judge"]),
            schema_version=version,
        )

    def to_dict(self) -> dict[str, Any]:
        out = {
            "schema_version": self.schema_version,
            "tasks": {k: v.to_dict() for k, v in self.tasks.items()},
            "groups": {k: v.to_dict() for k, v in self.groups.items()},
            "model": self.model,
            "data_source": self.data_source.to_dict(),
            "truncation": self.truncation.to_dict(),
            "seconds": self.seconds,
        }
        if self.usage is not None:
            out["usage"] = self.usage
        if self.samples_sha256:
            out["samples_sha256"] = self.samples_sha256
        if self.judge is not None:
            out["judge"] = self.judge
        return out

    @classmethod
    def read(cls, path: str | Path) -> Results:
        """Read a ``results.json`` file (ResultsError when it is not one)."""
        return cls.from_dict(read_json(Path(path)))

    def metric(self, task: str, metric: str) -> MetricValue:
        """The aggregate of ``metric`` on ``task`` (KeyError naming what exists)."""
        if task not in self.tasks:
            raise KeyError(f"no task {task!r}; tasks: {', '.join(self.tasks)}")
        rows = self.tasks[task].metrics
        if metric not in rows:
            raise KeyError(f"task {task!r} has no metric {metric!r}; metrics: {', '.join(rows)}")
        return rows[metric]

    def data_origin(self, task: str) -> str:
        """What ``task`` read: ``bundled``, ``local <dir>``, ``hub``, ``files <paths>``
        (files outside the ``data=`` option's folder: ``task.dataset.data_files``) or
        ``lm-eval dataset <path>[, files <paths>]``; splits that differ are joined by ``; ``.
        The record of the run when it has one (``data_source.tasks``)."""
        if task in self.data_source.tasks:
            return self.data_source.tasks[task]
        lm = self.tasks[task].data.get("lm_eval") if task in self.tasks else None
        if isinstance(lm, dict):
            path, name = lm.get("dataset_path"), lm.get("dataset_name")
            kwargs = lm.get("dataset_kwargs") or {}
            files = kwargs.get("data_files") if isinstance(kwargs, dict) else None
            if isinstance(files, dict):
                files = ", ".join(str(v) for v in files.values())
            elif isinstance(files, list):
                files = ", ".join(str(v) for v in files)
            where = f"{path}/{name}" if name else str(path)
            if files:
                return f"lm-eval dataset {where}, files {files}"
            return f"lm-eval dataset {where}"
        source = self.data_source
        option = source.option or source.source
        configured = f"local {source.dir}" if option == "local" and source.dir else option
        origins = self.tasks[task].data if task in self.tasks else {}
        folder = Path(source.dir).resolve() if source.dir else None
        found: list[str] = []
        outside: list[str] = []
        for origin in origins.values():
            if not isinstance(origin, dict):
                continue
            if "hub" in origin:
                found.append("hub")
            elif "file" in origin:
                path = Path(str(origin["file"]))
                if folder is not None and path.resolve().is_relative_to(folder):
                    found.append(configured)
                else:
                    outside.append(str(path))
                    found.append("files")
        if not found:  # written before the origins were recorded
            return configured
        kinds = list(dict.fromkeys(found))
        files = f"files {', '.join(dict.fromkeys(outside))}"
        return "; ".join(files if k == "files" else k for k in kinds)

    @staticmethod
    def _kind(origin: str) -> str:
        """The short label of :meth:`data_origin`'s text (``data=`` in report titles)."""
        parts = []
        for part in origin.split("; "):
            if part.startswith("lm-eval dataset"):  # its files, if any, in data_origin
                parts.append("lm-eval")
            else:
                parts.append(part.split(" ")[0])
        return "+".join(dict.fromkeys(parts))

    def bundled_tasks(self) -> list[str]:
        """Tasks scored on the excerpts bundled with Mill (not benchmark scores)."""
        return [t for t in self.tasks if self.data_origin(t) == "bundled"]

    @property
    def data_label(self) -> str:
        """The short data label of report titles: ``bundled``, ``local``, ``hub``, ``lm-eval``
        (every task bridged), or several joined by ``+``."""
        kinds = [self._kind(self.data_origin(task)) for task in self.tasks]
        return "+".join(dict.fromkeys("+".join(kinds).split("+"))) or self.data_source.source

    def flat(self) -> dict[str, float]:
        """Every number as ``<task>/<metric>`` and ``<task>/<metric>_stderr`` (subjects as
        ``<task>/<subject>/<metric>``, groups as ``<group>/<metric>_micro|_macro``): the
        form trackers log."""
        out: dict[str, float] = {}

        def put(prefix: str, row: MetricValue) -> None:
            if isinstance(row.value, (int, float)):
                out[prefix] = float(row.value)
            if isinstance(row.stderr, (int, float)):
                out[f"{prefix}_stderr"] = float(row.stderr)

        for name, task in self.tasks.items():
            for metric, row in task.metrics.items():
                put(f"{name}/{metric}", row)
            for subject, rows in task.subjects.items():
                for metric, row in rows.items():
                    put(f"{name}/{subject}/{metric}", row)
        for name, group in self.groups.items():
            for metric, both in group.metrics.items():
                for kind, row in both.kinds():
                    put(f"{name}/{metric}_{kind}", row)
        return out


# --- manifest.json ----------------------------------------------------------------------


@dataclass
class Manifest:
    """``manifest.json``: what reproduces a run and how it went; written when the run
    starts and rewritten as it goes (``status``: running, succeeded or failed). Fields
    not known yet (or not applicable) are absent from the file."""

    status: str = _doc("running, succeeded or failed", "running")
    started: str | None = _doc("UTC start time (ISO 8601)", None)
    argv: list[str] | None = _doc("the command line", None)
    git_sha: str | None = _doc("commit of the Mill checkout, when installed from git", None)
    versions: dict[str, str | None] | None = _doc("versions of Mill and its libraries", None)
    seeds: dict[str, int] | None = _doc("seeds (evaluation and bootstrap)", None)
    attempts: int | None = _doc("how many times the run was started (resumed runs)", None)
    first_started: str | None = _doc("start time of the first attempt (resumed runs)", None)
    model: dict[str, Any] | None = _doc("the model's identity, once loaded", None)
    device: dict[str, Any] | None = _doc("platform, python, torch threads, GPUs", None)
    world_size: int | None = _doc("number of data-parallel processes", None)
    cache: dict[str, Any] | None = _doc("response cache: dir, entries, hits, computed", None)
    datasets: dict[str, Any] | None = _doc("task -> data origins", None)
    tasks: dict[str, Any] | None = _doc("task -> settings", None)
    truncation: dict[str, Any] | None = _doc("as in results.json", None)
    ranks: list[dict[str, Any]] | None = _doc("per-process request and cache counts", None)
    judge: dict[str, Any] | None = _doc("judged runs: as in results.json", None)
    execution: dict[str, Any] | None = _doc(
        "code tasks: the sandbox settings the programs ran under, and whether unsafe", None
    )
    error: str | None = _doc("first line of the error, for a failed run", None)
    traceback: str | None = _doc("traceback of a failure that is Mill's own bug", None)
    seconds: float | None = _doc("wall-clock seconds, once finished", None)
    phases: dict[str, float] | None = _doc(
        "wall seconds of each phase of the run, in order (start, data, model, requests, "
        "scoring, ..., report), as the `phases:` line of `mill.log`; once finished",
        None,
    )
    results_sha256: str | None = _doc(
        "SHA-256 of `results.json` as the run wrote it (checked on read), once succeeded", None
    )
    extra: dict[str, Any] = _doc("keys this version of the schema does not name", factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Manifest:
        data = dict(_need(data, "manifest"))
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: data.pop(k) for k in list(data) if k in names}
        return cls(**known, extra=data)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if value is not None:
                out[f.name] = value
        out.update(self.extra)
        return out

    @classmethod
    def read(cls, path: str | Path) -> Manifest:
        return cls.from_dict(read_json(Path(path)))


# --- samples/<task>.jsonl -------------------------------------------------------------


def sample_from_dict(data: dict[str, Any]) -> SampleRecord:
    """One line of ``samples/<task>.jsonl`` back as a :class:`~mill.record.SampleRecord`."""
    data = dict(_need(data, "a sample line"))
    response = dict(_need(data.pop("response", {}), "a sample's response"))
    names = {f.name for f in fields(DocOutput)}
    model_response = DocOutput(**{k: v for k, v in response.items() if k in names})
    names = {f.name for f in fields(SampleRecord)}
    return SampleRecord(**{k: v for k, v in data.items() if k in names}, response=model_response)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from ``path`` (ResultsError naming the file when it is not one)."""
    data = files.read_json(path, ResultsError)
    if not isinstance(data, dict):
        raise ResultsError(f"{path} must hold a JSON object")
    return data


def judge_label(identity: dict[str, Any] | None) -> str:
    """How a judge is named wherever one is shown: a served judge by its model and base URL
    (credentials stripped), a local one by its name or class."""
    ident = identity or {}
    if ident.get("base_url"):
        model = ident.get("model") or ident.get("name") or "?"
        return f"{model} at {redact_url(str(ident['base_url']), drop=True)}"
    return str(ident.get("name") or ident.get("class") or "?")
