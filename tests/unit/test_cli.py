import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from service.settings import BUNDLED_STORE
from service.store.formats.tokenizer import TokenizerFile
from service.store.manifest import add_to_store
from tests.support.testdata import vocab_file


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
    assert "t/1.json" in out and "merges 44/44 (100%)" in err
    code, out, err = run(
        capsys,
        "import",
        "tiktoken",
        str(vocab_file("r50k_base.tiktoken")),
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
    assert code == 0 and "2 tokenizers, 0 models, 0 price files loaded, 0 failed" in out
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


def test_verify_says_a_tokenizer_that_is_not_self_consistent_is_fine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Token 258 is "abc" (a + b, then + c), but the merges make b + c first, so "abc" encodes
    to [97, 256]. Such a file is valid and exact: verify says what it is, not that it is wrong."""
    store = tmp_path / "store"
    for name, merges in [
        ("odd", [(98, 99, 256), (97, 98, 257), (257, 99, 258)]),
        ("fine", [(97, 98, 256), (256, 99, 257), (98, 99, 258)]),
    ]:
        tf = TokenizerFile(name=name, version="1", rule="pairs", pattern=None, merges=merges)
        add_to_store(store, tf)
    code, out, _ = run(capsys, "verify", "--store", str(store))
    assert code == 0
    lines = {line.split()[1]: line for line in out.splitlines() if line.startswith("ok ")}
    assert lines["fine@1"].endswith("  self-consistent")
    odd = lines["odd@1"]
    assert "not self-consistent: some tokens are not what its merges make of their bytes" in odd
    assert "(common in imported vocabularies; ids stay exact)" in odd
    assert "NOT" not in out


def test_encode_count_decode_use_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello world"))
    code, out, _ = run(capsys, "encode", "gpt2")
    assert code == 0 and json.loads(out) == [31373, 995]
    monkeypatch.setattr(sys, "stdin", io.StringIO("hello world"))
    assert run(capsys, "count", "gpt2")[1].strip() == "2"
    monkeypatch.setattr(sys, "stdin", io.StringIO("[31373, 995]"))
    assert run(capsys, "decode", "gpt2")[1] == "hello world\n"  # output ends with a newline
    assert run(capsys, "decode", "gpt2", "31373", "--no-newline")[1] == "hello"


def test_strip_newline_drops_the_one_echo_adds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hello, world\n"))
    assert run(capsys, "count", "cl100k_base")[1] == "4\n"  # the newline is a token
    monkeypatch.setattr(sys, "stdin", io.StringIO("Hello, world\n"))
    assert run(capsys, "count", "cl100k_base", "-n")[1] == "3\n"
    monkeypatch.setattr(sys, "stdin", io.StringIO("a\n\n"))
    assert run(capsys, "encode", "gpt2", "--strip-newline")[1] == "[64, 198]\n"  # only one


def test_allowed_special_takes_one_token_and_leaves_the_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "encode", "qwen2", "--allowed-special", "all", "<|im_start|>user")
    assert code == 0, err
    assert json.loads(out) == [151644, 872]
    two = ["--allowed-special", "<|endoftext|>", "--allowed-special", "<|fim_prefix|>"]
    code, out, err = run(capsys, "count", "cl100k_base", *two, "<|endoftext|><|fim_prefix|>")
    assert (code, out) == (0, "2\n"), err


def test_errors_name_the_flags_not_the_http_fields(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "encode", "gpt2", "a<|endoftext|>")
    assert code == 1 and "--allowed-special" in err and "--as-text" in err
    assert "allowed_special" not in err and "disallowed_special" not in err
    assert err.count("\n") == 1


def test_a_bad_setting_is_one_line_not_a_traceback() -> None:
    for env in ({"TOKSVC_PORT": "x"}, {"TOKSVC_WORKERS": "0"}, {"TOKSVC_STORE": ":"}):
        done = subprocess.run(
            [sys.executable, "-m", "service", "--help"],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            check=False,
        )
        assert done.returncode == 2, env
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert next(iter(env)) in done.stderr


def test_the_bundled_store_is_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (BUNDLED_STORE / "manifest.json").read_bytes()
    corpus = tmp_path / "c.txt"
    corpus.write_text("abc abd " * 200)
    for store in ([], ["--store", str(BUNDLED_STORE)], ["--store", "bundled"]):
        code, _, err = run(
            capsys,
            "train",
            str(corpus),
            "--vocab-size",
            "260",
            "--name",
            "x",
            "--version",
            "1",
            *store,
        )
        assert code == 1 and "read-only" in err and "--store DIR" in err, (store, err)
    assert (BUNDLED_STORE / "manifest.json").read_bytes() == before
    # a store of one's own is created, and served beside the bundled one
    mine = tmp_path / "mine"
    code, _, err = run(
        capsys,
        "train",
        str(corpus),
        "--vocab-size",
        "260",
        "--name",
        "x",
        "--version",
        "1",
        "--store",
        str(mine),
    )
    assert code == 0, err
    code, out, _ = run(capsys, "list", "--store", "bundled", "--store", str(mine))
    assert code == 0 and "* x@1" in out and "* cl100k_base@1" in out


def test_a_name_in_two_stores_is_an_error_naming_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "mine"
    code, _, err = run(
        capsys,
        "import",
        "tiktoken",
        str(vocab_file("r50k_base.tiktoken")),
        "--name",
        "gpt2",
        "--version",
        "2",
        "--preset",
        "gpt2",
        "--store",
        str(mine),
    )
    assert code == 0, err
    code, out, err = run(capsys, "verify", "--store", "bundled", "--store", str(mine))
    assert code == 1
    assert str(mine / "manifest.json") in out and str(BUNDLED_STORE / "manifest.json") in out
    assert "gpt2@2" in out


def test_an_import_that_would_not_load_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # SentencePiece-style file whose merge uses a byte-fallback token: the importer maps it, the
    # validation (which makes the synthetic character merges exact) refuses it
    vocab = {f"<0x{b:02X}>": b for b in range(256)} | {"<0xC3><0xA9>": 256}
    doc = {
        "model": {
            "type": "BPE",
            "vocab": vocab,
            "merges": [["<0xC3>", "<0xA9>"]],
            "byte_fallback": True,
        },
        "decoder": {"type": "ByteFallback"},
    }
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(doc))
    store = tmp_path / "store"
    code, out, err = run(
        capsys, "import", "hf", str(source), "--name", "r", "--version", "1", "--store", str(store)
    )
    assert code == 1 and out == "" and "byte-fallback token" in err and "r/1.json" in err, err
    assert not (store / "r").exists() and not (store / "manifest.json").exists()


@pytest.mark.parametrize(
    ("kind", "content", "field"),
    [
        ("hf", "not json", "not valid JSON"),
        ("hf", '{"model": {"type": "BPE"}}', "model.merges"),
        ("hf", '{"model": {"type": "BPE", "merges": [], "vocab": 3}}', "model.vocab"),
        ("hf", '{"model": {"type": "WordPiece"}}', "model.type"),
        ("tiktoken", "YQ== x\n", "line 1"),
        ("gpt2", "[1, 2]", "token -> id"),
    ],
)
def test_importer_failures_are_typed_and_name_file_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, content: str, field: str
) -> None:
    source = tmp_path / "source"
    source.write_text(content)
    files = [str(source), str(vocab_file("vocab.bpe"))] if kind == "gpt2" else [str(source)]
    code, _, err = run(
        capsys,
        "import",
        kind,
        *files,
        "--name",
        "r",
        "--version",
        "1",
        "--store",
        str(tmp_path / "store"),
    )
    assert code == 1 and "Traceback" not in err
    assert str(source) in err and field in err, err
    code, _, err = run(
        capsys,
        "import",
        kind,
        str(tmp_path / "missing"),
        *files[1:],
        "--name",
        "r",
        "--version",
        "1",
        "--store",
        str(tmp_path / "store"),
    )
    assert code == 1 and "cannot be read" in err and "missing" in err, err


def test_errors_are_one_clear_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text('{"messages": [{"role": "user", "content": "Hello"}]}')
    code, _, err = run(capsys, "encode", "gpt2", "a<|endoftext|>")
    assert code == 1 and "special token '<|endoftext|>'" in err
    code, _, err = run(capsys, "decode", "gpt2", "99999999")
    assert code == 1 and "unknown token id(s) 99999999" in err
    code, _, err = run(capsys, "count", "nope", "x")
    assert code == 1 and "available: " in err and "cl100k_base@1" in err
    listed = err.split("available: ")[1].strip().split(", ")
    assert {"cl100k_base", "gpt-4o", "gpt-4o@1"} <= set(listed)  # the plain names that work
    code, _, err = run(capsys, "count-chat", "nope", str(chat))
    assert code == 1 and {"gpt-4o", "gpt-4o@1"} <= set(err.split("available: ")[1].split(", "))


def test_python_dash_m_service_runs() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "service", "count", "gpt2", "hello world"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "2"


def test_import_model_and_prices_then_verify_and_estimate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = str(tmp_path / "store")
    profile = {
        "format": "toksvc-model",
        "name": "mine",
        "version": "1",
        "tokenizer": "cl100k_base@1",
        "context_window": 4096,
        "max_output_tokens": 512,
        "chat": {"type": "openai-estimate"},
    }
    prices = {
        "format": "toksvc-prices",
        "name": "ours",
        "version": "1",
        "currency": "EUR",
        "prices": [
            {
                "model": "mine",
                "input_per_million": "1.00",
                "output_per_million": "2.00",
                "source": "a contract",
                "read_on": "2026-12-01",
            }
        ],
    }
    (tmp_path / "mine.json").write_text(json.dumps(profile))
    (tmp_path / "ours.json").write_text(json.dumps(prices))
    both = ["--store", str(BUNDLED_STORE), "--store", store]
    code, out, err = run(capsys, "import", "model", str(tmp_path / "mine.json"), "--store", store)
    assert code == 0, err
    assert "models/mine@1.json" in out
    code, out, err = run(capsys, "import", "prices", str(tmp_path / "ours.json"), "--store", store)
    assert code == 0, err
    manifest = json.loads((tmp_path / "store" / "manifest.json").read_text())
    pinned = {e["path"]: e["sha256"] for e in manifest["models"] + manifest["prices"]}
    for path, source in (("models/mine@1.json", "mine.json"), ("prices/ours@1.json", "ours.json")):
        data = (tmp_path / source).read_bytes()  # kept byte for byte, pinned by its hash
        assert (tmp_path / "store" / path).read_bytes() == data
        assert pinned[path] == hashlib.sha256(data).hexdigest()
    code, out, err = run(capsys, "verify", *both)
    assert code == 0, err
    assert "mine@1" in out and "ours@1" in out and "2 price files" in out.splitlines()[-1]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    code, out, err = run(capsys, "estimate", "mine", str(chat), "--output-tokens", "100", *both)
    assert code == 0, err
    assert "EUR" in out and "ours@1" in out

    profile["tokenizer"] = "nope@1"
    (tmp_path / "bad.json").write_text(json.dumps(profile))
    code, out, err = run(capsys, "import", "model", str(tmp_path / "bad.json"), "--store", store)
    assert code != 0 and "nope@1" in err
    code, out, err = run(
        capsys, "import", "tiktoken", str(tmp_path / "ours.json"), "--store", store
    )
    assert code != 0 and "--name and --version" in err


def test_serve_help_lists_every_flag_and_setting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOKSVC_ADMIN_TOKEN", "do-not-print-me")
    monkeypatch.setenv("TOKSVC_PORT", "8123")
    with pytest.raises(SystemExit) as exit_:
        main(["serve", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    for flag in ("--host", "--port", "--workers", "--store"):
        assert flag in out
    assert "$TOKSVC_PORT; default: 8123" in " ".join(out.split())
    for variable in ("TOKSVC_LOG_FORMAT", "TOKSVC_ACCESS_LOG", "TOKSVC_MAX_BODY_BYTES"):
        assert variable in out
    assert "do-not-print-me" not in out and "(set)" in out
