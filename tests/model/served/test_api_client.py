"""The API backends' HTTP client against a real local HTTP server (stdlib, in a thread):
retries on 429 (Retry-After honoured), 5xx, dropped connections and timeouts; none on other
4xx; bounded concurrency; the API key never in an error message; ``timeout_s`` bounds a
whole answer however slowly it trickles; bodies over ``max_response_mb`` are refused without
being read whole; credentials in the URL are used (Basic auth, the query) and never shown."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mill.errors import ConfigError, ModelError
from mill.model.served.api_client import APIError, JSONClient
from mill.model.served.openai_api import OpenAICompletions
from tests.support.servers import free_port

KEY = "sk-test-0123456789abcdef"


class Script:
    """What the server answers, request by request: a list of (status, headers, body) or
    ``"drop"`` / ``("sleep", s)`` / ``("trickle", s)`` (a 10 kB answer, a byte every s
    seconds) / ``("endless",)`` (a chunked answer that never ends) / ``("announce", n)``
    (a Content-Length of n bytes, then nothing); after the list, 200 with the request
    echoed."""

    def __init__(self) -> None:
        self.plan: list[object] = []
        self.seen: list[tuple[float, str, dict[str, object]]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.delay_s = 0.0
        self.idle_timeout_s: float | None = None
        """Close a keep-alive connection idle this long (as llama-server does after 5 s)."""


@pytest.fixture()
def server() -> Iterator[tuple[str, Script]]:
    script = Script()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            return None

        def setup(self) -> None:
            self.timeout = script.idle_timeout_s
            super().setup()

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length)) if length else {}
            with script.lock:
                script.seen.append((time.monotonic(), self.path, payload))
                script.headers.append(dict(self.headers.items()))
                step = script.plan.pop(0) if script.plan else None
                script.in_flight += 1
                script.max_in_flight = max(script.max_in_flight, script.in_flight)
            try:
                if step == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if isinstance(step, tuple) and step[0] == "sleep":
                    time.sleep(step[1])
                    step = None
                if isinstance(step, tuple) and step[0] in ("trickle", "endless", "announce"):
                    self._misbehave(step)
                    return
                time.sleep(script.delay_s)
                status, headers, body = (
                    step
                    if isinstance(step, tuple)
                    else (200, {}, {"path": self.path, "payload": payload})
                )
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                with script.lock:
                    script.in_flight -= 1

        def _misbehave(self, step: tuple[object, ...]) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.close_connection = True
            try:
                if step[0] == "trickle":
                    body = json.dumps({"pad": "x" * 10_000}).encode()
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    for i in range(len(body)):
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(float(step[1]))  # type: ignore[arg-type]
                elif step[0] == "endless":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b"x" * 65536
                    while True:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.send_header("Content-Length", str(step[1]))
                    self.end_headers()
                    self.wfile.write(b"{")
            except OSError:  # the client gave up: what these tests expect
                pass

        do_GET = _answer
        do_POST = _answer

    httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    # a short poll: shutdown() waits up to one poll interval (0.5 s by default) per test
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        httpd.shutdown()
        httpd.server_close()


def _client(url: str, **kw: object) -> JSONClient:
    defaults: dict[str, object] = {"backoff_s": 0.05, "max_retries": 3, "timeout_s": 5.0}
    return JSONClient(url, api_key=KEY, **{**defaults, **kw})  # type: ignore[arg-type]


def test_429_is_retried_after_retry_after(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(429, {"Retry-After": "1"}, {"error": {"message": "slow down"}})]
    client = _client(url)
    body = client.request_sync("POST", "/completions", {"x": 1})
    assert body["payload"] == {"x": 1} and body["path"] == "/v1/completions"
    (t0, _, _), (t1, _, _) = script.seen
    assert t1 - t0 >= 0.95  # Retry-After (1 s) wins over the 0.05 s backoff
    assert client.retries == 1


def test_5xx_and_dropped_connections_are_retried_with_backoff(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.plan = [(500, {}, {"detail": "boom"}), "drop", (503, {}, {})]
    client = _client(url, backoff_s=0.1)
    assert client.request_sync("GET", "/models")["path"] == "/v1/models"
    times = [t for t, _, _ in script.seen]
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(times) == 4
    # exponential: 0.1, 0.2, 0.4 s
    assert gaps[0] >= 0.09 and gaps[1] >= 0.19 and gaps[2] >= 0.39


def test_a_keep_alive_connection_the_server_closed_is_reopened(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.idle_timeout_s = 0.2
    client = _client(url)
    assert client.attempt("GET", "/models")["path"] == "/v1/models"
    time.sleep(0.6)  # the server has closed the idle connection
    assert client.attempt("POST", "/completions", {"x": 1})["payload"] == {"x": 1}
    assert client.attempts == 2 and len(script.seen) == 2


def test_other_4xx_fails_at_once_without_the_key(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(400, {}, {"error": {"message": f"bad request, header Bearer {KEY}"}})]
    with pytest.raises(APIError) as err:
        _client(url).request_sync("POST", "/completions", {}, what="request t/0/choice/0")
    assert len(script.seen) == 1
    message = str(err.value)
    assert message.startswith("request t/0/choice/0: HTTP 400")
    assert KEY not in message and "***" in message
    assert "\n" not in message


def test_retries_run_out_with_one_line_naming_base_url(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(500, {}, {})] * 10
    with pytest.raises(APIError) as err:
        _client(url, max_retries=2).request_sync("POST", "/completions", {}, what="request r")
    assert len(script.seen) == 3
    assert "after 3 attempts" in str(err.value) and "model.base_url" in str(err.value)


def test_dead_server_names_base_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(APIError) as err:
        _client(url, max_retries=1).request_sync("GET", "/models", what="listing models")
    message = str(err.value)
    assert "cannot reach the server" in message
    assert f"model.base_url={url}" in message


def test_timeouts_are_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [("sleep", 1.5)]
    client = _client(url, timeout_s=0.5)
    assert client.request_sync("POST", "/completions", {"n": 2})["payload"] == {"n": 2}
    assert client.retries == 1


def test_run_all_bounds_requests_in_flight_and_finishes_each_in_order_of_completion(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.delay_s = 0.05
    script.plan = [(500, {}, {})]  # one retried request among them
    client = _client(url, num_concurrent=3)
    thread = threading.get_ident()
    done: dict[int, object] = {}

    def finish(job: int, body: object) -> None:
        assert threading.get_ident() == thread  # the calling thread commits responses
        done[job] = body

    client.run_all(range(12), lambda j: ("POST", "/completions", {"job": j}, f"job {j}"), finish)
    assert sorted(done) == list(range(12))
    assert all(done[j]["payload"] == {"job": j} for j in done)  # type: ignore[index]
    assert 1 < script.max_in_flight <= 3


def test_run_all_stops_starting_requests_after_a_failure(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [(404, {}, {"error": "no such model"})]
    client = _client(url, num_concurrent=1)
    done: list[int] = []
    with pytest.raises(APIError, match="job 0: HTTP 404"):
        client.run_all(
            range(5),
            lambda j: ("POST", "/completions", {}, f"job {j}"),
            lambda j, b: done.append(j),
        )
    assert done == [] and len(script.seen) == 1


def test_timeout_bounds_the_whole_answer_not_each_read(server: tuple[str, Script]) -> None:
    url, script = server
    script.plan = [("trickle", 0.05)]  # 10 kB a byte at a time: over 500 s in all
    client = _client(url, timeout_s=1.0, max_retries=0)
    start = time.monotonic()
    with pytest.raises(APIError) as err:
        client.request_sync("POST", "/completions", {}, what="request t/0")
    took = time.monotonic() - start
    assert 0.9 < took < 5.0, took
    message = str(err.value)
    assert message.startswith("request t/0: no complete answer within model.timeout_s=1 s")
    assert f"model.base_url={url}" in message and "\n" not in message
    # the next request on the same client gets a fresh connection and succeeds
    assert client.request_sync("GET", "/models")["path"] == "/v1/models"


@pytest.mark.parametrize("step", [("endless",), ("announce", 5 * 1024 * 1024)])
def test_a_body_over_max_response_mb_is_refused_without_being_read_whole(
    server: tuple[str, Script], step: tuple[object, ...]
) -> None:
    url, script = server
    script.plan = [step]
    client = _client(url, max_response_mb=1, max_retries=3)
    with pytest.raises(APIError) as err:
        client.request_sync("POST", "/completions", {}, what="request t/1")
    message = str(err.value)
    assert message.startswith("request t/1: the answer is larger than model.max_response_mb=1")
    assert f"(server model.base_url={url})" in message
    assert len(script.seen) == 1  # not retried: the server would answer the same
    assert client.request_sync("GET", "/models")["path"] == "/v1/models"


@pytest.mark.parametrize("value", [0, -1, "lots", None])
def test_max_response_mb_must_be_a_positive_number(value: object) -> None:
    with pytest.raises(ConfigError, match="model.max_response_mb"):
        JSONClient("http://127.0.0.1:1/v1", max_response_mb=value)  # type: ignore[arg-type]


def test_credentials_in_the_url_are_sent_and_never_shown(server: tuple[str, Script]) -> None:
    url, script = server
    port = url.split(":")[2].split("/")[0]
    secret_url = f"http://alice:secret@127.0.0.1:{port}/v1?api_key=secret&api-version=2"
    client = JSONClient(secret_url, backoff_s=0.01, max_retries=0)
    assert client.base_url == f"http://***@127.0.0.1:{port}/v1?api_key=***&api-version=2"
    assert client.identity_url == f"http://127.0.0.1:{port}/v1?api-version=2"
    answer = client.request_sync("GET", "/models")
    assert script.seen[-1][1] == "/v1/models?api_key=secret&api-version=2"  # sent as it is
    assert answer["path"] == "/v1/models?api_key=***&api-version=2"  # echoed back: masked
    # HTTP Basic auth from the user info (no API key given)
    assert script.headers[0]["Authorization"] == "Basic YWxpY2U6c2VjcmV0"  # alice:secret
    script.plan = [(401, {}, {"error": {"message": f"who is {secret_url}?"}})]
    with pytest.raises(APIError) as err:
        client.request_sync("POST", "/completions", {}, what="request t/2")
    assert "secret" not in str(err.value)
    assert f"who is http://***@127.0.0.1:{port}" in str(err.value)
    # an API key wins over the user info
    keyed = JSONClient(secret_url, api_key=KEY)
    keyed.request_sync("GET", "/models")
    assert script.headers[-1]["Authorization"] == f"Bearer {KEY}"


def test_a_url_that_is_not_http_is_refused_without_its_credentials() -> None:
    for bad in ("ftp://alice:secret@h/v1", "alice:secret@h/v1", "http://alice:secret@h:port/v1"):
        with pytest.raises(ModelError) as err:
            JSONClient(bad)
        assert "not an http(s) URL" in str(err.value) and "secret" not in str(err.value)


def _prompt_ids_probe(url: str) -> OpenAICompletions:
    """The served client's token-id probe alone (``model.prompt_ids=auto``) on ``url``."""
    model = OpenAICompletions.__new__(OpenAICompletions)
    model.client = JSONClient(url, backoff_s=0.01, max_retries=2)
    model.base_url, model.model, model.endpoint = model.client.base_url, "m", "/completions"
    model._prompt_ids = None
    model.prefix_token_id = 1
    return model


@pytest.mark.parametrize("transient", [(503, {}, {"error": "busy"}), "drop", (429, {}, {})])
def test_the_prompt_ids_probe_retries_transient_failures(
    server: tuple[str, Script], transient: object
) -> None:
    """Issue 35, item 5: one transient failure on the probe decided that the server takes
    text prompts for the whole run; it is retried like every request."""
    url, script = server
    script.plan = [transient]
    model = _prompt_ids_probe(url)
    assert model._ids_accepted() is True
    assert len(script.seen) == 2 and script.seen[-1][2]["prompt"] == [1]


def test_the_prompt_ids_probe_concludes_from_a_refusal_never_from_an_error(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.plan = [(400, {}, {"error": "prompt must be a string"})]
    assert _prompt_ids_probe(url)._ids_accepted() is False
    script.plan = [(503, {}, {"error": "busy"})] * 3
    with pytest.raises(APIError, match="model.prompt_ids=auto.*HTTP 503.*after 3 attempts"):
        _prompt_ids_probe(url)._ids_accepted()


@pytest.mark.parametrize("status", [500, 501])
def test_the_prompt_ids_probe_takes_a_500_as_the_servers_answer(
    server: tuple[str, Script], status: int
) -> None:
    """llama-cpp-python answers a token-id prompt it cannot validate with HTTP 500 (every
    time): that is its answer, text prompts, asked once; a 502-504 is still retried."""
    url, script = server
    script.plan = [(status, {}, {"error": "Input should be a valid string"})]
    assert _prompt_ids_probe(url)._ids_accepted() is False
    assert len(script.seen) == 1
    script.plan = [(502, {}, {"error": "bad gateway"})]
    assert _prompt_ids_probe(url)._ids_accepted() is True


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("timeout_s", math.inf),
        ("timeout_s", 0),
        ("max_retries", -1),
        ("max_retries", 1.5),
        ("backoff_s", math.nan),
        ("num_concurrent", 0),
        ("max_response_mb", math.inf),
    ],
)
def test_the_clients_settings_are_checked_by_the_schema(key: str, value: float) -> None:
    """Issue 35: the served client reads its numbers typed by the schema's model.* rules
    (one line naming the key), not by float()/int() of its own (model.timeout_s=inf was a
    three-line internal message; max_retries=1.5 became 1)."""
    with pytest.raises(ConfigError, match=rf"^model\.{key}=.* is not allowed: give "):
        JSONClient("http://127.0.0.1:1/v1", **{key: value})
