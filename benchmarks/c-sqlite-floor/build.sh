#!/usr/bin/env bash
# Builds the storage floor probes: benchmarks/c-sqlite-floor/build.sh OUTDIR  ->  OUTDIR/heartbeat_floor,
# OUTDIR/checkin_floor, OUTDIR/read_floor
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../build-c.sh"
build_c heartbeat_floor heartbeat_floor.c "-std=c11 -lsqlite3" "$@"
build_c checkin_floor checkin_floor.c "-std=c11 -lsqlite3" "$@"
build_c read_floor read_floor.c "-std=c11 -lsqlite3" "$@"
