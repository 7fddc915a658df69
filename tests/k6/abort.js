// exec.test.abort() stops the run (k6 exit code 108).
import exec from "k6/execution";
import { sleep } from "k6";

export const options = { vus: 2, duration: "10s" };

export default function () {
  if (exec.scenario.iterationInTest === 3) {
    exec.test.abort("enough");
  }
  sleep(0.01);
}
