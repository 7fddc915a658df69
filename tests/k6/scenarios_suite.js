// A multi-scenario suite modelled on real ones: two read scenarios, three write scenarios
// and a 1-VU functional check, each with its own exec function, env and tags; the load per
// scenario comes from a profile chosen by an env var, and the mixed ramp's stages from
// another (`target:duration,...`). Per-scenario thresholds must all pass in the smoke profile.
import http from "k6/http";
import exec from "k6/execution";
import { check, sleep } from "k6";
import { Counter } from "k6/metrics";

const BASE = __ENV.BASE;
const PROFILE = __ENV.PROFILE || "smoke";

const PROFILES = {
  smoke: { readVus: 2, writeIters: 3, rate: 20, time: "2s" },
  load: { readVus: 105, writeIters: 200, rate: 200, time: "5m" },
};
const P = PROFILES[PROFILE];
if (!P) {
  throw new Error(`unknown PROFILE ${PROFILE}`);
}

// "1:1s,2:1s,0:1s" → [{target: 1, duration: "1s"}, ...]
function stages(spec) {
  return spec.split(",").map((s) => {
    const [target, duration] = s.split(":");
    return { target: Number(target), duration };
  });
}

export const options = {
  scenarios: {
    read_list: {
      executor: "constant-vus",
      exec: "readList",
      vus: P.readVus,
      duration: P.time,
      tags: { kind: "read" },
    },
    read_ramp: {
      executor: "ramping-vus",
      exec: "readItem",
      startVUs: 0,
      stages: stages(__ENV.STAGES || "2:1s,2:1s,0:500ms"),
      gracefulRampDown: "1s",
      tags: { kind: "read" },
    },
    write_create: {
      executor: "per-vu-iterations",
      exec: "create",
      vus: 2,
      iterations: P.writeIters,
      env: { WRITE_KIND: "create" },
      tags: { kind: "write" },
    },
    write_update: {
      executor: "shared-iterations",
      exec: "update",
      vus: 2,
      iterations: 10,
      startTime: "500ms",
      env: { WRITE_KIND: "update" },
      tags: { kind: "write" },
    },
    write_background: {
      executor: "constant-arrival-rate",
      exec: "background",
      rate: P.rate,
      timeUnit: "1s",
      duration: P.time,
      preAllocatedVUs: 2,
      maxVUs: 5,
      tags: { kind: "write" },
    },
    functional: {
      executor: "per-vu-iterations",
      exec: "functional",
      vus: 1,
      iterations: 1,
    },
  },
  thresholds: {
    "http_req_duration{scenario:read_list}": ["p(95)<500"],
    "http_req_duration{scenario:write_background}": ["p(95)<500"],
    "checks{scenario:functional}": ["rate==1"],
    "iterations{scenario:write_create}": [`count==${2 * P.writeIters}`],
    "iterations{scenario:write_update}": ["count==10"],
    "http_req_failed{kind:write}": ["rate==0"],
  },
};

const perScenario = new Counter("per_scenario");

function common(name) {
  perScenario.add(1, { seen_in: exec.scenario.name });
  check(null, {
    [`${name}: scenario name`]: () => exec.scenario.name === name,
  });
}

export function readList() {
  common("read_list");
  const r = http.get(`${BASE}/`);
  check(r, { "list 200": (x) => x.status === 200 });
  sleep(0.1);
}

export function readItem() {
  common("read_ramp");
  check(null, { "ramping executor": () => exec.scenario.executor === "ramping-vus" });
  http.get(`${BASE}/bytes/64`);
  sleep(0.1);
}

export function create() {
  common("write_create");
  check(null, { "create env": () => __ENV.WRITE_KIND === "create" });
  http.post(`${BASE}/echo`, JSON.stringify({ n: exec.scenario.iterationInTest }));
}

export function update() {
  common("write_update");
  check(null, { "update env": () => __ENV.WRITE_KIND === "update" });
  http.put(`${BASE}/echo`, "x");
}

export function background() {
  common("write_background");
  http.get(`${BASE}/`);
}

export function functional() {
  common("functional");
  const r = http.get(`${BASE}/status/204`);
  check(r, {
    "functional 204": (x) => x.status === 204,
    "one VU of its own": () => exec.vu.idInTest > 0 && exec.scenario.iterationInTest === 0,
  });
}
