"""The fault-injecting proxy in front of a real llama.cpp server."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from tests.served.proxy import FaultProxy
from tests.support.servers import SERVED_NAME, ServerProcess, free_port, http_json

pytestmark = pytest.mark.slow

COMPLETION = {"model": SERVED_NAME, "prompt": "Once upon", "max_tokens": 2, "temperature": 0.0}


@pytest.fixture()
def proxy(llama_server: ServerProcess):
    with FaultProxy(llama_server.root_url) as p:
        yield p


def test_passes_requests_through(proxy: FaultProxy, llama_server: ServerProcess) -> None:
    assert http_json(proxy.base_url + "/models") == http_json(llama_server.base_url + "/models")
    direct = http_json(llama_server.base_url + "/completions", COMPLETION)
    via = http_json(proxy.base_url + "/completions", COMPLETION)
    assert via[0] == direct[0] == 200
    assert via[1]["choices"][0]["text"] == direct[1]["choices"][0]["text"]
    assert proxy.counts() == {"total": 2, "forwarded": 2, "faulted": 0, "delayed": 0}


def test_429_with_retry_after_then_passes(proxy: FaultProxy) -> None:
    proxy.fail(2, status=429, retry_after=1)
    for _ in range(2):
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(proxy.base_url + "/models", timeout=10)
        assert err.value.code == 429
        assert err.value.headers["Retry-After"] == "1"
        assert "injected" in json.loads(err.value.read())["error"]["message"]
    assert http_json(proxy.base_url + "/models")[0] == 200
    assert proxy.counts() == {"total": 3, "forwarded": 1, "faulted": 2, "delayed": 0}


def test_500_only_on_the_named_paths(proxy: FaultProxy) -> None:
    proxy.fail(1, status=500, paths=("/v1/completions",))
    assert http_json(proxy.base_url + "/models")[0] == 200
    assert http_json(proxy.base_url + "/completions", COMPLETION)[0] == 500
    assert http_json(proxy.base_url + "/completions", COMPLETION)[0] == 200
    assert [o for _, _, o in proxy.log] == ["forwarded:200", "status:500", "forwarded:200"]


def test_dropped_connection(proxy: FaultProxy) -> None:
    proxy.drop(1)
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        conn.request("POST", "/v1/completions", body=json.dumps(COMPLETION))
        conn.getresponse()
    conn.close()
    assert http_json(proxy.base_url + "/completions", COMPLETION)[0] == 200
    assert proxy.counts()["faulted"] == 1


def test_delay_trips_a_client_timeout(proxy: FaultProxy) -> None:
    proxy.delay(1, 1.5)
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        urllib.request.urlopen(proxy.base_url + "/models", timeout=0.5)
    assert http_json(proxy.base_url + "/models")[0] == 200
    assert proxy.counts()["delayed"] == 1


def test_dead_upstream_drops_the_connection() -> None:
    with FaultProxy(f"http://127.0.0.1:{free_port()}") as p:
        with pytest.raises((urllib.error.URLError, http.client.RemoteDisconnected, OSError)):
            urllib.request.urlopen(p.base_url + "/models", timeout=10)
        assert [o for _, _, o in p.log] == ["upstream-error"]


def test_hold_passes_the_first_then_never_forwards_an_abandoned_request(
    proxy: FaultProxy,
) -> None:
    proxy.hold(2, after=1, paths=("/v1/completions",))
    assert http_json(proxy.base_url + "/completions", COMPLETION)[0] == 200  # passed
    # held; the client gives up and closes its socket before the release
    with pytest.raises((TimeoutError, socket.timeout, urllib.error.URLError)):
        http_json(proxy.base_url + "/completions", COMPLETION, timeout=0.5)
    proxy.release()
    deadline = time.monotonic() + 10
    while "abandoned" not in [o for _, _, o in proxy.log]:
        assert time.monotonic() < deadline, proxy.log
        time.sleep(0.05)
    # released: the next held one is forwarded at once
    assert http_json(proxy.base_url + "/completions", COMPLETION)[0] == 200
    outcomes = [o for _, _, o in proxy.log]
    assert outcomes == ["forwarded:200", "abandoned", "forwarded:200"]
    assert proxy.holding == 0
