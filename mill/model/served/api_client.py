"""HTTP for API backends: JSON requests with bounded concurrency, retries and backoff.

Standard library only (``http.client``): each worker thread keeps one keep-alive
connection; asyncio bounds how many requests are in flight and sleeps between retries.
Connection errors, timeouts, HTTP 429 (``Retry-After`` honoured) and 5xx are retried with
exponential backoff, up to ``max_retries`` times; any other 4xx fails at once.

``timeout_s`` bounds each whole exchange (connecting, sending, the status line, headers and
body): every socket read waits only for what is left of it, so a server that trickles its
answer cannot hold a request longer than that. The body is read in chunks and refused past
``max_response_mb``, never read whole.

The API key travels only in the ``Authorization`` header: it is never part of an error
message. Credentials in the URL (``http://user:password@host/v1`` is sent as HTTP Basic
auth when there is no API key; a query such as ``?api_key=...`` is sent with every request)
are redacted (:mod:`mill.redact`) from every message and from :attr:`JSONClient.base_url`.
A successful answer that holds one of them (a server echoing the ``Authorization`` header)
has it masked before anything reads it (:func:`mill.redact.mask_secrets`), so it reaches
neither the samples nor the response cache.
"""

from __future__ import annotations

import asyncio
import base64
import email.utils
import functools
import http.client
import io
import json
import select
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from mill.errors import ModelError
from mill.redact import mask_secrets, redact_text, redact_url, register_url_secrets
from mill.schema import typed

T = TypeVar("T")

MAX_BACKOFF_S = 60.0
"""Longest wait between two attempts (also caps a server's Retry-After)."""

_CHUNK = 1 << 20
"""Bytes read from a response body at a time."""


class APIError(ModelError):
    """A request failed for good (after retries, or with a status that is not retried)."""


PROBE_ANSWERS = frozenset({500, 501})
"""HTTP statuses that answer a capability probe (:meth:`JSONClient.settle`)."""


@dataclass
class Failure:
    """One failed attempt: whether it may be retried, and after how long at least."""

    message: str
    retry: bool
    retry_after: float | None = None
    status: int | None = None
    """The HTTP status, when the server answered."""


def _retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _excerpt(body: bytes, limit: int = 200) -> str:
    text = body.decode("utf-8", "replace").strip().replace("\n", " ")
    try:  # OpenAI-style {"error": {"message": ...}} or {"detail": ...}
        data = json.loads(text)
        if isinstance(data, dict):
            err = data.get("error", data.get("detail", data))
            if isinstance(err, dict) and "message" in err:
                err = err["message"]
            text = json.dumps(err) if not isinstance(err, str) else err
    except ValueError:
        pass
    return text if len(text) <= limit else text[:limit] + "..."


def _peer_closed(sock: socket.socket) -> bool:
    """Whether the other end closed this idle plain-HTTP connection (readable with nothing
    to read). TLS sockets are not peeked at (a session ticket would read as data): a request
    failing on a closed one is retried as any connection error."""
    if isinstance(sock, ssl.SSLSocket):
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


class _TooLarge(Exception):
    """A response body over the client's size cap."""


class _DeadlineReader(io.RawIOBase):
    """A response's socket, read with a timeout of whatever is left until ``deadline``
    (``time.monotonic()``): each read of a trickled answer waits less than the last."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the answer's deadline passed")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


class _Response(http.client.HTTPResponse):
    """An HTTP response whose status line, headers and body are read by a
    :class:`_DeadlineReader`."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp.close()  # the plain reader http.client made (the socket stays open)
        self.fp = io.BufferedReader(_DeadlineReader(sock, deadline))


class JSONClient:
    """POST/GET JSON to one server (``base_url`` + path), from worker threads.

    ``setting`` names the config key of the URL in error messages (``model.base_url``).
    :attr:`base_url` is the URL with its credentials masked (for messages),
    :attr:`identity_url` the URL without them (for a model's identity).
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        max_retries: int = 5,
        backoff_s: float = 1.0,
        num_concurrent: int = 1,
        setting: str = "model.base_url",
        max_response_mb: float = 64.0,
    ) -> None:
        url = str(base_url).rstrip("/")
        try:
            parsed = urllib.parse.urlsplit(url)
            valid = parsed.scheme in ("http", "https") and bool(parsed.hostname)
            port = parsed.port if valid else None
        except ValueError:  # a port that is not a number
            valid = False
        if not valid:
            raise ModelError(
                f"{setting}={redact_url(url)!r} is not an http(s) URL; set it to the server's "
                "API root, e.g. http://127.0.0.1:8080/v1"
            )
        register_url_secrets(url, api_key)  # masked wherever a server echoes them back
        self.base_url = redact_url(url)
        self.identity_url = redact_url(url, drop=True)
        self.setting = setting
        self._scheme = parsed.scheme
        self._host = str(parsed.hostname)  # a valid URL has one
        self._port = port
        self._prefix = parsed.path.rstrip("/")
        self._query = f"?{parsed.query}" if parsed.query else ""
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        elif parsed.username is not None:
            user = urllib.parse.unquote(parsed.username)
            password = urllib.parse.unquote(parsed.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        values = typed(  # the schema's rules (model.*): one line naming the key when bad
            "model",
            {
                "timeout_s": timeout_s,
                "max_retries": max_retries,
                "backoff_s": backoff_s,
                "num_concurrent": num_concurrent,
                "max_response_mb": max_response_mb,
            },
        )
        self.max_response_mb = float(values["max_response_mb"])
        self._max_bytes = int(self.max_response_mb * 1024 * 1024)
        self.timeout_s = float(values["timeout_s"])
        self.max_retries = int(values["max_retries"])
        self.backoff_s = float(values["backoff_s"])
        self.num_concurrent = int(values["num_concurrent"])
        self._local = threading.local()
        self.attempts = 0
        """HTTP attempts made (retries included)."""
        self.retries = 0

    # ----- one attempt (worker thread) ----------------------------------------------------
    def _connection(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _peer_closed(conn.sock):
            # the server closed this idle keep-alive connection (llama-server after 5 s):
            # reconnect, rather than fail the next request on a dead socket
            conn.close()
        if conn is None:
            cls = (
                http.client.HTTPSConnection
                if self._scheme == "https"
                else http.client.HTTPConnection
            )
            conn = cls(self._host, self._port, timeout=self.timeout_s)
            self._local.conn = conn
        return conn

    def _drop_connection(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def _clean(self, text: str) -> str:
        return redact_text(text)  # the key and the URL's credentials are registered

    def _read(self, resp: http.client.HTTPResponse) -> bytes:
        """The body, in chunks; :class:`_TooLarge` past the size cap (announced or read)."""
        length = resp.getheader("Content-Length", "")
        if length.isdigit() and int(length) > self._max_bytes:
            raise _TooLarge(int(length))
        chunks: list[bytes] = []
        total = 0
        while chunk := resp.read(min(_CHUNK, self._max_bytes + 1 - total)):
            total += len(chunk)
            if total > self._max_bytes:
                raise _TooLarge(None)
            chunks.append(chunk)
        return b"".join(chunks)

    def attempt(
        self, method: str, path: str, payload: Any = None, at_root: bool = False
    ) -> Any | Failure:
        """One HTTP exchange: the decoded JSON body, or a :class:`Failure`. ``path`` is
        under ``base_url``, or under the server's root with ``at_root``. The whole exchange
        takes at most ``timeout_s`` (plus the connect's own ``timeout_s`` at worst)."""
        body = None if payload is None else json.dumps(payload).encode()
        self.attempts += 1
        conn = self._connection()
        deadline = time.monotonic() + self.timeout_s
        conn.response_class = functools.partial(_Response, deadline=deadline)  # type: ignore[assignment]
        try:
            url = (path if at_root else self._prefix + path) + self._query
            if conn.sock is not None:  # sending waits no longer than the deadline either
                conn.sock.settimeout(self.timeout_s)
            conn.request(method, url, body=body, headers=self._headers)
            resp = conn.getresponse()
            data = self._read(resp)
        except _TooLarge as err:
            self._drop_connection()
            size = f" ({err.args[0] / 1048576:.1f} MB announced)" if err.args[0] else ""
            return Failure(
                f"the answer is larger than model.max_response_mb={self.max_response_mb:g}"
                f"{size}; raise model.max_response_mb if the server's answers are that large",
                False,
            )
        except TimeoutError:
            self._drop_connection()
            return Failure(f"no complete answer within model.timeout_s={self.timeout_s:g} s", True)
        except (OSError, http.client.HTTPException) as err:
            self._drop_connection()
            reason = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            return Failure(f"cannot reach the server ({self._clean(reason)})", True)
        if resp.getheader("Connection", "").lower() == "close":
            self._drop_connection()
        status = resp.status
        if 200 <= status < 300:
            try:  # an answer that echoes a credential back holds it masked from here on
                return mask_secrets(json.loads(data))
            except ValueError:
                return Failure(f"HTTP {status} with a body that is not JSON", True)
        message = self._clean(f"HTTP {status}: {_excerpt(data)}")
        if status == 429:
            return Failure(message, True, _retry_after(resp.getheader("Retry-After")), status)
        return Failure(message, status >= 500, status=status)

    def delay(self, attempt: int, failure: Failure) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        wait = self.backoff_s * 2 ** (attempt - 1)
        if failure.retry_after is not None:
            wait = max(wait, failure.retry_after)
        return min(wait, MAX_BACKOFF_S)

    def settle(
        self,
        method: str,
        path: str,
        payload: Any = None,
        what: str = "",
        at_root: bool = False,
        probe: bool = False,
    ) -> tuple[Any | Failure, int]:
        """A request retried through transient failures (5xx, 429, a dropped connection, a
        timeout) as every request is, from the calling thread: ``(the decoded body or the
        server's definite refusal, a 4xx other than 429, as a Failure; attempts made)``.
        Transient failures past ``max_retries`` raise :class:`APIError`: a caller that asks
        the server what it supports never concludes anything from them. With ``probe`` (a
        question about what the server supports), an HTTP 500 or 501 is its answer too:
        llama-cpp-python answers a request body it cannot validate with a 500; only 429,
        502, 503, 504 and no answer at all are transient there."""
        attempt = 0
        while True:
            result = self.attempt(method, path, payload, at_root)
            attempt += 1
            if not isinstance(result, Failure) or not result.retry:
                return result, attempt
            if probe and result.status in PROBE_ANSWERS:
                return result, attempt
            if attempt > self.max_retries:
                raise self.error(result, what or f"{method} {path}", attempt)
            self.retries += 1
            time.sleep(self.delay(attempt, result))

    def request_sync(
        self, method: str, path: str, payload: Any = None, what: str = "", at_root: bool = False
    ) -> Any:
        """A request with retries, from the calling thread (start-up queries)."""
        result, attempts = self.settle(method, path, payload, what, at_root)
        if isinstance(result, Failure):
            raise self.error(result, what or f"{method} {path}", attempts)
        return result

    def error(self, failure: Failure, what: str, attempts: int) -> APIError:
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        hint = (
            f"; is the server up at {self.setting}={self.base_url}?"
            if "cannot reach" in failure.message or "complete answer" in failure.message
            else f" (server {self.setting}={self.base_url})"
        )
        return APIError(f"{what}: {failure.message}{tries}{hint}")

    # ----- many requests (asyncio) ----------------------------------------------------------
    def run_all(
        self,
        jobs: Iterable[T],
        send: Callable[[T], tuple[str, str, Any, str]],
        done: Callable[[T, Any], None],
    ) -> None:
        """Send every job (``send(job)`` -> method, path, payload, label) with at most
        ``num_concurrent`` in flight; ``done(job, body)`` runs in the calling thread as each
        finishes. The first request that fails for good stops new requests from starting;
        those in flight finish (and are handed to ``done``), then its error is raised."""
        asyncio.run(self._run_all(list(jobs), send, done))

    async def _run_all(
        self,
        jobs: list[T],
        send: Callable[[T], tuple[str, str, Any, str]],
        done: Callable[[T, Any], None],
    ) -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[T] = asyncio.Queue()
        for job in jobs:
            queue.put_nowait(job)
        errors: list[BaseException] = []
        with ThreadPoolExecutor(self.num_concurrent, thread_name_prefix="mill-api") as pool:

            async def call(method: str, path: str, payload: Any) -> Any | Failure:
                return await loop.run_in_executor(pool, self.attempt, method, path, payload)

            async def worker() -> None:
                while not errors:
                    try:
                        job = queue.get_nowait()
                    except asyncio.QueueEmpty:
                        return
                    method, path, payload, label = send(job)
                    try:
                        body = await self._with_retries(call, method, path, payload, label)
                        done(job, body)
                    except Exception as err:  # noqa: BLE001 - re-raised below
                        errors.append(err)
                        return

            workers = [asyncio.ensure_future(worker()) for _ in range(self.num_concurrent)]
            await asyncio.gather(*workers)
            # drop this loop's connections with the threads that own them
            for _ in range(self.num_concurrent):
                await loop.run_in_executor(pool, self._drop_connection)
        if errors:
            raise errors[0]

    async def _with_retries(
        self,
        call: Callable[[str, str, Any], Awaitable[Any | Failure]],
        method: str,
        path: str,
        payload: Any,
        label: str,
    ) -> Any:
        attempt = 0
        while True:
            result = await call(method, path, payload)
            if not isinstance(result, Failure):
                return result
            attempt += 1
            if not result.retry or attempt > self.max_retries:
                raise self.error(result, label, attempt)
            self.retries += 1
            await asyncio.sleep(self.delay(attempt, result))
