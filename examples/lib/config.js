// Configuration shared by the example suites, all from environment variables (`-e K=V` on
// `volley run` / `k6 run`, or the process environment):
//
//   BASE_URL     the demo service (default http://127.0.0.1:8090)
//   PROFILE      smoke | load | stress | soak (default smoke): VUs and duration or stages
//   VUS, DURATION, ITERATIONS   override the profile (constant VUs / shared iterations)
//   STAGES       "target:duration,..." e.g. "1:20s,8:30s,0:10s" (ramping VUs; overrides the profile)
//   SOAK_DURATION  the soak profile's duration (default 1h)
//   P95_MS       the p95 threshold of the script's main Trend (each script has its own default;
//                some have more, named in the script's header)
//   CHECKS_RATE  lowest passing rate of `checks` (default 0.99)
//   ERROR_RATE   highest rate of `http_req_failed` (default 0.01)
//   THINK_S      pause at the end of each iteration, seconds (default: 0 in smoke/stress,
//                0.1 in load, 0.5 in soak)
//   BENCH_USER, BENCH_PASSWORD, DAV_USER, DAV_PASSWORD   the accounts `volley demo seed`
//                creates (the defaults); BENCH_ because USER is the shell's login name
//
// Standard k6 only, so every script runs unmodified under k6 as well as Volley.

export const BASE_URL = (__ENV.BASE_URL || 'http://127.0.0.1:8090').replace(/\/+$/, '');
export const PROFILE = (__ENV.PROFILE || 'smoke').toLowerCase();


/** `__ENV[name]` as a string, or `def` when unset or empty. */
export function env(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

export const USER = env('BENCH_USER', 'bench_user');
export const PASSWORD = env('BENCH_PASSWORD', 'bench-pass-1234');
export const DAV_USER = env('DAV_USER', 'bench_webdav');
export const DAV_PASSWORD = env('DAV_PASSWORD', 'bench-webdav-pass-1234');

/** `__ENV[name]` as a number (`def` when unset); anything else is an error in init. */
export function envNum(name, def) {
  const v = env(name, undefined);
  if (v === undefined) return def;
  const n = Number(v);
  if (!isFinite(n)) throw new Error(`${name}=${v}: not a number`);
  return n;
}

// The profiles: a few VUs for a few seconds (smoke, what `volley demo` and the tests run),
// a sustained moderate load, a ramp well past it, and a long constant load.
const PROFILES = {
  smoke: { vus: 2, duration: '3s', think: 0 },
  load: {
    stages: [
      { target: 10, duration: '30s' },
      { target: 10, duration: '1m' },
      { target: 0, duration: '10s' },
    ],
    think: 0.1,
  },
  stress: {
    stages: [
      { target: 20, duration: '30s' },
      { target: 50, duration: '1m' },
      { target: 100, duration: '1m' },
      { target: 0, duration: '30s' },
    ],
    think: 0,
  },
  soak: { vus: 10, duration: env('SOAK_DURATION', '1h'), think: 0.5 },
};

if (!PROFILES[PROFILE]) {
  throw new Error(`PROFILE=${PROFILE}: expected one of ${Object.keys(PROFILES).join(', ')}`);
}

/** Seconds to pause at the end of an iteration (THINK_S, or the profile's). */
export const THINK = envNum('THINK_S', PROFILES[PROFILE].think);

/**
 * Parses "target:duration,..." ("1:20s,8:30s,0:10s") into k6 stages. Durations are k6's
 * ("500ms", "30s", "2m", "1h30m").
 */
export function parseStages(spec) {
  return String(spec)
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      const m = /^(\d+)\s*:\s*((?:\d+(?:\.\d+)?(?:ms|s|m|h))+)$/.exec(s);
      if (!m) throw new Error(`STAGES: "${s}" is not target:duration (e.g. 8:30s)`);
      return { target: Number(m[1]), duration: m[2] };
    });
}

/**
 * The executor options of the profile, with the overrides applied: STAGES (ramping VUs),
 * else VUS / DURATION / ITERATIONS. `defaults` may give a script's own stages per profile
 * (`{ smoke: "1:1s,3:2s,0:1s" }`), used when STAGES is not set.
 */
export function profileOptions(defaults) {
  const p = PROFILES[PROFILE];
  let o = p.stages ? { stages: p.stages } : { vus: p.vus, duration: p.duration };
  const stages = env('STAGES', defaults && defaults[PROFILE]);
  if (stages) o = { stages: parseStages(stages) };
  if (env('VUS') || env('DURATION') || env('ITERATIONS')) {
    const vus = envNum('VUS', p.vus || 2);
    o = { vus: vus };
    if (env('ITERATIONS')) o.iterations = envNum('ITERATIONS', 1);
    if (env('DURATION')) o.duration = env('DURATION');
    else if (!env('ITERATIONS')) o.duration = p.duration || '30s';
  }
  return o;
}

/** `p(95)<N` with N from `__ENV[name]` (milliseconds) or `defMs`. */
export function p95(name, defMs) {
  return `p(95)<${envNum(name, defMs)}`;
}

/** Thresholds every example has: checks pass and requests do not fail. */
export function baseThresholds() {
  return {
    checks: [`rate>=${envNum('CHECKS_RATE', 0.99)}`],
    http_req_failed: [`rate<=${envNum('ERROR_RATE', 0.01)}`],
  };
}

// k6's default system tags without `url`: the examples' URLs carry file and upload ids, and a
// `url` tag per id would make a metric series per request. Requests are told apart by their
// `name` tag (the route template) instead. URL_TAG=1 keeps `url`.
const SYSTEM_TAGS = ['proto', 'subproto', 'status', 'method', 'name', 'group', 'check', 'error',
  'error_code', 'tls_version', 'scenario', 'service', 'expected_response'];

/** The profile's options plus thresholds: `extra` maps metric → threshold list. */
export function suiteOptions(extra, stageDefaults) {
  const o = Object.assign(profileOptions(stageDefaults), {
    thresholds: Object.assign(baseThresholds(), extra || {}),
  });
  if (envNum('URL_TAG', 0) !== 1) o.systemTags = SYSTEM_TAGS.slice();
  return o;
}
