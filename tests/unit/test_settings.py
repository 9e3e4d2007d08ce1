"""Settings: declared types and bounds, read from TOKSVC_* once; a bad value is one line naming
the variable; `toksvc serve` hands its workers the exact settings it built."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from service.api.process.handoff import ENV, Handoff, WorkerProcess, hand_on, received
from service.errors import ConfigError
from service.settings import BUNDLED_STORE, YEAR, Settings


def test_the_defaults_hold_without_any_variable() -> None:
    assert Settings.from_env({}) == Settings()
    assert Settings().stores == (BUNDLED_STORE,) and Settings().workers == 1


def test_values_are_parsed_from_strings() -> None:
    s = Settings.from_env(
        {
            "TOKSVC_WORKERS": "3",
            "TOKSVC_MAX_STREAM_SECONDS": "2.5",
            "TOKSVC_STRICT": "yes",
            "TOKSVC_PLAYGROUND": "off",
            "TOKSVC_ENGINE": "python",
            "TOKSVC_STORE": "/a:bundled",
            "TOKSVC_PORT": "",
        }
    )
    assert (s.workers, s.max_stream_seconds, s.strict, s.playground) == (3, 2.5, True, False)
    assert s.engine == "python" and s.stores == (Path("/a"), BUNDLED_STORE)
    assert s.port == 8000  # empty means unset


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("TOKSVC_WORKERS", "0"),  # >= 1
        ("TOKSVC_MAX_BODY_BYTES", "-5"),
        ("TOKSVC_PIECE_CACHE_SIZE", "-1"),  # >= 0
        ("TOKSVC_WRITE_SECONDS", "0.5"),  # >= 1 s
        ("TOKSVC_BODY_SECONDS", "-1"),
        ("TOKSVC_BODY_SECONDS", "inf"),  # every deadline ends (and inf cannot be handed on)
        ("TOKSVC_MAX_STREAM_SECONDS", "nan"),
        ("TOKSVC_PORT", "70000"),
        ("TOKSVC_PORT", "x"),
        ("TOKSVC_STRICT", "maybe"),
        ("TOKSVC_ENGINE", "c"),
        ("TOKSVC_STORE", ":"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_and_value(name: str, value: str) -> None:
    with pytest.raises(ConfigError) as err:
        Settings.from_env({"TOKSVC_WORKERS": "2", name: value})
    message = str(err.value)
    assert message.startswith(f"{name}={value!r} is not ") and "\n" not in message, message


def test_bounds_are_inclusive() -> None:
    s = Settings.from_env(
        {
            "TOKSVC_WORKERS": "1",
            "TOKSVC_WRITE_SECONDS": "1",
            "TOKSVC_PIECE_CACHE_SIZE": "0",
            "TOKSVC_PORT": "0",
        }
    )
    assert (s.workers, s.write_seconds, s.piece_cache_size, s.port) == (1, 1.0, 0, 0)


def test_settings_are_frozen_and_replaced_whole() -> None:
    s = Settings(workers=2)
    with pytest.raises(AttributeError):
        s.workers = 3  # type: ignore[misc]
    assert msgspec.structs.replace(s, workers=3).workers == 3 and s.workers == 2


def test_workers_receive_exactly_what_serve_built(monkeypatch: pytest.MonkeyPatch) -> None:
    built = Settings(stores=(Path("/x"), BUNDLED_STORE), port=1234, workers=2, strict=True)
    process = WorkerProcess(state_dir="/tmp/s", workers=2, supervisor_pid=42)
    monkeypatch.setenv("TOKSVC_STRICT", "0")  # the environment no longer decides
    monkeypatch.setenv(ENV, "")  # restored (removed) after the test
    hand_on(Handoff(settings=built, process=process))
    handed = received()
    assert handed.settings == built and handed.process == process
    assert handed.process.supervised


def test_the_largest_deadlines_are_handed_on_intact(monkeypatch: pytest.MonkeyPatch) -> None:
    built = Settings.from_env({"TOKSVC_BODY_SECONDS": str(YEAR), "TOKSVC_WRITE_SECONDS": "1e3"})
    monkeypatch.setenv(ENV, "")
    hand_on(Handoff(settings=built, process=WorkerProcess()))
    assert received().settings == built and built.body_seconds == YEAR


def test_a_lone_worker_reads_the_environment() -> None:
    handed = received({"TOKSVC_MAX_BATCH_ITEMS": "7"})
    assert handed.settings.max_batch_items == 7
    assert handed.process == WorkerProcess() and not handed.process.supervised


def test_the_roster_counts_loaded_workers_and_forgets_the_dead(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=2)
    assert process.loaded() == 0
    process.mark_loaded(101)
    process.mark_loaded(102)
    assert process.loaded() == 2
    process.forget(101)
    process.forget(999)  # never loaded: nothing to forget
    assert process.loaded() == 1
    assert WorkerProcess().loaded() is None  # a lone worker has nobody to count
