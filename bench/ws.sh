#!/usr/bin/env bash
# bench/ws.sh -- WebSocket echo at VUS connections: k6 and `volley run` on the same k6/ws
# script (bench/scripts/k6_ws_echo.js) and `volley ws -c VUS`, the same workload for all three
# (VUS connections, the same 32-byte text message), the tool pinned to one CPU and `volley
# target --threads 1` (its /ws/echo) to another. Two paces (MODES):
#   max   closed model: one message in flight per connection, each echo sent straight back
#         (`volley ws` without -q) -- messages per tool CPU-second, the ratio to k6;
#   short the max run cut to 1 s: its CPU is mostly the fixed cost (startup, 1,000 connects,
#         teardown), so (max - short) gives the steady per-message cost ("steady" column);
#   rate  the same fixed rate for every tool: RATE messages/s in total, each connection
#         sending every VUS*1000/RATE ms whether or not echoes came back (`volley ws -q RATE`)
#         -- tool CPU-ms per 1,000 messages at that rate, the ratio to k6;
#   inflight  for each N in INFLIGHT: the max run with N messages in flight per connection
#         (the script sends N at open, then each echo straight back; `volley ws --inflight
#         N`) -- messages per tool CPU-second, the ratio to k6 (modes inflightN).
# Tool CPU is user+sys from getrusage (GNU time, startup and the 1,000 connects included);
# peak RSS per VU too.
#
#   bench/ws.sh               one table per mode; raw files under OUT
#   bench/ws.sh --table DIR   the tables again from DIR (runs of several sessions may be
#                             gathered there as MODE-TOOL-N directories)
#
# Environment (defaults in brackets):
#   VUS [1000]  DUR [10] seconds of load per run  REPS [2] runs per tool (interleaved)
#   MODES ["max short rate inflight"]  RATE [10000] messages/s in total in the rate mode
#   INFLIGHT ["8 32"] messages in flight per connection in the inflight modes
#   TOOL_CPU [0] TARGET_CPU [1]  PORT [18390]  OUT [bench/out/ws-<timestamp>]
#   K6 [$PEERS/bin/k6]  PEERS [~/.cache/volley-peers]  VOLLEY [target/release/volley]
#   TOOLS ["k6 volley-run volley-ws"]
#   BEFORE [unset] a second volley binary: adds the tools volley-run-before and
#   volley-ws-before, run interleaved with the others (before/after in the same minutes)
#   PROTO [unset] the bench/ws-proto binary (cargo build --release in bench/ws-proto): adds
#   proto-epoll, proto-tokio (the same loop as tokio tasks), proto-uring, proto-defer (io_uring
#   with DEFER_TASKRUN) and proto-multishot (multishot recv, DEFER_TASKRUN): lean raw-socket
#   clients of the same load (max and short modes only: one message in flight) -- the
#   kernel's floor per message, and what a runtime alone adds to it
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
TOOLS=${TOOLS:-"k6 volley-run volley-ws${BEFORE:+ volley-run-before volley-ws-before}${PROTO:+ proto-epoll proto-tokio proto-uring proto-defer proto-multishot}"}
MODES=${MODES:-"max short rate inflight"}
INFLIGHT=${INFLIGHT:-"8 32"}
# "inflight" stands for one mode per N.
MODES=$(for m in $MODES; do
  if [ "$m" = inflight ]; then for n in $INFLIGHT; do printf 'inflight%s ' "$n"; done
  else printf '%s ' "$m"; fi
done)
RATE=${RATE:-10000}
SEND_MS=$((VUS * 1000 / RATE))
[ $((VUS * 1000 % RATE)) -eq 0 ] || die "RATE must divide VUS*1000 (each connection sends every VUS*1000/RATE ms)"
MSG=0123456789abcdef0123456789abcdef
K6=${K6:-$PEERS/bin/k6}
VOLLEY=${VOLLEY:-$ROOT/target/release/volley}
OUT=${OUT:-$ROOT/bench/out/ws-$(date +%Y%m%d-%H%M%S)}
export K6_NO_USAGE_REPORT=true

case "${1:-}" in -h|--help) sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac
table() {
python3 - "$1" "$VUS" "$TOOLS" "$MODES" "$RATE" "$DUR" <<'PY'
import os, statistics, sys
out, vus, tools, modes = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split()
rate, dur = int(sys.argv[5]), int(sys.argv[6])
meds = {}
# The 1-s runs first: the max table subtracts them.
for mode in sorted(modes, key=lambda m: m != "short"):
    rows = {}
    for t in tools:
        pre = f"{mode}-{t}-"
        for d in sorted(os.listdir(out)):
            if not d.startswith(pre) or not d[len(pre):].isdigit():
                continue
            p = os.path.join(out, d)
            e, u, s, rss = open(p + "/time.txt").read().split()[-4:]
            msgs = int(open(p + "/msgs.txt").read())
            cpu = float(u) + float(s)
            rows.setdefault(t, []).append((msgs, cpu, float(u), float(s), int(rss) * 1024))
    if not rows:
        continue
    med = {t: {"per": statistics.median(m / max(c, 1e-9) for m, c, *_ in r),
               "ms1k": statistics.median(1e6 * c / max(m, 1) for m, c, *_ in r),
               "msgs": statistics.median(x[0] for x in r),
               "cpu": statistics.median(x[1] for x in r),
               "usr": statistics.median(x[2] for x in r),
               "sys": statistics.median(x[3] for x in r),
               "rss": statistics.median(x[4] for x in r)} for t, r in rows.items()}
    meds[mode] = med
    if mode == "short":
        continue
    base = med.get("k6")
    n = len(next(iter(rows.values())))
    if mode.startswith("inflight"):
        print(f"\n{mode[8:]} messages in flight per connection (closed model), {vus} connections, {dur} s; medians of {n} runs")
        print("| tool | msgs received | tool CPU-s (user + sys) | msgs / CPU-s | vs k6 | steady | peak RSS | RSS / VU |")
    elif mode == "max":
        print(f"\nmax throughput (closed model, one message in flight per connection), {vus} connections, {dur} s; medians of {n} runs")
        print("| tool | msgs received | tool CPU-s (user + sys) | msgs / CPU-s | vs k6 | steady msgs / CPU-s (vs k6) | peak RSS | RSS / VU |")
    else:
        print(f"\nfixed rate {rate:,} msgs/s in total ({vus} connections × {rate / vus:g}/s), {dur} s; medians of {n} runs")
        print("| tool | msgs received | tool CPU-s (user + sys) | CPU-ms / 1,000 msgs | vs k6 (k6 / tool) | peak RSS | RSS / VU |")
    per_cpu = mode == "max" or mode.startswith("inflight")
    print("|---|---:|---:|---:|---:|" + ("---:|" if per_cpu else "") + "---:|---:|")
    for t in tools:
        if t not in med:
            continue
        m = med[t]
        steady = ""
        if per_cpu:
            fig, ratio = f"{m['per']:,.0f}", (f"{m['per'] / base['per']:.1f}×" if base else "-")
            # Minus the 1-s run's messages and CPU: the cost per message without the fixed part.
            sh = meds.get("short", {})
            st = lambda t: (meds["max"][t]["msgs"] - sh[t]["msgs"]) / max(1e-9, meds["max"][t]["cpu"] - sh[t]["cpu"])
            steady = " - |"
            if t in sh and mode == "max":
                steady = f" {st(t):,.0f}" + (f" ({st(t) / st('k6'):.1f}×)" if "k6" in sh else "") + " |"
        else:
            fig, ratio = f"{m['ms1k']:.1f}", (f"{base['ms1k'] / m['ms1k']:.1f}×" if base else "-")
        print(f"| {t} | {m['msgs']:,.0f} | {m['cpu']:.2f} ({m['usr']:.2f} + {m['sys']:.2f}) | {fig} | {ratio} |{steady}"
              f" {m['rss'] / 2**20:.0f} MiB | {m['rss'] / vus / 1024:.0f} KiB |")
PY
}
if [ "${1:-}" = --table ]; then table "${2:?--table DIR}"; exit 0; fi
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) is required"
[ -x "$VOLLEY" ] || die "no volley binary at $VOLLEY (cargo build --release -p volley, or VOLLEY=...)"
mkdir -p "$OUT"
cp "$VOLLEY" "$OUT/volley"
if [ -n "${BEFORE:-}" ]; then cp "$BEFORE" "$OUT/volley-before"; fi
if [ -n "${PROTO:-}" ]; then cp "$PROTO" "$OUT/ws-proto"; fi
ulimit -n 65536 2>/dev/null || log "warning: could not raise the open-file limit"

taskset -c "$TARGET_CPU" "$OUT/volley" target --listen "127.0.0.1:$PORT" --threads 1 \
  > "$OUT/target.log" 2>&1 &
TPID=$!
trap 'kill $TPID 2>/dev/null || true' EXIT
for _ in $(seq 50); do grep -q listening "$OUT/target.log" && break; sleep 0.1; done
WS="ws://127.0.0.1:$PORT/ws/echo"

# one MODE TOOL REP: a pinned run; time.txt = elapsed user sys maxrss_kb; msgs.txt = received.
one() {
  local mode=$1 tool=$2 rep=$3 dir="$OUT/$1-$2-$3"
  mkdir -p "$dir"
  local dur=$DUR send=0 q=() bin="$OUT/volley" n=1
  case $tool in *-before) bin="$OUT/volley-before" ;; esac
  if [ "$mode" = rate ]; then send=$SEND_MS; q=(-q "$RATE"); fi
  case $mode in inflight*) n=${mode#inflight}; q=(--inflight "$n") ;; esac
  if [ "$mode" = short ]; then dur=1; fi
  # The prototype knows one pace only: one message in flight.
  case $tool:$mode in proto-*:max | proto-*:short) ;; proto-*) return 0 ;; esac
  local limit=$((dur + 120))
  case $tool in
    k6) set -- "$K6" run -q --no-usage-report --address 127.0.0.1:0 -e "WS=$WS" \
          -e "VUS=$VUS" -e "DUR_MS=$((dur * 1000))" -e "SEND_MS=$send" -e "INFLIGHT=$n" \
          --summary-export "$dir/export.json" "$HERE/scripts/k6_ws_echo.js" ;;
    volley-run*) set -- "$bin" run -q -e "WS=$WS" -e "VUS=$VUS" \
          -e "DUR_MS=$((dur * 1000))" -e "SEND_MS=$send" -e "INFLIGHT=$n" \
          --summary-export "$dir/export.json" \
          "$HERE/scripts/k6_ws_echo.js" ;;
    volley-ws*) set -- "$bin" ws "$WS" -c "$VUS" -z "${dur}s" -m "$MSG" "${q[@]}" --json ;;
    proto-epoll) set -- "$OUT/ws-proto" "127.0.0.1:$PORT" -c "$VUS" -z "$dur" -m "$MSG" --io epoll ;;
    proto-uring) set -- "$OUT/ws-proto" "127.0.0.1:$PORT" -c "$VUS" -z "$dur" -m "$MSG" --io uring ;;
    proto-tokio) set -- "$OUT/ws-proto" "127.0.0.1:$PORT" -c "$VUS" -z "$dur" -m "$MSG" --io tokio ;;
    proto-defer) set -- "$OUT/ws-proto" "127.0.0.1:$PORT" -c "$VUS" -z "$dur" -m "$MSG" \
          --io uring --defer ;;
    proto-multishot) set -- "$OUT/ws-proto" "127.0.0.1:$PORT" -c "$VUS" -z "$dur" -m "$MSG" \
          --io uring --multishot --defer ;;
  esac
  log "$mode $tool rep $rep: $*"
  timeout -s INT -k 5 "$limit" taskset -c "$TOOL_CPU" \
    /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" "$@" > "$dir/stdout" 2> "$dir/stderr" || true
  python3 - "$dir" "$tool" <<'PY'
import json, sys
d, tool = sys.argv[1], sys.argv[2]
if tool.startswith("volley-ws") or tool.startswith("proto-"):
    n = json.load(open(d + "/stdout"))["messages_received"]
else:
    n = json.load(open(d + "/export.json"))["metrics"]["ws_msgs_received"]["count"]
open(d + "/msgs.txt", "w").write(str(int(n)))
PY
}

for rep in $(seq "$REPS"); do
  for mode in $MODES; do
    for tool in $TOOLS; do one "$mode" "$tool" "$rep"; sleep 2; done
  done
done

table "$OUT"
