"""The supervisor survives its workers (issue 14, items 1, 7 and 10): a worker that cannot start is
retried while the others serve, the process exits non-zero only when no worker can serve, orphaned
workers stop, and a killed worker's open streams leave the gauge."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.integration.rawhttp import NdjsonStream
from tests.support.server import ROOT, Server, free_port, start_server, stop_server, worker_pids


def wait_for(predicate, seconds: float = 30) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def count_ok(base: str) -> bool:
    try:
        r = httpx.post(f"{base}/v1/tokenizers/gpt2/count", json={"text": "hi"}, timeout=5)
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def test_a_worker_that_cannot_start_is_retried_while_the_other_serves(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        gpt2 = store / "gpt2" / "1.json"
        good = gpt2.read_bytes()
        gpt2.write_bytes(good.replace(b"[", b"{", 1))  # no longer matches its pin
        before = worker_pids(server)
        os.kill(min(before), signal.SIGKILL)  # what the OOM killer does
        codes = []
        for _ in range(30):  # 3 s: the replacement fails its start at least once meanwhile
            codes.append(count_ok(server.base))
            time.sleep(0.1)
        assert server.process.poll() is None, "the service stopped"
        assert all(codes), f"{codes.count(False)} of {len(codes)} requests failed"
        gpt2.write_bytes(good)  # the deploy finishes: the retry succeeds
        assert wait_for(lambda: len(worker_pids(server)) == 2, 40)
        print(
            f"\nworker killed on a store that no longer matches its pins: {len(codes)} "
            f"requests meanwhile, {codes.count(False)} failed; the service kept running"
        )
    finally:
        stop_server(server)
    assert server.process.returncode == 0


def test_the_process_exits_non_zero_when_no_worker_can_serve(tmp_path: Path) -> None:
    env = {**os.environ, "TOKSVC_STORE": str(tmp_path / "no-store"), "TOKSVC_STRICT": "1"}
    command = [
        sys.executable,
        "-m",
        "service",
        "serve",
        "--port",
        str(free_port()),
        "--workers",
        "2",
    ]
    done = subprocess.run(
        command, env=env, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 3, done.stderr[-2000:]
    assert "No worker can serve" in done.stderr


def test_orphaned_workers_stop_when_the_supervisor_is_gone(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    workers = worker_pids(server)
    try:
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)

        def gone() -> bool:
            return not any(
                Path(f"/proc/{pid}").exists()
                and b"(Z)" not in Path(f"/proc/{pid}/stat").read_bytes()[:64]
                for pid in workers
            )

        assert wait_for(gone, 20), "orphaned workers kept running"
    finally:
        for pid in workers:
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)


def active_streams(base: str) -> float:
    total = 0.0
    for line in httpx.get(f"{base}/metrics", timeout=5).text.splitlines():
        if line.startswith("toksvc_active_streams{"):
            total += float(line.split()[-1])
    return total


def test_a_killed_workers_streams_leave_the_gauge(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    stream = NdjsonStream(server.port, "/v1/tokenizers/gpt2/decode/stream")
    try:
        stream.send({"ids": [31373]})
        assert stream.read_line() is not None
        assert active_streams(server.base) == 1
        for pid in worker_pids(server):
            os.kill(pid, signal.SIGKILL)
        assert wait_for(lambda: count_ok(server.base) and active_streams(server.base) == 0, 30)
    finally:
        stream.close()
        stop_server(server)


def metric_lines(base: str, name: str) -> list[str]:
    text = httpx.get(f"{base}/metrics", timeout=5).text
    return [line for line in text.splitlines() if line.startswith(name)]


def test_admin_reload_refusal_is_409_and_the_metrics_follow_reloads(store: Path) -> None:
    server = start_server(1, TOKSVC_STORE=str(store), TOKSVC_ADMIN_TOKEN="s3cret")
    url = f"{server.base}/admin/reload"
    try:
        r = httpx.post(url, headers={"authorization": "bearer  s3cret"}, timeout=30)
        assert r.status_code == 202, r.text  # the scheme is case-insensitive
        manifest = json.loads((store / "manifest.json").read_text())
        dropped = next(e for e in manifest["tokenizers"] if not e["default"])
        manifest["tokenizers"].remove(dropped)
        (store / "manifest.json").write_text(json.dumps(manifest))
        r = httpx.post(url, headers={"authorization": "Bearer s3cret"}, timeout=30)
        assert r.status_code == 202
        series = [
            line
            for line in metric_lines(server.base, "toksvc_tokenizer_info{")
            if f'version="{dropped["version"]}"' in line and dropped["name"] in line
        ]
        assert series and all(line.endswith(" 0.0") for line in series), series
        gpt2 = store / "gpt2" / "1.json"
        gpt2.write_bytes(gpt2.read_bytes().replace(b"[", b"{", 1))
        r = httpx.post(url, headers={"authorization": "Bearer s3cret"}, timeout=30)
        assert r.status_code == 409 and r.json()["type"] == "/problems/reload-refused"
        assert "gpt2" in r.json()["failures"][0]
        assert metric_lines(server.base, "toksvc_store_load_failures ") == [
            "toksvc_store_load_failures 1.0"
        ]
        assert count_ok(server.base)  # the previous store keeps serving
    finally:
        stop_server(server)


def readyz(base: str) -> tuple[object, ...]:
    """(status code, workers, workers_loaded) from /readyz; () if no worker answered."""
    try:
        r = httpx.get(f"{base}/readyz", timeout=5)
    except httpx.HTTPError:
        return ()
    body = r.json()
    return r.status_code, body.get("workers"), body.get("workers_loaded")


def test_readyz_counts_the_workers_that_have_loaded_the_store(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        for _ in range(6):  # whichever worker answers, it counts both
            assert readyz(server.base) == (200, 2, 2)
        gpt2 = store / "gpt2" / "1.json"
        good = gpt2.read_bytes()
        gpt2.write_bytes(good.replace(b"[", b"{", 1))  # a replacement cannot start meanwhile
        os.kill(min(worker_pids(server)), signal.SIGKILL)
        assert wait_for(lambda: readyz(server.base) == (200, 2, 1), 20)
        time.sleep(1)  # the replacement fails its start (and is retried): it does not count
        assert readyz(server.base) == (200, 2, 1)
        gpt2.write_bytes(good)  # the retry succeeds
        assert wait_for(lambda: readyz(server.base) == (200, 2, 2), 40)
    finally:
        stop_server(server)
    assert server.process.returncode == 0


def server_log(server: Server) -> str:
    """What the server has written so far (pread: the shared file offset is left alone)."""
    assert server.log is not None
    return os.pread(server.log.fileno(), 1 << 20, 0).decode(errors="replace")


def test_a_scale_down_while_a_slot_waits_for_its_retry_keeps_the_serving_worker(
    store: Path,
) -> None:
    """Issue 23, high 6: uvicorn's SIGTTOU handler popped a slot and left its retry state behind:
    one slot waiting to restart plus a scale-down exited 3 while a healthy worker served."""
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        gpt2 = store / "gpt2" / "1.json"
        gpt2.write_bytes(gpt2.read_bytes().replace(b"[", b"{", 1))  # no replacement can start
        os.kill(max(worker_pids(server)), signal.SIGKILL)
        # its second failed start: the slot now waits 2 s for its retry
        assert wait_for(lambda: "retrying in 2s" in server_log(server), 60), server_log(server)
        server.process.send_signal(signal.SIGTTOU)
        time.sleep(4)  # handled within 0.5 s; then past the retry that was due
        assert server.process.poll() is None, server_log(server)[-3000:]
        assert count_ok(server.base)
        assert readyz(server.base) == (200, 1, 1)
    finally:
        stop_server(server)
    assert server.process.returncode == 0


def test_readyz_follows_sigttin_and_sigttou(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        server.process.send_signal(signal.SIGTTIN)
        assert wait_for(lambda: readyz(server.base) == (200, 3, 3), 60), readyz(server.base)
        for left in (2, 1):  # one at a time: a signal sent again before it is handled is one
            server.process.send_signal(signal.SIGTTOU)
            expected = (200, left, left)
            assert wait_for(lambda: readyz(server.base) == expected, 60), left  # noqa: B023
        assert len(worker_pids(server)) == 1
    finally:
        stop_server(server)
    assert server.process.returncode == 0


def established_per_worker(pids: list[int], port: int) -> dict[int, int]:
    """Connections to `port` each process holds open (its socket fds, matched in /proc/net/tcp)."""
    established = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port, state, inode = int(fields[1].split(":")[1], 16), fields[3], fields[9]
        if local_port == port and state == "01":  # ESTABLISHED, server side
            established.add(f"socket:[{inode}]")
    counts = {}
    for pid in pids:
        fds = Path(f"/proc/{pid}/fd")
        counts[pid] = sum(1 for fd in fds.iterdir() if os.readlink(fd) in established)
    return counts


def test_keep_alive_connections_opened_together_reach_every_worker(store: Path) -> None:
    """Each worker listens on its own SO_REUSEPORT socket: 32 connections opened together are
    spread by the kernel, not all accepted by the worker that woke first."""
    server = start_server(2, TOKSVC_STORE=str(store))
    clients = [httpx.Client(base_url=server.base, timeout=10) for _ in range(32)]
    try:
        for client in clients:
            assert client.post("/v1/tokenizers/gpt2/count", json={"text": "hi"}).status_code == 200
        counts = established_per_worker(sorted(worker_pids(server)), server.port)
        assert sum(counts.values()) == 32, counts
        assert min(counts.values()) > 0, counts
        print(f"\n32 keep-alive connections per worker: {sorted(counts.values())}")
    finally:
        for client in clients:
            client.close()
        stop_server(server)


def test_a_second_service_on_the_same_port_is_refused(store: Path) -> None:
    server = start_server(2, TOKSVC_STORE=str(store))
    try:
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "service",
                "serve",
                "--workers",
                "2",
                "--host",
                "127.0.0.1",
                "--port",
                str(server.port),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "TOKSVC_STORE": str(store)},
        )
        assert second.returncode != 0
        assert "address already in use" in second.stderr.lower()
        assert count_ok(server.base)
    finally:
        stop_server(server)
