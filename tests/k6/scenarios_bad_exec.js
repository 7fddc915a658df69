// A scenario's exec must name an exported function (k6 refuses the config: exit 104).
export const options = {
  scenarios: {
    x: { executor: "shared-iterations", exec: "nope" },
  },
};

export default function () {}
