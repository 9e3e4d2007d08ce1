"""Cheap requests that used to stall a worker: how long the event loop stays blocked now.

Starts `toksvc serve --workers 1` on 127.0.0.1 and sends each hostile body once while a probe asks
`/healthz` every 10 ms; prints the status, the request's wall time, the worker's CPU seconds and
the probe's worst latency (the event loop's longest stall, roughly).

    python -m bench.attacks.hostile_bodies
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support import serving

T = "/v1/tokenizers/gpt2"


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def ndjson_in_small_chunks(port: int) -> int:
    """One 8 MB NDJSON line sent in 1 KB chunks (the body limit is raised for this run)."""
    line = json.dumps({"ids": [31373] * 1_300_000}).encode() + b"\n"
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(
            f"POST {T}/decode/stream HTTP/1.1\r\nHost: x\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        try:
            for i in range(0, len(line), 1024):
                part = line[i : i + 1024]
                sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        except BrokenPipeError:  # the server refused the line before its end and closed
            return -1
        sock.sendall(b"0\r\n\r\n")
        data = b""
        while not data.endswith(b"0\r\n\r\n") and (chunk := sock.recv(1 << 20)):
            data += chunk
    return int(data.split()[1])


def main() -> int:
    env = {
        **os.environ,
        "TOKSVC_MAX_BODY_BYTES": str(16 * 1024 * 1024),
        "TOKSVC_MAX_IDS_PER_REQUEST": "2000000",
        "TOKSVC_MAX_STREAM_IDS": "2000000",
    }
    server = serving.start(env=env)
    proc, base, port = server.process, server.base, server.port

    def post(body: bytes, path: str) -> int:
        headers = {"content-type": "application/json"}
        return httpx.post(base + path, content=body, headers=headers, timeout=120).status_code

    cases: dict[str, Callable[[], int]] = {
        "8 MB malformed body of surrogate pairs": lambda: post(
            b'{"text": "' + b"\\ud83d\\ude00" * 690_000 + b'"', f"{T}/encode"
        ),
        "batch of 2,000,000 tiny lists": lambda: post(
            b'{"batch": [' + b",".join([b"[1]"] * 2_000_000) + b"]}", f"{T}/decode"
        ),
        "decode/step of 1,000,000 ids": lambda: post(
            json.dumps({"ids": [31373] * 1_000_000}).encode(), f"{T}/decode/step"
        ),
        "NDJSON: one 8 MB line in 1 KB chunks": lambda: ndjson_in_small_chunks(port),
        # qwen3 normalizes (NFC): its first use builds it; then the first long run of marks the
        # process meets, small (inline), needs the tables of decompositions (made as it loads)
        "qwen3 count of 'hello' (its first use)": lambda: post(
            b'{"text": "hello"}', "/v1/tokenizers/qwen3/count"
        ),
        "qwen3 count: 'a' + 80 marks, the first long run of marks": lambda: post(
            json.dumps({"text": "a" + "\u0301\u0316" * 40}).encode(), "/v1/tokenizers/qwen3/count"
        ),
        # runs of marks out of canonical order (CPython's insertion sort)
        "qwen3 count: 'a' + 3.7 M marks of two classes, alternating (7.4 MB)": lambda: post(
            json.dumps({"text": "a" + "\u0301\u0316" * 1_850_000}, ensure_ascii=False).encode(),
            "/v1/tokenizers/qwen3/count",
        ),
        "qwen3 count: 'a' + U+0F73 x 1.2 M (each two marks)": lambda: post(
            json.dumps({"text": "a" + "\u0f73" * 1_200_000}, ensure_ascii=False).encode(),
            "/v1/tokenizers/qwen3/count",
        ),
    }
    try:
        for name, send in cases.items():
            worst, done = 0.0, threading.Event()

            def probe() -> None:
                nonlocal worst
                with httpx.Client(base_url=base, timeout=30) as client:
                    while not done.is_set():
                        started = time.perf_counter()
                        client.get("/healthz")
                        worst = max(worst, time.perf_counter() - started)
                        time.sleep(0.01)

            prober = threading.Thread(target=probe)
            prober.start()
            cpu, started = cpu_seconds(proc.pid), time.perf_counter()
            status = send()
            took, used = time.perf_counter() - started, cpu_seconds(proc.pid) - cpu
            done.set()
            prober.join()
            print(
                f"{name}: {status} in {took:.2f} s, worker CPU {used:.2f} s, "
                f"worst /healthz {worst * 1000:.0f} ms"
            )
    finally:
        serving.stop(server, 30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
