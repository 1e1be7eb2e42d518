"""A finished run's saved answers as a model: ``mill judge`` judges them again without
loading the model that wrote them.

:class:`SavedAnswers` answers each generation request with the text the source run
saved for it (``samples/<task>.jsonl``: the generations under ``response.text``, later
turns under ``extra.turns``) and refuses every other request. Its identity names the
source run (path and the sha256 of its ``results.json``) and the model that wrote the
answers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mill.errors import ModelError
from mill.files import sha256_file
from mill.model.base import LanguageModel, ignore_response
from mill.record import read_sample_rows
from mill.types import OnResponse, OutputType, Request, Response


class SavedAnswers(LanguageModel):
    """The answers of the finished run in ``run`` (see the module doc)."""

    REPLAYS = True
    """Answers from a file: a task's repeats are the file's own (no sampling needed)."""

    def __init__(self, run: str, name: str = "saved", model: dict[str, Any] | None = None) -> None:
        self.run = Path(run)
        self.name = name
        self.source_model = dict(model or {})
        results = self.run / "results.json"
        self.results_sha256 = sha256_file(results)
        self.answers: dict[tuple[str, str, int], list[str]] = {}
        self.hit_max: dict[tuple[str, str, int], list[bool | None]] = {}
        self.turns: dict[tuple[str, str, int], list[str]] = {}
        for path in sorted((self.run / "samples").glob("*.jsonl")):
            if path.name.endswith(".partial.jsonl"):
                continue
            for row in read_sample_rows(path, "saved answers", ModelError):
                key = (str(row["task"]), str(row["subject"]), int(row["doc_id"]))
                self.answers[key] = [str(t) for t in row["response"].get("text") or []]
                self.hit_max[key] = list(row["response"].get("hit_max_gen_toks") or [])
                self.turns[key] = [str(t) for t in (row.get("extra") or {}).get("turns") or []]

    def _missing(self, request: Request) -> ModelError:
        return ModelError(
            f"{self.run}: no saved answer for {request.id}; judge a finished run of the same "
            "task (its samples/ hold the answers)"
        )

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        out = []
        for request in requests:
            key = (request.task, request.subject, request.doc_id)
            hits: list[bool | None] = []  # later turns: the samples record no end for them
            if request.role.startswith("turn") and request.role[4:].isdigit():
                texts, at = self.turns.get(key, []), int(request.role[4:]) - 1
            else:
                texts, at = self.answers.get(key, []), request.index
                hits = self.hit_max.get(key, [])
            if at >= len(texts):
                raise self._missing(request)
            response = Response(
                request_id=request.id,
                text=texts[at],
                hit_max_gen_toks=hits[at] if at < len(hits) else None,
            )
            on_response(request, response)
            out.append(response)
        return out

    def refusal(self, output_type: OutputType) -> str | None:
        if output_type is OutputType.GENERATIVE:
            return None
        return "a finished run's saved answers can only be judged (generative tasks)"

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ModelError(self.refusal(OutputType.LOGPROBS) or "")

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ModelError(self.refusal(OutputType.PERPLEXITY) or "")

    def identity(self) -> dict[str, Any]:
        return {
            "class": "SavedAnswers",
            "name": self.name,
            "source_run": str(self.run.resolve()),
            "source_results_sha256": self.results_sha256,
            "source_model": self.source_model,
        }
