"""`toksvc train`'s progress: a bar redrawn in place on a terminal, plain lines in a log."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from service.cli.progress import MergeProgress
from tests.support.testdata import corpus_text

ROOT = Path(__file__).resolve().parents[2]


def train_args(tmp_path: Path) -> list[str]:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(corpus_text("en_shakespeare.txt"), "utf-8")
    naming = ["--name", "t", "--version", "1", "--store", str(tmp_path / "store")]
    return ["train", str(corpus), "--vocab-size", "300", *naming]


def test_a_log_gets_a_plain_line_per_tenth_and_no_carriage_return(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(train_args(tmp_path)) == 0
    err = capsys.readouterr().err  # not a terminal
    assert "\r" not in err
    lines = [line for line in err.splitlines() if line.startswith("merges")]
    assert all(re.fullmatch(r"merges \d+/44 \(\d+%\)", line) for line in lines), lines
    assert 5 <= len(lines) <= 11 and lines[-1] == "merges 44/44 (100%)"
    percents = [int(line.split("(")[1].rstrip("%)")) for line in lines]
    assert percents == sorted(set(percents))  # each step once, in order


def test_a_terminal_gets_a_bar_redrawn_in_place(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with subprocess.Popen(
        [sys.executable, "-m", "service", *train_args(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env=env,
    ) as process:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process ended
                break
            if not chunk:
                break
            shown += chunk
        assert process.wait(timeout=60) == 0
    os.close(leader)
    text = shown.decode("utf-8")
    redraws = re.findall(r"\rmerges \[[#.]{40}\] (\d+)/44", text)
    assert len(redraws) > 11 and redraws[-1] == "44"  # one per percent, not per tenth
    assert "merges [" + "#" * 40 + "] 44/44\r\n" in text  # the bar's line is ended once done
    assert not re.search(r"^merges \d+/44 \(", text, re.M)  # no plain lines


def test_a_run_that_stops_short_ends_on_where_it_stopped() -> None:
    for tty in (False, True):
        stream = io.StringIO()
        stream.isatty = lambda tty=tty: tty  # type: ignore[method-assign]
        progress = MergeProgress(stream)
        for done in range(1, 31):
            progress(done, 44)
        progress.finish()
        out = stream.getvalue()
        if tty:
            assert out.endswith("\rmerges [" + "#" * 27 + "." * 13 + "] 30/44\n")
        else:
            assert out.splitlines()[-1] == "merges 30/44 (68%)" and "\r" not in out
