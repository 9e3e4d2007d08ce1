import json
import shutil
from pathlib import Path

import msgspec
import pytest

from service.bpe import train
from service.errors import HashMismatchError, ManifestError, TokenizerNotFoundError
from service.store.formats.tokenizer import TokenizerFile
from service.store.loader import load_store
from service.store.manifest import MANIFEST, add_to_store, read_manifest


def trained(version: str, vocab_size: int) -> TokenizerFile:
    model = train([Path(__file__).read_text("utf-8")], vocab_size, r" ?\w+| ?[^\w\s]+|\s+")
    return TokenizerFile(
        name="tiny", version=version, rule="pairs", pattern=model.pattern, merges=model.merges
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    add_to_store(tmp_path, trained("1", 300))
    add_to_store(tmp_path, trained("2", 400))
    add_to_store(tmp_path, trained("3", 350), default=False)
    return tmp_path


def test_registry_resolves_default_and_pinned_versions(store: Path) -> None:
    reg = load_store(store)
    assert not reg.failures
    assert reg.resolve("tiny").version == "2"
    assert reg.resolve("tiny@1").version == "1"
    assert reg.resolve("tiny@3").tokenizer.n_vocab == 350
    assert [t.ref for t in reg] == ["tiny@1", "tiny@2", "tiny@3"]


def test_unknown_refs_list_what_exists(store: Path) -> None:
    reg = load_store(store)
    for ref in ("nope", "tiny@9", "../tiny", "tiny@"):
        with pytest.raises(TokenizerNotFoundError) as err:
            reg.resolve(ref)
        assert "tiny@2" in err.value.available


def test_one_changed_byte_is_refused_naming_the_file_and_others_still_load(store: Path) -> None:
    path = store / "tiny" / "1.json"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    reg = load_store(store)
    assert [t.ref for t in reg] == ["tiny@2", "tiny@3"]
    [failure] = reg.failures
    assert isinstance(failure, HashMismatchError)
    assert str(path) in str(failure)


def test_a_file_that_lies_about_its_name_is_refused(store: Path) -> None:
    # a valid file of another version copied over, with the manifest hash updated to match
    shutil.copy(store / "tiny" / "2.json", store / "tiny" / "1.json")
    manifest = json.loads((store / MANIFEST).read_text())
    manifest["tokenizers"][0]["sha256"] = manifest["tokenizers"][1]["sha256"]
    (store / MANIFEST).write_text(json.dumps(manifest))
    reg = load_store(store)
    [failure] = reg.failures
    assert "tiny@2" in str(failure) and "tiny@1" in str(failure)


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda m: m["tokenizers"][0].update(path="../etc/passwd"), "path must be"),
        (lambda m: m["tokenizers"].append(dict(m["tokenizers"][0])), "listed twice"),
        (lambda m: m["tokenizers"][0].update(default=True), "two default versions"),
        (lambda m: m["tokenizers"][1].update(default=False), "no default version"),
        (lambda m: m.update(extra=1), "extra"),
    ],
)
def test_bad_manifests_are_refused(store: Path, mutate, reason: str) -> None:  # type: ignore[no-untyped-def]
    manifest = json.loads((store / MANIFEST).read_text())
    mutate(manifest)
    (store / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(ManifestError, match=reason):
        read_manifest(store)
    reg = load_store(store)
    assert len(reg) == 0 and len(reg.failures) == 1


def test_a_missing_store_is_a_failure_not_a_crash(tmp_path: Path) -> None:
    reg = load_store(tmp_path / "nothing")
    assert len(reg) == 0
    assert "cannot be read" in str(reg.failures[0])


def test_loading_records_self_consistency(tmp_path: Path) -> None:
    # b+c, a+b, ab+c: token 258 ("abc") encodes to [97, 256], not to itself
    tf = TokenizerFile(
        name="odd",
        version="1",
        rule="pairs",
        pattern=None,
        merges=[(98, 99, 256), (97, 98, 257), (257, 99, 258)],
    )
    add_to_store(tmp_path, tf)
    add_to_store(tmp_path, msgspec.structs.replace(tf, version="2", merges=tf.merges[:2]))
    reg = load_store(tmp_path)
    assert reg.resolve("odd@1").self_consistent is False
    assert reg.resolve("odd@2").self_consistent is True


def test_the_hash_is_not_stored_in_the_file_it_covers(store: Path) -> None:
    entry = read_manifest(store).tokenizers[0]
    assert entry.sha256 not in (store / entry.path).read_text()
