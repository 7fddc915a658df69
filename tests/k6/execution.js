// k6/execution: ids unique per VU, iteration counters, VU tags on samples, test.options.
import exec from "k6/execution";
import { check, sleep } from "k6";
import { Counter } from "k6/metrics";

export const options = { vus: 3, iterations: 30 };

const seen = new Counter("exec_seen");

export default function () {
  const id = exec.vu.idInInstance;
  exec.vu.tags.vu_label = "vu-" + id;
  seen.add(1, { vu_id: String(id), iter: String(exec.scenario.iterationInTest) });
  check(null, {
    "ids agree": () => id === __VU && exec.vu.idInTest === id,
    "vu iteration is __ITER": () => exec.vu.iterationInInstance === __ITER && exec.vu.iterationInScenario === __ITER,
    "scenario": () => exec.scenario.name === "default" && exec.scenario.executor === "shared-iterations",
    "start time": () => exec.scenario.startTime > 1600000000000,
    "progress": () => exec.scenario.progress >= 0 && exec.scenario.progress <= 1,
    "instance": () =>
      exec.instance.vusInitialized === 3 && exec.instance.vusActive >= 1 && exec.instance.currentTestRunDuration >= 0,
    "options": () => exec.test.options.iterations === 30,
  });
  sleep(0.01);
}
