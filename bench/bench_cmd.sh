#!/bin/sh
# `volley bench`'s own overhead against hyperfine on a trivial command (bench/RESULTS.md).
#
#   VOLLEY=target/release/volley RUNS=1000 REPS=3 bench/bench_cmd.sh [CMD]
#
# For each rep, interleaved: a bare posix_spawn+waitpid loop (the floor), hyperfine -N, and
# volley bench, each doing RUNS runs of CMD (default `true`) after 10 warm-ups. Prints, per tool,
# the elapsed time, runs per second, the time added per run over the floor, and the mean time
# and median time per run the tool itself reports for CMD. Needs cc, bc, python3, hyperfine.
set -eu
VOLLEY=${VOLLEY:-target/release/volley}
RUNS=${RUNS:-1000}
REPS=${REPS:-3}
CMD=${1:-true}
OUT=$(mktemp -d)
cc -O2 -o "$OUT/spawn_loop" "$(dirname "$0")/scripts/spawn_loop.c"
now() { date +%s.%N; }
printf 'rep tool elapsed_s runs_per_s added_us_per_run reported_mean_us reported_median_us\n'
# mean and median (µs) of a tool's JSON: hyperfine's results[0], volley's wall_time (ms).
stat() {
  python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
if "results" in j:
    r = j["results"][0]; print("%.1f %.1f" % (r["mean"] * 1e6, r["median"] * 1e6))
else:
    m = next(m for m in j["benches"][0]["metrics"] if m["name"] == "wall_time")
    print("%.1f %.1f" % (m["mean"] * 1e3, m["median"] * 1e3))' "$1"
}
for rep in $(seq 1 "$REPS"); do
  t0=$(now); "$OUT/spawn_loop" "$RUNS" "$CMD"; t1=$(now)
  floor=$(echo "$t1 - $t0" | bc -l)
  printf '%s floor %.3f %.0f 0 -\n' "$rep" "$floor" "$(echo "$RUNS / $floor" | bc -l)"
  t0=$(now); hyperfine -N --style none --warmup 10 --runs "$RUNS" --export-json "$OUT/h.json" "$CMD" >/dev/null 2>&1; t1=$(now)
  e=$(echo "$t1 - $t0" | bc -l)
  printf '%s hyperfine %.3f %.0f %.1f %s\n' "$rep" "$e" "$(echo "($RUNS + 10) / $e" | bc -l)" \
    "$(echo "($e / ($RUNS + 10) - $floor / $RUNS) * 1000000" | bc -l)" "$(stat "$OUT/h.json")"
  t0=$(now); "$VOLLEY" bench -q --warmup 10 --runs "$RUNS" --json "$OUT/v.json" "$CMD"; t1=$(now)
  e=$(echo "$t1 - $t0" | bc -l)
  printf '%s volley %.3f %.0f %.1f %s\n' "$rep" "$e" "$(echo "($RUNS + 10) / $e" | bc -l)" \
    "$(echo "($e / ($RUNS + 10) - $floor / $RUNS) * 1000000" | bc -l)" "$(stat "$OUT/v.json")"
done
rm -rf "$OUT"
