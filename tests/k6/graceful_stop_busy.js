// An iteration still computing at the scenario's end + gracefulStop is cut by the interrupt
// handler: interrupted, not an iteration error (k6: "0 complete, 2 interrupted").
export const options = {
  scenarios: {
    spinning: {
      executor: "constant-vus",
      vus: 2,
      duration: "1s",
      gracefulStop: "500ms",
    },
  },
};

export default function () {
  for (;;) {}
}
