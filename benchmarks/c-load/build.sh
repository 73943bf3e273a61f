#!/usr/bin/env bash
# Builds the C load client: benchmarks/c-load/build.sh OUTDIR  ->  OUTDIR/load_client
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../build-c.sh"
build_c load_client load_client.c "-std=c11" "$@"
