#!/usr/bin/env bash
# Build the native engine with AddressSanitizer + UndefinedBehaviorSanitizer into a temporary
# directory and fuzz it for a bounded time (FUZZ_SECONDS, default 90) with hypothesis.
#   bench/attacks/fuzz_native.sh            # from the repository root, in the project's venv
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
CC=${CC:-gcc}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
SUFFIX=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
INCLUDE=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
SO="$TMP/_native$SUFFIX"
# normal_tables.h of this Python's Unicode version (as setup.py does when the committed one is not)
NORMAL=()
UNIDATA=$($PY -c 'import unicodedata; print(unicodedata.unidata_version)')
if ! grep -q "#define NORMAL_UNICODE_VERSION \"$UNIDATA\"" service/bpe/csrc/normal_tables.h; then
    $PY service/bpe/csrc/gen_normal_tables.py > "$TMP/normal_tables.h"
    NORMAL=("-DNORMAL_TABLES_HEADER=\"$TMP/normal_tables.h\"")
fi
$CC -shared -fPIC -O1 -g -std=c11 -Wall -Wextra -Werror \
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined \
    -I"$INCLUDE" "${NORMAL[@]}" service/bpe/csrc/_native.c -o "$SO"
LIBASAN=$($CC -print-file-name=libasan.so)
# leaks: CPython's own allocations at exit drown LeakSanitizer; bench/support/rss_native.py checks RSS
LD_PRELOAD="$LIBASAN" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    PYTHONMALLOC=malloc $PY bench/attacks/fuzz_native.py --so "$SO" --seconds "${FUZZ_SECONDS:-90}"
