"""Every command in README's Command line and HTTP API sections, and every Python block of its
Library and Client sections, runs as written and prints (or evaluates to) what the README shows.

Commands run in bash, in a fresh folder holding the input files the README names (the upstream
files from tests/data) and tests/data itself (a README command reads it, as in a clone), with this
venv's `toksvc` and `python` first on PATH. A `# → output` comment is one line of stdout (`…`
stands for anything); a command that prints more lines says so in a remark after it (`(then a
line per part)`) or shows its output as `#` lines below it instead. Each fragment of such a
`# {...}` line (split at `…` and at wide gaps) must appear in the output.
`toksvc serve` lines are started, must answer /readyz with 200, and are stopped. In a Python
block, an expression statement ending in `# → value` must have that repr; each block runs in a
fresh interpreter (the Client section's against the test server instead of 127.0.0.1:8000).
"""

from __future__ import annotations

import ast
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support.server import Server, free_port
from tests.support.testdata import vocab_file

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text("utf-8")


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


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, re.S)


def checked_script(block: str) -> tuple[str, int]:
    """The block with each `expression  # → value` statement made a check that the value's repr
    is the one shown (a remark after three spaces and a parenthesis is not part of it); returns
    the script and the number of checks."""
    shown: dict[int, str] = {}
    for n, line in enumerate(block.splitlines(), 1):
        if found := re.match(r"^.*?\s{2,}#\s→\s(.*)$", line):
            shown[n] = re.split(r"\s{3,}\(", found.group(1))[0].strip()
    checks: list[int] = []

    class Checks(ast.NodeTransformer):
        def visit_Expr(self, node: ast.Expr) -> ast.Expr:
            if node.lineno not in shown:
                return node
            checks.append(node.lineno)
            call = ast.Call(
                ast.Name("__check", ast.Load()),
                [node.value, ast.Constant(shown[node.lineno]), ast.Constant(node.lineno)],
                [],
            )
            return ast.copy_location(ast.Expr(call), node)

    tree = ast.fix_missing_locations(Checks().visit(ast.parse(block)))
    assert sorted(checks) == sorted(shown), "a `# →` comment is not on an expression statement"
    prelude = (
        "def __check(value, shown, line):\n"
        "    assert repr(value) == shown, f'README line {line}: {value!r}, not {shown}'\n"
    )
    return prelude + ast.unparse(tree), len(checks)


def check_python(title: str, cwd: Path, env: dict[str, str], base: str | None = None) -> int:
    """Run every Python block of a section; returns the number of values checked."""
    checked = 0
    for block in python_blocks(section(title)):
        script, n = checked_script(block)
        if base is not None:
            script = script.replace("http://127.0.0.1:8000", base)
        done = subprocess.run(
            [sys.executable, "-c", script],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{block}\n{done.stderr}"
        checked += n
    return checked


def environment(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKSVC_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    return env


def run(command: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{command}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def serve_and_stop(command: str, cwd: Path, env: dict[str, str]) -> None:
    port = free_port()
    # bash passes SIGTERM on to the command and exits with the command's status
    script = f"trap 'kill -TERM $pid; wait $pid; exit $?' TERM; {command} & pid=$!; wait $pid"
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=cwd,
        env={**env, "TOKSVC_PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


def check_section(title: str, cwd: Path, env: dict[str, str]) -> tuple[int, int]:
    """Run every command of a section; returns (commands run, outputs checked)."""
    ran = checked = 0
    for block in sh_blocks(section(title)):
        for command, comment, after in commands(block):
            if command.startswith("B="):
                continue  # the caller points B at the test server
            if "toksvc serve" in command:
                serve_and_stop(command, cwd, env)
                ran += 1
                continue
            stdout = run(command, cwd, env)
            ran += 1
            if comment.startswith("→"):  # one line of the output, `…` for anything
                expected, *remark = re.split(r"\s{2,}", comment[1:].strip())
                pattern = ".*".join(map(re.escape, expected.split("…")))
                lines = stdout.rstrip("\n").splitlines()
                assert any(re.fullmatch(pattern, line.strip()) for line in lines), (
                    f"{command}: printed {stdout!r}, README {expected!r}"
                )
                assert len(lines) == 1 or remark, (
                    f"{command}: prints {len(lines)} lines, README shows one and does not say "
                    f"what else it prints: {stdout!r}"
                )
                checked += 1
            for line in after:  # fragments of the output shown below the command
                remark = re.split(r"\s{3,}\(", line)[0]
                for part in re.split(r"…|\s{2,}", remark):
                    fragment = part.strip().rstrip(",")
                    if fragment:
                        assert fragment in stdout, f"{command}\nREADME: {fragment}\ngot: {stdout}"
                        checked += 1
    return ran, checked


def test_command_line_examples(tmp_path: Path) -> None:
    # a README command writes corpus.txt from it
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    inputs = {
        "cl100k_base.tiktoken": "cl100k_base.tiktoken",
        "tokenizer.json": "qwen3_tokenizer.json",
        "tekken_240911.json": "tekken_240911.json",
        "tokenizer.model": "mistral_instruct_tokenizer_241114.model.v7",
        "encoder.json": "encoder.json",
        "vocab.bpe": "vocab.bpe",
    }
    for as_name, name in inputs.items():
        (tmp_path / as_name).symlink_to(vocab_file(name))
    ran, checked = check_section("Command line", tmp_path, environment(tmp_path))
    assert ran >= 15 and checked >= 9
    assert not (ROOT / "mystore").exists()  # everything went to the folder the commands ran in


def test_http_examples(server: Server, tmp_path: Path) -> None:
    env = {**environment(tmp_path), "B": server.base}
    ran, checked = check_section("HTTP API", tmp_path, env)
    assert ran >= 10 and checked >= 10


def test_model_examples(server: Server, tmp_path: Path) -> None:
    env = {**environment(tmp_path), "B": server.base}
    ran, checked = check_section("Models: chat counts, cost estimates, text budgets", tmp_path, env)
    assert ran >= 6 and checked >= 8


def test_library_examples(tmp_path: Path) -> None:
    assert check_python("Library", tmp_path, environment(tmp_path)) >= 9


def test_client_examples(server: Server, tmp_path: Path) -> None:
    assert check_python("Client", tmp_path, environment(tmp_path), server.base) >= 9
