#!/usr/bin/env bash
# bench/interrupt.sh -- how long `volley run` and `k6 run` take to stop on SIGTERM
# (`docker stop` sends SIGTERM, then SIGKILL 10 s later).
#
#   VOLLEY=path/to/volley [K6=path/to/k6] [REPS=5] [AFTER=2] bench/interrupt.sh
#
# Script: tests/k6/interrupt_sleep.js (50 VUs, one GET then sleep(10)) against `volley target`
# on 127.0.0.1. Each run gets SIGTERM AFTER seconds in; the time printed is from the signal to
# the exit, with Volley writing --save, --summary-export, --out json, --report and --history
# (k6: --summary-export). Prints one line per run and the median per tool.
set -eu
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VOLLEY=${VOLLEY:?set VOLLEY to a volley binary}
K6=${K6:-$HOME/.cache/volley-peers/bin/k6}
REPS=${REPS:-5}
AFTER=${AFTER:-2}
PORT=${PORT:-18931}
SCRIPT=$ROOT/tests/k6/interrupt_sleep.js
OUT=$(mktemp -d)
"$VOLLEY" target --listen "127.0.0.1:$PORT" >/dev/null 2>&1 &
TARGET=$!
trap 'kill $TARGET 2>/dev/null; rm -rf "$OUT"' EXIT
sleep 0.5

# one TOOL: run it REPS times, print each stop time and the median.
one() {
  local tool=$1 times=()
  for i in $(seq "$REPS"); do
    rm -rf "${OUT:?}"/*
    if [ "$tool" = k6 ]; then
      "$K6" run -q --summary-export "$OUT/s.json" -e "BASE=http://127.0.0.1:$PORT" "$SCRIPT" \
        >"$OUT/out" 2>&1 &
    else
      "$VOLLEY" run -q -e "BASE=http://127.0.0.1:$PORT" "$SCRIPT" --save "$OUT/run.json" \
        --summary-export "$OUT/s.json" --out "json=$OUT/p.ndjson" --report "$OUT/r.html" \
        --history "$OUT/h.db" >"$OUT/out" 2>&1 &
    fi
    local pid=$!
    sleep "$AFTER"
    local t0 t1
    t0=$(date +%s.%N)
    kill -TERM "$pid"
    wait "$pid" || true
    t1=$(date +%s.%N)
    local took
    took=$(echo "$t1 - $t0" | bc)
    times+=("$took")
    echo "$tool run $i: stopped in ${took}s; written: $(ls "$OUT" | grep -v '^out$' | tr '\n' ' ')"
  done
  printf '%s\n' "${times[@]}" | sort -n | awk -v t="$tool" \
    '{a[NR]=$1} END {printf "%s median: %.3fs\n", t, a[int((NR+1)/2)]}'
}

one volley
if [ -x "$K6" ]; then one k6; fi
