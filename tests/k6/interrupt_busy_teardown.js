// Iterations asleep, teardown() CPU-bound with a long timeout: one Ctrl-C ends the sleep at
// once and gives teardown 2 s; a second Ctrl-C ends everything at once.
import { sleep } from "k6";

export const options = { vus: 2, duration: "60s", teardownTimeout: "120s" };

export default function () {
  sleep(30);
}

export function teardown() {
  for (;;) {}
}
