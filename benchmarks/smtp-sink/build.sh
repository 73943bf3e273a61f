#!/usr/bin/env bash
# Builds the SMTP sink: benchmarks/smtp-sink/build.sh OUTDIR  ->  OUTDIR/smtp_sink
set -euo pipefail
if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p "$1"
"${CC:-gcc}" -O2 -Wall -Wextra -Werror -o "$1/smtp_sink" "$here/smtp_sink.c"
