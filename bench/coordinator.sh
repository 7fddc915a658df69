#!/usr/bin/env bash
# Coordinator overhead (issue #19): AGENTS agents on this machine load `volley target` for DUR
# seconds through one `volley coordinator`; the coordinator's CPU time and RSS are sampled
# every STEP seconds from /proc. Prints one markdown table (per window: CPU-ms per
# agent-second, RSS). Pinning: the coordinator on CPU 0, the target and the agents on the
# others when there are any.
#
#   VOLLEY=target/release/volley AGENTS=8 DUR=300 bench/coordinator.sh
set -euo pipefail
VOLLEY=${VOLLEY:-volley}
AGENTS=${AGENTS:-8}
DUR=${DUR:-300}
STEP=${STEP:-10}
RATE=${RATE:-50}          # requests per second per agent
PORT=${PORT:-16565}
TPORT=${TPORT:-18181}
OUT=${OUT:-$(mktemp -d /tmp/volley-coord-bench.XXXXXX)}
mkdir -p "$OUT"
export VOLLEY_TOKEN=${VOLLEY_TOKEN:-bench-$$}
ncpu=$(nproc)
others=$([ "$ncpu" -gt 1 ] && echo "1-$((ncpu - 1))" || echo 0)

cat > "$OUT/test.js" <<JS
import http from 'k6/http';
import { check } from 'k6';
export const options = {
  scenarios: { load: { executor: 'constant-arrival-rate', rate: $((RATE * AGENTS)), timeUnit: '1s',
    duration: '${DUR}s', preAllocatedVUs: $((4 * AGENTS)), maxVUs: $((16 * AGENTS)) } },
  thresholds: { http_req_duration: ['p(99)<1000'], checks: ['rate>0.99'] },
};
const paths = ['/', '/bytes/512', '/status/200', '/get'];
export default function () {
  const p = paths[Math.floor(Math.random() * paths.length)];
  const r = http.get(\`http://127.0.0.1:${TPORT}\${p}\`, { tags: { name: p } });
  check(r, { 'status 200': (x) => x.status === 200 });
}
JS

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

taskset -c "$others" "$VOLLEY" target --listen "127.0.0.1:$TPORT" > "$OUT/target.log" 2>&1 &
pids+=($!)
taskset -c 0 "$VOLLEY" coordinator "$OUT/test.js" --instances "$AGENTS" \
  --listen "127.0.0.1:$PORT" --save "$OUT/merged.json" > "$OUT/coordinator.out" 2> "$OUT/coordinator.err" &
coord=$!
pids+=($coord)
sleep 1
for i in $(seq 1 "$AGENTS"); do
  taskset -c "$others" "$VOLLEY" agent --coordinator "127.0.0.1:$PORT" --name "agent$i" --threads 1 \
    > "$OUT/agent$i.out" 2> "$OUT/agent$i.err" &
  pids+=($!)
done

tck=$(getconf CLK_TCK)
echo "| t (s) | coordinator CPU-s (total) | CPU-ms per agent-second in the window | RSS (MiB) |"
echo "|---|---|---|---|"
prev=0; t=0
while kill -0 "$coord" 2>/dev/null; do
  sleep "$STEP"; t=$((t + STEP))
  [ -r "/proc/$coord/stat" ] || break
  read -r ut st < <(awk '{print $14, $15}' "/proc/$coord/stat")
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$coord/status")
  cpu=$((ut + st))
  awk -v t="$t" -v c="$cpu" -v p="$prev" -v k="$tck" -v a="$AGENTS" -v s="$STEP" -v r="$rss" \
    'BEGIN { printf "| %d | %.2f | %.3f | %.1f |\n", t, c / k, (c - p) / k * 1000 / (a * s), r / 1024 }'
  prev=$cpu
done
wait "$coord" || echo "(coordinator exit $?)"
grep -h "merged" "$OUT/coordinator.err" || true
echo "output: $OUT"
