// An iteration sleeping past the scenario's end + gracefulStop is interrupted, not failed.
import { sleep } from "k6";
import { Counter } from "k6/metrics";

const reached = new Counter("after_sleep");

export const options = {
  scenarios: {
    sleepy: {
      executor: "constant-vus",
      vus: 2,
      duration: "1s",
      gracefulStop: "500ms",
    },
  },
};

export default function () {
  sleep(30);
  reached.add(1);
}
