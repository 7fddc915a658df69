// A long, steady run of the mixed workload (lib/mix.js) at constant VUs, to watch the
// service drift: latency creeping up, memory (process_resident_memory_bytes on /metrics)
// that only grows, throughput falling. Sessions are renewed by a fresh login every
// SESSION_TTL_S (600 s), before the 15-minute access tokens expire.
//
//   PROFILE=soak SOAK_DURATION=24h volley run examples/soak-mixed.js -e BASE_URL=http://127.0.0.1:8090 \
//     --monitor 'url:http://127.0.0.1:8090/metrics#process_resident_memory_bytes' \
//     --threshold 'mixed_op_duration:drift(p95)<20%'
//
// (--monitor and the drift threshold are Volley's; the script itself is plain k6.)
// Profiles: smoke 2 VUs × 3 s; soak VUS (default 10) × SOAK_DURATION (default 1h); load and
// stress as everywhere. THINK_S defaults to 0.5 s in soak.
// Metrics: mixed_op_duration (Trend tagged op; p95 < P95_MS, default 1000),
// http_req_duration (p95 < HTTP_P95_MS, default 1000), bytes_downloaded / bytes_uploaded,
// mixed_ops.
import { sleep } from 'k6';
import { THINK, suiteOptions, p95 } from './lib/config.js';
import { mixSetup, mixTeardown, mixedIteration } from './lib/mix.js';

export const options = suiteOptions({
  mixed_op_duration: [p95('P95_MS', 1000)],
  http_req_duration: [p95('HTTP_P95_MS', 1000)],
});

export function setup() {
  return mixSetup();
}

export default function (data) {
  mixedIteration(data);
  if (THINK > 0) sleep(THINK);
}

export function teardown(data) {
  mixTeardown(data);
}
