// A pending timer does not keep a VU past gracefulStop: its iteration is interrupted (not
// failed), whether it awaits the timer or only left it pending.
import { Counter } from "k6/metrics";

const reached = new Counter("after_timer");

export const options = {
  scenarios: {
    stuck: {
      executor: "constant-vus",
      vus: 2,
      duration: "1s",
      gracefulStop: "500ms",
    },
  },
};

export default async function () {
  if (__VU % 2 === 0) {
    await new Promise((resolve) => setTimeout(resolve, 30000));
    reached.add(1);
  } else {
    setTimeout(() => reached.add(1), 30000);
  }
}
