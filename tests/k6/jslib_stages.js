// jslib k6-utils' stage helpers: `stage` / `stage_profile` tags on a ramping-vus scenario's
// samples, and getCurrentStageIndex() throwing for a scenario without stages.
import http from "k6/http";
import exec from "k6/execution";
import { check, sleep } from "k6";
import {
  getCurrentStageIndex,
  tagWithCurrentStageIndex,
  tagWithCurrentStageProfile,
} from "https://jslib.k6.io/k6-utils/1.4.0/index.js";

export const options = {
  scenarios: {
    ramp: {
      executor: "ramping-vus",
      startVUs: 0,
      stages: [
        { duration: "1s", target: 2 },
        { duration: "1s", target: 2 },
        { duration: "1s", target: 0 },
      ],
      gracefulRampDown: "1s",
    },
    flat: { executor: "constant-vus", vus: 1, duration: "1s", exec: "flat" },
  },
};

export default function () {
  tagWithCurrentStageIndex();
  tagWithCurrentStageProfile();
  const i = getCurrentStageIndex();
  check(i, { "index in range": (v) => Number.isInteger(v) && v >= 0 && v <= 2 });
  http.get(`${__ENV.BASE}/`);
  sleep(0.1);
}

export function flat() {
  let msg = "";
  try {
    getCurrentStageIndex();
  } catch (e) {
    msg = String(e);
  }
  check(msg, { "throws without stages": (m) => m.includes("doesn't contain a stages field") });
  sleep(0.1);
}
