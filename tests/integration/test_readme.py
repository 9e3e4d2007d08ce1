"""Every command in README's Command line and HTTP API sections runs as written and prints what
the README shows.

Commands run in bash, in a fresh folder holding the input files the README names (the upstream
files from tests/data), with this venv's `toksvc` and `python` first on PATH. A `# → output`
comment is the expected last line of stdout (`…` stands for anything); in the HTTP section, each
fragment of a `# {...}` comment (split at `…` and at wide gaps) must appear in the output.
`toksvc serve` lines are started, must answer /readyz with 200, and are stopped.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.serverproc import Server, free_port
from tests.testdata import corpus_text, vocab_file

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")
pytestmark = pytest.mark.slow


def section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def sh_blocks(text: str) -> list[list[str]]:
    return [block.splitlines() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def commands(lines: list[str]) -> list[tuple[str, str, list[str]]]:
    """(command, the comment ending its line, the comment lines after it); continuation lines
    are joined."""
    out: list[tuple[str, str, list[str]]] = []
    pending = ""
    for line in lines:
        if line.startswith("#"):
            if out:
                out[-1][2].append(line[1:].strip())
            continue
        pending += line
        if pending.endswith("\\"):
            pending = pending[:-1]
            continue
        found = re.match(r"^(.*?)\s{2,}#\s(.*)$", pending)
        command, comment = (found.group(1), found.group(2)) if found else (pending, "")
        out.append((command.strip(), comment, []))
        pending = ""
    return out


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSVC_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def run(command: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(["bash", "-c", f"set -o pipefail; {command}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def serve_and_stop(command: str, cwd: Path, env: dict[str, str]) -> None:
    port = free_port()
    # bash passes SIGTERM on to the command and exits with the command's status
    script = f"trap 'kill -TERM $pid; wait $pid; exit $?' TERM; {command} & pid=$!; wait $pid"
    process = subprocess.Popen(["bash", "-c", script], cwd=cwd,
                               env={**env, "TOKSVC_PORT": str(port)}, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        status = 0
        while time.monotonic() < deadline and process.poll() is None:
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code
            except httpx.TransportError:
                status = 0
            if status == 200:
                break
            time.sleep(0.3)
        assert status == 200, f"{command}: /readyz never answered 200 (exit {process.poll()})"
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0


def test_command_line_examples(tmp_path: Path) -> None:
    (tmp_path / "corpus.txt").write_text(corpus_text("en_shakespeare.txt"), "utf-8")
    inputs = {
        "cl100k_base.tiktoken": "cl100k_base.tiktoken",
        "tokenizer.json": "qwen3_tokenizer.json",
        "encoder.json": "encoder.json",
        "vocab.bpe": "vocab.bpe",
    }
    for as_name, name in inputs.items():
        (tmp_path / as_name).symlink_to(vocab_file(name))
    env = environment(tmp_path)
    ran = 0
    for block in sh_blocks(section("Command line")):
        for command, comment, _ in commands(block):
            if "toksvc serve" in command:
                serve_and_stop(command, tmp_path, env)
                ran += 1
                continue
            stdout = run(command, tmp_path, env)
            ran += 1
            if comment.startswith("→"):
                expected = re.split(r"\s{2,}", comment[1:].strip())[0]  # drop a "(remark)"
                last = stdout.rstrip("\n").splitlines()[-1]
                pattern = ".*".join(map(re.escape, expected.split("…")))
                assert re.fullmatch(pattern, last), (
                    f"{command}: printed {last!r}, README {expected!r}"
                )
    assert ran >= 15
    assert not (ROOT / "mystore").exists()  # everything went to the folder the commands ran in


def test_http_examples(server: Server, tmp_path: Path) -> None:
    env = environment(tmp_path)
    checked = 0
    for block in sh_blocks(section("HTTP API")):
        for command, _, comments in commands(block):
            if command.startswith("B="):
                env["B"] = server.base
                continue
            stdout = run(command, tmp_path, env)
            for comment in comments:
                remark = re.split(r"\s{3,}\(", comment)[0]
                for part in re.split(r"…|\s{2,}", remark):
                    fragment = part.strip().rstrip(",")
                    if fragment:
                        assert fragment in stdout, f"{command}\nREADME: {fragment}\ngot: {stdout}"
                        checked += 1
    assert checked >= 10
