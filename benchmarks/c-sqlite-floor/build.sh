#!/usr/bin/env bash
# Builds the heartbeat storage floor probe: benchmarks/c-sqlite-floor/build.sh OUTDIR  ->  OUTDIR/heartbeat_floor
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
"${CC:-gcc}" -std=c11 -O2 -Wall -Wextra -Werror -o "$1/heartbeat_floor" "$here/heartbeat_floor.c" -lsqlite3
