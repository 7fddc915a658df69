// ramping-arrival-rate (issue #15): k6 starts the n-th iteration where the integral of the
// rate reaches n (the first is not at t = 0). 4 → 9/s over 3 s, then → 1/s over 3 s: the
// integral is 34.5, and k6 v1.8.1 runs 34 iterations.
export const options = {
  scenarios: {
    ramp: {
      executor: "ramping-arrival-rate",
      startRate: 4,
      timeUnit: "1s",
      preAllocatedVUs: 5,
      maxVUs: 5,
      stages: [
        { duration: "3s", target: 9 },
        { duration: "3s", target: 1 },
      ],
    },
  },
};

export default function () {}
