"""A short, bounded Locust run against a real service: zero failed requests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_short_load_run_has_no_failures(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.load.run_load",
            "--workers",
            "2",
            "--users",
            "8",
            "--spawn-rate",
            "8",
            "--seconds",
            "12",
            "--p99-ms",
            "10000",
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for task in ("count", "encode", "decode", "decode_stream"):
        assert f"\n{task} " in done.stdout, done.stdout
    assert (tmp_path / "report.html").exists() and (tmp_path / "run_stats.csv").exists()
