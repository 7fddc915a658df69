#!/usr/bin/env bash
# bench/run.sh -- measure Volley against its peers (wrk, oha, k6, h2load) on this machine.
#
#   bench/run.sh [--install] [throughput|latency|download|pipeline|h2|rate|all]...
#   bench/run.sh summary OUTDIR          re-print the tables of an earlier run
#
# See bench/README.md for what each scenario measures and how to read the tables.
# All traffic goes to 127.0.0.1. The network is used only by --install (apt-get,
# go install, cargo install). Every run is wrapped in `timeout -s INT -k 2 $((DUR+8))`.
#
# Environment (defaults in brackets):
#   REPS [3] runs per tool    DUR [10] seconds per run    OUT [bench/out/<timestamp>]
#   TOOL_CPU [0] / TARGET_CPU [1]   CPUs the load tool / the target are pinned to
#   CONNS [50]  LAT_CONNS [20]  LAT_DELAY_MS [10]  DL_CONNS [10]  DL_BYTES [1048576]
#   PIPELINE [8]  RATE [10000] (req/s, rate scenario)
#   TOOLS ["wrk oha k6 h2load volley"]  limit the tools that run
#   PEERS [~/.cache/volley-peers]  where --install puts oha and k6 (bin/)
#   WRK OHA K6 H2LOAD NGINX         paths of the peers (default: found on PATH or in $PEERS/bin)
#   VOLLEY                          a volley binary to use instead of building one
#   NGINX_PORT [18080] NGINX_H2_PORT [18081] VT_PORT [18090]
#   QUIET_WAIT [0]  before each run wait up to this many seconds for the machine to be
#                   idle (below QUIET_MAX [10] % busy); 0 = don't wait
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
ROOT=$(cd "$HERE/.." && pwd)
PARSE=$HERE/lib/parse.py
ALL_SCENARIOS="throughput latency download pipeline h2 rate"

PEERS=${PEERS:-$HOME/.cache/volley-peers}
REPS=${REPS:-3}
DUR=${DUR:-10}
TOOL_CPU=${TOOL_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
CONNS=${CONNS:-50}
LAT_CONNS=${LAT_CONNS:-20}
LAT_DELAY_MS=${LAT_DELAY_MS:-10}
DL_CONNS=${DL_CONNS:-10}
DL_BYTES=${DL_BYTES:-1048576}
PIPELINE=${PIPELINE:-8}
RATE=${RATE:-10000}
TOOLS=${TOOLS:-"wrk oha k6 h2load volley"}
NGINX_PORT=${NGINX_PORT:-18080}
NGINX_H2_PORT=${NGINX_H2_PORT:-18081}
VT_PORT=${VT_PORT:-18090}
QUIET_WAIT=${QUIET_WAIT:-0}
QUIET_MAX=${QUIET_MAX:-10}
GAP=${GAP:-1}
LIMIT=$((DUR + 8))
export K6_NO_USAGE_REPORT=true   # k6 must not phone home

warn() { echo "[$(date +%T)] WARNING: $*" >&2; }

usage() {
  sed -n '2,/^set -eu/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
}

# ------------------------------------------------------------------ arguments --
INSTALL=0
SCENARIOS=()
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    --install) INSTALL=1 ;;
    -h|--help) usage; exit 0 ;;
    summary)
      [ -n "${2:-}" ] && [ -d "$2" ] || die "usage: $0 summary OUTDIR"
      exec python3 "$PARSE" summary "$2" ;;
    all) read -r -a _all <<< "$ALL_SCENARIOS"; SCENARIOS+=("${_all[@]}") ;;
    throughput|latency|download|pipeline|h2|rate) SCENARIOS+=("$1") ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
[ ${#SCENARIOS[@]} -gt 0 ] || read -r -a SCENARIOS <<< "$ALL_SCENARIOS"

case $REPS$DUR in *[!0-9]*) die "REPS and DUR must be whole numbers" ;; esac
[ "$REPS" -ge 1 ] && [ "$DUR" -ge 1 ] || die "REPS and DUR must be at least 1"

OUT=${OUT:-$HERE/out/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/volley-bench.XXXXXX")
log "results go to $OUT"

# ------------------------------------------------------------------ servers --
SERVER_PID=""   # what we started and must stop
TARGET_PID=""   # the process whose CPU is the target's (nginx worker, volley target)
STATS_URL=""    # volley target's /stats (server-side request count), if any

stop_server() {
  if [ -n "$SERVER_PID" ]; then
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
  fi
  SERVER_PID=""; TARGET_PID=""; STATS_URL=""
}
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {  # PORT: wait up to 5 s for a listener
  local i
  for i in $(seq 50); do port_open "$1" && return 0; sleep 0.1; done
  return 1
}

child_pid() {
  local c
  c=$(awk '{print $1}' "/proc/$1/task/$1/children" 2>/dev/null || true)
  [ -n "$c" ] || c=$(ps -o pid= --ppid "$1" 2>/dev/null | awk 'NR==1{print $1}')
  echo "$c"
}

# start_nginx h1|h2c PORT: one worker pinned to TARGET_CPU, keep-alive, 13-byte body.
start_nginx() {
  local mode=$1 port=$2 pfx=$WORK/nginx-$1 listen i
  port_open "$port" && die "port $port is already in use (set NGINX_PORT / NGINX_H2_PORT)"
  mkdir -p "$pfx/logs" "$pfx/tmp"
  listen="listen 127.0.0.1:$port reuseport backlog=4096"
  [ "$mode" = h2c ] && listen="$listen http2"   # cleartext HTTP/2 with prior knowledge
  cat > "$pfx/nginx.conf" <<NGINXCONF
worker_processes 1;
pid nginx.pid;
error_log logs/error.log warn;
daemon off;
worker_rlimit_nofile 30000;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_timeout 65;
    keepalive_requests 100000000;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        $listen;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
NGINXCONF
  cp "$pfx/nginx.conf" "$OUT/nginx-$mode.conf"
  taskset -c "$TARGET_CPU" "$NGINX" -p "$pfx/" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log" \
    > "$pfx/logs/stdout" 2>&1 < /dev/null &
  SERVER_PID=$!
  wait_port "$port" || { cat "$pfx/logs/error.log" "$pfx/logs/stdout" >&2 2>/dev/null; stop_server; return 1; }
  for i in $(seq 20); do TARGET_PID=$(child_pid "$SERVER_PID"); [ -n "$TARGET_PID" ] && break; sleep 0.1; done
  log "nginx ($mode) on 127.0.0.1:$port: master $SERVER_PID, worker ${TARGET_PID:-?} on CPU $(taskset -pc "${TARGET_PID:-$SERVER_PID}" | awk '{print $NF}')"
}

# start_vtarget: `volley target`, one server thread, pinned to TARGET_CPU.
start_vtarget() {
  port_open "$VT_PORT" && die "port $VT_PORT is already in use (set VT_PORT)"
  taskset -c "$TARGET_CPU" "$VOLLEY" target --listen "127.0.0.1:$VT_PORT" --threads 1 \
    > "$OUT/volley-target.log" 2>&1 < /dev/null &
  SERVER_PID=$!; TARGET_PID=$SERVER_PID
  wait_port "$VT_PORT" || { cat "$OUT/volley-target.log" >&2; stop_server; return 1; }
  STATS_URL=http://127.0.0.1:$VT_PORT/stats
  log "volley target on 127.0.0.1:$VT_PORT: pid $SERVER_PID on CPU $(taskset -pc "$SERVER_PID" | awk '{print $NF}')"
}

# warm URL [extra volley flags]: 1 s of load, not recorded (connection setup, caches, JIT-free but fair)
warm() {
  local url=$1; shift
  timeout -k 2 10 taskset -c "$TOOL_CPU" "$VOLLEY" http "$url" --threads 1 -c 10 -z 1s --json "$@" \
    > /dev/null 2>&1 < /dev/null || true
}

# ------------------------------------------------------------ measurements --
ticks_to_s() { awk -v a="$1" -v b="$2" -v h="$TICKS" 'BEGIN{printf "%.2f", (b-a)/h}'; }
server_reqs() { if [ -n "$STATS_URL" ]; then python3 "$PARSE" server-reqs "$STATS_URL"; else echo nan; fi; }

# run_one SCENARIO TARGET TOOL REP CMD...   (@DIR@ in CMD becomes the run's folder)
run_one() {
  local sc=$1 tg=$2 tool=$3 rep=$4; shift 4
  local dir=$OUT/runs/$sc/$tg.$tool.$rep rc=0 t0 t1 b0 b1 s0 s1 sreq a
  local args=()
  mkdir -p "$dir"
  for a in "$@"; do args+=("${a//@DIR@/$dir}"); done
  printf '%q ' "${args[@]}" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  wait_quiet
  s0=$(server_reqs); t0=$(cpu_ticks "$TARGET_PID"); b0=$(busy_ticks)
  ( cd "$dir" && exec timeout -s INT -k 2 "$LIMIT" taskset -c "$TOOL_CPU" \
      /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" "${args[@]}" \
      > "$dir/stdout" 2> "$dir/stderr" < /dev/null ) || rc=$?
  t1=$(cpu_ticks "$TARGET_PID"); b1=$(busy_ticks); s1=$(server_reqs)
  echo "$rc" > "$dir/rc"
  sreq=$(awk -v a="$s0" -v b="$s1" 'BEGIN{ if (a ~ /^[0-9]+$/ && b ~ /^[0-9]+$/) print b-a; else print "" }')
  python3 "$PARSE" row "$sc" "$tg" "$tool" "$rep" "$dir" "$OUT/$sc.csv" \
    "$( [ -n "$TARGET_PID" ] && ticks_to_s "$t0" "$t1" || echo '')" "$(ticks_to_s "$b0" "$b1")" "$sreq" \
    || warn "could not parse $dir"
  sleep "$GAP"
}

# ------------------------------------------------------------------- tools --
locate() {  # NAME [paths...]: first executable path, else NAME on PATH, else nothing
  local n=$1 p; shift
  for p in "$@"; do [ -x "$p" ] && { echo "$p"; return 0; }; done
  command -v "$n" 2>/dev/null || true
}

SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

install_peers() {
  local pkgs=() ilog=$OUT/install.log
  [ -n "$(locate wrk)" ] || pkgs+=(wrk)
  [ -n "$(locate nginx /usr/sbin/nginx)" ] || pkgs+=(nginx)
  [ -n "$(locate h2load)" ] || pkgs+=(nghttp2-client)
  [ -x /usr/bin/time ] || pkgs+=(time)
  if [ ${#pkgs[@]} -gt 0 ]; then
    if command -v apt-get > /dev/null; then
      log "installing ${pkgs[*]} with apt-get (log: $ilog)"
      { $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${pkgs[@]}"; } \
        >> "$ilog" 2>&1 || warn "apt-get install ${pkgs[*]} failed (see $ilog); those tools will be skipped"
    else
      warn "no apt-get: install ${pkgs[*]} yourself"
    fi
  fi
  mkdir -p "$PEERS/bin"
  if [ -z "${K6:-}" ] && [ -z "$(locate k6 "$PEERS/bin/k6")" ]; then
    if command -v go > /dev/null; then
      log "installing k6 with go install into $PEERS/bin (a few minutes; log: $ilog)"
      GOBIN=$PEERS/bin go install go.k6.io/k6@latest >> "$ilog" 2>&1 || warn "go install k6 failed (see $ilog); k6 will be skipped"
    else
      warn "no go toolchain: k6 will be skipped"
    fi
  fi
  if [ -z "${OHA:-}" ] && [ -z "$(locate oha "$PEERS/bin/oha")" ]; then
    log "installing oha with cargo install --locked into $PEERS (5-10 minutes on 2 cores; log: $ilog)"
    cargo install oha --locked --root "$PEERS" >> "$ilog" 2>&1 || warn "cargo install oha failed (see $ilog); oha will be skipped"
  fi
}

[ "$INSTALL" = 1 ] && install_peers

for t in python3 taskset timeout; do command -v "$t" > /dev/null || die "$t is required"; done
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is required: apt-get install time, or run with --install"
taskset -c "$TOOL_CPU" true 2>/dev/null || die "cannot pin to TOOL_CPU=$TOOL_CPU (CPUs: $(nproc))"
taskset -c "$TARGET_CPU" true 2>/dev/null || die "cannot pin to TARGET_CPU=$TARGET_CPU (CPUs: $(nproc))"
[ "$TOOL_CPU" != "$TARGET_CPU" ] || warn "TOOL_CPU = TARGET_CPU: tool and target share one CPU"

WRK=${WRK:-$(locate wrk)}
OHA=${OHA:-$(locate oha "$PEERS/bin/oha")}
K6=${K6:-$(locate k6 "$PEERS/bin/k6")}
H2LOAD=${H2LOAD:-$(locate h2load)}
NGINX=${NGINX:-$(locate nginx /usr/sbin/nginx)}
for v in WRK OHA K6 H2LOAD NGINX; do
  if [ -n "${!v}" ] && [ ! -x "${!v}" ]; then warn "$v=${!v} is not an executable; ignoring it"; printf -v "$v" ''; fi
  [ -z "${!v}" ] || printf -v "$v" %s "$(readlink -f "${!v}")"   # runs start in their own folder
done

# oha's JSON flag changed across versions
OHA_JSON=()
if [ -n "$OHA" ]; then
  OHA_HELP=$("$OHA" --help 2>&1 || true)
  if grep -q -- '--output-format' <<< "$OHA_HELP"; then OHA_JSON=(--output-format json)
  elif grep -qE -- '(-j|--json)' <<< "$OHA_HELP"; then OHA_JSON=(-j)
  else warn "$OHA has no JSON output; oha will be skipped"; OHA=""; fi
fi

# ------------------------------------------------------------------ volley --
if [ -z "${VOLLEY:-}" ]; then
  log "building volley: cargo build --release -p volley (log: $OUT/build.log)"
  ( cd "$ROOT" && cargo build --release -p volley ) > "$OUT/build.log" 2>&1 \
    || { tail -20 "$OUT/build.log" >&2; die "cargo build failed (full log: $OUT/build.log)"; }
  TDIR=${CARGO_TARGET_DIR:-$ROOT/target}
  case $TDIR in /*) ;; *) TDIR=$ROOT/$TDIR ;; esac
  VOLLEY=$TDIR/release/volley
fi
[ -x "$VOLLEY" ] || die "no volley binary at $VOLLEY"
VOLLEY=$(readlink -f "$VOLLEY")
VHELP=$("$VOLLEY" http --help 2>&1 || true)
vflag() { grep -qE -- "(^|[ ,])$1([ =<,]|\$)" <<< "$VHELP"; }

tool_path() {
  case $1 in wrk) echo "$WRK" ;; oha) echo "$OHA" ;; k6) echo "$K6" ;; h2load) echo "$H2LOAD" ;; volley) echo "$VOLLEY" ;; esac
}

# pick TOOL...: the tools of a scenario that are wanted (TOOLS) and installed
pick() {
  local t out=""
  for t in "$@"; do
    case " $TOOLS " in *" $t "*) ;; *) continue ;; esac
    if [ -z "$(tool_path "$t")" ]; then
      log "  skipping $t: not installed (bench/run.sh --install, or set ${t^^}=/path)" ; continue
    fi
    out="$out $t"
  done
  echo "$out"
}

# cmd_for TOOL MODE URL CONNS: sets CMD. MODE: h1, dl (h1 + big bodies), pipe, h2, rate.
cmd_for() {
  local tool=$1 mode=$2 url=$3 c=$4
  local k6=("$K6" run --quiet --no-color --summary-trend-stats 'avg,min,med,max,p(90),p(99)'
            --summary-export @DIR@/summary.json -e URL="$url")
  local vol=("$VOLLEY" http "$url" --threads 1 -c "$c" -z "${DUR}s" --json)
  CMD=()
  case $tool:$mode in
    wrk:h1|wrk:dl) CMD=("$WRK" -t1 -c"$c" -d"${DUR}s" --latency "$url") ;;
    wrk:pipe)      CMD=("$WRK" -t1 -c"$c" -d"${DUR}s" --latency -s "$HERE/scripts/pipeline.lua" "$url" -- "$PIPELINE") ;;
    oha:h1|oha:dl) CMD=("$OHA" -z "${DUR}s" -c "$c" --no-tui "${OHA_JSON[@]}" "$url") ;;
    oha:h2)        CMD=("$OHA" -z "${DUR}s" -c "$c" --http2 --no-tui "${OHA_JSON[@]}" "$url") ;;
    oha:rate)      CMD=("$OHA" -z "${DUR}s" -c "$c" -q "$RATE" --latency-correction --no-tui "${OHA_JSON[@]}" "$url") ;;
    k6:h1)         CMD=("${k6[@]}" --vus "$c" --duration "${DUR}s" "$HERE/scripts/k6_get.js") ;;
    k6:dl)         CMD=("${k6[@]}" -e DISCARD=1 --vus "$c" --duration "${DUR}s" "$HERE/scripts/k6_get.js") ;;
    k6:rate)       CMD=("${k6[@]}" -e RATE="$RATE" -e DUR="$DUR" -e VUS="$c" "$HERE/scripts/k6_rate.js") ;;
    h2load:h1|h2load:dl) CMD=("$H2LOAD" --h1 -t1 -c"$c" -D"$DUR" "$url") ;;
    h2load:pipe)   CMD=("$H2LOAD" --h1 -t1 -c"$c" -m"$PIPELINE" -D"$DUR" "$url") ;;
    h2load:h2)     CMD=("$H2LOAD" -t1 -c"$c" -m1 -D"$DUR" "$url") ;;
    volley:h1|volley:dl) CMD=("${vol[@]}") ;;
    volley:pipe)   CMD=("${vol[@]}" --pipeline "$PIPELINE") ;;
    volley:h2)     CMD=("${vol[@]}" --http2) ;;
    volley:rate)   CMD=("${vol[@]}" --rate "$RATE") ;;
    *) return 1 ;;
  esac
}

# matrix SCENARIO TARGET MODE URL CONNS TOOL...: REPS reps, tools interleaved within each
# rep so that slow drift on a shared machine spreads over all tools.
matrix() {
  local sc=$1 tg=$2 mode=$3 url=$4 c=$5 rep tool; shift 5
  [ $# -gt 0 ] || { log "  no tools to run"; return 0; }
  log "  target $tg: $url, $c connections, ${DUR}s x $REPS reps: $*"
  for rep in $(seq "$REPS"); do
    for tool in "$@"; do
      cmd_for "$tool" "$mode" "$url" "$c" || continue
      run_one "$sc" "$tg" "$tool" "$rep" "${CMD[@]}"
    done
  done
}

begin() {  # SCENARIO DESCRIPTION
  log "== $1"
  echo "$1" >> "$OUT/scenarios.txt"
  printf '%s\n' "$2" > "$OUT/$1.desc"
}

need_flag() {  # SCENARIO FLAG: false (with a message) if volley lacks FLAG
  vflag "$2" && return 0
  log "== $1: skipped: \`volley http --help\` has no $2 yet"
  echo "$1: skipped (volley has no $2)" >> "$OUT/skipped.txt"
  return 1
}

runs_word=runs; [ "$REPS" != 1 ] || runs_word=run
pin_note="Tool pinned to CPU $TOOL_CPU, target to CPU $TARGET_CPU; median of $REPS $runs_word of ${DUR} s."

# shellcheck disable=SC2046  # word splitting of pick's output is intended
sc_throughput() {
  begin throughput "GET / (13-byte body), keep-alive, $CONNS connections, as fast as possible. $pin_note"
  if [ -n "$NGINX" ] && start_nginx h1 "$NGINX_PORT"; then
    warm "http://127.0.0.1:$NGINX_PORT/"
    matrix throughput nginx h1 "http://127.0.0.1:$NGINX_PORT/" "$CONNS" $(pick wrk oha k6 h2load volley)
    stop_server
  else
    log "  skipping the nginx target: nginx not installed or did not start"
  fi
  start_vtarget || die "volley target did not start"
  warm "http://127.0.0.1:$VT_PORT/"
  matrix throughput volley-target h1 "http://127.0.0.1:$VT_PORT/" "$CONNS" $(pick wrk oha k6 h2load volley)
  stop_server
}

sc_latency() {
  begin latency "GET /delay/$LAT_DELAY_MS on volley target (answers after ${LAT_DELAY_MS} ms plus the rounding of its tokio timer, ~1-2 ms), $LAT_CONNS connections, closed loop. Compare p50/p99 with the server's own delay: the excess is the tool's measurement overhead. $pin_note"
  start_vtarget || die "volley target did not start"
  warm "http://127.0.0.1:$VT_PORT/delay/$LAT_DELAY_MS"
  matrix latency volley-target h1 "http://127.0.0.1:$VT_PORT/delay/$LAT_DELAY_MS" "$LAT_CONNS" $(pick wrk oha k6 volley)
  stop_server
}

sc_download() {
  begin download "GET /bytes/$DL_BYTES on volley target, $DL_CONNS connections: body throughput (MiB/s) and the CPU it costs to receive and discard. $pin_note"
  start_vtarget || die "volley target did not start"
  matrix download volley-target dl "http://127.0.0.1:$VT_PORT/bytes/$DL_BYTES" "$DL_CONNS" $(pick wrk oha k6 h2load volley)
  stop_server
}

sc_pipeline() {
  need_flag pipeline --pipeline || return 0
  begin pipeline "HTTP/1.1 pipelining, depth $PIPELINE, GET / on nginx, $CONNS connections (wrk: bench/scripts/pipeline.lua; h2load: --h1 -m $PIPELINE). wrk records one latency per batch of $PIPELINE. $pin_note"
  [ -n "$NGINX" ] && start_nginx h1 "$NGINX_PORT" || { log "  skipped: nginx not installed or did not start"; return 0; }
  warm "http://127.0.0.1:$NGINX_PORT/"
  matrix pipeline nginx pipe "http://127.0.0.1:$NGINX_PORT/" "$CONNS" $(pick wrk h2load volley)
  stop_server
}

sc_h2() {
  need_flag h2 --http2 || return 0
  begin h2 "HTTP/2 cleartext (prior knowledge), GET /, $CONNS connections, one stream each. $pin_note"
  if [ -n "$NGINX" ] && start_nginx h2c "$NGINX_H2_PORT"; then
    warm "http://127.0.0.1:$NGINX_H2_PORT/" --http2
    matrix h2 nginx-h2c h2 "http://127.0.0.1:$NGINX_H2_PORT/" "$CONNS" $(pick h2load oha volley)
    stop_server
  fi
  start_vtarget || die "volley target did not start"
  warm "http://127.0.0.1:$VT_PORT/" --http2
  matrix h2 volley-target h2 "http://127.0.0.1:$VT_PORT/" "$CONNS" $(pick h2load oha volley)
  stop_server
}

sc_rate() {
  need_flag rate --rate || return 0
  begin rate "Fixed arrival rate $RATE req/s (open model), GET / on nginx, $CONNS connections. Everyone sends the same requests, so req/CPU-s compares CPU cost directly; latency is corrected for coordinated omission (oha --latency-correction, k6 constant-arrival-rate, volley --rate). $pin_note"
  [ -n "$NGINX" ] && start_nginx h1 "$NGINX_PORT" || { log "  skipped: nginx not installed or did not start"; return 0; }
  warm "http://127.0.0.1:$NGINX_PORT/"
  matrix rate nginx rate "http://127.0.0.1:$NGINX_PORT/" "$CONNS" $(pick oha k6 volley)
  stop_server
}

# ------------------------------------------------------------------- header --
ver() { "$@" 2>&1 | head -1 | tr -d '\r' || true; }
MODEL=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$ROOT" status --porcelain -- crates Cargo.toml Cargo.lock 2>/dev/null)" ] || REV="$REV+dirty"
{
  echo "## $(date -u '+%Y-%m-%d %H:%M UTC') — ${MODEL:-unknown CPU}, $(nproc) CPUs"
  echo
  echo "- command: \`REPS=$REPS DUR=$DUR bench/run.sh $ARGS\`"
  echo "- volley $REV ($(ver "$VOLLEY" --version))"
  peers=()
  [ -z "$WRK" ] || peers+=("$(ver "$WRK" -v | awk '{print "wrk", $2}')")
  [ -z "$OHA" ] || peers+=("$(ver "$OHA" --version)")
  [ -z "$K6" ] || peers+=("$(ver "$K6" version | awk '{print $1, $2}')")
  [ -z "$H2LOAD" ] || peers+=("$(ver "$H2LOAD" --version)")
  [ -z "$NGINX" ] || peers+=("$(ver "$NGINX" -v | sed 's/.*: //')")
  echo "- peers: $(IFS=,; echo "${peers[*]:-none}" | sed 's/,/, /g')"
  [ "$TOOLS" = "wrk oha k6 h2load volley" ] || echo "- TOOLS=\"$TOOLS\""
  echo "- pinning: load tool on CPU $TOOL_CPU (single-threaded settings: wrk -t1, h2load -t1, volley --threads 1; oha and k6 see one CPU), target on CPU $TARGET_CPU"
} > "$OUT/header.md"
{ uname -a; nproc; lscpu; free -h; } > "$OUT/machine.txt" 2>&1 || true
sed 's/^/  /' "$OUT/header.md" >&2

for sc in "${SCENARIOS[@]}"; do
  "sc_$sc"
done

echo
python3 "$PARSE" summary "$OUT"
[ ! -f "$OUT/skipped.txt" ] || { echo; sed 's/^/- /' "$OUT/skipped.txt"; }
log "per-run CSV: $OUT/<scenario>.csv; tables: $OUT/summary.md; raw output: $OUT/runs/"
