// handleSummary throws: the error is logged and the default summary is printed instead.
export const options = { iterations: 1 };

export default function () {}

export function handleSummary() {
  throw new Error("broken summary");
}
