// ramping-vus ramp-down (issue #15): k6 keeps a leaving VU until the line reaches the next
// integer below it. 1 → 10 VUs over 5 s, 10 for 10 s, 10 → 0 over 5 s, each iteration a
// 5.5 s sleep: k6 v1.8.1 runs 33 iterations, every time.
import { sleep } from "k6";

export const options = {
  stages: [
    { duration: "5s", target: 10 },
    { duration: "10s", target: 10 },
    { duration: "5s", target: 0 },
  ],
};

export default function () {
  sleep(5.5);
}
