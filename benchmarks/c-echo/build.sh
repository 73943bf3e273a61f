#!/usr/bin/env bash
# Builds the C epoll echo server: benchmarks/c-echo/build.sh OUTDIR  ->  OUTDIR/epoll_echo
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
"${CC:-gcc}" -std=c11 -O2 -Wall -Wextra -Werror -pthread -o "$1/epoll_echo" "$here/epoll_echo.c"
