// The options of shared_vus.js and shared_code.js: one VU spinning in `spin` until
// gracefulStop cuts it, six VUs working beside it in the same runtimes.
export const options = {
  scenarios: {
    spinning: {
      executor: "constant-vus",
      exec: "spinning",
      vus: 1,
      duration: "1s",
      gracefulStop: "300ms",
    },
    working: {
      executor: "constant-vus",
      vus: 6,
      duration: "2s",
    },
  },
};
