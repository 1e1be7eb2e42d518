"""The sample line written to ``samples/<task>.jsonl``: a doc, its :class:`~mill.types.DocOutput`,
the prediction and the per-sample metrics; the file's compact format (:func:`compact_lines`)
and its one reader (:func:`read_sample_rows`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mill.errors import MillError
from mill.files import read_jsonl, sha256_json
from mill.types import Doc, DocOutput

SAMPLES_FORMAT = 2
"""The format of a final ``samples/<task>.jsonl``, each line's ``format``. 1 (lines without
``format``, Mill before 2026-12-06): every line holds its whole prompt and its token ids.
2: a line may hold only the end of its prompt (``response.input_from``), and token ids only
with ``runner.sample_tokens=true``."""

READ_FORMATS = (1, 2)
"""The formats :func:`read_sample_rows` reads."""

SHARED_MIN_CHARS = 256
"""The shortest prompt beginning stored once for several lines (a few-shot prefix)."""

TOKEN_FIELDS = ("input_tokens", "output_tokens")
"""The response's token ids: recomputable from its text and the tokenizer the model's
identity names, kept in the samples only with ``runner.sample_tokens=true``."""


@dataclass
class SampleRecord:
    """One line of ``samples/<task>.jsonl``."""

    task: str
    subject: str
    doc_id: int
    fewshot_ids: list[int]
    choices: list[str]
    gold: Any
    prediction: Any
    metrics: dict[str, Any]
    response: DocOutput
    doc_hash: str
    prompt_hash: str
    extra: dict[str, Any] | None = None
    """Task-specific additions (lm-eval tasks: the lm-eval doc, raw and filtered responses);
    left out of the line when None."""
    execution: list[dict[str, Any]] | None = None
    """Tasks that run programs: each generation's verdict (status, message, duration_s,
    output_tail; ``mill.execution.Verdict``), in repeat order; left out when None."""
    picks: dict[str, int] | None = None
    """LOGPROBS: each selected metric's own choice (``acc``: the argmax of the
    log-likelihoods, ``acc_norm``: of the length-normalised ones, ...; ``Metric.pick``), by
    metric name; left out when no metric picks (and in files written before Mill kept it)."""

    @classmethod
    def build(
        cls, doc: Doc, response: DocOutput, prediction: Any, metrics: dict[str, Any]
    ) -> SampleRecord:
        return cls(
            task=doc.task,
            subject=doc.subject,
            doc_id=doc.id,
            fewshot_ids=list(doc.fewshot_ids),
            choices=list(doc.choices),
            gold=doc.gold,
            prediction=prediction,
            metrics=metrics,
            response=response,
            doc_hash=sha256_json(doc.item),
            prompt_hash=sha256_json(response.input),
        )

    def to_json(self, tokens: bool = True) -> dict[str, Any]:
        """The line as a dict; without the response's token ids unless ``tokens``."""
        # the fields as they are: dataclasses.asdict deep-copied every token id, most of a
        # fake-model run's time
        out = {**vars(self), "response": dict(vars(self.response))}
        for optional in ("extra", "execution", "picks"):
            if out.get(optional) is None:
                out.pop(optional, None)
        for generative in ("text_post_processed", "reasoning_unfinished", "hit_max_gen_toks"):
            if out["response"].get(generative) is None:  # other output types
                out["response"].pop(generative, None)
        if not tokens:
            for name in TOKEN_FIELDS:
                out["response"].pop(name, None)
        return out


def _shared_prefix(inputs: list[str]) -> str:
    """The beginning every prompt of a few-shot group shares, cut after its last blank line
    (each line keeps its own question whole); empty when short or only one prompt."""
    if len(inputs) < 2:
        return ""
    common = os.path.commonprefix(inputs)
    cut = common.rfind("\n\n")
    if cut >= 0:
        common = common[: cut + 2]
    return common if len(common) >= SHARED_MIN_CHARS else ""


def compact_lines(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A task's sample lines (sorted by subject and doc id) as the final file holds them,
    format :data:`SAMPLES_FORMAT`: the lines of one subject with the same few-shot
    examples share their prompt's beginning (the few-shot prefix); the first of them holds
    the whole prompt, each other one the rest after ``response.input_from`` = ``{"doc_id",
    "chars"}`` (the first ``chars`` characters of that doc's prompt come first)."""
    groups: dict[tuple[str, tuple[int, ...]], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("fewshot_ids"):
            groups.setdefault((row["subject"], tuple(row["fewshot_ids"])), []).append(row)
    refer: dict[int, dict[str, int]] = {}
    for members in groups.values():
        shared = _shared_prefix([str(m["response"]["input"]) for m in members])
        for member in members[1:] if shared else []:
            refer[id(member)] = {"doc_id": int(members[0]["doc_id"]), "chars": len(shared)}
    out = []
    for original in rows:
        row = {"format": SAMPLES_FORMAT, **original}
        source = refer.get(id(original))
        if source is not None:
            response = dict(row["response"])
            text = str(response.pop("input"))
            row["response"] = {"input_from": source, "input": text[source["chars"] :], **response}
        out.append(row)
    return out


def expand_lines(rows: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """The lines of a samples file, each with its whole prompt again (the inverse of
    :func:`compact_lines`; a format-1 line is as it was). A format this Mill does not read,
    or a line whose ``input_from`` names no doc of the file, is a :class:`MillError`."""
    for number, row in enumerate(rows, 1):
        version = row.get("format", 1)
        if version not in READ_FORMATS:
            raise MillError(
                f"{path}:{number} is samples format {version!r}; this Mill reads formats "
                f"{' and '.join(map(str, READ_FORMATS))}: read it with a newer Mill "
                "(pip install -U mill-eval)"
            )
    whole = {
        (row.get("subject"), row.get("doc_id")): row["response"].get("input")
        for row in rows
        if isinstance(row.get("response"), dict) and "input_from" not in row["response"]
    }
    out = []
    for number, row in enumerate(rows, 1):
        response = row.get("response")
        if isinstance(response, dict) and "input_from" in response:
            source = response["input_from"]
            head = whole.get((row.get("subject"), (source or {}).get("doc_id")))
            if not isinstance(head, str) or not isinstance(source.get("chars"), int):
                raise MillError(
                    f"{path}:{number}: response.input_from {source!r} names no prompt of "
                    "this file; the samples file is damaged: rerun the task"
                )
            response = {k: v for k, v in response.items() if k != "input_from"}
            response["input"] = head[: source["chars"]] + str(response.get("input", ""))
            row = {**row, "response": response}
        out.append(row)
    return out


def read_sample_rows(
    path: str | Path, what: str = "samples", error: type[Exception] = MillError
) -> list[dict[str, Any]]:
    """The lines of ``samples/<task>.jsonl`` (either format), each with its whole prompt:
    the one reader of samples files (:func:`mill.results.read_samples` types them).
    ``error`` names the file when it cannot be read, or holds a format Mill does not read."""
    path = Path(path)
    rows = read_jsonl(path, what, error)
    try:
        return expand_lines(rows, path)
    except MillError as err:
        raise error(str(err)) from err
