#!/usr/bin/env bash
# Builds the heartbeat storage floor probe: benchmarks/c-sqlite-floor/build.sh OUTDIR  ->  OUTDIR/heartbeat_floor
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../build-c.sh"
build_c heartbeat_floor heartbeat_floor.c "-std=c11 -lsqlite3" "$@"
