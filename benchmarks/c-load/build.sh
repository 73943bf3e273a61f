#!/usr/bin/env bash
# Builds the C load client: benchmarks/c-load/build.sh OUTDIR  ->  OUTDIR/load_client
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
"${CC:-gcc}" -std=c11 -O2 -Wall -Wextra -Werror -o "$1/load_client" "$here/load_client.c"
