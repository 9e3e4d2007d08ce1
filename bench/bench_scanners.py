"""The C pre-tokenizers alone (no merging, no Python objects), for an A/B of checkouts: a small
driver is compiled against each checkout's service/bpe/csrc (as setup.py compiles the engine:
-O3, no -march) and times every scanner over each corpus and the worst-case texts. The
checkouts run in turn, several rounds, and each cell keeps its best MB/s (CPU time, best of 3
passes a round), so a machine loaded by other work skews both sides alike.

    python -m bench.bench_scanners ../main . --rounds 5
    python -m bench.bench_scanners . --only cl100k,o200k
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
from pathlib import Path

from bench.support.texts import corpus_files, worst_cases

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("TOKSVC_SHARED", ROOT.parent / "shared"))
SCANNERS = ["gpt2", "cl100k", "o200k", "qwen2", "llama3", "tekken", "qwen3.5", "kimi", "deepseek"]
DRIVER = r"""
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "pretok_chain.h"
static const scan_fn scanners[] = {scan_gpt2, scan_cl100k, scan_o200k, scan_qwen2, scan_llama3,
                                   scan_tekken, scan_qwen35, scan_kimi, scan_deepseek};
static double cpu(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) { /* scanner index, then files: one line of seconds per file */
    scan_fn scan = scanners[atoi(argv[1])];
    for (int a = 2; a < argc; a++) {
        FILE *f = fopen(argv[a], "rb");
        fseek(f, 0, SEEK_END);
        size_t n = (size_t)ftell(f), pieces = 0;
        uint8_t *s = malloc(n ? n : 1);
        fseek(f, 0, SEEK_SET);
        if (fread(s, 1, n, f) != n) return 1;
        fclose(f);
        double best = 1e9;
        size_t times = n ? 1 + 50000000 / n : 1; /* about 50 MB a pass: well above the clock's grain */
        for (int r = 0; r < 3; r++) {
            double t0 = cpu();
            pieces = 0;
            for (size_t k = 0; k < times; k++)
                for (size_t p = 0; p < n; p = scan(s, n, p)) pieces++;
            if ((cpu() - t0) / times < best) best = (cpu() - t0) / times;
        }
        printf("%.9f %zu\n", best, pieces / times);
        free(s);
    }
    return 0;
}
"""


def build(checkout: Path, out: Path) -> Path:
    src, exe = out / "driver.c", out / f"scan{abs(hash(checkout))}"
    src.write_text(DRIVER)
    csrc = checkout.resolve() / "service" / "bpe" / "csrc"
    subprocess.run(
        [os.environ.get("CC", "cc"), "-O3", "-std=c11", f"-I{csrc}", str(src), "-o", str(exe)],
        check=True,
    )
    return exe


def texts() -> dict[str, str]:
    chosen = dict(corpus_files())
    prose = chosen.get("en_shakespeare", next(iter(chosen.values())))
    code = chosen.get("code_python", prose)
    for label, text in worst_cases(prose, code).items():
        chosen[label.replace(" ", "_").replace(",", "")] = text
    chosen["spaces_and_newlines"] = ("    " * 8 + "\n" + "\t" * 20 + "\r\n") * 5_000
    return chosen


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", help="scanners, comma-separated")
    args = ap.parse_args()
    scanners = args.only.split(",") if args.only else SCANNERS
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        exes = [build(c, out) for c in args.checkouts]
        corpus = texts()
        files = []
        for name, text in corpus.items():
            (out / name).write_bytes(text.encode())
            files.append(str(out / name))
        best: dict[tuple[int, str, str], float] = {}
        pieces: dict[tuple[int, str, str], int] = {}
        for _ in range(args.rounds):
            for k, exe in enumerate(exes):
                for sc in scanners:
                    run = [str(exe), str(SCANNERS.index(sc)), *files]
                    lines = subprocess.run(run, check=True, capture_output=True, text=True).stdout
                    for name, line in zip(corpus, lines.split("\n"), strict=False):
                        sec, count = line.split()
                        mb_s = len(corpus[name].encode()) / 1e6 / max(float(sec), 1e-9)
                        best[k, sc, name] = max(best.get((k, sc, name), 0.0), mb_s)
                        pieces[k, sc, name] = int(count)
    heads = [str(c) for c in args.checkouts]
    print(f"{'scanner':<9}{'text':<26}" + "".join(f"{h[-14:]:>15}" for h in heads) + "  MB/s")
    for sc in scanners:
        for name in corpus:
            cells = "".join(f"{best[k, sc, name]:>15.0f}" for k in range(len(exes)))
            same = len({pieces[k, sc, name] for k in range(len(exes))}) == 1
            print(f"{sc:<9}{name[:25]:<26}{cells}" + ("" if same else "  PIECES DIFFER"))


if __name__ == "__main__":
    main()
