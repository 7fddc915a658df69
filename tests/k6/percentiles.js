// Trend percentiles as k6 computes them (issue #15 item 5): custom trends get fixed values
// (a Lehmer generator, exact in doubles under any JS engine), so k6 and Volley see the same
// samples and must print the same avg/min/med/max/p(N) to the last bit. The threshold sits
// between k6's p(95) of t32 and the nearest-rank histogram value Volley printed before: it
// passes under k6 and must pass under Volley.
import { Trend } from "k6/metrics";

const t32 = new Trend("t32");
const t1032 = new Trend("t1032");

export const options = {
  vus: 1,
  iterations: 1,
  summaryTrendStats: ["avg", "min", "med", "max", "p(1)", "p(90)", "p(95)", "p(99)", "p(99.9)", "count"],
  thresholds: {
    t32: ["p(95)<2500"],
  },
};

function values(n, seed) {
  const out = [];
  let x = seed;
  for (let i = 0; i < n; i++) {
    x = (x * 48271) % 2147483647;
    out.push((x % 20000000) / 7000);
  }
  return out;
}

export default function () {
  for (const v of values(32, 42)) t32.add(v);
  for (const v of values(1032, 7)) t1032.add(v);
}
