// Log lines as k6 writes them (crates/cli/tests/logs.rs): console.* at each level, a value
// that needs quoting, an empty message and an iteration exception.
export const options = { iterations: 1, vus: 1 };

export default function () {
  console.log("hello", "world");
  console.info("plain_value");
  console.warn('with "quotes" and\nnewline');
  console.error("a<b & c>d");
  console.debug("only with -v");
  console.log("");
  throw new Error("boom");
}
