// A CommonJS module (as k6 jslib bundles are): module.exports, exports, nested require.
const inner = require("./cjs_inner.js");

function twice(n) {
  return n * 2;
}

module.exports = {
  twice,
  label: "cjs",
  inner: () => inner.message,
};
