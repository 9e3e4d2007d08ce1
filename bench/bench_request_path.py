"""The request path's cost outside the engine, this checkout against another one, side by side.

    python -m bench.bench_request_path --other /path/to/older/checkout   # about 3 minutes

Starts three servers at once, each with one worker and the text cache off: the framework floor
(`bench/support/floor_app.py`, a constant answer), `toksvc serve` from this checkout and from the other
checkout (its native extension built in place: `python setup.py build_ext --inplace` there). wrk
then takes turns on them (round-robin, `--rounds` times per body size) so that the machine's
drift falls on all three alike. Bodies are `count` requests of different real texts (a counter in
each, so no cache answers). The engine's own time per request is measured in-process on the same
texts; what is left of a request's time is the service's own work (parsing, policy, metrics,
response), printed in microseconds and as a multiple of the floor's whole request.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import msgspec

from bench.bench_service import start_app, wrk
from bench.support.texts import corpus
from service.runtime import load_registry
from service.settings import Settings
from tests.support import serving

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = "cl100k_base"
SIZES = {"200B": 200, "2KB": 2_000}


def bodies(size: int, count: int = 2000) -> list[str]:
    text = corpus()
    step = max(1, (len(text) - size) // count)
    return [f"{i} {text[i * step : i * step + size]}" for i in range(count)]


def engine_seconds(texts: list[str]) -> float:
    """Seconds per count of the engine alone (this checkout, no HTTP, no cache)."""
    tok = load_registry(Settings(text_cache_bytes=0)).resolve(TOKENIZER).tokenizer
    start = time.perf_counter()
    for t in texts:
        tok.count(t, disallowed_special=())
    return (time.perf_counter() - start) / len(texts)


def start_other(checkout: Path) -> serving.Server:
    """`toksvc serve` from another checkout: its own `service` package first on the path."""
    port = serving.free_port()
    env = {**os.environ, "PYTHONPATH": str(checkout), "TOKSVC_TEXT_CACHE_BYTES": "0"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "service",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--workers",
            "1",
        ],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = serving.Server(f"http://127.0.0.1:{port}", port, proc)
    deadline = time.monotonic() + 120  # an older checkout may not count its workers on /readyz:
    while time.monotonic() < deadline:  # one worker, so its 200 is enough
        try:
            if httpx.get(f"{server.base}/readyz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    serving.stop(server)
    raise RuntimeError(f"toksvc from {checkout} did not become ready")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--seconds", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--connections", type=int, default=16)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="toksvc-path-"))
    texts = {label: bodies(size) for label, size in SIZES.items()}
    files = {}
    for label, items in texts.items():
        files[label] = work / f"{label}.ndjson"
        files[label].write_bytes(b"\n".join(msgspec.json.encode({"text": t}) for t in items))
    engine = {label: engine_seconds(items) for label, items in texts.items()}
    os.environ["TOKSVC_TEXT_CACHE_BYTES"] = "0"
    servers = {
        "floor": start_app("bench.support.floor_app:app", 1),
        "this checkout": serving.start(workers=1),
        "other checkout": start_other(args.other),
    }
    rps: dict[tuple[str, str], list[float]] = {}
    try:
        for _ in range(args.rounds):
            for label in SIZES:
                for name, server in servers.items():
                    r = wrk(server.port, files[label], args.connections, args.seconds)
                    rps.setdefault((name, label), []).append(r["rps"])
    finally:
        for server in servers.values():
            serving.stop(server)
    results = []
    print(
        f"\n{'server':<16} {'size':>5} {'req/s (median)':>15} {'us/request':>11} "
        f"{'outside engine us':>18} {'x floor':>8}"
    )
    for label in SIZES:
        floor_us = 1e6 / statistics.median(rps[("floor", label)])
        for name in servers:
            median = statistics.median(rps[(name, label)])
            whole = 1e6 / median
            outside = whole - (0 if name == "floor" else engine[label] * 1e6)
            results.append(
                {
                    "server": name,
                    "size": label,
                    "rps": rps[(name, label)],
                    "us_per_request": whole,
                    "outside_engine_us": outside,
                    "x_floor": outside / floor_us,
                }
            )
            print(
                f"{name:<16} {label:>5} {median:>15.0f} {whole:>11.0f} {outside:>18.0f} "
                f"{outside / floor_us:>8.2f}"
            )
    print("\nengine alone, us per count:", {k: round(v * 1e6, 1) for k, v in engine.items()})
    out = ROOT / "bench/results/bench_request_path.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"engine_us": engine, "runs": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
