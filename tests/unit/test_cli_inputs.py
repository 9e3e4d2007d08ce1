"""The CLI's inputs (issue 23, low): a corpus that cannot be read is one line and exit 2, a
training run that stops short of --vocab-size says so, and count/encode take a file's contents
with --file or @PATH (as curl's -d @file) instead of counting its name."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest

from service.cli import main
from service.store.formats.tokenizer import parse

TEXT = "Hello, world: the quick brown fox.\nA second line.\n"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def train_args(corpus: Path, store: Path, vocab_size: int, *more: str) -> list[str]:
    return [
        "train",
        str(corpus),
        "--vocab-size",
        str(vocab_size),
        "--name",
        "t",
        "--version",
        "1",
        "--store",
        str(store),
        *more,
    ]


def test_train_on_a_missing_file_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing.txt"
    code, out, err = run(capsys, *train_args(missing, tmp_path / "store", 300))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("toksvc: error: corpus file ")
    assert str(missing) in err and "No such file" in err
    assert not (tmp_path / "store" / "manifest.json").exists()


def test_train_on_a_file_that_is_not_utf8_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "latin1.txt"
    corpus.write_bytes("café crème".encode("latin-1"))
    code, _, err = run(capsys, *train_args(corpus, tmp_path / "store", 300))
    assert code == 2 and err.count("\n") == 1 and "not UTF-8" in err


def test_a_vocabulary_short_of_vocab_size_is_a_warning_naming_the_size_reached(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3)  # far too little text for 5000 ids
    store = tmp_path / "store"
    code, _, err = run(capsys, *train_args(corpus, store, 5000))
    assert code == 0, err
    written = parse((store / "t" / "1.json").read_bytes())
    reached = 256 + len(written.merges)
    assert reached < 5000
    assert f"toksvc: warning: training stopped at a vocabulary of {reached}" in err
    assert "--vocab-size 5000" in err


def test_strict_size_refuses_a_short_vocabulary_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(TEXT * 3)
    store = tmp_path / "store"
    code, _, err = run(capsys, *train_args(corpus, store, 5000, "--strict-size"))
    assert code == 2 and "toksvc: error: training stopped at a vocabulary of" in err
    assert "nothing written" in err and not (store / "manifest.json").exists()


def stdin_count(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str
) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    code, out, err = run(capsys, "count", "gpt2")
    assert code == 0, err
    return out


@pytest.mark.parametrize("how", ["--file", "@"])
def test_count_and_encode_take_a_files_contents(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "file.txt"
    path.write_text(TEXT)
    given = ["--file", str(path)] if how == "--file" else [f"@{path}"]
    code, out, err = run(capsys, "count", "gpt2", *given)
    assert code == 0, err
    assert out == stdin_count(monkeypatch, capsys, TEXT)  # the contents, not the name
    assert out != stdin_count(monkeypatch, capsys, str(path))
    code, out, err = run(capsys, "encode", "gpt2", *given)
    monkeypatch.setattr(sys, "stdin", io.StringIO(TEXT))
    assert json.loads(out) == json.loads(run(capsys, "encode", "gpt2")[1])


def test_a_literal_text_starting_with_at(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "count", "gpt2", "--literal", "@someone hi")
    assert code == 0, err
    assert out == stdin_count(monkeypatch, capsys, "@someone hi")
    code, out, err = run(capsys, "count", "gpt2", "@no-such-file.txt")
    assert code == 2 and out == "" and "@file no-such-file.txt: cannot be read" in err


def test_a_text_that_names_a_file_is_counted_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text(TEXT)
    code, out, err = run(capsys, "count", "gpt2", "notes.txt")
    assert code == 0 and out == stdin_count(monkeypatch, capsys, "notes.txt")
    assert "toksvc: warning:" in err and "--file notes.txt" in err


def test_text_and_file_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "file.txt"
    path.write_text(TEXT)
    code, _, err = run(capsys, "count", "gpt2", "hello", "--file", str(path))
    assert code == 2 and "not both" in err
