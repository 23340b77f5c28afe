#!/usr/bin/env bash
# Fails when any C source differs from what clang-format (.clang-format) would produce.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.c' '*.h' 2>/dev/null || find src include tests -name '*.[ch]')
bad=0
for f in $files; do
    if ! clang-format --style=file "$f" | cmp -s - "$f"; then
        echo "format: $f differs from clang-format (run: clang-format -i $f)" >&2
        bad=1
    fi
done
[ $bad -eq 0 ] && echo "format: all C files formatted"
exit $bad
