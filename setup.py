"""Build configuration that pyproject.toml cannot express.

- The bundled store ships inside the package as `service.bundled_store` (mapped from the
  top-level `tokenizers_store/`); the web assets and the extension's stub as package data.
- The native engine (service/bpe/csrc/*.c) is built as `service.bpe._native`. It is optional:
  without a C compiler (or if compilation fails) the package still installs, and the service runs
  on the pure-Python engine, saying so at start-up and on /readyz. TOKSVC_NATIVE_CFLAGS adds
  compiler flags (the sanitizer build in bench/attacks/fuzz_native.sh).
- The quick-check tables of normal_spans.h (service/bpe/csrc/normal_tables.h) are generated from
  `unicodedata`; when the building Python's Unicode version differs from the committed header's,
  they are generated anew into the build directory and the extension compiled with
  NORMAL_TABLES_HEADER naming that file (the source tree is left as it is). Should that fail, the
  committed tables are compiled: normalization stays exact (service/bpe/pipeline/normal_forms.py
  uses the
  tables only under their own version), only slower.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

from setuptools import Extension, find_packages, setup
from setuptools.command.build_ext import build_ext

CSRC = Path(__file__).resolve().parent / "service" / "bpe" / "csrc"


def normal_tables(build_temp: str) -> list[tuple[str, str | None]]:
    """The macro pointing normal_spans.h at tables of this Python's Unicode version, when the
    committed ones are of another."""
    header = (CSRC / "normal_tables.h").read_text("utf-8")
    found = re.search(r'#define NORMAL_UNICODE_VERSION "([^"]*)"', header)
    if found and found.group(1) == unicodedata.unidata_version:
        return []
    out = Path(build_temp).resolve() / "normal_tables.h"
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as f:
            subprocess.run(
                [sys.executable, str(CSRC / "gen_normal_tables.py")], stdout=f, check=True
            )
    except (OSError, subprocess.CalledProcessError) as exc:
        print(
            f"WARNING: normal_tables.h not generated ({exc}); NFC/NFKC will not use the native "
            "scan",
            file=sys.stderr,
        )
        return []
    return [("NORMAL_TABLES_HEADER", f'"{out}"')]


class OptionalBuildExt(build_ext):
    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler at all
            print(
                f"WARNING: native engine not built ({exc}); the Python engine will serve",
                file=sys.stderr,
            )

    def build_extension(self, ext: Extension) -> None:
        try:
            ext.define_macros = [*ext.define_macros, *normal_tables(self.build_temp)]
            super().build_extension(ext)
        except Exception as exc:
            print(
                f"WARNING: native engine not built ({exc}); the Python engine will serve",
                file=sys.stderr,
            )


extra = os.environ.get("TOKSVC_NATIVE_CFLAGS", "").split()
setup(
    packages=[*find_packages(include=["service", "service.*"]), "service.bundled_store"],
    package_dir={"service.bundled_store": "tokenizers_store"},
    package_data={
        "service.bundled_store": ["manifest.json", "*/*.json"],
        "service.api": ["assets/*/*"],  # web assets: the vendored Swagger UI, the playground
        "service.bpe": ["_native.pyi"],
    },
    ext_modules=[
        Extension(
            "service.bpe._native",
            sources=["service/bpe/csrc/_native.c"],
            depends=[
                "service/bpe/csrc/merge.h",
                "service/bpe/csrc/normal_spans.h",
                "service/bpe/csrc/normal_tables.h",
                "service/bpe/csrc/token_tables.h",
                "service/bpe/csrc/backtrack.h",
                "service/bpe/csrc/backtrack_build.h",
                "service/bpe/csrc/engine.h",
                "service/bpe/csrc/engine_init.h",
                "service/bpe/csrc/trie.h",
                "service/bpe/csrc/piece_cache.h",
                "service/bpe/csrc/piece_cache_life.h",
                "service/bpe/csrc/piece_memo.h",
                "service/bpe/csrc/hot_pieces.h",
                "service/bpe/csrc/caches_module.h",
                "service/bpe/csrc/py_boundary.h",
                "service/bpe/csrc/engine_calls.h",
                "service/bpe/csrc/words_call.h",
                "service/bpe/csrc/engine_life.h",
                "service/bpe/csrc/ascii_runs.h",
                "service/bpe/csrc/pretok.h",
                "service/bpe/csrc/pretok_cased.h",
                "service/bpe/csrc/pretok_chain.h",
                "service/bpe/csrc/unicode_tables.h",
                "service/bpe/csrc/vocab_check.h",
                "service/bpe/csrc/wordcut.h",
            ],
            extra_compile_args=["-O3", "-std=c11", "-Wall", "-Wextra", *extra],
            extra_link_args=[f for f in extra if f.startswith("-fsanitize")],
        )
    ],
    cmdclass={"build_ext": OptionalBuildExt},
)
