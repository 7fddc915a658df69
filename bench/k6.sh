#!/usr/bin/env bash
# bench/k6.sh -- k6 scripts side by side: `k6 run` and `volley run` on the same script, the
# tool pinned to one CPU and the target to another, CPU and peak RSS from GNU time.
#
#   bench/k6.sh [min] [sleep] [flat]      scenarios (default: min sleep)
#   bench/k6.sh summary OUTDIR            re-print the tables of an earlier run
#
#   min    k6's minimal script (bench/scripts/k6_min.js: http.get + one check), MIN_VUS VUs
#          for MIN_DUR s: requests per CPU-second, the cost of the JS/VU path.
#   sleep  SLEEP_VUS VUs each doing http.get + sleep(1) (bench/scripts/k6_sleep.js) for
#          SLEEP_DUR s: does the tool sustain ~SLEEP_VUS req/s, with what latency, at what
#          peak RSS (and RSS per VU).
#   flat   the sleep script for FLAT_DUR s (5 minutes), one run per tool, RSS sampled every
#          second: RSS at the end against RSS at 30 s (also run when FLAT=1).
#   rate   a constant-arrival-rate scenario (bench/scripts/k6_rate.js: one GET + check per
#          iteration) at RATE iterations/s for RATE_DUR s with RATE_VUS VUs: does the tool
#          keep the rate (achieved req/s vs RATE, dropped iterations) and at what CPU.
#   urls   distinct URLs (bench/scripts/k6_urls_named.js: every iteration GETs a URL no other
#          iteration requests, tagged name=get) with URLS_VUS VUs for URLS_DUR s, one run per
#          tool: RSS at the end against RSS at 30 s (issue #13, bounded series); volley also
#          saves its result file (--save) and `volley summary` of it is timed.
#
# Environment (defaults in brackets):
#   REPS [3] runs per tool and scenario (tools interleaved within a rep; medians reported)
#   MIN_VUS [50] MIN_DUR [10]   SLEEP_VUS [5000] SLEEP_DUR [15]   FLAT_DUR [300]
#   RATE [20000] RATE_DUR [10] RATE_VUS [200]   URLS_VUS [200] URLS_DUR [300]
#   URLS_K6_DUR [URLS_DUR] k6's duration in `urls` (its memory grows with the URLs: ~2.3 GB
#                          a minute at 200 VUs; keep it short on a shared machine)
#   TARGET [nginx] nginx (1 worker, 13-byte body) or volley (`volley target --threads 1`)
#   TOOL_CPU [0] TARGET_CPU [1]  PORT [18380]  OUT [bench/out/k6-<timestamp>]
#   K6 [$PEERS/bin/k6 or PATH]  PEERS [~/.cache/volley-peers]  NGINX [PATH or /usr/sbin/nginx]
#   VOLLEY  a volley binary (default: cargo build --release -p volley, copied into OUT so a
#           rebuild during the run cannot change it)
#   TOOLS ["k6 volley"]  GAP [2] seconds between runs
#   QUIET_WAIT [0]  before each run wait up to this many seconds for the machine to be idle
#                   (below QUIET_MAX [10] % busy); on a shared machine the "other CPU-s"
#                   column shows how much other work disturbed each row
# Nothing is installed and nothing leaves 127.0.0.1 (k6's usage report is turned off).
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
ROOT=$(cd "$HERE/.." && pwd)
PEERS=${PEERS:-$HOME/.cache/volley-peers}
REPS=${REPS:-3}
MIN_VUS=${MIN_VUS:-50}
MIN_DUR=${MIN_DUR:-10}
SLEEP_VUS=${SLEEP_VUS:-5000}
SLEEP_DUR=${SLEEP_DUR:-15}
FLAT_DUR=${FLAT_DUR:-300}
RATE=${RATE:-20000}
RATE_DUR=${RATE_DUR:-10}
RATE_VUS=${RATE_VUS:-200}
URLS_VUS=${URLS_VUS:-200}
URLS_DUR=${URLS_DUR:-300}
URLS_K6_DUR=${URLS_K6_DUR:-$URLS_DUR}
TARGET=${TARGET:-nginx}
TOOL_CPU=${TOOL_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
PORT=${PORT:-18380}
TOOLS=${TOOLS:-"k6 volley"}
GAP=${GAP:-2}
QUIET_WAIT=${QUIET_WAIT:-0}
QUIET_MAX=${QUIET_MAX:-10}
export K6_NO_USAGE_REPORT=true

usage() { sed -n '2,/^set -eu/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

SCENARIOS=()
ARGS="$*"
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    summary) [ -n "${2:-}" ] && [ -d "$2" ] || die "usage: $0 summary OUTDIR"
             exec python3 "$HERE/lib/k6_table.py" "$2" ;;
    min|sleep|flat|rate|urls) SCENARIOS+=("$1") ;;
    *) usage >&2; exit 2 ;;
  esac
  shift
done
[ ${#SCENARIOS[@]} -gt 0 ] || SCENARIOS=(min sleep)
[ "${FLAT:-0}" = 1 ] && [[ " ${SCENARIOS[*]} " != *" flat "* ]] && SCENARIOS+=(flat)

for t in python3 taskset timeout; do command -v "$t" > /dev/null || die "$t is required"; done
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is required: apt-get install time"

OUT=${OUT:-$HERE/out/k6-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/volley-k6bench.XXXXXX")
log "results go to $OUT"

# ------------------------------------------------------------------- tools --
K6=${K6:-$( [ -x "$PEERS/bin/k6" ] && echo "$PEERS/bin/k6" || command -v k6 || true)}
NGINX=${NGINX:-$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)}
if [[ " $TOOLS " == *" k6 "* ]] && [ -z "$K6" ]; then
  log "k6 not found (bench/run.sh --install k6, or K6=/path): running volley only"
  TOOLS=${TOOLS//k6/}
fi
if [ -z "${VOLLEY:-}" ]; then
  log "building volley: cargo build --release -p volley (log: $OUT/build.log)"
  ( cd "$ROOT" && cargo build --release -p volley ) > "$OUT/build.log" 2>&1 \
    || { tail -20 "$OUT/build.log" >&2; die "cargo build failed"; }
  TDIR=${CARGO_TARGET_DIR:-$ROOT/target}
  case $TDIR in /*) ;; *) TDIR=$ROOT/$TDIR ;; esac
  VOLLEY=$TDIR/release/volley
fi
[ -x "$VOLLEY" ] || die "no volley binary at $VOLLEY"
cp "$VOLLEY" "$OUT/volley"   # the binary measured, whatever happens to the build meanwhile
VOLLEY=$OUT/volley

# ----------------------------------------------------------------- target --
SERVER_PID=""; TARGET_PID=""
stop_server() {
  [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }
  SERVER_PID=""; TARGET_PID=""
}
cleanup() { stop_server; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { local i; for i in $(seq 50); do port_open "$1" && return 0; sleep 0.1; done; return 1; }

start_target() {
  port_open "$PORT" && die "port $PORT is already in use (set PORT)"
  case $TARGET in
    nginx)
      [ -n "$NGINX" ] || die "nginx not found (apt-get install nginx, or TARGET=volley)"
      local pfx=$WORK/nginx i
      mkdir -p "$pfx/logs" "$pfx/tmp"
      cat > "$pfx/nginx.conf" <<NGINXCONF
worker_processes 1;
pid nginx.pid;
error_log logs/error.log warn;
daemon off;
worker_rlimit_nofile 30000;
events { worker_connections 20000; }
http {
    access_log off;
    keepalive_timeout 600;
    keepalive_requests 100000000;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        listen 127.0.0.1:$PORT reuseport backlog=8192;
        location / {
            default_type text/plain;
            return 200 "Hello, World!";
        }
    }
}
NGINXCONF
      cp "$pfx/nginx.conf" "$OUT/nginx.conf"
      taskset -c "$TARGET_CPU" "$NGINX" -p "$pfx/" -c "$pfx/nginx.conf" -e "$pfx/logs/error.log" \
        > "$pfx/logs/stdout" 2>&1 < /dev/null &
      SERVER_PID=$!
      wait_port "$PORT" || { cat "$pfx/logs/error.log" >&2 2>/dev/null; die "nginx did not start"; }
      for i in $(seq 20); do
        TARGET_PID=$(ps -o pid= --ppid "$SERVER_PID" 2>/dev/null | awk 'NR==1{print $1}')
        [ -n "$TARGET_PID" ] && break; sleep 0.1
      done ;;
    volley)
      taskset -c "$TARGET_CPU" "$VOLLEY" target --listen "127.0.0.1:$PORT" --threads 1 \
        > "$OUT/volley-target.log" 2>&1 < /dev/null &
      SERVER_PID=$!; TARGET_PID=$SERVER_PID
      wait_port "$PORT" || { cat "$OUT/volley-target.log" >&2; die "volley target did not start"; } ;;
    *) die "TARGET must be nginx or volley" ;;
  esac
  log "target $TARGET on 127.0.0.1:$PORT (pid ${TARGET_PID:-?}, CPU $TARGET_CPU); tools on CPU $TOOL_CPU"
}

# ------------------------------------------------------------ measurements --
leaf() {  # the deepest descendant of PID (timeout -> time -> tool)
  local p=$1 c
  while c=$(ps -o pid= --ppid "$p" 2>/dev/null | awk 'NR==1{print $1}'); [ -n "$c" ]; do p=$c; done
  echo "$p"
}

# run_one SCENARIO TOOL REP LIMIT_S VUS CMD...: one pinned run; RSS sampled every second.
run_one() {
  local sc=$1 tool=$2 rep=$3 limit=$4 vus=$5; shift 5
  local dir=$OUT/runs/$sc.$tool.$rep t0 t1 b0 b1 w0 w1 pid tp s rss
  mkdir -p "$dir"
  printf '%q ' "$@" > "$dir/cmd.txt"; echo >> "$dir/cmd.txt"
  echo "$vus" > "$dir/vus"
  wait_quiet
  t0=$(cpu_ticks "$TARGET_PID"); b0=$(busy_ticks); w0=$(date +%s.%N)
  ( cd "$dir" && exec timeout -s INT -k 5 "$limit" taskset -c "$TOOL_CPU" \
      /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" "$@" \
      > "$dir/stdout" 2> "$dir/stderr" < /dev/null ) &
  pid=$!
  : > "$dir/rss.txt"
  while kill -0 "$pid" 2>/dev/null; do
    tp=$(leaf "$pid")
    rss=$(awk '/^VmRSS:/{print $2}' "/proc/$tp/status" 2>/dev/null || true)
    s=$(awk -v a="$w0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
    [ -z "$rss" ] || echo "$s $rss" >> "$dir/rss.txt"
    sleep 1
  done
  wait "$pid" && echo 0 > "$dir/rc" || echo $? > "$dir/rc"
  t1=$(cpu_ticks "$TARGET_PID"); b1=$(busy_ticks)
  read -r _ u sy _ < "$dir/time.txt" 2>/dev/null || { u=0; sy=0; }
  awk -v t0="$t0" -v t1="$t1" -v b0="$b0" -v b1="$b1" -v h="$TICKS" -v u="$u" -v s="$sy" \
    'BEGIN{tg=(t1-t0)/h; printf "%.2f %.2f\n", tg, (b1-b0)/h - tg - u - s}' > "$dir/cpu.txt"
  log "    $sc $tool #$rep: $(cat "$dir/time.txt" 2>/dev/null | awk '{printf "%ss wall, %.2f CPU-s, peak RSS %d MB", $1, $2+$3, $4/1024}') (rc $(cat "$dir/rc"))"
  sleep "$GAP"
}

# cmd_for TOOL SCRIPT VUS DUR: sets CMD
cmd_for() {
  local tool=$1 script=$2 vus=$3 dur=$4 url=http://127.0.0.1:$PORT/
  if [ "$(basename "$script")" = k6_rate.js ]; then
    # The script's own scenario sets the load: -u/-d would replace it (k6 and volley alike).
    local env=(-e URL="$url" -e RATE="$RATE" -e DUR="$dur" -e VUS="$vus")
    case $tool in
      k6) CMD=("$K6" run --quiet --no-color --summary-trend-stats 'avg,min,med,max,p(90),p(95),p(99)'
               --summary-export summary.json "${env[@]}" "$script") ;;
      volley) CMD=("$VOLLEY" run --quiet --threads 1 --summary-trend-stats 'avg,min,med,max,p(90),p(95),p(99)'
                   --summary-export summary.json "${env[@]}" "$script") ;;
    esac
    return
  fi
  case $tool in
    k6) CMD=("$K6" run --quiet --no-color --summary-trend-stats 'avg,min,med,max,p(90),p(95),p(99)'
             --summary-export summary.json -e URL="$url" --vus "$vus" --duration "${dur}s" "$script") ;;
    volley) CMD=("$VOLLEY" run --quiet --threads 1 --summary-export summary.json -e URL="$url"
                 --vus "$vus" --duration "${dur}s" "$script") ;;
  esac
  # The distinct-URL run also keeps volley's result file (its size must not follow the URLs).
  [ "$tool" = volley ] && [ "$(basename "$script")" = k6_urls_named.js ] && CMD+=(--save result.json)
  return 0
}

# after_urls DIR: the result file's size and a timed `volley summary` of it.
after_urls() {
  local dir=$1
  [ -f "$dir/result.json" ] || return 0
  stat -c %s "$dir/result.json" > "$dir/result_bytes"
  /usr/bin/time -f '%e %M' -o "$dir/summary_time.txt" "$VOLLEY" summary "$dir/result.json" \
    > "$dir/summary.txt" 2>&1 || true
  log "    result file $(awk '{printf "%.2f MB", $1/1e6}' "$dir/result_bytes"); volley summary: $(awk '{printf "%ss, peak RSS %d MB", $1, $2/1024}' "$dir/summary_time.txt")"
}

scenario() {  # NAME SCRIPT VUS DUR REPS
  local sc=$1 script=$2 vus=$3 dur=$4 reps=$5 rep tool
  log "== $sc: $(basename "$script"), $vus VUs, ${dur}s, $reps rep(s): $TOOLS"
  echo "$sc $(basename "$script") $vus $dur" >> "$OUT/scenarios.txt"
  for rep in $(seq "$reps"); do
    for tool in $TOOLS; do
      local d=$dur
      [ "$sc.$tool" != urls.k6 ] || d=$URLS_K6_DUR
      cmd_for "$tool" "$script" "$vus" "$d"
      mkdir -p "$OUT/runs/$sc.$tool.$rep" && echo "$d" > "$OUT/runs/$sc.$tool.$rep/dur"
      run_one "$sc" "$tool" "$rep" $((d + 60)) "$vus" "${CMD[@]}"
      [ "$sc" != urls ] || after_urls "$OUT/runs/$sc.$tool.$rep"
    done
  done
}

{
  echo "## $(date -u '+%Y-%m-%d %H:%M UTC') — $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1), $(nproc) CPUs"
  echo
  echo "- command: \`bench/k6.sh $ARGS\` (REPS=$REPS; target $TARGET on CPU $TARGET_CPU, tool on CPU $TOOL_CPU)"
  echo "- volley $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$( [ -z "$(git -C "$ROOT" status --porcelain -- crates 2>/dev/null)" ] || echo '+dirty') ($("$VOLLEY" --version 2>&1 | head -1)); k6: ${K6:+$("$K6" version 2>&1 | head -1)}"
} > "$OUT/header.md"
{ uname -a; nproc; lscpu; free -h; } > "$OUT/machine.txt" 2>&1 || true

start_target
for sc in "${SCENARIOS[@]}"; do
  case $sc in
    min)   scenario min "$HERE/scripts/k6_min.js" "$MIN_VUS" "$MIN_DUR" "$REPS" ;;
    sleep) scenario sleep "$HERE/scripts/k6_sleep.js" "$SLEEP_VUS" "$SLEEP_DUR" "$REPS" ;;
    flat)  scenario flat "$HERE/scripts/k6_sleep.js" "$SLEEP_VUS" "$FLAT_DUR" 1 ;;
    rate)  scenario rate "$HERE/scripts/k6_rate.js" "$RATE_VUS" "$RATE_DUR" "$REPS" ;;
    urls)  scenario urls "$HERE/scripts/k6_urls_named.js" "$URLS_VUS" "$URLS_DUR" 1 ;;
  esac
done
stop_server
echo
python3 "$HERE/lib/k6_table.py" "$OUT" | tee "$OUT/summary.md"
