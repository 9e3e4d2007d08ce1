import pytest

from service.bpe import StreamDecoder
from service.errors import StreamStateError, UndecodableBytesError


def to_bytes(ids: list[int]) -> bytes:
    return bytes(ids)  # ids are byte values in these tests


def test_holds_back_half_a_character() -> None:
    d = StreamDecoder(to_bytes)
    assert d.decode([0xE4]) == ""
    assert d.decode([0xB8]) == ""
    assert d.pending == b"\xe4\xb8"
    assert d.decode([0xAD, 0x41]) == "中A"
    assert d.flush() == ""


def test_flush_replaces_an_unfinished_character() -> None:
    d = StreamDecoder(to_bytes, "replace")
    assert d.decode([0x41, 0xE4, 0xB8]) == "A"
    assert d.flush() == "\ufffd"


def test_strict_mode_names_the_offending_bytes_and_their_offset() -> None:
    d = StreamDecoder(to_bytes, "strict")
    assert d.decode([0x41, 0x42]) == "AB"
    assert d.decode([0xE4]) == ""
    with pytest.raises(UndecodableBytesError) as err:
        d.decode([0x41])
    assert err.value.offset == 2
    assert err.value.data == b"\xe4"


def test_state_resumes_on_another_decoder() -> None:
    first = StreamDecoder(to_bytes)
    assert first.decode([0x41, 0xF0, 0x9F]) == "A"
    second = StreamDecoder.resume(to_bytes, first.state())
    assert second.decode([0x98, 0x80]) == "😀"
    assert second.flush() == ""


def test_strict_offsets_survive_a_resume() -> None:
    first = StreamDecoder(to_bytes, "strict")
    first.decode([0x41, 0x42, 0x43, 0xE4])
    second = StreamDecoder.resume(to_bytes, first.state(), "strict")
    with pytest.raises(UndecodableBytesError) as err:
        second.flush()
    assert err.value.offset == 3


@pytest.mark.parametrize(
    "state",
    [
        "",
        "garbage",
        "u8.1.!!!!",
        "u8.x.AA==",
        "u8.0.QUJD",
        "u8.0.5Lit",
        "u8.0.gA==",
        "u8.0.8J-YgICA",
        "u8.-1.",
        "u8.0",
        "u8.007.8J8=",  # not canonical: state() writes "u8.7.8J8="
        "u8.0.8J9=",  # the same bytes as "8J8=" with stray low bits
        f"u8.{2**53}.",  # past any offset a state records
        "u8.999999999999999999.",  # 18 digits: one more byte and its state had 19
    ],
)
def test_forged_states_are_refused(state: str) -> None:
    if state == "":
        assert StreamDecoder.resume(to_bytes, state).pending == b""
        return
    with pytest.raises(StreamStateError):
        StreamDecoder.resume(to_bytes, state)


@pytest.mark.parametrize("offset", [0, 7, 2**53 - 10, 2**53 - 1])
def test_every_state_a_step_returns_resumes(offset: int) -> None:
    state = f"u8.{offset}.8J8="  # an offset and the held-back first half of 😀
    decoder = StreamDecoder.resume(to_bytes, state)
    assert decoder.state() == state
    assert decoder.decode([0x98, 0x80, 0x41, 0x42] * 5) == "😀AB" + "\ufffd\ufffdAB" * 4
    after = StreamDecoder.resume(to_bytes, decoder.state())  # the round trip holds
    assert after.state() == decoder.state()
    assert int(decoder.state().split(".")[1]) == min(offset + 22, 2**53 - 1)
