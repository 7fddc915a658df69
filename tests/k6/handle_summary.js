// handleSummary: receives k6's data shape; its outputs go to stdout and a file (the default
// summary is not printed). The file is written relative to the current directory.
import http from "k6/http";
import { check, group } from "k6";

export const options = {
  vus: 1,
  iterations: 3,
  summaryTrendStats: ["avg", "p(99)", "count"],
  thresholds: { "http_req_duration{name:home}": ["p(99)<10000"], checks: ["rate==1"] },
};

export default function () {
  group("g1", () => {
    const r = http.get(`${__ENV.BASE}/`, { tags: { name: "home" } });
    check(r, { "is 200": (r) => r.status === 200 });
  });
}

export function handleSummary(data) {
  const d = data.metrics.http_req_duration;
  const sub = data.metrics["http_req_duration{name:home}"];
  const g = data.root_group.groups[0];
  const facts = {
    reqs: data.metrics.http_reqs.values.count,
    rate_type: data.metrics.checks.type,
    checks_passes: data.metrics.checks.values.passes,
    checks_ok: data.metrics.checks.thresholds["rate==1"].ok,
    duration_contains: d.contains,
    trend_keys: Object.keys(d.values).sort().join(","),
    sub_ok: sub.thresholds["p(99)<10000"].ok,
    sub_count: sub.values.count,
    group_name: g.name,
    group_path: g.path,
    check_name: g.checks[0].name,
    check_passes: g.checks[0].passes,
    root_id: data.root_group.id,
    stats: data.options.summaryTrendStats.join(","),
    has_state: typeof data.state.testRunDurationMs === "number" && data.state.isStdOutTTY === false,
  };
  return {
    stdout: "HANDLED " + data.metrics.iterations.values.count + "\n",
    [__ENV.OUT]: JSON.stringify(facts),
  };
}
