"""Credentials in URLs, kept out of everything Mill writes or prints.

A URL may carry a secret in its user info (``http://alice:secret@host/v1``) or in a query
parameter (``?api_key=...``, ``?sig=...``). Mill needs the URL itself to reach the server,
so the secret stays in the in-memory config; every place that serialises config, identity
or messages passes them through :func:`redact` / :func:`redact_text`: the experiment
folder's files (``manifest.json``, ``results.json``, ``resolved.yaml``, ``.hydra/``), the
response cache's identity, the sinks' parameters, the sweep folder, the console's error
lines and every log record (:func:`redact_logs`). The rule is about URLs, not about config
keys, so it covers any URL-valued setting (a model's ``base_url``, a judge's) and a URL
quoted inside a message or a command line alike.

* user info becomes ``***`` (``http://***@host/v1``);
* a query parameter whose name has a word like key, token, secret, password, signature,
  sig, auth or credential (``api_key``, ``X-Amz-Signature``, ``accessToken``) keeps its name
  and loses its value (``?api_key=***``); others (``api-version``) are kept.

:func:`redact_url` with ``drop=True`` removes them instead: the form a model's identity
uses, so that the scheme, host, port, path and the other query parameters decide which
cached scores a run may reuse, and a changed password does not.
"""

from __future__ import annotations

import logging
import re
import urllib.parse
from typing import Any, TypeVar

T = TypeVar("T")

MASK = "***"

_SECRET_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "pwd",
        "signature",
        "sig",
        "auth",
        "authorization",
        "credential",
        "credentials",
    }
)
"""A query parameter is a credential when one of the words of its name is one of these."""

_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>`]+")
"""A URL inside any text (it ends at white space or a quote)."""

_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*://)?[^/\s\"'<>`]*@")
"""The user info of a URL: everything between ``://`` (or the start, in a URL without its
scheme) and the last ``@`` before the path (a raw ``?`` or ``#`` in a password too)."""


def _words(name: str) -> list[str]:
    """``X-Amz-Signature`` -> [x, amz, signature]; ``accessToken`` -> [access, token]."""
    name = urllib.parse.unquote(name)
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_param(name: str) -> bool:
    """Whether a query parameter called ``name`` carries a credential."""
    return any(word in _SECRET_WORDS for word in _words(name))


def redact_url(url: str, drop: bool = False) -> str:
    """``url`` without the secrets of its user info and query: masked with ``***``, or
    removed with ``drop`` (user info gone, secret parameters gone)."""
    match = _USERINFO.match(url)
    if match:
        url = (match.group(1) or "") + ("" if drop else MASK + "@") + url[match.end() :]
    head, at, rest = url.partition("?")
    if not at:
        return head
    query, hash_, fragment = rest.partition("#")
    kept = []
    for part in query.split("&"):
        name, eq, _ = part.partition("=")
        if eq and is_secret_param(name):
            if drop:
                continue
            part = f"{name}={MASK}"
        kept.append(part)
    query = "&".join(kept)
    return head + ("?" + query if query or not drop else "") + hash_ + fragment


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def redact(value: T) -> T:
    """A copy of ``value`` (nested dicts, lists, tuples, strings) with every string passed
    through :func:`redact_text`; other values as they are."""
    if isinstance(value, str):
        return redact_text(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [redact(v) for v in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(redact(v) for v in value)  # type: ignore[return-value]
    return value


def secrets_of(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[list[Any], Any]]:
    """``(path, original value)`` of every string that :func:`redact` changes: what a
    process that reads a redacted config back needs to restore it (:func:`restore`)."""
    if isinstance(value, str):
        return [(list(path), value)] if redact_text(value) != value else []
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return []
    found = []
    for key, item in items:
        found += secrets_of(item, (*path, key))
    return found


def restore(value: Any, secrets: list[tuple[list[Any], Any]]) -> Any:
    """``value`` (a redacted config, read back) with the originals of :func:`secrets_of`
    put back in place (in place, and returned)."""
    for path, original in secrets:
        node = value
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = original
    return value


class _RedactedRecord(logging.LogRecord):
    """A log record whose message has its URLs redacted, whichever handler formats it."""

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        return redact_text(super().getMessage())


def redact_logs() -> None:
    """Every log record made from now on in this process (Mill's, Hydra's, libraries')
    has its message redacted, in ``mill.log`` and on the console alike."""
    if logging.getLogRecordFactory() is logging.LogRecord:
        logging.setLogRecordFactory(_RedactedRecord)
