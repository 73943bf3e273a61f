#!/usr/bin/env bash
# Builds the protobuf-c interop client.
# Usage: build.sh OUTDIR
# Needs the Debian packages protobuf-c-compiler, gcc and libprotobuf-c-dev
# (scripts/bootstrap installs them).
set -euo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi

script_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$script_dir/../.." && pwd)"

missing=0
if ! command -v protoc-c >/dev/null 2>&1; then
    echo "error: protoc-c not found; install the Debian package protobuf-c-compiler" >&2
    missing=1
fi
if ! command -v gcc >/dev/null 2>&1; then
    echo "error: gcc not found; install the Debian package gcc" >&2
    missing=1
fi
if [[ ! -f /usr/include/protobuf-c/protobuf-c.h ]]; then
    echo "error: /usr/include/protobuf-c/protobuf-c.h not found; install the Debian package libprotobuf-c-dev" >&2
    missing=1
fi
if [[ $missing -ne 0 ]]; then
    exit 1
fi

mkdir -p "$1"
out="$(cd "$1" && pwd)"

protos=(hearth/rpc/v1/frame.proto hearth/echo/v1/echo.proto)
wkt_include=/usr/include

# Paths relative to the proto root, so the generated includes match.
cd "$repo_root/proto"

# libprotobuf-c ships no compiled well-known types: generate Timestamp ourselves if used.
needs_timestamp=0
if grep -Eq '^[[:space:]]*import[[:space:]]+(public[[:space:]]+|weak[[:space:]]+)?"google/protobuf/timestamp\.proto"' "${protos[@]}"; then
    needs_timestamp=1
    if [[ ! -f "$wkt_include/google/protobuf/timestamp.proto" ]]; then
        echo "error: $wkt_include/google/protobuf/timestamp.proto not found; install the Debian package libprotobuf-dev" >&2
        exit 1
    fi
fi

protoc-c -I . -I "$wkt_include" --c_out="$out" "${protos[@]}"
sources=("$out/hearth/rpc/v1/frame.pb-c.c" "$out/hearth/echo/v1/echo.pb-c.c")

if [[ $needs_timestamp -eq 1 ]]; then
    (cd "$wkt_include" && protoc-c -I . --c_out="$out" google/protobuf/timestamp.proto)
    sources+=("$out/google/protobuf/timestamp.pb-c.c")
fi

gcc -std=c11 -O2 -Wall -Wextra -Werror \
    -I "$out" \
    -o "$out/interop_client" \
    "$script_dir/interop_client.c" "${sources[@]}" \
    -lprotobuf-c

echo "built $out/interop_client"
