# The one way the C programs under benchmarks/ are built; each folder's build.sh sources it:
#   build_c PROGRAM SOURCE "FLAGS" OUTDIR  ->  OUTDIR/PROGRAM (gcc -O2, every warning an error;
#   FLAGS go after the source, so libraries may be among them)
build_c() {
  if [[ $# -ne 4 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
  fi
  local here
  here="$(cd "$(dirname "$0")" && pwd)"
  mkdir -p "$4"
  # shellcheck disable=SC2086 # FLAGS are words
  "${CC:-gcc}" -O2 -Wall -Wextra -Werror -o "$4/$1" "$here/$2" $3
}
