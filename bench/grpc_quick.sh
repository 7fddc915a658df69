#!/usr/bin/env bash
# bench/grpc_quick.sh -- gRPC unary quick mode: calls per tool CPU-second of `volley grpc`,
# ghz and k6 (the simplest k6 gRPC script, bench/scripts/grpc_quick_k6.js) on the built-in
# target's Echo (`volley target`), the same concurrency, tool and target pinned to different
# CPUs; interleaved repetitions, medians. CPU = user + system of the tool process
# (/usr/bin/time), so requests per CPU-second does not depend on how fast the target is.
#
# Environment (defaults in brackets):
#   REPS [3] runs per tool   C [50] calls in flight (volley -c, ghz -c, k6 VUs)
#   CONNS [1] HTTP/2 connections for volley and ghz (--connections; k6 has one per VU)
#   DUR [10] seconds per run   TOOL_CPU [0] TARGET_CPU [1]   PORT [18395]
#   VOLLEY [target/release/volley]  TARGET_BIN [$VOLLEY]  GHZ [ghz on PATH or ~/go/bin/ghz]
#   K6 [k6 on PATH or ~/.cache/volley-peers/bin/k6]  TOOLS ["volley ghz k6"]
#   OUT [bench/out/grpc-quick-<timestamp>]
# Prints a markdown table: tool, calls/s, CPU-s, calls/CPU-s, ratios to ghz and k6, peak RSS.
# Nothing leaves 127.0.0.1.
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-3}; C=${C:-50}; CONNS=${CONNS:-1}; DUR=${DUR:-10}; PORT=${PORT:-18395}
TOOL_CPU=${TOOL_CPU:-0}; TARGET_CPU=${TARGET_CPU:-1}
VOLLEY=${VOLLEY:-$ROOT/target/release/volley}
TARGET_BIN=${TARGET_BIN:-$VOLLEY}
GHZ=${GHZ:-$(command -v ghz || echo "$HOME/go/bin/ghz")}
K6=${K6:-$(command -v k6 || echo "$HOME/.cache/volley-peers/bin/k6")}
TOOLS=${TOOLS:-volley ghz k6}
OUT=${OUT:-$ROOT/bench/out/grpc-quick-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ADDR=127.0.0.1:$PORT
PROTO=$ROOT/examples/grpc/target.proto
DATA='{"text":"hello","number":"42"}'

taskset -c "$TARGET_CPU" "$TARGET_BIN" target --listen "$ADDR" >"$OUT/target.log" 2>&1 &
TPID=$!
trap 'kill $TPID 2>/dev/null || true' EXIT
sleep 1

run_tool() {  # tool rep -> "calls cpu_s rss_kb"
  local tool=$1 rep=$2 f="$OUT/$1-$2"
  case $tool in
    volley) taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$VOLLEY" grpc "$ADDR" --plaintext --proto "$PROTO" --call volley.target.Target/Echo \
              -d "$DATA" -c "$C" --connections "$CONNS" -z "${DUR}s" --threads 1 --json \
              >"$f.json" 2>"$f.err" ;;
    ghz) taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$GHZ" --insecure --proto "$PROTO" --call volley.target.Target/Echo -d "$DATA" \
              -c "$C" --connections "$CONNS" -z "${DUR}s" --cpus 1 -O json -o "$f.json" "$ADDR" \
              2>"$f.err" ;;
    k6) K6_NO_USAGE_REPORT=true taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$K6" run -q --no-usage-report --address 127.0.0.1:0 -e ADDR="$ADDR" -e VUS="$C" \
              -e DUR="$DUR" --summary-export "$f.json" "$ROOT/bench/scripts/grpc_quick_k6.js" \
              >/dev/null 2>"$f.err" ;;
  esac
  python3 - "$tool" "$f" <<'PY'
import json, sys
tool, f = sys.argv[1], sys.argv[2]
u, s, rss = open(f + ".time").read().split()[-3:]
d = json.load(open(f + ".json"))
if tool == "ghz":
    n = sum(v for k, v in d["statusCodeDistribution"].items() if k == "OK")
elif tool == "volley":
    n = d["statuses"].get("OK", 0)
else:
    n = d["metrics"]["iterations"]["count"]
print(n, float(u) + float(s), rss)
PY
}

for rep in $(seq 1 "$REPS"); do
  for tool in $TOOLS; do
    if [ "$tool" = ghz ] && [ ! -x "$GHZ" ]; then echo "ghz not found: skipped" >&2; continue; fi
    if [ "$tool" = k6 ] && [ ! -x "$K6" ]; then echo "k6 not found: skipped" >&2; continue; fi
    echo "$tool $rep $(run_tool "$tool" "$rep")" | tee -a "$OUT/raw.txt" >&2
    sleep 1
  done
done

python3 - "$OUT/raw.txt" "$DUR" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    rows.setdefault(p[0], []).append((int(p[2]), float(p[3]), int(p[4])))
dur = float(sys.argv[2])
med = statistics.median
eff = {t: med([n / c for n, c, _ in rs]) for t, rs in rows.items()}
print("| tool | calls/s | CPU-s | calls per CPU-s | × ghz | × k6 | peak RSS MB |")
print("|---|---|---|---|---|---|---|")
for t, rs in rows.items():
    ratio = lambda peer: f"{eff[t] / eff[peer]:.2f}" if peer in eff else "-"
    print(f"| {t} | {med([n / dur for n, _, _ in rs]):.0f} | {med([c for _, c, _ in rs]):.2f} | "
          f"{eff[t]:.0f} | {ratio('ghz')} | {ratio('k6')} | {med([r for _, _, r in rs]) / 1024:.1f} |")
PY
