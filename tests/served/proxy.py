"""A fault-injecting HTTP proxy for the served-model tests.

A real HTTP server on 127.0.0.1, in a background thread, that forwards every request to an
upstream server (a llama.cpp server started by the tests) and can fail some of them first::

    with FaultProxy(server.root_url) as proxy:
        proxy.fail(3, status=429, retry_after=1)  # the next 3 requests get 429 + Retry-After
        ... model.base_url=proxy.base_url ...
        assert proxy.counts() == {"forwarded": ..., "faulted": 3, ...}

Faults: an HTTP status (429 with an optional ``Retry-After`` header, 500, 503, ...), a dropped
connection (the socket is closed without a response), a delay before forwarding (for client
timeouts), a hold until the test releases it (``hold``: a held request whose client hung up
meanwhile is never forwarded, so a client killed while it waits never reaches the upstream
with it), or a real answer that lies or stalls: rewritten (``rewrite``: a function of the
decoded JSON body, e.g. a log-probability of +50), padded to a size (``pad``) or trickled a
few bytes at a time (``trickle``). Faults apply to the next N requests whose path starts
with one of ``paths`` (default: every path), after the first ``after`` of them (``hold``),
then requests pass through unchanged. Every
request is logged as ``(method, path, outcome)``, its headers as ``(path, headers)`` and
every JSON body as ``(path, body)``.
"""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from tests.support.servers import LocalEndpoint

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
}


@dataclass
class _Fault:
    remaining: int
    kind: str  # "status" | "drop" | "delay" | "hold" | "rewrite" | "pad" | "trickle"
    status: int = 500
    retry_after: float | None = None
    delay_s: float = 0.0
    paths: tuple[str, ...] = ("/",)
    rewrite: Callable[[Any], Any] | None = None
    pad_bytes: int = 0
    chunk: int = 0
    after: int = 0
    """Matching requests passed through unchanged before this fault applies."""
    echo: bool = False
    """A status fault whose error body echoes the request's credentials back."""


class FaultProxy(LocalEndpoint):
    """Forward HTTP requests to ``upstream`` (``http://127.0.0.1:PORT``), failing some first."""

    def __init__(self, upstream: str, *, upstream_timeout_s: float = 120.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname or not parts.port:
            raise ValueError(f"upstream must be http://host:port, got {upstream!r}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port
        self.upstream_timeout_s = upstream_timeout_s
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self._released = threading.Event()
        self.holding = 0
        """Requests held right now (``hold``)."""
        self.log: list[tuple[str, str, str]] = []
        """``(method, path, outcome)`` per request; outcome "forwarded:<status>", "status:<n>",
        "drop", "delay" (then forwarded), "abandoned" (held, its client hung up, never
        forwarded), "rewrite:<status>", "pad:<status>",
        "trickle:<status>" (forwarded, then changed) or "upstream-error"."""
        self.bodies: list[tuple[str, Any]] = []
        """``(path, decoded JSON body)`` of every request that carried one."""
        self.headers: list[tuple[str, dict[str, str]]] = []
        """``(path, headers)`` of every request."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # --- configuration -------------------------------------------------------------------

    def fail(
        self,
        n: int,
        *,
        status: int = 500,
        retry_after: float | None = None,
        paths: tuple[str, ...] = ("/",),
        echo: bool = False,
    ) -> None:
        """Answer the next ``n`` matching requests with ``status`` (and ``Retry-After``);
        ``echo``: an error body that echoes the request's ``Authorization`` header and its
        path (the query's ``api_key``) in every form a server may (text, JSON fields)."""
        self._add(
            _Fault(n, "status", status=status, retry_after=retry_after, paths=paths, echo=echo)
        )

    def drop(self, n: int, *, paths: tuple[str, ...] = ("/",)) -> None:
        """Close the connection of the next ``n`` matching requests without answering."""
        self._add(_Fault(n, "drop", paths=paths))

    def delay(self, n: int, seconds: float, *, paths: tuple[str, ...] = ("/",)) -> None:
        """Hold the next ``n`` matching requests for ``seconds`` before forwarding them."""
        self._add(_Fault(n, "delay", delay_s=seconds, paths=paths))

    def hold(
        self,
        n: int,
        *,
        after: int = 0,
        max_s: float = 300.0,
        paths: tuple[str, ...] = ("/",),
    ) -> None:
        """Pass the next ``after`` matching requests, then hold the next ``n`` until
        :meth:`release` (or ``max_s``): a held request whose client has hung up by then is
        never forwarded (outcome "abandoned"); the others are forwarded."""
        self._add(_Fault(n, "hold", delay_s=max_s, paths=paths, after=after))

    def release(self) -> None:
        """Let every held request go (and any held later: the hold is over)."""
        self._released.set()

    def rewrite(
        self, n: int, change: Callable[[Any], Any], *, paths: tuple[str, ...] = ("/",)
    ) -> None:
        """Forward the next ``n`` matching requests and answer ``change(decoded body)``
        instead of the upstream's JSON (``change`` may edit the body in place and return
        it)."""
        self._add(_Fault(n, "rewrite", rewrite=change, paths=paths))

    def pad(self, n: int, size: int, *, paths: tuple[str, ...] = ("/",)) -> None:
        """Forward the next ``n`` matching requests and answer the upstream's JSON with a
        ``"padding"`` field that makes the body ``size`` bytes long (about)."""
        self._add(_Fault(n, "pad", pad_bytes=size, paths=paths))

    def trickle(
        self, n: int, *, chunk: int = 8, every_s: float = 0.5, paths: tuple[str, ...] = ("/",)
    ) -> None:
        """Forward the next ``n`` matching requests and send the upstream's answer
        ``chunk`` bytes every ``every_s`` seconds (each read of the client gets something
        long before its socket timeout; the whole answer takes minutes)."""
        self._add(_Fault(n, "trickle", chunk=chunk, delay_s=every_s, paths=paths))

    def clear(self) -> None:
        """Remove every pending fault."""
        with self._lock:
            self._faults.clear()

    def _add(self, fault: _Fault) -> None:
        if fault.remaining < 0:
            raise ValueError("a fault count must be >= 0")
        with self._lock:
            self._faults.append(fault)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0 and path.startswith(fault.paths):
                    if fault.after > 0:
                        fault.after -= 1
                        return None
                    fault.remaining -= 1
                    return fault
        return None

    def _record(self, method: str, path: str, outcome: str) -> None:
        with self._lock:
            self.log.append((method, path, outcome))

    def counts(self) -> dict[str, int]:
        """How many requests were forwarded, faulted (status or drop) and delayed."""
        with self._lock:
            outcomes = [o for _, _, o in self.log]
        return {
            "total": len(outcomes),
            "forwarded": sum(o.startswith("forwarded") for o in outcomes),
            "faulted": sum(o.startswith("status") or o == "drop" for o in outcomes),
            "delayed": sum(o == "delay" for o in outcomes),
        }

    # --- lifecycle -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> FaultProxy:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.1},
            name="fault-proxy",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # held requests end (their clients are gone by now)
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the handler ---------------------------------------------------------------------

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real clients pool connections

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass  # quiet: the proxy's own log is ``proxy.log``

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with proxy._lock:
                    proxy.headers.append((self.path, dict(self.headers.items())))
                if body:
                    with proxy._lock:
                        proxy.bodies.append((self.path, json.loads(body)))
                fault = proxy._take_fault(self.path)
                if fault is not None and fault.kind == "drop":
                    proxy._record(self.command, self.path, "drop")
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if fault is not None and fault.kind == "status":
                    proxy._record(self.command, self.path, f"status:{fault.status}")
                    payload = (
                        b'{"error": {"message": "injected by the test proxy", "code": %d}}'
                        % fault.status
                    )
                    if fault.echo:
                        auth = self.headers.get("Authorization", "")
                        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
                        echoed = {
                            "message": f"denied: Authorization: {auth} for {self.path}",
                            "authorization": auth,
                            "token": auth.partition(" ")[2],
                            "api_key": (query.get("api_key") or [""])[0],
                        }
                        payload = json.dumps({"error": echoed}).encode()
                    self.send_response(fault.status)
                    if fault.retry_after is not None:
                        self.send_header("Retry-After", f"{fault.retry_after:g}")
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if fault is not None and fault.kind == "delay":
                    proxy._record(self.command, self.path, "delay")
                    time.sleep(fault.delay_s)
                if fault is not None and fault.kind == "hold" and not self._held(fault):
                    proxy._record(self.command, self.path, "abandoned")
                    self.close_connection = True
                    return
                if fault is not None and fault.kind in ("rewrite", "pad", "trickle"):
                    self._forward(body, fault)
                    return
                self._forward(body)

            def _client_gone(self) -> bool:
                """The client closed its end (EOF pending on the socket)."""
                try:
                    readable, _, _ = select.select([self.connection], [], [], 0)
                    return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    return True

            def _held(self, fault: _Fault) -> bool:
                """Wait for :meth:`FaultProxy.release` (at most ``fault.delay_s``); False
                when the client hung up meanwhile."""
                with proxy._lock:
                    proxy.holding += 1
                try:
                    deadline = time.monotonic() + fault.delay_s
                    while not proxy._released.wait(0.05) and time.monotonic() < deadline:
                        pass
                    return not self._client_gone()
                finally:
                    with proxy._lock:
                        proxy.holding -= 1

            def _changed(self, data: bytes, fault: _Fault) -> bytes:
                if fault.kind == "rewrite":
                    assert fault.rewrite is not None
                    return json.dumps(fault.rewrite(json.loads(data))).encode()
                if fault.kind == "pad":
                    decoded = json.loads(data)
                    decoded["padding"] = "x" * max(0, fault.pad_bytes - len(data))
                    return json.dumps(decoded).encode()
                return data

            def _trickle(self, data: bytes, fault: _Fault) -> None:
                try:
                    for i in range(0, len(data), fault.chunk):
                        self.wfile.write(data[i : i + fault.chunk])
                        self.wfile.flush()
                        time.sleep(fault.delay_s)
                except OSError:  # the client gave up and closed the connection
                    self.close_connection = True

            def _forward(self, body: bytes, fault: _Fault | None = None) -> None:
                conn = http.client.HTTPConnection(
                    proxy.upstream_host, proxy.upstream_port, timeout=proxy.upstream_timeout_s
                )
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                try:
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                except OSError:
                    # The upstream is down: the client sees a dropped connection, as it would
                    # talking to the server directly.
                    proxy._record(self.command, self.path, "upstream-error")
                    self.close_connection = True
                    return
                finally:
                    conn.close()
                if fault is not None and resp.status == 200:
                    data = self._changed(data, fault)
                    proxy._record(self.command, self.path, f"{fault.kind}:{resp.status}")
                else:
                    proxy._record(self.command, self.path, f"forwarded:{resp.status}")
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in _HOP_BY_HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if fault is not None and fault.kind == "trickle":
                    self._trickle(data, fault)
                    return
                self.wfile.write(data)

            do_GET = _handle  # noqa: N815
            do_POST = _handle  # noqa: N815
            do_DELETE = _handle  # noqa: N815

        return Handler
