// A CPU-bound setup() (or teardown(), PHASE=teardown) past its timeout: interrupted, exit
// 100 (101), as k6.
const phase = __ENV.PHASE || "setup";

export const options = { iterations: 1, setupTimeout: "300ms", teardownTimeout: "300ms" };

export function setup() {
  if (phase === "setup") for (;;) {}
}

export default function () {}

export function teardown() {
  if (phase === "teardown") for (;;) {}
}
