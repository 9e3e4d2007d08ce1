"""Faults: a worker killed under load, SIGTERM with requests in flight, a bad store at start-up.
Each test prints the figure docs/reliability.md reports (run with -s to see them)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from service.settings import BUNDLED_STORE
from tests.integration.rawhttp import NdjsonStream
from tests.support.server import ROOT, Server, free_port, start_server, stop_server, worker_pids
from tests.support.testdata import all_text


def test_a_killed_worker_is_replaced_and_only_its_in_flight_requests_fail() -> None:
    server = start_server(2)
    try:
        before = worker_pids(server)
        results: list[int] = []
        stop = threading.Event()

        def load() -> None:  # bounded: stops when told, or after 30 s
            deadline = time.monotonic() + 30
            while not stop.is_set() and time.monotonic() < deadline:
                try:  # a new connection each time, so both workers get requests
                    r = httpx.post(
                        f"{server.base}/v1/tokenizers/cl100k_base/count",
                        json={"text": "kill -9 " * 50},
                        timeout=10,
                    )
                    results.append(r.status_code)
                except httpx.HTTPError:
                    results.append(0)

        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(load) for _ in range(4)]
            time.sleep(1.0)
            victim = min(before)
            os.kill(victim, signal.SIGKILL)
            replaced = set()
            for _ in range(100):  # the supervisor starts a new worker, which loads the store
                replaced = worker_pids(server) - before
                if replaced:
                    break
                time.sleep(0.1)
            time.sleep(5)  # the new worker loads and serves
            stop.set()
            for f in futures:
                f.result()
        failed = sum(1 for code in results if code != 200)
        print(
            f"\nworker {victim} killed: {len(results)} requests, {failed} failed; "
            f"replaced by {sorted(replaced)}"
        )
        assert replaced, "no replacement worker"
        assert failed <= 4  # at most the requests that were in flight on the killed worker
        assert len(results) > 100
    finally:
        stop_server(server)


def test_sigterm_lets_in_flight_requests_finish_and_exits_in_bounded_time() -> None:
    server = start_server(1)
    text = all_text() * 9  # 4 MB: about 0.4 s of work
    with ThreadPoolExecutor(1) as pool:
        big = pool.submit(
            httpx.post,
            f"{server.base}/v1/tokenizers/cl100k_base/count",
            json={"text": text},
            timeout=60,
        )
        time.sleep(0.3)  # the request is being received or worked on
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        response = big.result()
    server.process.wait(timeout=20)
    took = time.monotonic() - started
    print(
        f"\nSIGTERM with a request in flight: it finished with {response.status_code}; "
        f"the process exited with {server.process.returncode} after {took:.2f} s"
    )
    assert response.status_code == 200 and response.json()["count"] > 1_000_000
    assert server.process.returncode == 0 and took < 15


def test_a_store_that_loads_nothing_exits_non_zero_saying_why() -> None:
    env = {**os.environ, "TOKSVC_STORE": str(ROOT / "no-such-store")}
    for strict in ("0", "1"):
        command = [sys.executable, "-m", "service", "serve", "--port", str(free_port())]
        done = subprocess.run(
            command,
            env={**env, "TOKSVC_STRICT": strict},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0
        assert "no-such-store/manifest.json: cannot be read" in done.stderr
        assert "no tokenizer loaded" in done.stderr


def test_a_store_that_partly_fails_to_load(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(BUNDLED_STORE, store, ignore=shutil.ignore_patterns("o200k_base", "qwen*"))
    (store / "gpt2" / "1.json").write_bytes(b"{}")  # no longer matches its pin
    env = {**os.environ, "TOKSVC_STORE": str(store)}
    command = [sys.executable, "-m", "service", "serve", "--port", str(free_port())]
    strict = subprocess.run(
        command,
        env={**env, "TOKSVC_STRICT": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert strict.returncode != 0
    assert "gpt2/1.json" in strict.stderr and "TOKSVC_STRICT is on" in strict.stderr
    lenient = start_server_on_bad_store(env)
    try:
        r = httpx.get(f"{lenient.base}/readyz", timeout=5)
        assert r.status_code == 503 and "gpt2/1.json" in r.json()["failures"][0]
        assert httpx.get(f"{lenient.base}/healthz", timeout=5).status_code == 200
        counted = httpx.post(
            f"{lenient.base}/v1/tokenizers/cl100k_base/count", json={"text": "hi"}, timeout=5
        )
        assert counted.status_code == 200  # what did load is served; readiness says not all
    finally:
        stop_server(lenient)


def start_server_on_bad_store(env: dict[str, str]) -> Server:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "service", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(f"{base}/healthz", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.2)
    return Server(base, port, proc)


def test_sigterm_ends_open_streams_with_a_state_another_replica_resumes() -> None:
    """SIGTERM mid-character: both forms end with a `state` holding the half of 🎉, and a second
    server resumed from it (the stream forms, and decode/step) completes the text exactly."""
    server, other = start_server(1), start_server(1)
    stream = NdjsonStream(server.port, "/v1/tokenizers/cl100k_base/decode/stream")
    ws_url = "ws://127.0.0.1:{}/v1/tokenizers/cl100k_base/decode/ws"
    first, rest = [1917, 9468], [236, 231]  # " world", then the three ids of 🎉
    try:
        with connect(ws_url.format(server.port)) as ws:
            stream.send({"ids": first})
            assert stream.read_line() == {"text": " world"}
            ws.send(json.dumps({"ids": first}))
            assert json.loads(ws.recv(timeout=10)) == {"text": " world"}
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            last = stream.read_line()
            assert last is not None and last["done"] is True and last["text"] == ""
            assert "shutting down" in last["reason"] and last["state"]
            final = json.loads(ws.recv(timeout=10))
            assert final["done"] is True and final["text"] == "" and final["state"]
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=10)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
        server.process.wait(timeout=20)
        took = time.monotonic() - started

        resumed = NdjsonStream(other.port, "/v1/tokenizers/cl100k_base/decode/stream")
        try:
            resumed.send({"state": last["state"], "ids": rest})
            resumed.end_body()
            joined = " world" + "".join(line["text"] for line in resumed.read_all())
        finally:
            resumed.close()
        with connect(ws_url.format(other.port)) as ws:
            ws.send(json.dumps({"state": final["state"], "ids": rest, "final": True}))
            joined_ws = " world" + json.loads(ws.recv(timeout=10))["text"]
        step = httpx.post(
            f"{other.base}/v1/tokenizers/cl100k_base/decode/step",
            json={"state": last["state"], "ids": rest, "final": True},
        ).json()
        full = httpx.post(
            f"{other.base}/v1/tokenizers/cl100k_base/decode", json={"ids": first + rest}
        ).json()["text"]
        assert full == " world🎉" and joined == joined_ws == " world" + step["text"] == full
        print(
            f"\nSIGTERM with an NDJSON stream and a WebSocket open: both ended with a state and "
            f"closed, exit {server.process.returncode} after {took:.2f} s; resumed on a second "
            f"server: {joined!r}"
        )
        assert server.process.returncode == 0 and took < 15
    finally:
        stream.close()
        stop_server(other)
        if server.process.poll() is None:
            stop_server(server)
