#!/usr/bin/env bash
# Builds the C epoll echo server: benchmarks/c-echo/build.sh OUTDIR  ->  OUTDIR/epoll_echo
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../build-c.sh"
build_c epoll_echo epoll_echo.c "-std=c11 -pthread" "$@"
