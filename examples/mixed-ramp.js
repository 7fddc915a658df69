// Mixed traffic on a staged ramp: the weighted mix of lib/mix.js (list, search, range
// download, small upload, me, WebDAV read, batch move) while VUs follow STAGES, to watch
// latency and errors as concurrency grows.
//
//   STAGES="1:20s,8:30s,32:30s,64:45s,0:15s" volley run examples/mixed-ramp.js -e BASE_URL=http://127.0.0.1:8090
//
// STAGES is "target:duration,..." (ramping VUs); without it the profile's ramp is used
// (smoke: 1:1s,4:2s,0:1s; load: 1:20s,8:30s,16:30s,0:10s; stress: 1:20s,8:30s,32:30s,64:45s,0:15s).
// Metrics: mixed_op_duration (Trend tagged op; p95 < P95_MS, default 1000), http_req_duration
// (p95 < HTTP_P95_MS, default 1000), bytes_downloaded / bytes_uploaded (Counters), mixed_ops.
import { sleep } from 'k6';
import { THINK, suiteOptions, p95 } from './lib/config.js';
import { mixSetup, mixTeardown, mixedIteration } from './lib/mix.js';

export const options = suiteOptions({
  mixed_op_duration: [p95('P95_MS', 1000)],
  http_req_duration: [p95('HTTP_P95_MS', 1000)],
}, {
  smoke: '1:1s,4:2s,0:1s',
  load: '1:20s,8:30s,16:30s,0:10s',
  stress: '1:20s,8:30s,32:30s,64:45s,0:15s',
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
