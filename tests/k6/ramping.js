// stages (ramping-vus): the VU count follows the stages.
import { sleep } from "k6";

export const options = {
  stages: [
    { duration: "1s", target: 4 },
    { duration: "1s", target: 0 },
  ],
};

export default function () {
  sleep(0.05);
}
