// summary_v1_data: handleSummary's data in k6 v1's shape (keys, metric shapes, root_group
// with checks and groups in first-seen order, state, options). Recorded k6 v1.8.1 output:
// summary_v1/data.k6.json.
export { options, default, other } from "./summary_v1.js";

export function handleSummary(data) {
  return { stdout: JSON.stringify(data) };
}
