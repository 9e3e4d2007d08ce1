"""Unicode normalization of the corpora: the native scan of spans (service/bpe/pipeline/normal_forms.py's
`normalize`) against the line-by-line way it falls back on (`by_lines`), NFC and NFKC, best of
--repeat wall times (time.perf_counter), the two interleaved; and with --tokenizer, that
tokenizer's encode_ordinary of hi_devanagari (which it normalizes, if its file says so) with the
scan and without it; and with --dense, 2 MB lines of a composing mark every N characters (the
texts whose spans are densest), by spans, by lines (the whole line) and `unicodedata` whole, with
the peak of traced memory; and with --long-runs, `"a" + "\u0301\u0316" * N` (runs of two marks out of
canonical order) by the way without the extension (`by_lines`, which orders long runs in Python,
`in_order`) against `unicodedata` whole (CPython's quadratic ordering; up to 128 KB), and the
time `prepare` takes to make the tables once. A few seconds.

    python -m bench.bench_normalforms
    python -m bench.bench_normalforms --tokenizer qwen3 --dense
    python -m bench.bench_normalforms --long-runs --repeat 3
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
import unicodedata
from collections.abc import Callable
from pathlib import Path

from bench.bench_engine import fresh
from service.bpe.pipeline import normal_forms
from service.bpe.pipeline.normal_forms import Form

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared")) / "corpus"
NAMES = [
    "hi_devanagari",
    "zh_manpages",
    "ja_debian_reference",
    "mixed_emoji_test",
    "en_shakespeare",
    "en_python_docs",
    "code_python",
]
FORMS: list[Form] = ["NFC", "NFKC"]


def best(calls: list[Callable[[], object]], repeat: int) -> list[float]:
    """Each call's best time in ms over `repeat` rounds, the calls interleaved in each round."""
    times = [float("inf")] * len(calls)
    for _ in range(repeat):
        for i, call in enumerate(calls):
            start = time.perf_counter()
            call()
            times[i] = min(times[i], time.perf_counter() - start)
    return [t * 1e3 for t in times]


def traced_peak_mb(call: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()


def dense(repeat: int) -> None:
    print("period  spans  by spans ms  by lines ms  whole ms  peak MB by spans, whole")
    for period in (9, 12, 20, 32, 40, 64, 128, 200):
        text = ("a\u0301" + "x" * (period - 2)) * (2_000_000 // period)
        parts = normal_forms.SPANS("NFC", text) if normal_forms.SPANS else None
        new, old, whole = best(
            [
                lambda: normal_forms.normalize("NFC", text),
                lambda: normal_forms.by_lines("NFC", text),
                lambda: unicodedata.normalize("NFC", text),
            ],
            repeat,
        )
        peaks = [
            traced_peak_mb(lambda: normal_forms.normalize("NFC", text)),
            traced_peak_mb(lambda: unicodedata.normalize("NFC", text)),
        ]
        n = len(parts) // 2 if parts is not None else 0
        print(
            f"{period:6} {n:6} {new:12.1f} {old:12.1f} {whole:9.1f}  {peaks[0]:.0f}, {peaks[1]:.0f}"
        )


def long_runs(repeat: int) -> None:
    for form in FORMS:
        start = time.perf_counter()
        normal_forms.prepare(form)
        print(f"prepare({form}): {(time.perf_counter() - start) * 1e3:.0f} ms (once a process)")
    print("UTF-8 KB  form  by lines ms  unicodedata ms")
    for n in (8_000, 32_000, 128_000, 512_000, 1_850_000):
        text = "a" + "\u0301\u0316" * n
        for form in FORMS:
            calls: list[Callable[[], object]] = [lambda: normal_forms.by_lines(form, text)]
            if n <= 32_000:  # 128 KB: 3.3 s; 512 KB: about a minute
                calls.append(lambda: unicodedata.normalize(form, text))
            times = best(calls, repeat if n <= 32_000 else 1)
            if n <= 32_000:
                assert normal_forms.by_lines(form, text) == unicodedata.normalize(form, text)
            whole = f"{times[1]:14.1f}" if len(times) > 1 else "             -"
            print(f"{len(text.encode()) // 1000:8} {form:5} {times[0]:12.1f} {whole}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--tokenizer", help="also time this tokenizer's encode_ordinary (hi)")
    ap.add_argument("--dense", action="store_true", help="also the texts of densest spans")
    ap.add_argument("--long-runs", action="store_true", help="only long runs of marks, by lines")
    args = ap.parse_args()
    if args.long_runs:
        return long_runs(min(args.repeat, 5))
    spans = normal_forms.SPANS
    assert spans is not None, "no native scan (extension not built, or another Unicode version)"
    print("corpus               chars   form  spans  by lines ms  by spans ms  ratio")
    for name in NAMES:
        text = (CORPUS / f"{name}.txt").read_text("utf-8")
        for form in FORMS:
            parts = spans(form, text)
            old, new = best(
                [
                    lambda: normal_forms.by_lines(form, text),
                    lambda: normal_forms.normalize(form, text),
                ],
                args.repeat,
            )
            n = len(parts) // 2 if parts is not None else 0
            print(
                f"{name:20} {len(text):7} {form:5} {n:6} {old:12.3f} {new:12.3f} "
                f"{old / new if new else float('inf'):6.1f}x"
            )
    if args.tokenizer:
        loaded = fresh(args.tokenizer)
        tok = loaded.tokenizer
        text = (CORPUS / "hi_devanagari.txt").read_text("utf-8")

        def without() -> object:
            normal_forms.SPANS = None
            try:
                return tok.encode_ordinary(text)
            finally:
                normal_forms.SPANS = spans

        assert without() == tok.encode_ordinary(text)
        old, new = best([without, lambda: tok.encode_ordinary(text)], args.repeat)
        print(
            f"{args.tokenizer} ({loaded.normalization}) encode_ordinary hi_devanagari: by lines "
            f"{old:.2f} ms, by spans {new:.2f} ms"
        )
    if args.dense:
        dense(min(args.repeat, 5))


if __name__ == "__main__":
    main()
