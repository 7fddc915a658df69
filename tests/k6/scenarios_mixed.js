// Shortcut options beside scenarios are refused as in k6 (exit 104).
export const options = {
  duration: "10s",
  scenarios: {
    x: { executor: "constant-vus", duration: "1s" },
  },
};

export default function () {}
