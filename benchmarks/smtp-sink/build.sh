#!/usr/bin/env bash
# Builds the SMTP sink: benchmarks/smtp-sink/build.sh OUTDIR  ->  OUTDIR/smtp_sink
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../build-c.sh"
build_c smtp_sink smtp_sink.c "" "$@"
