"""Service benchmark: `toksvc serve` under wrk on loopback, next to the framework floor (a minimal
Litestar endpoint answering a constant), the engine alone, so HTTP overhead is visible, and a
FastAPI + tiktoken service written the obvious way (bench/support/fastapi_app.py), the same workers.

    python -m bench.bench_service              # about 3 minutes; needs `wrk` (Debian package)
    python -m bench.bench_service --seconds 5  # shorter runs

Bodies are many different texts per size, cut from ../shared/corpus; wrk cycles through them
(bench/cycle.lua). Every server listens on 127.0.0.1 only and is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec

from service.runtime import load_registry
from service.settings import Settings
from tests.support import serving

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
SIZES = {"200B": 200, "2KB": 2_000, "64KB": 64_000, "1MB": 1_000_000}
CONNECTIONS = {"200B": 32, "2KB": 32, "64KB": 8, "1MB": 4}  # enough for both workers to get some
COUNTS = {"200B": 2000, "2KB": 2000, "64KB": 200, "1MB": 20}  # different texts per size
TOKENIZER = "cl100k_base"
UVICORN = [sys.executable, "-m", "uvicorn"]


def texts(size: int, count: int) -> list[str]:
    corpus = "".join(p.read_text("utf-8") for p in sorted((SHARED / "corpus").glob("*.txt")))
    step = max(1, (len(corpus) - size) // count)
    return [corpus[i * step : i * step + size] for i in range(count)]


def start_app(app: str, workers: int) -> serving.Server:
    """A peer app (the floor, FastAPI + tiktoken) under plain uvicorn. It has no /readyz: ready
    once it answers 20 times in a row, each on a new connection, so that the kernel spreads them
    over the workers. (toksvc itself is started by `serving.start`, which waits for its own
    readiness signal.)"""
    port = serving.free_port()
    proc = subprocess.Popen(
        [
            *UVICORN,
            app,
            "--workers",
            str(workers),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--no-access-log",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = serving.Server(f"http://127.0.0.1:{port}", port, proc)
    deadline = time.monotonic() + 90
    streak = 0
    while time.monotonic() < deadline and streak < 20:
        try:
            r = httpx.post(
                f"{server.base}/v1/tokenizers/{TOKENIZER}/count", json={"text": "x"}, timeout=2
            )
            streak = streak + 1 if r.status_code == 200 else 0
        except httpx.HTTPError:
            streak = 0
        if streak == 0:
            time.sleep(0.3)
    if streak >= 20:
        return server
    serving.stop(server)
    raise RuntimeError(f"{app} did not start")


def wrk(port: int, bodies: Path, connections: int, seconds: int) -> dict[str, float]:
    env = {**os.environ, "BODIES": str(bodies), "TARGET_PATH": f"/v1/tokenizers/{TOKENIZER}/count"}
    out = subprocess.run(
        [
            "wrk",
            "-t1",
            f"-c{connections}",
            f"-d{seconds}s",
            "--timeout",
            "30s",
            "-s",
            str(ROOT / "bench" / "support" / "cycle.lua"),
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    # answers per second that were answers (2xx): a fast 503 (e.g. too many large requests) is no
    # throughput; errors and non-2xx are reported beside it
    result["rps"] = (result["requests"] - result["non2xx"]) / result["seconds"]
    return result


def engine_alone(samples: dict[str, list[str]]) -> dict[str, float]:
    """Requests per second the engine itself sustains on one core (no HTTP), same texts."""
    tok = load_registry(Settings(text_cache_bytes=0)).resolve(TOKENIZER).tokenizer
    out = {}
    for label, items in samples.items():
        start = time.perf_counter()
        for t in items:
            tok.count(t, disallowed_special=())
        out[label] = len(items) / (time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/bench_service.json")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        sys.exit("wrk not found: apt-get install wrk")
    work = Path(tempfile.mkdtemp(prefix="toksvc-bench-"))
    samples = {label: texts(size, COUNTS[label]) for label, size in SIZES.items()}
    bodies = {}
    for label, items in samples.items():
        bodies[label] = work / f"{label}.ndjson"
        bodies[label].write_bytes(b"\n".join(msgspec.json.encode({"text": t}) for t in items))
    results: dict[str, object] = {"engine_alone_rps": engine_alone(samples)}
    print(
        "engine alone (one core, no HTTP), requests/s:",
        {k: round(v, 1) for k, v in results["engine_alone_rps"].items()},
    )  # type: ignore[attr-defined]
    # The text cache is off, so every request does the full work (these texts never repeat anyway).
    env_off = {"TOKSVC_TEXT_CACHE_BYTES": "0"}
    os.environ.update(env_off)
    servers = {  # name -> (a uvicorn app, or toksvc itself; workers)
        "floor, 1 worker": ("bench.support.floor_app:app", 1),
        "toksvc, 1 worker": ("toksvc", 1),
        "toksvc, 2 workers": ("toksvc", 2),
        "floor, 2 workers": ("bench.support.floor_app:app", 2),
        "fastapi+tiktoken, 1 worker": ("bench.support.fastapi_app:app", 1),
        "fastapi+tiktoken, 2 workers": ("bench.support.fastapi_app:app", 2),
    }
    table = []
    print(
        f"\n{'server':<28} {'size':>6} {'conns':>5} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>9} "
        f"{'errors':>6}"
    )
    for name, (app, workers) in servers.items():
        server = serving.start(workers=workers) if app == "toksvc" else start_app(app, workers)
        port = server.port
        try:
            for label in SIZES:
                r = wrk(port, bodies[label], CONNECTIONS[label], args.seconds)
                row = {"server": name, "size": label, "connections": CONNECTIONS[label], **r}
                table.append(row)
                print(
                    f"{name:<28} {label:>6} {CONNECTIONS[label]:>5} {r['rps']:>9.1f} "
                    f"{r['p50_ms']:>8.2f} {r['p99_ms']:>9.2f} {r['errors'] + r['non2xx']:>6.0f}",
                    flush=True,
                )
        finally:
            serving.stop(server)
    results["runs"] = table

    def rps(server: str, size: str) -> float:
        return next(float(r["rps"]) for r in table if r["server"] == server and r["size"] == size)

    engine = results["engine_alone_rps"]
    ratios = {
        "2KB count vs floor (1 worker)": rps("toksvc, 1 worker", "2KB")
        / rps("floor, 1 worker", "2KB"),
        "1MB count vs engine alone (1 worker)": rps("toksvc, 1 worker", "1MB") / engine["1MB"],  # type: ignore[index]
        "2 workers vs 1, 2KB": rps("toksvc, 2 workers", "2KB") / rps("toksvc, 1 worker", "2KB"),
        "2 workers vs 1, 1MB": rps("toksvc, 2 workers", "1MB") / rps("toksvc, 1 worker", "1MB"),
        "floor 2 workers vs 1, 2KB": rps("floor, 2 workers", "2KB") / rps("floor, 1 worker", "2KB"),
        "toksvc vs fastapi+tiktoken, 2KB (1 worker)": rps("toksvc, 1 worker", "2KB")
        / rps("fastapi+tiktoken, 1 worker", "2KB"),
        "toksvc vs fastapi+tiktoken, 2KB (2 workers)": rps("toksvc, 2 workers", "2KB")
        / rps("fastapi+tiktoken, 2 workers", "2KB"),
    }
    results["ratios"] = ratios
    print()
    for k, v in ratios.items():
        print(f"{k:<40} {v:.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(msgspec.json.format(msgspec.json.encode(results)))
    shutil.rmtree(work, ignore_errors=True)
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
