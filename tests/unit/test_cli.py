import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from service.settings import BUNDLED_STORE
from tests.conftest import VOCAB


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_train_import_verify_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(Path(__file__).read_text("utf-8") * 3)
    store = str(tmp_path / "store")
    code, out, err = run(
        capsys,
        "train",
        str(corpus),
        "--vocab-size",
        "300",
        "--name",
        "t",
        "--version",
        "1",
        "--pattern",
        "gpt2",
        "--special",
        "<|end|>",
        "--store",
        store,
    )
    assert code == 0, err
    assert "t/1.json" in out and "merges [" in err and "44/44" in err
    code, out, err = run(
        capsys,
        "import",
        "tiktoken",
        str(VOCAB / "r50k_base.tiktoken"),
        "--name",
        "gpt2",
        "--version",
        "1",
        "--preset",
        "gpt2",
        "--store",
        store,
    )
    assert code == 0, err
    code, out, _ = run(capsys, "verify", "--store", store)
    assert code == 0 and "2 loaded, 0 failed" in out
    code, out, _ = run(capsys, "list", "--store", store)
    assert "* gpt2@1" in out and "* t@1" in out
    code, out, _ = run(
        capsys, "count", "t", "hello <|end|>", "--allowed-special", "all", "--store", store
    )
    assert code == 0 and int(out) >= 2


def test_verify_fails_on_a_changed_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "store"
    shutil.copytree(BUNDLED_STORE, store, ignore=shutil.ignore_patterns("o200k*", "qwen*"))
    manifest = json.loads((store / "manifest.json").read_text())
    manifest["tokenizers"] = [e for e in manifest["tokenizers"] if (store / e["path"]).exists()]
    (store / "manifest.json").write_text(json.dumps(manifest))
    target = store / "gpt2" / "1.json"
    data = bytearray(target.read_bytes())
    data[1000] = ord("7") if data[1000] != ord("7") else ord("8")
    target.write_bytes(bytes(data))
    code, out, _ = run(capsys, "verify", "--store", str(store))
    assert code == 1
    assert f"FAIL  {target}" in out and "sha256" in out


def test_encode_count_decode_use_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello world"))
    code, out, _ = run(capsys, "encode", "gpt2")
    assert code == 0 and json.loads(out) == [31373, 995]
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello world"))
    assert run(capsys, "count", "gpt2")[1].strip() == "2"
    monkeypatch.setattr(sys, "stdin", io.StringIO("[31373, 995]"))
    assert run(capsys, "decode", "gpt2")[1] == "hello world"


def test_errors_are_one_clear_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "encode", "gpt2", "a<|endoftext|>")
    assert code == 1 and "special token '<|endoftext|>'" in err
    code, _, err = run(capsys, "decode", "gpt2", "99999999")
    assert code == 1 and "unknown token id(s) 99999999" in err
    code, _, err = run(capsys, "count", "nope", "x")
    assert code == 1 and "available: " in err and "cl100k_base@1" in err


def test_python_dash_m_service_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "service", "count", "gpt2", "hello world"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "2"
