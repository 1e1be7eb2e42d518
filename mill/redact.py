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

Text that came from a server (an error body echoing the request) may carry a credential
outside any URL, so :func:`redact_text` also masks

* the value of an ``Authorization`` scheme: ``Basic ***``, ``Bearer ***``;
* a name that ends in a credential word followed by ``=`` or ``:`` and a value of 6
  characters or more holding a letter (``api_key=***``, ``"api_key": "***"``,
  ``X-Api-Key: ***``);
* every credential registered by the code that holds it (:func:`register_secret`: the
  served client's API key, the URL's password and the ``Basic`` token made of them, also in
  base64), wherever it appears.

In URLs:

* user info becomes ``***`` (``http://***@host/v1``);
* a query parameter whose name has a word like key, token, secret, password, signature,
  sig, auth or credential (``api_key``, ``X-Amz-Signature``, ``accessToken``) keeps its name
  and loses its value (``?api_key=***``); others (``api-version``) are kept.

:func:`redact_url` with ``drop=True`` removes them instead: the form a model's identity
uses, so that the scheme, host, port, path and the other query parameters decide which
cached scores a run may reuse, and a changed password does not.

A sweep (``mill -m``) hands its config to a launcher, which may write it to disk: the SLURM
launcher (hydra-submitit-launcher) pickles the sweep's config, each job's overrides and
each job's result into its submitit folder. So a sweep's credentials never enter what the
launcher gets: :func:`hide_sweep_credentials` masks the composed sweep config in place and
puts the originals (masked URL -> URL) in the environment (``MILL_SWEEP_SECRETS``), which
every job inherits (submitit's local executor, and ``sbatch``, which exports the submitting
environment by default); each job's config gets them back from there
(:func:`sweep_job_config`) before anything is built.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
import logging
import os
import re
import sys
import urllib.parse
from collections.abc import Iterator
from typing import Any, TextIO, TypeVar, cast

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

_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
_URL = re.compile(_SCHEME + r"(?:(?!," + _SCHEME + r")[^\s\"'<>`])+")
"""A URL inside any text: it ends at white space, a quote, or a comma that starts another
URL (a sweep's values: ``base_url=http://a:x@h/v1,http://b:y@h/v1``)."""

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


_SECRETS: set[str] = set()
"""Credentials registered by the code that holds them (:func:`register_secret`)."""

MIN_SECRET_CHARS = 4
"""A registered credential shorter than this is not searched for in every text (it would
mask ordinary words); the patterns below still mask it where it is a header's or a named
parameter's value."""

_AUTH_VALUE = re.compile(r"\b(Basic|Bearer|Token|Digest)([ \t]+)(?!\*\*\*)[A-Za-z0-9+/=._~\-]{8,}")
"""An ``Authorization`` scheme and its credential (``Basic dXNlcjpw...``)."""

_NAMED_VALUE = re.compile(
    r"(?<![A-Za-z0-9_])([A-Za-z][A-Za-z0-9_.\-]*)(\\?[\"']?[ \t]*[:=][ \t]*\\?[\"']?)"
    r"(?!\*\*\*|(?:Basic|Bearer|Token|Digest)\b)([^\s\"'\\&,;{}()<>\[\]]*[A-Za-z][^\s\"'\\&,;{}()<>\[\]]*)"
)
"""``name=value``, ``name: value``, ``"name": "value"`` in free text (a JSON body, a header
echoed back); masked when the name's last word is a credential word and the value is at
least 6 characters long."""

_HINTS = (
    "basic",
    "bearer",
    "token",
    "digest",
    "key",
    "secret",
    "pass",
    "pwd",
    "sig",
    "auth",
    "cred",
)
"""Lower-case words one of which a text must hold for the patterns to be tried (speed)."""


def register_secret(*values: str | None) -> None:
    """Mask these strings (and their base64 forms) in every text redacted from now on in
    this process: credentials that the code holding them knows (an API key read from the
    environment, a URL's password and the ``Basic`` token it becomes)."""
    for value in values:
        if not value or len(value) < MIN_SECRET_CHARS:
            continue
        encoded = base64.b64encode(value.encode()).decode()
        _SECRETS.update((value, encoded, encoded.rstrip("=")))
        quoted = urllib.parse.quote(value, safe="")
        if quoted != value:
            _SECRETS.add(quoted)


def register_url_secrets(url: str, api_key: str | None = None) -> None:
    """:func:`register_secret` for what a served client sends: ``api_key``, the password of
    ``url``'s user info and its ``user:password`` (the ``Basic`` token's content), and the
    values of ``url``'s credential query parameters."""
    parsed = urllib.parse.urlsplit(url)
    found = [api_key]
    if parsed.username is not None:
        user = urllib.parse.unquote(parsed.username)
        password = urllib.parse.unquote(parsed.password or "")
        found += [password, f"{user}:{password}"]
    for name, value in urllib.parse.parse_qsl(parsed.query, keep_blank_values=False):
        if is_secret_param(name):
            found.append(value)
    register_secret(*found)


def register_config_secrets(config: Any, environ: Any = None) -> None:
    """The run's registry of secrets, built once from its resolved config before anything
    is built or printed: every URL's credentials (:func:`register_url_secrets`), the value
    of every environment variable a ``*api_key_env`` setting names (the served model's and
    the judge's API keys); the ``Authorization`` header a served client sends is made of
    these (``Bearer <key>``, ``Basic`` of the URL's user info). From then on every sink
    masks them (:func:`redact_text`; a server's answer, :func:`mask_secrets`)."""
    env = os.environ if environ is None else environ
    if isinstance(config, dict):
        for key, value in config.items():
            if isinstance(value, str) and str(key).endswith("api_key_env"):
                register_secret(env.get(value))
            else:
                register_config_secrets(value, env)
    elif isinstance(config, (list, tuple)):
        for value in config:
            register_config_secrets(value, env)
    elif isinstance(config, str) and "://" in config:
        for match in _URL.finditer(config):
            register_url_secrets(_split(match.group(0))[0])


def mask_secrets(value: T) -> T:
    """A copy of ``value`` (a decoded JSON answer: nested dicts, lists, strings) with every
    registered secret (:func:`register_secret`) replaced by ``***`` and nothing else
    changed: a server that echoes the request's ``Authorization`` header back in its answer
    puts no credential into samples or the response cache, and the model's other words stay
    as they were (no pattern is applied to them)."""
    if isinstance(value, str):
        for secret in sorted(_SECRETS, key=len, reverse=True):
            if secret in value:
                value = value.replace(secret, MASK)  # type: ignore[assignment]
        return value
    if isinstance(value, dict):
        return {k: mask_secrets(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list):
        return [mask_secrets(v) for v in value]  # type: ignore[return-value]
    return value


def _last_word_secret(name: str) -> bool:
    words = _words(name)
    return bool(words) and words[-1] in _SECRET_WORDS


def _mask_named(match: re.Match[str]) -> str:
    if len(match.group(3)) < 6 or not _last_word_secret(match.group(1)):
        return match.group(0)  # a credential is longer ("Answer key: A" is not one)
    return match.group(1) + match.group(2) + MASK


def redact_text(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`, then every
    registered credential, ``Authorization`` value and credential-named value masked."""
    if "://" in text:
        text = _URL.sub(lambda m: redact_url(m.group(0)), text)
    for secret in sorted(_SECRETS, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    lower = text.lower()
    if any(hint in lower for hint in _HINTS):
        text = _AUTH_VALUE.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
        text = _NAMED_VALUE.sub(_mask_named, text)
    return text


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


SWEEP_SECRETS_ENV = "MILL_SWEEP_SECRETS"
"""The credentials of a sweep's URLs (masked URL -> URL, JSON), for its jobs."""

_TRAILING = ")]},;"
"""Characters a URL in a sweep's grammar may be followed by (``choice(url1,url2)``)."""


def _string_leaves(node: Any, where: str = "") -> Iterator[tuple[str, Any, Any, str]]:
    """``(path, container, key, raw text)`` of every string of an OmegaConf config, read
    raw: an interpolation is its text, never resolved."""
    from omegaconf import DictConfig, ListConfig

    if isinstance(node, DictConfig):
        items: Any = [(k, f"{where}.{k!s}" if where else str(k)) for k in node.keys()]
    elif isinstance(node, ListConfig):
        items = [(i, f"{where}[{i}]") for i in range(len(node))]
    else:
        return
    for key, path in items:
        child = node._get_node(key)
        if isinstance(child, (DictConfig, ListConfig)):
            yield from _string_leaves(child, path)
        elif child is not None and isinstance(child._value(), str):
            yield path, node, key, child._value()


def _set(container: Any, key: Any, value: str) -> None:
    from omegaconf import open_dict, read_write

    with read_write(container), open_dict(container):
        container[key] = value


def _mask_in_place(cfg: Any) -> None:
    for _, container, key, raw in list(_string_leaves(cfg)):
        clean = redact_text(raw)
        if clean != raw:
            _set(container, key, clean)


def _split(url: str) -> tuple[str, str]:
    core = url.rstrip(_TRAILING)
    return core, url[len(core) :]


def hide_sweep_credentials(cfg: Any) -> None:
    """Mask every URL's credentials in a sweep's composed config (in place: its values and
    the command line's overrides in ``hydra.overrides``) and put the originals in the
    environment for the jobs. Two URLs that differ only in their credentials would be one
    masked URL: refused (ConfigError)."""
    from mill.errors import ConfigError

    originals: dict[str, str] = {}
    for where, _, _, raw in _string_leaves(cfg):
        for match in _URL.finditer(raw):
            url = _split(match.group(0))[0]
            masked = redact_url(url)
            if masked != url and originals.setdefault(masked, url) != url:
                raise ConfigError(
                    f"{where}: two URLs of the sweep differ only in their credentials "
                    f"({masked}); Mill hands a sweep's credentials to its jobs by their "
                    "masked URL: sweep over the server (host, port or path) or pass the key "
                    "with model.api_key_env"
                )
    if originals:
        _mask_in_place(cfg)
        os.environ[SWEEP_SECRETS_ENV] = json.dumps(originals)


def _has_mask(url: str) -> bool:
    """Whether ``url`` is a masked one (its user info or a secret parameter is ``***``)."""
    return (
        f"://{MASK}@" in url or re.search(rf"[?&][^=&#]+={re.escape(MASK)}(&|#|$)", url) is not None
    )


def sweep_job_config(cfg: Any) -> Any:
    """A job of a sweep: a copy of its config with the credentials that
    :func:`hide_sweep_credentials` masked put back from the environment; ``cfg`` itself
    (which Hydra returns as the job's result, and the SLURM launcher pickles) is masked in
    place, a credential its own config files hold included. A masked URL whose original
    is not in the environment: ConfigError naming the setting."""
    from mill.errors import ConfigError

    text = os.environ.get(SWEEP_SECRETS_ENV)
    originals: dict[str, str] = json.loads(text) if text else {}
    real = copy.deepcopy(cfg)
    for where, container, key, raw in list(_string_leaves(real)):

        def back(match: re.Match[str], where: str = where) -> str:
            url, tail = _split(match.group(0))
            if url in originals:
                return originals[url] + tail
            if _has_mask(url):
                raise ConfigError(
                    f"{where}={url!r} holds a credential that the sweep keeps out of its "
                    f"files, and this job's environment has no {SWEEP_SECRETS_ENV} to put "
                    "it back: let the launcher pass on the environment of the shell that "
                    "runs mill -m (sbatch exports it by default; not "
                    "hydra.launcher.additional_parameters.export=NONE)"
                )
            return match.group(0)

        new = _URL.sub(back, raw)
        if new != raw:
            _set(container, key, new)
    _mask_in_place(cfg)
    return real


class _RedactedRecord(logging.LogRecord):
    """A log record whose message has its URLs redacted, whichever handler formats it."""

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        return redact_text(super().getMessage())


class RedactingStream:
    """A text stream (``sys.stdout``, ``sys.stderr``) whose every write passes through
    :func:`redact_text`; everything else (``isatty``, ``fileno``, ``flush``) is the wrapped
    stream's. Whatever prints to the console (Hydra's ``--cfg``, ``--help`` and ``--info``,
    progress lines, rich tables, a traceback) then shows no credential."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(redact_text(text) if isinstance(text, str) else text)
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        if name == "stream":
            raise AttributeError(name)
        return getattr(self.stream, name)


def redact_console() -> tuple[TextIO, TextIO]:
    """Make ``sys.stdout`` and ``sys.stderr`` :class:`RedactingStream` (once: a stream
    that already is one is kept); returns the streams as they were."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = cast(TextIO, RedactingStream(sys.stdout))
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = cast(TextIO, RedactingStream(sys.stderr))
    return saved


@contextlib.contextmanager
def redacted_console() -> Iterator[None]:
    """:func:`redact_console` for the block (the ``mill`` command, a worker); the streams
    as they were afterwards."""
    saved = redact_console()
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def redact_logs() -> None:
    """Every log record made from now on in this process (Mill's, Hydra's, libraries')
    has its message redacted, in ``mill.log`` and on the console alike."""
    if logging.getLogRecordFactory() is logging.LogRecord:
        logging.setLogRecordFactory(_RedactedRecord)
