"""An admin reload's round counts only the reloads that began after it was asked for: a SIGHUP
reload already under way, which ends during the round, read the store before the request and
does not answer for it."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from service.api import store_state
from service.api.process.handoff import WorkerProcess


def test_a_reload_begun_before_the_round_does_not_answer_it(tmp_path: Path) -> None:
    process = WorkerProcess(state_dir=str(tmp_path), workers=1, supervisor_pid=1)
    began = time.time()  # an earlier reload begins ...
    since = time.time() + 0.001  # ... the admin request asks for a round ...
    while time.time() <= since:
        time.sleep(0.001)
    process.mark_loaded(os.getpid(), "old", began=began)  # ... and the earlier reload ends
    answered = asyncio.run(store_state.await_round(process, since, seconds=0.3))
    assert answered == {os.getpid(): None}

    process.mark_loaded(os.getpid(), "new", began=time.time())  # the round's own reload
    answered = asyncio.run(store_state.await_round(process, since, seconds=0.3))
    entry = answered[os.getpid()]
    assert entry is not None and entry.store == "new"
