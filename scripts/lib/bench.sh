# Helpers the benchmark scripts share; source it: . scripts/lib/bench.sh

# A free loopback TCP port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Waits (30 s at most) until the Hearth process on PORT answers its health check, and fails
# when it never does: wait_healthy BIN PORT
wait_healthy() {
  local deadline=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$deadline" ]; do
    timeout 5 "$1" health --target "127.0.0.1:$2" >/dev/null 2>&1 && return
    sleep 0.1
  done
  echo "no healthy Hearth process on port $2 after 30 s" >&2
  return 1
}

# The port a program started on port 0 printed first in FILE ("port N"), once it has (10 s at
# most; nothing printed when it never does): peer_port FILE
peer_port() {
  for _ in $(seq 100); do grep -q '^port ' "$1" 2>/dev/null && break; sleep 0.1; done
  awk '/^port / {print $2; exit}' "$1"
}

# A release build of PRODUCT made now, or OVERRIDE when set (a binary built elsewhere, to
# compare builds). Use: probe=$(release_product hearth-safety-probe "${HEARTH_PROBE:-}")
release_product() {
  if [ -n "${2:-}" ]; then
    echo "$2"
  else
    swift build -c release --product "$1" >&2
    echo ".build/release/$1"
  fi
}

# The hearth binary to run: $HEARTH_BIN when set (to compare builds, or the tests' debug one),
# else a release build made now. Use: bin=$(hearth_bin)
hearth_bin() { release_product hearth "${HEARTH_BIN:-}"; }

# CPU time (user + system, in clock ticks) of a process, or of one of its threads:
# cpu_ticks PID, or cpu_ticks PID/task/TID
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# process_usage NAME PID: what a server process took over the run, for the capacity figures and
# the Kubernetes manifests' requests and limits: its peak RSS and its CPU time.
process_usage() {
  echo "$1: peak RSS $(( $(rss_kib "$2" VmHWM) / 1024 )) MiB, CPU $(( $(cpu_ticks "$2") * 1000 / $(getconf CLK_TCK) )) ms"
}

# tree_cpu_ticks PID: CPU time (clock ticks) of PID, of the children it waited for, and of its
# live children (PostgreSQL's backends are children of its postmaster).
tree_cpu_ticks() {
  local total child
  total=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$1/stat")
  for child in $(ps -o pid= --ppid "$1"); do
    total=$((total + $(cpu_ticks "$child" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

# A process's resident memory in KiB: rss_kib PID [FIELD] (VmRSS unless FIELD, e.g. VmHWM).
rss_kib() { awk -v key="${2:-VmRSS}:" '$1 == key {print $2}' "/proc/$1/status"; }

# An SMTP server on a free loopback port (Debian's aiosmtpd, under Debian's python3: the tests' smtp_sink.py) that keeps
# each email it takes as JSON in DIR, until this script exits. Sets SMTP_SINK_PORT and
# SMTP_SINK_PID. Safety sends to it with: --smtp-host 127.0.0.1 --smtp-port "$SMTP_SINK_PORT"
# --smtp-security none. Use: start_smtp_sink DIR (not in $(...): the sink lives on an open
# file of this shell, and ends when it closes).
start_smtp_sink() {
  mkdir -p "$1"
  mkfifo "$1.in"
  /usr/bin/python3 Tests/HearthTestSupport/smtp_sink.py "$1" <"$1.in" >"$1.port" &
  SMTP_SINK_PID=$!
  exec {SMTP_SINK_FD}>"$1.in"
  for _ in $(seq 100); do grep -q '^PORT ' "$1.port" 2>/dev/null && break; sleep 0.1; done
  SMTP_SINK_PORT=$(awk '/^PORT / {print $2; exit}' "$1.port")
  [ -n "$SMTP_SINK_PORT" ] || { echo "the SMTP sink did not start (python3-aiosmtpd: scripts/bootstrap)" >&2; return 1; }
}

# Confirms COUNT invitations that the sink in DIR received (waiting 30 s at most for them) from
# their Confirm links, through safety's AnswerContactLink as the contact page does, so that the
# switches they belong to are armed; SECRET is the credential of the gateway's link to safety
# (gateway-safety.key): confirm_invitations BIN SAFETY_PORT DIR COUNT SECRET
confirm_invitations() {
  local tokens=""
  for _ in $(seq 300); do
    tokens=$(python3 - "$3" <<'PY'
import glob, json, re, sys
for path in sorted(glob.glob(sys.argv[1] + "/*.json")):
    m = re.search(r"/contact/confirm\?t=([A-Za-z0-9_-]+)", json.load(open(path)).get("body") or "")
    if m:
        print(m.group(1))
PY
)
    [ "$(printf '%s\n' "$tokens" | grep -c .)" -ge "$4" ] && break
    sleep 0.1
  done
  [ "$(printf '%s\n' "$tokens" | grep -c .)" -ge "$4" ] || { echo "fewer than $4 invitations arrived in $3" >&2; return 1; }
  for token in $tokens; do
    "$1" call --target "127.0.0.1:$2" --internal-secret "$5" \
      hearth.safety.v1.Safety/AnswerContactLink "{\"token\": \"$token\", \"action\": \"CONFIRM\"}" >/dev/null
  done
}

# Waits until the process PID has used less than 20 ms of CPU in a second (120 s at most): the
# background work a setup queued (safety's invitations, and the pushes telling each user their
# contact confirmed) is done before a measurement begins. wait_quiet PID
wait_quiet() {
  local deadline=$((SECONDS + 120)) before after
  after=$(cpu_ticks "$1")
  while [ "$SECONDS" -lt "$deadline" ]; do
    sleep 1
    before=$after
    after=$(cpu_ticks "$1")
    [ $(((after - before) * 1000 / $(getconf CLK_TCK))) -lt 20 ] && return
  done
  echo "process $1 still busy after 120 s; measuring anyway" >&2
}

# start_postgres DIR: a PostgreSQL cluster of its own in DIR/pg (Debian's newest, its default
# durability), on a free loopback port, run as nobody when this runs as root. Sets PG_PID and
# PG_STORE (the address `hearth serve safety --store` takes); the caller stops PG_PID. With
# PG_STATEMENTS=1 it loads pg_stat_statements, planning timed too (the caller creates the extension).
# PG_SETTINGS: more server settings, NAME=VALUE separated by spaces (each passed as -c).
start_postgres() {
  local dir=$1 bin port
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  local as_pg=()
  [ "$(id -u)" -eq 0 ] && as_pg=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  chmod 755 "$dir"
  mkdir -p "$dir/pg"
  [ "$(id -u)" -eq 0 ] && chown 65534:65534 "$dir/pg"
  "${as_pg[@]}" "$bin/initdb" -D "$dir/pg/data" -U hearth --auth=trust --no-locale -E UTF8 >/dev/null
  port=$(free_port)
  local settings=() setting
  for setting in ${PG_SETTINGS:-}; do settings+=(-c "$setting"); done
  "${as_pg[@]}" "$bin/postgres" -D "$dir/pg/data" -p "$port" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories= -c max_connections=200 "${settings[@]}" ${PG_STATEMENTS:+-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track_planning=on} \
    >"$dir/pg.log" 2>&1 &
  PG_PID=$!
  for _ in $(seq 100); do "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" && break; sleep 0.1; done
  PG_STORE="postgres://hearth@127.0.0.1:$port/postgres?sslmode=disable"
  PG_PSQL=("$bin/psql" -h 127.0.0.1 -p "$port" -U hearth -d postgres -At)
}

# A photo-like JPEG, DIR/photo.jpg, 1600x1200 (about 500 KiB): a gradient with Gaussian noise,
# which compresses like a phone photo. Made with libvips' command line: make_photo DIR
make_photo() {
  local w=$1
  vips xyz "$w/xy.v" 1600 1200
  vips linear "$w/xy.v" "$w/ramp.v" "0.05 0.08" "20 40"
  vips extract_band "$w/ramp.v" "$w/r.v" 0
  vips gaussnoise "$w/noise.v" 1600 1200 --sigma 10 --mean 100
  vips add "$w/r.v" "$w/noise.v" "$w/sum.v"
  vips bandjoin "$w/sum.v $w/noise.v $w/r.v" "$w/rgb.v"
  vips cast "$w/rgb.v" "$w/rgb8.v" uchar
  vips jpegsave "$w/rgb8.v" "$w/photo.jpg" --Q 85
  rm -f "$w"/*.v
}

# whole_numbers NAME VALUE [NAME VALUE ...]: stops the script unless each VALUE is a whole number.
whole_numbers() {
  while [ $# -ge 2 ]; do
    [[ $2 =~ ^[0-9]+$ ]] || { echo "$1 must be a whole number (got $2)" >&2; exit 2; }
    shift 2
  done
}

# lead_covered STARTED LEAD WHAT: stops the script when WHAT (begun at STARTED, epoch seconds)
# used up the LEAD seconds before the first deadline (5 s kept): those deadlines would be late
# before any process starts.
lead_covered() {
  local took=$(( $(date +%s) - $1 ))
  if [ $((took + 5)) -gt "$2" ]; then
    echo "LEAD $2 s did not cover $3 ($took s): give a longer one" >&2
    exit 1
  fi
}
