"""The served client's transport: prompts grouped into HTTP requests (``batch_prompts`` of one
task and one payload each), sent concurrently through
:class:`~mill.model.served.api_client.JSONClient`
(which owns HTTP, retries, deadlines and the redaction of secrets), each answer's envelope
checked (one choice per prompt, in index order), the server's usage counted per task and the
served model watched for a change mid-run. What the requests say is the protocol's
(:mod:`mill.model.served.openai_protocol`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mill.errors import ModelError
from mill.model.served.api_client import JSONClient


@dataclass
class Usage:
    """What one task cost on the server."""

    requests: int = 0
    """HTTP requests that succeeded (retries not counted)."""
    prompts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def add(self, body: dict[str, Any], prompts: int) -> None:
        usage = body.get("usage") or {}
        if not isinstance(usage, dict):
            raise ValueError(f"usage is {type(usage).__name__}")
        self.requests += 1
        self.prompts += prompts
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)


@dataclass
class Call:
    """One HTTP request: several prompts (``batch_prompts``) of one task."""

    task: str
    prompts: list[Any]
    payload: dict[str, Any]
    label: str
    items: list[Any] = field(default_factory=list)


def group_calls(
    items: list[tuple[str, Any, dict[str, Any], Any]], batch_prompts: int
) -> list[Call]:
    """Group (task, prompt, payload, item) into requests of up to ``batch_prompts`` prompts
    with one task and one payload, in the given order (labels: the caller's)."""
    calls: list[Call] = []
    open_calls: dict[str, Call] = {}
    for task, prompt, payload, item in items:
        key = json.dumps([task, payload], sort_keys=True)
        call = open_calls.get(key)
        if call is None or len(call.prompts) >= batch_prompts:
            call = open_calls[key] = Call(task, [], payload, "")
            calls.append(call)
        call.prompts.append(prompt)
        call.items.append(item)
    return calls


def same_server_model(
    first: dict[str, Any] | None, body: dict[str, Any], label: str, base_url: str
) -> dict[str, Any]:
    """The ``model`` and ``system_fingerprint`` a response names (those it has), checked
    against the run's first response: a server that starts answering with another model
    or build mid-run stops the run (ModelError naming both), since its scores (or a
    judge's grades) would stop being comparable."""
    seen = {k: body[k] for k in ("model", "system_fingerprint") if body.get(k) is not None}
    if first is None:
        return seen
    changed = {k for k in set(first) | set(seen) if first.get(k) != seen.get(k)}
    if changed:
        was = ", ".join(f"{k}={first.get(k)!r}" for k in sorted(changed))
        now = ", ".join(f"{k}={seen.get(k)!r}" for k in sorted(changed))
        raise ModelError(
            f"{label}: the server at {base_url} changed mid-run: first {was}, now {now}; "
            "its answers are no longer comparable. Pin the served model and rerun "
            "(runner.resume=true keeps the answers cached before the change)"
        )
    return first


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]


class CompletionsTransport:
    """Sends a run's :class:`Call` s to one server and hands each its choices in prompt
    order; keeps the server's usage per task and the model it first answered as."""

    def __init__(self, client: JSONClient, endpoint: str) -> None:
        self.client = client
        self.endpoint = endpoint
        self.base_url = client.base_url  # credentials masked: for messages
        self.usage: dict[str, Usage] = {}
        self.served: dict[str, Any] | None = None
        """The first response's ``model`` and ``system_fingerprint`` (see
        :func:`same_server_model`)."""

    def usage_summary(self) -> dict[str, dict[str, int]]:
        """Per task: HTTP requests, prompts, prompt and completion tokens (this process)."""
        return {task: dict(vars(u)) for task, u in sorted(self.usage.items())}

    def send(
        self,
        calls: list[Call],
        body: Callable[[Call], dict[str, Any]],
        finish: Callable[[Call, list[dict[str, Any]]], None],
    ) -> None:
        """POST each call's ``body`` to the client's endpoint (concurrently, retried by the
        client); ``finish(call, choices)`` runs as each answer arrives."""

        def request(call: Call) -> tuple[str, str, Any, str]:
            return "POST", self.endpoint, body(call), call.label

        def done(call: Call, answer: Any) -> None:
            choices = answer.get("choices") if isinstance(answer, dict) else None
            if not isinstance(choices, list) or len(choices) != len(call.prompts):
                n = len(choices) if isinstance(choices, list) else 0
                raise ModelError(
                    f"{call.label}: the server answered {n} choices for "
                    f"{len(call.prompts)} prompts (server model.base_url={self.base_url})"
                )
            indexes = [c.get("index", 0) if isinstance(c, dict) else None for c in choices]
            if not all(_is_int(i) for i in indexes):
                raise ModelError(
                    f"{call.label}: the server's answer has a choice that is not an object "
                    f"with an integer index (server model.base_url={self.base_url})"
                )
            ordered = [c for _, c in sorted(zip(indexes, choices, strict=True), key=_first)]
            self.served = same_server_model(self.served, answer, call.label, self.base_url)
            try:
                self.usage.setdefault(call.task, Usage()).add(answer, len(call.prompts))
            except (TypeError, ValueError) as err:
                raise ModelError(
                    f"{call.label}: the server's usage counts are not numbers ({err}) "
                    f"(server model.base_url={self.base_url})"
                ) from err
            finish(call, ordered)

        self.client.run_all(calls, request, done)
