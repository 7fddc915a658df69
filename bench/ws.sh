#!/usr/bin/env bash
# bench/ws.sh -- WebSocket echo at VUS connections: k6 and `volley run` on the same k6/ws
# script (bench/scripts/k6_ws_echo.js: each VU sends every echo straight back), and
# `volley ws -c VUS` (closed model: one message in flight per connection), the tool pinned to
# one CPU and `volley target --threads 1` (its /ws/echo) to another. Reports messages
# received per tool CPU-second (and the ratio to k6) and peak RSS per VU.
#
#   bench/ws.sh               one table; raw files under OUT
#
# Environment (defaults in brackets):
#   VUS [1000]  DUR [10] seconds of load per run  REPS [2] runs per tool (interleaved)
#   TOOL_CPU [0] TARGET_CPU [1]  PORT [18390]  OUT [bench/out/ws-<timestamp>]
#   K6 [$PEERS/bin/k6]  PEERS [~/.cache/volley-peers]  VOLLEY [target/release/volley]
#   TOOLS ["k6 volley-run volley-ws"]
# Nothing leaves 127.0.0.1 (k6's usage report is off).
set -eu

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib/common.sh
. "$HERE/lib/common.sh"
ROOT=$(cd "$HERE/.." && pwd)
PEERS=${PEERS:-$HOME/.cache/volley-peers}
VUS=${VUS:-1000}
DUR=${DUR:-10}
REPS=${REPS:-2}
TOOL_CPU=${TOOL_CPU:-0}
TARGET_CPU=${TARGET_CPU:-1}
PORT=${PORT:-18390}
TOOLS=${TOOLS:-"k6 volley-run volley-ws"}
K6=${K6:-$PEERS/bin/k6}
VOLLEY=${VOLLEY:-$ROOT/target/release/volley}
OUT=${OUT:-$ROOT/bench/out/ws-$(date +%Y%m%d-%H%M%S)}
export K6_NO_USAGE_REPORT=true

case "${1:-}" in -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is required"
[ -x "$VOLLEY" ] || die "no volley binary at $VOLLEY (cargo build --release -p volley, or VOLLEY=...)"
mkdir -p "$OUT"
cp "$VOLLEY" "$OUT/volley"
ulimit -n 65536 2>/dev/null || log "warning: could not raise the open-file limit"

taskset -c "$TARGET_CPU" "$OUT/volley" target --listen "127.0.0.1:$PORT" --threads 1 \
  > "$OUT/target.log" 2>&1 &
TPID=$!
trap 'kill $TPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$OUT/target.log" && break; sleep 0.1; done
WS="ws://127.0.0.1:$PORT/ws/echo"

# one TOOL REP: a pinned run; time.txt = elapsed user sys maxrss_kb; msgs.txt = received.
one() {
  local tool=$1 rep=$2 dir="$OUT/$1-$2"
  mkdir -p "$dir"
  local limit=$((DUR + 120))
  case $tool in
    k6) set -- "$K6" run -q --no-usage-report --address 127.0.0.1:0 -e "WS=$WS" \
          -e "VUS=$VUS" -e "DUR_MS=$((DUR * 1000))" --summary-export "$dir/export.json" \
          "$HERE/scripts/k6_ws_echo.js" ;;
    volley-run) set -- "$OUT/volley" run -q -e "WS=$WS" -e "VUS=$VUS" \
          -e "DUR_MS=$((DUR * 1000))" --summary-export "$dir/export.json" \
          "$HERE/scripts/k6_ws_echo.js" ;;
    volley-ws) set -- "$OUT/volley" ws "$WS" -c "$VUS" -z "${DUR}s" --json ;;
  esac
  log "$tool rep $rep: $*"
  timeout -s INT -k 5 "$limit" taskset -c "$TOOL_CPU" \
    /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" "$@" > "$dir/stdout" 2> "$dir/stderr" || true
  python3 - "$dir" "$tool" <<'PY'
import json, sys
d, tool = sys.argv[1], sys.argv[2]
if tool == "volley-ws":
    n = json.load(open(d + "/stdout"))["messages_received"]
else:
    n = json.load(open(d + "/export.json"))["metrics"]["ws_msgs_received"]["count"]
open(d + "/msgs.txt", "w").write(str(int(n)))
PY
}

for rep in $(seq "$REPS"); do
  for tool in $TOOLS; do one "$tool" "$rep"; sleep 2; done
done

python3 - "$OUT" "$VUS" "$TOOLS" <<'PY'
import os, statistics, sys
out, vus, tools = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
rows = {}
for t in tools:
    for d in sorted(os.listdir(out)):
        if not d.startswith(t + "-") or not d[len(t) + 1:].isdigit():
            continue
        p = os.path.join(out, d)
        e, u, s, rss = open(p + "/time.txt").read().split()[-4:]
        msgs = int(open(p + "/msgs.txt").read())
        cpu = float(u) + float(s)
        rows.setdefault(t, []).append((msgs, cpu, float(e), int(rss) * 1024))
med = {t: (statistics.median(m / c for m, c, _, _ in r),
           statistics.median(m for m, _, _, _ in r),
           statistics.median(c for _, c, _, _ in r),
           statistics.median(x for _, _, _, x in r)) for t, r in rows.items()}
base = med.get("k6", (0,))[0]
print(f"VUs {vus}; medians of {len(next(iter(rows.values())))} runs per tool")
print("| tool | msgs received | tool CPU-s | msgs / CPU-s | vs k6 | peak RSS | RSS / VU |")
print("|---|---:|---:|---:|---:|---:|---:|")
for t in tools:
    if t not in med:
        continue
    r, m, c, x = med[t]
    ratio = f"{r / base:.1f}×" if base else "-"
    print(f"| {t} | {m:,.0f} | {c:.2f} | {r:,.0f} | {ratio} | {x / 2**20:.0f} MiB | {x / vus / 1024:.0f} KiB |")
PY
