#!/usr/bin/env bash
# bench/grpc.sh -- gRPC unary requests per tool CPU-second: `volley run` and `k6 run` on
# bench/scripts/grpc_unary.js, and ghz (when installed) on the same method, against the
# built-in target's gRPC service (`volley target`), tool and target pinned to different CPUs.
#
# Environment (defaults in brackets):
#   REPS [3] runs per tool (interleaved; medians reported)   VUS [50] connections/VUs
#   DUR [10] seconds per run   TOOL_CPU [0] TARGET_CPU [1]   PORT [18390]
#   VOLLEY [target/release/volley]  K6 [~/.cache/volley-peers/bin/k6 or PATH]  GHZ [ghz on PATH
#   or ~/go/bin/ghz]  TOOLS ["volley k6 ghz"]  OUT [bench/out/grpc-<timestamp>]
# Prints a markdown table: tool, req/s, CPU-s, req/CPU-s, ratio to k6, peak RSS MB.
# Nothing leaves 127.0.0.1.
set -eu
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
REPS=${REPS:-3}; VUS=${VUS:-50}; DUR=${DUR:-10}; PORT=${PORT:-18390}
TOOL_CPU=${TOOL_CPU:-0}; TARGET_CPU=${TARGET_CPU:-1}
VOLLEY=${VOLLEY:-$ROOT/target/release/volley}
K6=${K6:-$(command -v k6 || echo "$HOME/.cache/volley-peers/bin/k6")}
GHZ=${GHZ:-$(command -v ghz || echo "$HOME/go/bin/ghz")}
TOOLS=${TOOLS:-volley k6 ghz}
OUT=${OUT:-$ROOT/bench/out/grpc-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
ADDR=127.0.0.1:$PORT

taskset -c "$TARGET_CPU" "$VOLLEY" target --listen "$ADDR" >"$OUT/target.log" 2>&1 &
TPID=$!
trap 'kill $TPID 2>/dev/null || true' EXIT
sleep 1

run_tool() {  # tool rep -> "requests cpu_s rss_kb"
  local tool=$1 rep=$2 f="$OUT/$1-$2"
  case $tool in
    volley) taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$VOLLEY" run -q -e ADDR="$ADDR" -e VUS="$VUS" -e DUR="$DUR" \
              --summary-export "$f.json" "$ROOT/bench/scripts/grpc_unary.js" >/dev/null 2>"$f.err" ;;
    k6) K6_NO_USAGE_REPORT=true taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$K6" run -q --no-usage-report --address 127.0.0.1:0 -e ADDR="$ADDR" -e VUS="$VUS" -e DUR="$DUR" \
              --summary-export "$f.json" "$ROOT/bench/scripts/grpc_unary.js" >/dev/null 2>"$f.err" ;;
    ghz) taskset -c "$TOOL_CPU" /usr/bin/time -f '%U %S %M' -o "$f.time" \
              "$GHZ" --insecure --proto "$ROOT/examples/grpc/target.proto" \
              --call volley.target.Target/Echo -d '{"text":"hello","number":"42"}' \
              -c "$VUS" --connections "$VUS" -z "${DUR}s" --cpus 1 -O json -o "$f.json" "$ADDR" 2>"$f.err" ;;
  esac
  python3 - "$tool" "$f" <<'PY'
import json, sys
tool, f = sys.argv[1], sys.argv[2]
u, s, rss = open(f + ".time").read().split()[-3:]
d = json.load(open(f + ".json"))
if tool == "ghz":
    n = d["count"]; secs = d["total"] / 1e9
else:
    # One check per call (trends have no count in --summary-export).
    c = d["metrics"]["checks"]; n = c["passes"] + c["fails"]; secs = None
print(n, float(u) + float(s), rss, secs or "")
PY
}

for rep in $(seq 1 "$REPS"); do
  for tool in $TOOLS; do
    if [ "$tool" = ghz ] && [ ! -x "$GHZ" ]; then continue; fi
    if [ "$tool" = k6 ] && [ ! -x "$K6" ]; then continue; fi
    echo "$tool $rep $(run_tool "$tool" "$rep")" | tee -a "$OUT/raw.txt" >&2
    sleep 2
  done
done

python3 - "$OUT/raw.txt" "$DUR" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    p = line.split()
    tool, n, cpu, rss = p[0], int(p[2]), float(p[3]), int(p[4])
    rows.setdefault(tool, []).append((n, cpu, rss))
dur = float(sys.argv[2])
med = lambda xs: statistics.median(xs)
k6 = None
out = []
for tool, rs in rows.items():
    rps = med([n / dur for n, _, _ in rs]); cpu = med([c for _, c, _ in rs])
    per = med([n / c for n, c, _ in rs]); rss = med([r for _, _, r in rs]) / 1024
    out.append((tool, len(rs), rps, cpu, per, rss))
    if tool == "k6":
        k6 = per
print("| tool | runs | req/s | CPU-s | req/CPU-s | vs k6 | peak RSS MB |")
print("|---|---|---|---|---|---|---|")
for tool, n, rps, cpu, per, rss in out:
    ratio = f"{per / k6:.2f}x" if k6 else "-"
    print(f"| {tool} | {n} | {rps:,.0f} | {cpu:.2f} | {per:,.0f} | {ratio} | {rss:.0f} |")
PY
