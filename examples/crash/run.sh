#!/bin/sh
# The crash harness (#18 item 5): the demo service under direct and chunked uploads is
# SIGKILLed mid-run, restarted on the same data directory, then every acknowledged upload is
# verified byte-identical and nothing half-written may be listed.
#
#   sh examples/crash/run.sh            # exit 0: nothing lost; exit 6: acknowledged data lost
#   ACK_EARLY=1 sh examples/crash/run.sh  # the broken client (acks before writing): exit 6
#
# Environment: VOLLEY (the binary, default `volley`), PORT (default 8097), DURATION (6s),
# KILL_AT (3s), DOWN_FOR (1s), WORK (a scratch directory, default a new temp dir).
set -eu
VOLLEY=${VOLLEY:-volley}
PORT=${PORT:-8097}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d)}
DATA="$WORK/data"
LEDGER="$WORK/ledger.ndjson"
URL="http://127.0.0.1:$PORT"
SERVE="$VOLLEY demo serve --listen 127.0.0.1:$PORT --data $DATA --threads 2"
rm -f "$LEDGER"

serve_bg() {
  $SERVE >"$WORK/serve.log" 2>&1 &
  PID=$!
  i=0
  until grep -q listening "$WORK/serve.log" 2>/dev/null; do
    i=$((i + 1))
    if [ $i -gt 100 ]; then echo "demo service did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; fi
    sleep 0.1
  done
}

# 1. Seed the accounts (idempotent), then stop.
serve_bg
$VOLLEY demo seed --url "$URL" --small >/dev/null
kill "$PID"; wait "$PID" 2>/dev/null || true

# 2. Load with the service as a fault target: SIGKILL at KILL_AT, restart DOWN_FOR later.
$VOLLEY run "$HERE/upload.js" -q --ledger "$LEDGER" -e BASE_URL="$URL" \
  -e DURATION="${DURATION:-6s}" -e ACK_EARLY="${ACK_EARLY:-0}" \
  --fault-target "demo=exec $SERVE" \
  --fault "at=${KILL_AT:-3s},for=${DOWN_FOR:-1s},kill=demo" || true

# 3. The service back on the same data, then the verdict.
serve_bg
set +e
$VOLLEY verify --ledger "$LEDGER" -- $VOLLEY run "$HERE/verify.js" -q -e BASE_URL="$URL"
CODE=$?
kill "$PID"; wait "$PID" 2>/dev/null
exit $CODE
