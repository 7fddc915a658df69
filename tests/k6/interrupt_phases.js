// SIGTERM in each phase of a run (PHASE=script|init|setup|teardown|summary): the phase stops
// promptly, the run exits 105 and writes what it has.
import { sleep } from "k6";

const phase = __ENV.PHASE;

// Each VU's init is slow (not the first init, which reads the options): 40 VUs × 0.5 s.
if (phase === "init" && __VU > 0) {
  const t = Date.now();
  while (Date.now() - t < 500) {}
}
// The first init (reading the options) never ends.
if (phase === "script" && __VU === 0) for (;;) {}

export const options = {
  vus: phase === "init" ? 40 : 1,
  iterations: phase === "init" ? 40 : 1,
  setupTimeout: "60s",
  teardownTimeout: "60s",
};

export function setup() {
  if (phase === "setup") sleep(30);
}

export default function () {}

export function teardown() {
  if (phase === "teardown") sleep(30);
}

export async function handleSummary(data) {
  if (phase === "summary") for (;;) {}
  // A timer that would hold the exit for a minute.
  if (phase === "summary_timer") await new Promise((r) => setTimeout(r, 60000));
  return { stdout: "handled\n" };
}
