"""The adversarial attacks of issue 23 (High 1-7, the seven Medium) and of the second run on
the provider routes, images, ignored parameters and format v2 (P1-P5), one function each.

Each attack sends its requests, bounded in count and time, and returns the outcomes it saw: HTTP
statuses (`200`, `503`, ...), or words for what is not a status (`timeout`, `closed`,
`still-connected`, `supervisor-exited`, `versions:1,2`). `bench/load/chaos.py --attacks` runs them
against a real `toksvc serve` and measures /healthz and the workers' RSS around each.

`scale` shrinks the sizes (1.0: the issue's sizes).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx

T = "/v1/tokenizers/cl100k_base"
TOKEN = "chaos-admin-token"
Outcomes = Counter[str]


@dataclass
class Target:
    base: str
    port: int
    pid: int  # the supervisor
    store: Path  # a copy of the bundled store, the server's TOKSVC_STORE
    workers: int
    scale: float = 1.0


def post(
    t: Target,
    path: str,
    body: bytes | dict[str, object],
    timeout: float = 30,
    headers: dict[str, str] | None = None,
) -> str:
    """One request on a fresh connection: its status, or `timeout` / `error`."""
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    try:
        r = httpx.post(
            t.base + path,
            content=content,
            timeout=timeout,
            headers={"content-type": "application/json", **(headers or {})},
        )
        return str(r.status_code)
    except httpx.TimeoutException:
        return "timeout"
    except httpx.HTTPError:
        return "error"


def at_once(jobs: list[Callable[[], str]]) -> Outcomes:
    with ThreadPoolExecutor(len(jobs)) as pool:
        return Counter(pool.map(lambda job: job(), jobs))


def n(t: Target, count: int) -> int:
    return max(1, int(count * t.scale))


# --- High ----------------------------------------------------------------------------------------

LARGE_ROUTES = [
    (f"{T}/count", "text"),
    (f"{T}/encode", "text"),
    (f"{T}/truncate", "text"),
    (f"{T}/chunk", "text"),
    (f"{T}/decode", "ids"),
    (f"{T}/decode/step", "ids"),
    ("/v1/models/gpt-4o/count", "messages"),
    ("/v1/models/gpt-4o/estimate", "messages"),
]


def large_requests_over_8_routes(t: Target) -> Outcomes:
    """High 1: 16 large (1.5 MB) requests per worker, spread over 8 routes, at once; the cap
    admits 2 per worker (TOKSVC_MAX_LARGE_REQUESTS), the rest should be 503."""
    text = "word " * n(t, 300_000)
    bodies = {
        "text": {"text": text, "max_tokens": 1_000_000},
        "ids": {"ids": [1917] * n(t, 250_000)},
        "messages": {"messages": [{"role": "user", "content": text}]},
    }
    jobs = []
    for i in range(16 * t.workers):
        path, kind = LARGE_ROUTES[i % len(LARGE_ROUTES)]
        body = dict(bodies[kind])
        if not path.endswith(("truncate", "chunk")):
            body.pop("max_tokens", None)
        jobs.append(lambda p=path, b=body: post(t, p, b, timeout=60))
    return at_once(jobs)


def explain_doubling_merges(t: Target) -> Outcomes:
    """High 2: 28 inline merges, each joining the last token with itself (a 474-byte body)."""
    merges = [[97 if i == 0 else 255 + i] * 2 + [256 + i] for i in range(28)]
    body = {"text": "a", "rule": "pairs", "merges": merges}
    return at_once([lambda: post(t, "/v1/playground/explain", body, 60)] * (2 * t.workers))


def encode_pieces_and_offsets(t: Target) -> Outcomes:
    """High 3: an 8 MB text encoded with pieces and offsets, once per worker."""
    body = {"text": "ab " * n(t, 2_790_000), "pieces": True, "offsets": "utf16"}
    return at_once([lambda: post(t, f"{T}/encode", body, 60)] * t.workers)


def model_count_of_empty_messages(t: Target) -> Outcomes:
    """High 4: `[{"role": "user"}] * 1000` (18 KB) counted by two clients in a loop for 15 s
    (gpt-oss: harmony renders a message without content; Qwen3's template refuses it)."""
    body = {"messages": [{"role": "user"}] * n(t, 1000), "breakdown": True}  # the costly form
    stop = time.monotonic() + 15

    def loop() -> str:
        seen: Outcomes = Counter()
        while time.monotonic() < stop:
            seen[post(t, "/v1/models/gpt-oss/count", body, 30)] += 1
        return ",".join(f"{k}x{v}" for k, v in seen.items())

    return at_once([loop, loop])


def chunk_in_one_token_chunks(t: Target) -> Outcomes:
    """High 5: 256 KB of text in 1-token chunks; the client gives up after 20 s."""
    body = {"text": "word " * n(t, 52_000), "max_tokens": 1}
    return Counter([post(t, f"{T}/chunk", body, 20)])


def sigttou_with_a_waiting_slot(t: Target) -> Outcomes:
    """High 6: one more worker (SIGTTIN), killed twice as it starts so its slot waits to
    restart, then a scale-down (SIGTTOU): the supervisor must keep serving. (Only with a
    supervisor, i.e. 2 workers or more: one worker is served without one.)"""
    if t.workers < 2:
        return Counter(["n/a:no-supervisor"])
    os.kill(t.pid, signal.SIGTTIN)
    time.sleep(3)
    for _ in range(2):
        pids = [p for p in worker_pids(t.pid) if p != t.pid]
        if pids:
            os.kill(max(pids), signal.SIGKILL)  # the newest
        time.sleep(0.5)
    os.kill(t.pid, signal.SIGTTOU)
    time.sleep(5)
    alive = _alive(t.pid)
    out = Counter(["supervisor-alive" if alive else "supervisor-exited"])
    if alive:
        out[probe(t)] += 1
    return out


def fifo_and_sparse_manifest(t: Target) -> Outcomes:
    """High 7: the manifest replaced by a FIFO, then by a 1.5 GB sparse file; an admin reload
    and a SIGHUP each time. The manifest is restored (and a blocked reader fed) afterwards."""
    manifest = t.store / "manifest.json"
    good = manifest.read_bytes()
    auth = {"authorization": f"Bearer {TOKEN}"}
    out: Outcomes = Counter()
    try:
        manifest.unlink()
        os.mkfifo(manifest)
        out["fifo:" + post(t, "/admin/reload", b"", 10, auth)] += 1
        os.kill(t.pid, signal.SIGHUP)
        time.sleep(3)
        out["fifo-then:" + probe(t)] += 1
        _feed_fifo(manifest, good)
        manifest.unlink()
        with manifest.open("wb") as f:
            f.truncate(n(t, 1536) * 1024 * 1024)
        out["sparse:" + post(t, "/admin/reload", b"", 60, auth)] += 1
    finally:
        _feed_fifo(manifest, good)
        manifest.unlink(missing_ok=True)
        manifest.write_bytes(good)
    return out


def _feed_fifo(path: Path, data: bytes) -> None:
    """Unblock a reader stuck opening the FIFO: give it the good manifest."""
    if not path.exists() or not stat.S_ISFIFO(path.stat().st_mode):
        return
    for _ in range(3):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # no reader waiting
            return
        try:
            os.write(fd, data)
        except OSError:
            pass
        finally:
            os.close(fd)


# --- Medium --------------------------------------------------------------------------------------


def deep_json(t: Target) -> Outcomes:
    """~1000-deep JSON in messages, tools and tool-call arguments, for three chat formats."""
    deep = '{"a":' * 1000 + "{}" + "}" * 1000
    bodies = [
        '{"messages":[{"role":"user","content":[' + deep + "]}]}",
        '{"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function",'
        '"function":{"name":"f","parameters":' + deep + "}}]}",
        '{"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f",'
        '"arguments":' + json.dumps(deep) + "}}]}]}",
    ]
    return Counter(
        post(t, f"/v1/models/{m}/{op}", b.encode())
        for m in ("qwen3", "gpt-oss", "gpt-4o")
        for op in ("count", "estimate")
        for b in bodies
    )


def odd_tool_schemas(t: Target) -> Outcomes:
    schemas = [
        {"type": "object", "properties": ["a"]},
        {"type": "object", "properties": {"a": {"enum": 5}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": [1]}}},
    ]
    out: Outcomes = Counter()
    for model in ("qwen3", "gpt-oss", "gpt-4o"):
        for schema in schemas:
            tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
            body = {"messages": [{"role": "user", "content": "hi"}], "tools": tools}
            for op in ("count", "estimate"):
                out[post(t, f"/v1/models/{model}/{op}", body)] += 1
    return out


def reload_racing_an_edit(t: Target) -> Outcomes:
    """Three admin reloads while the manifest's default version of `bard` flips; then which
    version the workers serve (asked 20 times on fresh connections)."""
    manifest = t.store / "manifest.json"
    good = manifest.read_bytes()
    auth = {"authorization": f"Bearer {TOKEN}"}
    out: Outcomes = Counter()
    try:
        for i in range(3):
            doc = json.loads(good)
            for e in doc["tokenizers"]:
                if e["name"] == "bard":
                    e["default"] = e["version"] == ("1" if i % 2 == 0 else "2")
            flip = threading.Thread(
                target=lambda d=doc: (
                    time.sleep(0.05),
                    manifest.write_text(json.dumps(d, indent=2)),
                )
            )
            flip.start()
            out["reload:" + post(t, "/admin/reload", b"", 30, auth)] += 1
            flip.join()
        time.sleep(2)
        versions = set()
        for _ in range(20):
            try:
                versions.add(httpx.get(f"{t.base}/v1/tokenizers/bard", timeout=5).json()["version"])
            except (httpx.HTTPError, KeyError, ValueError):
                versions.add("?")
        out["versions:" + ",".join(sorted(versions))] += 1
    finally:
        manifest.write_bytes(good)
        post(t, "/admin/reload", b"", 30, auth)
    return out


def concurrent_playground_trains(t: Target) -> Outcomes:
    """12 trainings of 20 KB at once (512 merges); the clients give up after 30 s."""
    words = " ".join(f"w{i % 997}x{i % 13}" for i in range(3000))[: n(t, 20_000)]
    body = {"text": words, "merges": 512, "min_frequency": 1}
    return at_once([lambda: post(t, "/v1/playground/train", body, 30)] * 12)


def streams_memory(t: Target) -> Outcomes:
    """16 WebSockets each sending one 3.5 MB message; a client that sends pings and never reads;
    a 7 MB message in 2-byte continuation frames."""
    path = f"{T}/decode/ws"
    message = json.dumps({"ids": [1917] * n(t, 580_000)}).encode()
    out = at_once([lambda: _ws_send(t, path, [(0x1, message)], 20)] * 16)
    ping = bytes(125)
    out.update([_ws_send(t, path, [(0x9, ping)] * n(t, 200_000), 20, read=False)])
    frames = [(0x1, b"[" * 2)] + [(0x0, b"  ")] * n(t, 1_000_000)
    out.update([_ws_send(t, path, frames, 30)])
    return out


def _ws_send(
    t: Target, path: str, frames: list[tuple[int, bytes]], seconds: float, read: bool = True
) -> str:
    """A raw WebSocket client: handshake, the frames (the last one final), then one read."""
    key = base64.b64encode(os.urandom(16)).decode()
    try:
        with socket.create_connection(("127.0.0.1", t.port), timeout=seconds) as sock:
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                "Sec-WebSocket-Version: 13\r\n\r\n".encode()
            )
            head = sock.recv(4096)
            if not head.startswith(b"HTTP/1.1 101"):
                return "ws-" + head.split(b" ", 2)[1].decode()
            deadline = time.monotonic() + seconds
            batch = bytearray()
            for i, (op, data) in enumerate(frames):
                final = op in (0x8, 0x9, 0xA) or i == len(frames) - 1 or frames[i + 1][0] != 0
                batch += _frame(op, data, final)
                if len(batch) > 1 << 16:
                    sock.sendall(batch)
                    batch.clear()
                    if time.monotonic() > deadline:
                        return "ws-sender-gave-up"
            sock.sendall(batch)
            if not read:
                return "ws-sent"
            reply = sock.recv(2)
            return "ws-closed" if not reply else f"ws-op{reply[0] & 0x0F}"
    except TimeoutError:
        return "ws-timeout"
    except OSError:
        return "ws-closed"


def _frame(op: int, data: bytes, final: bool) -> bytes:
    mask = b"\x01\x02\x03\x04"
    size = len(data)
    head = bytes([(0x80 if final else 0) | op])
    if size < 126:
        head += bytes([0x80 | size])
    elif size < 1 << 16:
        head += bytes([0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head += bytes([0x80 | 127]) + size.to_bytes(8, "big")
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data)) if size < 256 else _mask(data)
    return head + mask + masked


def _mask(data: bytes) -> bytes:
    key = int.from_bytes(b"\x01\x02\x03\x04" * ((len(data) + 3) // 4), "big")
    whole = (int.from_bytes(data + bytes(-len(data) % 4), "big") ^ key).to_bytes(
        len(data) + (-len(data) % 4), "big"
    )
    return whole[: len(data)]


def nul_in_static_paths(t: Target) -> Outcomes:
    paths = ["/playground/assets/main.js%00", "/schema/assets/swagger-ui/%00.css"] * 10
    out: Outcomes = Counter()
    for p in paths:
        try:
            out[str(httpx.get(t.base + p, timeout=10).status_code)] += 1
        except httpx.HTTPError:
            out["error"] += 1
    return out


def ndjson_keeps_sending(t: Target) -> Outcomes:
    """A stream ended early (an answered line, then a malformed one: it ends with an error line,
    as at the ids limit), then the client keeps sending for up to 10 s or 64 MB: `closed` if
    the server disconnects it, `still-connected` if not."""
    with socket.create_connection(("127.0.0.1", t.port), timeout=10) as sock:
        sock.sendall(
            f"POST {T}/decode/stream HTTP/1.1\r\nHost: x\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        for line in (b'{"ids": [9906]}\n', b"{oops}\n"):
            sock.sendall(b"%x\r\n%s\r\n" % (len(line), line))
        status = sock.recv(65536).split(b" ", 2)[1].decode()
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        sent, stop = 0, time.monotonic() + 10
        try:
            while sent < (64 << 20) and time.monotonic() < stop:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            return Counter([status, "closed"])
    return Counter([status, "still-connected"])


# --- the provider routes, images, ignored parameters, format v2 (the second attack run) --------


def _deep(levels: int) -> str:
    return '{"a":' * levels + "{}" + "}" * levels


def deep_provider_bodies(t: Target) -> Outcomes:
    """P1: a Responses `arguments` string 100,000 lists deep (was a 500), and objects 900 deep
    in a tool_use input, an input_schema, Responses parameters and /tokenize's kwargs (were
    rendered; a 422 past 64 levels now), for 3 models."""
    out: Outcomes = Counter()
    arguments = '{"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    for model in ("gpt-4o", "qwen3", "gpt-oss"):
        call = {"type": "function_call", "call_id": "c", "name": "f", "arguments": arguments}
        out[post(t, "/v1/responses/input_tokens", {"model": model, "input": [call]})] += 1
        bodies = [
            (
                "/v1/messages/count_tokens",
                '{"model": "%s", "messages": [{"role": "assistant", '
                '"content": [{"type": "tool_use", "id": "1", "name": "f", "input": %s}]}]}',
            ),
            (
                "/v1/messages/count_tokens",
                '{"model": "%s", "tools": [{"name": "f", '
                '"input_schema": %s}], "messages": [{"role": "user", "content": "hi"}]}',
            ),
            (
                "/tokenize",
                '{"model": "%s", "messages": [{"role": "user", "content": "x"}], '
                '"chat_template_kwargs": {"k": %s}}',
            ),
        ]
        for path, template in bodies:
            out[post(t, path, (template % (model, _deep(900))).encode())] += 1
    return out


def token_strs_amplified(t: Target) -> Outcomes:
    """P2: /tokenize with `return_token_strs` on 2 MB of rare CJK pairs (1.7M tokens, most of
    them half a character): built on the event loop (4.8 s of /healthz), 17.8 MB answered past
    the 16 MiB output limit; now sized exactly first (413) and built in the work."""
    body = {"model": "gpt-4o", "prompt": "\u9fa5\u4dff" * n(t, 350_000), "return_token_strs": True}
    return at_once([lambda: post(t, "/tokenize", body, 120)] * t.workers)


def ignored_parameters_of_a_million_lists(t: Target) -> Outcomes:
    """P3: `stop` of 1.3M empty lists (5 MB), ignored by the count, twice per worker at once,
    then eight 1 MB ones: decoded into objects on the event loop (2-10 s of /healthz)."""
    messages = [{"role": "user", "content": "hi"}]
    big = {"messages": messages, "stop": [[]] * n(t, 1_300_000)}
    small = {"messages": messages, "stop": [[]] * n(t, 200_000)}
    path = "/v1/models/gpt-4o/count"
    return at_once(
        [lambda: post(t, path, big, 60)] * (2 * t.workers) + [lambda: post(t, path, small, 60)] * 8
    )


def v2_pre_tokenization(t: Target) -> Outcomes:
    """P4: 7 MB of " 1" counted by deepseek-v4 (Python pre-tokenization, ~6 us a piece): once
    by a client that leaves after 3 s (`timeout`; the work used to run on), once by one that
    waits (200 after 51 s past the 30 s work deadline; then 413 at the deadline). The bundled
    DeepSeek files are cut in C since issue 19: a 200 in well under a second now."""
    body = {"text": " 1" * n(t, 3_500_000)}
    path = "/v1/tokenizers/deepseek-v4/count"
    return Counter([post(t, path, body, 3), post(t, path, body, 120)])


def jpeg_fill_bytes(t: Target) -> Outcomes:
    """P5: 5,400 base64 JPEGs of 1,020 fill bytes before the frame header (7.6 MB, 5.5M header
    reads); the client leaves after 2 s (the reads used to run to their end), then one waits."""
    jpeg = b"\xff\xd8" + b"\xff" * 1020 + b"\xc0\x00\x11\x08\x01\x00\x01\x00\x03"
    part = {
        "type": "image_url",
        "image_url": {"url": "data:image/jpeg;base64," + base64.b64encode(jpeg).decode()},
    }
    body = {"messages": [{"role": "user", "content": [part] * n(t, 5_400)}]}
    path = "/v1/models/gpt-4o/count"
    return Counter([post(t, path, body, 2), post(t, path, body, 120)])


# --- helpers -------------------------------------------------------------------------------------


def worker_pids(pid: int) -> list[int]:
    """The worker processes of `toksvc serve` `pid` (itself when it runs one worker)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    found = []
    for p in children:
        try:
            if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes():
                found.append(int(p))
        except OSError:
            pass
    return found or [pid]


def probe(t: Target) -> str:
    try:
        return "healthz-" + str(httpx.get(t.base + "/healthz", timeout=5).status_code)
    except httpx.HTTPError:
        return "healthz-down"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return (
        Path(f"/proc/{pid}/status").exists()
        and "zombie" not in Path(f"/proc/{pid}/status").read_text()
    )


ATTACKS: list[tuple[str, Callable[[Target], Outcomes]]] = [
    ("H1 large requests over 8 routes (16/worker)", large_requests_over_8_routes),
    ("H2 explain: 28 doubling merges", explain_doubling_merges),
    ("H3 encode pieces+offsets, 8 MB", encode_pieces_and_offsets),
    ("H4 model count of 1000 empty messages, 2 loops", model_count_of_empty_messages),
    ("M1 ~1000-deep JSON (3 models)", deep_json),
    ("M2 odd tool schemas (3 models)", odd_tool_schemas),
    ("M5 streams: 16 WS x 3.5 MB, ping flood, 2-byte frames", streams_memory),
    ("M6 %00 in static paths", nul_in_static_paths),
    ("M7 NDJSON keeps sending after its end", ndjson_keeps_sending),
    ("M3 reload racing a store edit", reload_racing_an_edit),
    ("H5 chunk 256 KB in 1-token chunks", chunk_in_one_token_chunks),
    ("M4 12 playground trains at once", concurrent_playground_trains),
    ("H7 FIFO, then 1.5 GB sparse manifest, reload", fifo_and_sparse_manifest),
    ("H6 SIGTTOU with a slot waiting to restart", sigttou_with_a_waiting_slot),
    ("P1 provider routes: deep arguments string, 900-deep objects", deep_provider_bodies),
    ("P2 /tokenize return_token_strs, 2 MB of rare CJK", token_strs_amplified),
    ("P3 ignored stop of 1.3M lists x2 + eight 1 MB", ignored_parameters_of_a_million_lists),
    ("P4 deepseek-v4 count of 7 MB ' 1'", v2_pre_tokenization),
    ("P5 5,400 JPEGs of 1,020 fill bytes", jpeg_fill_bytes),
]
