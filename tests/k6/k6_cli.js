// k6's command line, K6_* environment and --config file (crates/cli/tests/k6_cli.rs): the
// script reports what reached it in one console line the test parses.
import http from "k6/http";
import exec from "k6/execution";

export const options = {
  userAgent: __ENV.SCRIPT_UA || null,
  maxRedirects: __ENV.SCRIPT_REDIRECTS ? Number(__ENV.SCRIPT_REDIRECTS) : null,
  thresholds: __ENV.FAIL_THRESHOLD ? { http_req_duration: ["max<0"] } : {},
};

export function setup() {
  console.log("K6CLI_SETUP ran");
}

export function teardown() {
  console.log("K6CLI_TEARDOWN ran");
}

function ua(res) {
  const headers = res.body ? JSON.parse(res.body).headers : {};
  return headers["user-agent"] || headers["User-Agent"] || null;
}

export default function () {
  const h = http.get(`${__ENV.BASE}/headers`, { responseType: "text" });
  const r = http.get(`${__ENV.BASE}/redirect/3`);
  if (__ENV.CLOSED) http.get(__ENV.CLOSED); // a refused request: throws with --throw
  let cookies = null;
  if (__ENV.COOKIES) {
    cookies = JSON.parse(http.get(`${__ENV.BASE}/cookies`, { responseType: "text" }).body).cookies;
    if (exec.vu.iterationInScenario === 0) http.get(`${__ENV.BASE}/cookies/set?k6cli=1`);
  }
  const blocked = __ENV.BLOCKED ? http.get(__ENV.BLOCKED) : null;
  const o = exec.test.options;
  console.log(
    "K6CLI " +
      JSON.stringify({
        ua: ua(h),
        redirect_status: r.status,
        tags: o.tags || null,
        stages: o.stages || null,
        vus: o.vus || null,
        probe: __ENV.K6CLI_PROBE || null,
        vu_iter: exec.vu.iterationInScenario,
        cookies,
        blocked: blocked ? { error: blocked.error, code: blocked.error_code } : null,
      }),
  );
}
