// percentiles.js with a handleSummary that prints the trends' values from k6's summary data:
// the same numbers as its --summary-export (issue #15 item 5).
export { options, default } from "./percentiles.js";

export function handleSummary(data) {
  return {
    stdout: JSON.stringify({ t32: data.metrics.t32.values, t1032: data.metrics.t1032.values }),
  };
}
