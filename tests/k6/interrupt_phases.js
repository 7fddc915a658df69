// SIGTERM in each phase of a run (PHASE=script|init|lazy|setup|teardown|summary|summary_timer): the phase stops
// promptly, the run exits 105 and writes what it has.
import { sleep } from "k6";

const phase = __ENV.PHASE;

// Each VU's init is slow (not the first init, which reads the options): 40 VUs × 0.5 s.
if (phase === "init" && __VU > 0) {
  const t = Date.now();
  while (Date.now() - t < 500) {}
}
// VUs an arrival-rate scenario creates during the run are slow to init (1 s each).
if (phase === "lazy" && __VU > 1) {
  const t = Date.now();
  while (Date.now() - t < 1000) {}
}
// The first init (reading the options) never ends.
if (phase === "script" && __VU === 0) for (;;) {}

const lazy = {
  scenarios: {
    lazy: {
      executor: "constant-arrival-rate",
      rate: 10,
      duration: "30s",
      preAllocatedVUs: 1,
      maxVUs: 20,
    },
  },
};

export const options = Object.assign(
  phase === "lazy"
    ? lazy
    : { vus: phase === "init" ? 40 : 1, iterations: phase === "init" ? 40 : 1 },
  { setupTimeout: "60s", teardownTimeout: "60s" },
);

export function setup() {
  if (phase === "setup") sleep(30);
}

export default function () {
  if (phase === "lazy") sleep(30);
}

export function teardown() {
  if (phase === "teardown") sleep(30);
}

export async function handleSummary(data) {
  if (phase === "summary") for (;;) {}
  // A timer that would hold the exit for a minute.
  if (phase === "summary_timer") await new Promise((r) => setTimeout(r, 60000));
  return { stdout: "handled\n" };
}
