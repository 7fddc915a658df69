// jslib.k6.io k6-utils / k6-summary built-ins (any version in the URL) and CommonJS.
import { randomIntBetween, randomItem, randomString, uuidv4, findBetween } from "https://jslib.k6.io/k6-utils/1.4.0/index.js";
import { textSummary, jUnit } from "https://jslib.k6.io/k6-summary/0.0.2/index.js";
import cjsDefault, { twice, label } from "./lib/cjs_util.js";
import { check, randomSeed } from "k6";

const cjs = require("./lib/cjs_util.js");
const http = require("k6/http");

export const options = { vus: 1, iterations: 1 };

export default function () {
  check(null, {
    "randomIntBetween": () => {
      for (let i = 0; i < 200; i++) {
        const n = randomIntBetween(3, 5);
        if (n < 3 || n > 5 || !Number.isInteger(n)) return false;
      }
      return true;
    },
    "randomItem": () => ["a", "b"].includes(randomItem(["a", "b"])),
    "randomString": () => randomString(12).length === 12 && /^[ab]{5}$/.test(randomString(5, "ab")),
    "uuidv4": () => /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(uuidv4()),
    "uuidv4 secure": () => uuidv4(true) !== uuidv4(true),
    "findBetween": () =>
      findBetween("<a>1</a><a>2</a>", "<a>", "</a>") === "1" &&
      findBetween("<a>1</a><a>2</a>", "<a>", "</a>", true).join() === "1,2",
  });
  const data = {
    root_group: { name: "", path: "", groups: [], checks: [{ name: "is ok", passes: 3, fails: 1 }] },
    metrics: {
      http_reqs: { type: "counter", contains: "default", values: { count: 4, rate: 2 } },
      http_req_duration: {
        type: "trend",
        contains: "time",
        values: { avg: 1.5, min: 1, med: 1.5, max: 2, "p(90)": 2, "p(95)": 2 },
        thresholds: { "p(95)<500": { ok: true } },
      },
      checks: { type: "rate", contains: "default", values: { rate: 0.75, passes: 3, fails: 1 } },
    },
  };
  const text = textSummary(data, { indent: " ", enableColors: false });
  check(text, {
    "textSummary names metrics": (t) => t.includes("http_reqs") && t.includes("http_req_duration") && t.includes("checks"),
    "textSummary shows checks": (t) => t.includes("✗ is ok") && t.includes("avg=1.50ms"),
    "jUnit": () => jUnit(data).includes('<testcase name="http_req_duration - p(95)&lt;500"'),
  });
  check(null, {
    "require returns module.exports": () => cjs.twice(21) === 42 && cjs.label === "cjs",
    "import of CommonJS: default and names": () => cjsDefault.twice(2) === 4 && twice(3) === 6 && label === "cjs",
    "nested require": () => cjs.inner() === "inner ok",
    "require of a k6 module": () => typeof http.get === "function",
    "randomSeed repeats": () => {
      randomSeed(7);
      const a = [Math.random(), Math.random()];
      randomSeed(7);
      return Math.random() === a[0] && Math.random() === a[1];
    },
  });
}
