// A malformed threshold expression: exit 104 naming the option path and what was expected.
export const options = {
  iterations: 1,
  thresholds: { http_req_duration: ["p(95)<200", "p95 < 200"] },
};

export default function () {}
