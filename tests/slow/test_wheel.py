"""A built wheel carries the bundled store and the console script: installed into a fresh venv and
run from a folder far from this checkout, it counts a text and serves."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_installs_and_counts_with_its_own_store(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = dist.glob("toksvc-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    fresh_site = Path(
        subprocess.run(
            [
                venv / "bin" / "python",
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # the dependencies come from this venv (a plain path: its editable-install hook for `service`
    # is not run there), the package itself only from the wheel
    (fresh_site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [venv / "bin" / "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    away = tmp_path / "elsewhere"
    away.mkdir()
    python = venv / "bin" / "python"
    where = subprocess.run(
        [python, "-c", "import service; print(service.__file__)"],
        cwd=away,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert where.startswith(str(fresh_site)), where
    counted = subprocess.run(
        [venv / "bin" / "toksvc", "count", "cl100k_base", "Hello, world"],
        cwd=away,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (counted.returncode, counted.stdout) == (0, "3\n"), counted.stderr
    verified = subprocess.run(
        [venv / "bin" / "toksvc", "verify"], cwd=away, capture_output=True, text=True, check=False
    )
    assert verified.returncode == 0 and " 0 failed" in verified.stdout, verified.stdout
    assert (
        str(fresh_site)
        in subprocess.run(
            [python, "-c", "from service.settings import BUNDLED_STORE as s; print(s)"],
            cwd=away,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
