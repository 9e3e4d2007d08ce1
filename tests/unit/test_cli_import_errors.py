"""`toksvc import` and `train` fail as one line and a non-zero exit, never a traceback, and leave
the store as it was: on a source file whose text holds a lone surrogate (a `\\ud800` escape), on
command-line text that is not UTF-8 (Python reads its bytes as lone surrogates), on a store that
cannot be written (read-only, or a file where a folder should be) and on a full disk (a real
ENOSPC: a temporary file the import writes is /dev/full). A special or added token of 5,000
characters imports, verifies and counts (its trie once raised RecursionError from ~500)."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

import pytest

from service.cli import main
from service.store.importers.gpt2 import gpt2_byte_alphabet


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line(code: int, out: str, err: str, *named: str) -> None:
    assert code == 1 and out == "", (code, out, err)
    assert err.startswith("toksvc: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and all(n in err for n in named), err


def byte_level_doc(vocab_extra: dict[str, int], added: list[dict[str, Any]]) -> dict[str, Any]:
    """A byte-level tokenizer.json: the 256 bytes spelled in GPT-2's alphabet, then more."""
    spell = {b: c for c, b in gpt2_byte_alphabet().items()}
    return {
        "added_tokens": added,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {spell[b]: b for b in range(256)} | vocab_extra,
                  "merges": []},
    }  # fmt: skip


def added(content: str) -> dict[str, Any]:
    return {"id": 256, "content": content, "single_word": False, "lstrip": False,
            "rstrip": False, "normalized": False, "special": True}  # fmt: skip


def tekken_doc(specials: list[str]) -> dict[str, Any]:
    return {
        "config": {"pattern": ".", "default_num_special_tokens": len(specials),
                   "default_vocab_size": len(specials) + 256, "version": "v11"},
        "vocab": [{"rank": b, "token_bytes": base64.b64encode(bytes([b])).decode()}
                  for b in range(256)],
        "special_tokens": [{"rank": k, "token_str": s} for k, s in enumerate(specials)],
    }  # fmt: skip


@pytest.mark.parametrize(
    ("kind", "doc", "where"),
    [
        ("hf", byte_level_doc({"\ud800x": 256}, []), "model.vocab: the key '\\ud800x'"),
        ("hf", byte_level_doc({"<x>": 256}, [added("\udc80")]), "added_tokens[0].content"),
        ("tekken", tekken_doc(["<s>", "\ud800", "</s>"]), "special_tokens[1].token_str"),
    ],
)
@pytest.mark.parametrize("escaped", [True, False])
def test_a_lone_surrogate_in_a_source_file_is_one_line_naming_where(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    *,
    kind: str,
    doc: Any,
    where: str,
    escaped: bool,
) -> None:
    """As a `\\u` escape, or as the three bytes UTF-8 would spell it with (which `json` reads)."""
    source = tmp_path / "source.json"
    if escaped:
        source.write_text(json.dumps(doc), "ascii")
        assert "\\ud" in source.read_text("ascii")
    else:
        source.write_bytes(json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        assert b"\\ud" not in source.read_bytes()
    store = tmp_path / "store"
    code, out, err = run(
        capsys, "import", kind, str(source), "--name", "t", "--version", "1", "--store", str(store)
    )
    assert_one_line(code, out, err, str(source), where, "lone surrogate")
    assert not store.exists()


def test_a_surrogate_pair_escape_is_a_character_and_imports(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "tokenizer.json"
    source.write_text(
        json.dumps(byte_level_doc({"\U0001f600": 256}, [added("\U0001f600")])), "ascii"
    )
    assert "\\ud83d\\ude00" in source.read_text("ascii")
    store = tmp_path / "store"
    code, out, err = run(
        capsys, "import", "hf", str(source), "--name", "t", "--version", "1", "--store", str(store)
    )
    assert code == 0 and "t/1.json" in out, err


@pytest.mark.parametrize(
    ("flags", "where"),
    [
        (["--special", "<\udcff>"], "special_tokens: the key '<\\udcff>'"),
        (["--description", "caf\udce9"], "metadata.description"),
    ],
)
def test_command_line_text_that_is_not_utf8_is_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str], where: str
) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 50, "utf-8")
    store = tmp_path / "store"
    code, _, err = run(
        capsys,
        "train",
        str(corpus),
        "--vocab-size",
        "260",
        "--name",
        "t",
        "--version",
        "1",
        "--store",
        str(store),
        *flags,
    )
    err = err[err.index("toksvc: error: ") :]  # after the progress bar
    assert_one_line(code, "", err, str(store / "t" / "1.json"), where, "must be UTF-8")
    assert not store.exists()


def test_a_profile_name_that_is_not_utf8_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(byte_level_doc({}, [])), "utf-8")
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": "{{ 1 }}", "model_max_length": 100}), "utf-8")
    store = tmp_path / "store"
    code, out, err = run(
        capsys,
        "import",
        "hf",
        str(source),
        "--name",
        "t",
        "--version",
        "1",
        "--chat-config",
        str(config),
        "--model",
        "m\udcff",
        "--store",
        str(store),
    )
    assert_one_line(code, out, err, str(config), "name: a lone surrogate")
    assert not store.exists()


def import_hf(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, store: Path, name: str, version: str
) -> tuple[int, str, str]:
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(byte_level_doc({}, [])), "utf-8")
    return run(
        capsys, "import", "hf", str(source), "--name", name, "--version", version,
        "--store", str(store),
    )  # fmt: skip


def tree(store: Path) -> dict[str, bytes | None]:
    """Every path under `store` (None: a folder), with the bytes of each regular file."""
    if not store.exists():
        return {}
    return {
        str(p.relative_to(store)): None if p.is_dir() else p.read_bytes()
        for p in sorted(store.rglob("*"))
        if not p.is_symlink()
    }


@pytest.mark.parametrize(
    ("name", "full", "named"),
    [("u", ".manifest.json.tmp", "manifest.json"), ("t", "t/.1.json.tmp", "t/1.json")],
    ids=["the manifest, after a new name's folder and file", "the tokenizer file"],
)
def test_a_full_disk_is_one_line_and_leaves_the_store_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, full: str, named: str
) -> None:
    """The temporary file the import writes (`full`) is a link to /dev/full, where every write
    fails with ENOSPC, as on a full disk. Before, the import ended in a traceback and left the
    new name's folder behind, with a file the manifest does not list."""
    assert Path("/dev/full").is_char_device(), "this test needs /dev/full (Linux)"
    store = tmp_path / "store"
    assert import_hf(capsys, tmp_path, store, "t", "0")[0] == 0
    before = tree(store)
    (store / full).symlink_to("/dev/full")
    code, out, err = import_hf(capsys, tmp_path, store, name, "1")
    assert_one_line(code, out, err, f"{store / named}: cannot be written (No space left on device)")
    assert not os.path.lexists(store / full)
    assert tree(store) == before
    code, out, _ = run(capsys, "verify", "--store", str(store))
    assert code == 0 and "1 tokenizers" in out


def chmod_stops_writes(folder: Path) -> bool:
    """Whether this process is refused a file in a folder without write permission (root is
    not, unless it runs without CAP_DAC_OVERRIDE)."""
    folder.mkdir()
    folder.chmod(0o555)
    try:
        (folder / "x").write_text("")
    except PermissionError:
        return True
    finally:
        folder.chmod(0o755)
    assert os.geteuid() == 0, "a folder without write permission took a file"
    return False


@pytest.mark.parametrize("how", ["read-only", "a file above it", "a file for its folder"])
def test_an_unwritable_store_is_one_line_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """Read-only: a folder without write permission; root (euid 0 with CAP_DAC_OVERRIDE) writes
    there anyway, so then the store is under /sys, where the kernel lets no one make a folder."""
    store = tmp_path / "store"
    folders: list[Path] = []
    if how == "read-only" and not chmod_stops_writes(tmp_path / "probe"):
        assert Path("/sys").is_dir(), "as root this test needs /sys"
        store = Path("/sys") / f"toksvc-test-{os.getpid()}"
        expected = "Operation not permitted"
    elif how == "read-only":
        assert import_hf(capsys, tmp_path, store, "t", "0")[0] == 0
        folders = [store, store / "t"]
        expected = "Permission denied"
    elif how == "a file above it":
        (tmp_path / "file").write_text("")
        store = tmp_path / "file" / "store"
        expected = "Not a directory"
    else:
        store.mkdir()
        (store / "t").write_text("")
        expected = "Not a directory"
    before = tree(store)
    for folder in folders:
        folder.chmod(0o555)
    try:
        code, out, err = import_hf(capsys, tmp_path, store, "t", "1")
    finally:
        for folder in folders:
            folder.chmod(0o755)
    assert_one_line(code, out, err, str(store / "t" / "1.json"), "cannot be written", expected)
    assert tree(store) == before


def test_special_and_added_tokens_of_5000_characters_import_verify_and_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long_added, long_special = "<" + "a" * 5000 + ">", "<|" + "s" * 5000 + "|>"
    doc = byte_level_doc(
        {long_added: 256, long_special: 257},
        [added(long_added) | {"special": False}, added(long_special) | {"id": 257}],
    )
    source = tmp_path / "tokenizer.json"
    source.write_text(json.dumps(doc), "utf-8")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("hello world " * 50, "utf-8")
    store = str(tmp_path / "store")
    for args in (
        ["import", "hf", str(source), "--name", "t", "--version", "1"],
        ["train", str(corpus), "--vocab-size", "260", "--name", "s", "--version", "1",
         "--special", long_special],
    ):  # fmt: skip
        code, _, err = run(capsys, *args, "--store", store)
        assert code == 0, err
    code, out, err = run(capsys, "verify", "--store", store)
    assert code == 0 and "Traceback" not in err, err
    assert "ok    s@1 " in out and "ok    t@1 " in out
    assert "2 tokenizers, 0 models, 0 price files loaded, 0 failed" in out
    for name, token in (("t", long_added), ("t", long_special), ("s", long_special)):
        text = f"x{token}y"
        code, out, err = run(
            capsys, "count", name, text, "--allowed-special", "all", "--store", store
        )
        assert (code, out) == (0, "3\n"), err
