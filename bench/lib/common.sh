# Shell helpers shared by bench/run.sh and bench/k6.sh (sourced; needs QUIET_WAIT, QUIET_MAX).
log()  { echo "[$(date +%T)] $*" >&2; }
die()  { echo "[$(date +%T)] ERROR: $*" >&2; exit 1; }

# CPU accounting from /proc: a process's user+system ticks, and the machine's.
TICKS=$(getconf CLK_TCK)
cpu_ticks()  { [ -n "$1" ] && awk '{print $14+$15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# user+nice+system: softirq (loopback TCP) left out, as it is from the tool's own time
busy_ticks() { awk '/^cpu /{print $2+$3+$4; exit}' /proc/stat; }
all_ticks()  { awk '/^cpu /{s=0; for(i=2;i<=9;i++) s+=$i; print s; exit}' /proc/stat; }

wait_quiet() {  # wait (at most QUIET_WAIT s) until the machine is below QUIET_MAX % busy
  [ "$QUIET_WAIT" -gt 0 ] || return 0
  local start b0 a0 pct
  start=$(date +%s)
  while :; do
    b0=$(busy_ticks); a0=$(all_ticks); sleep 1
    pct=$(( 100 * ($(busy_ticks) - b0) / ($(all_ticks) - a0 + 1) ))
    [ "$pct" -le "$QUIET_MAX" ] && return 0
    if [ $(( $(date +%s) - start )) -ge "$QUIET_WAIT" ]; then
      log "    machine still ${pct}% busy after ${QUIET_WAIT}s, running anyway"; return 0
    fi
  done
}
