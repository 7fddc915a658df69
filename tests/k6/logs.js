// Log lines as k6 writes them (crates/cli/tests/logs.rs): console.* at each level, a value
// that needs quoting, an empty message, objects and an iteration exception.
export const options = { iterations: 1, vus: 1 };

export default function () {
  console.log("hello", "world");
  console.info("plain_value");
  console.warn('with "quotes" and\nnewline');
  console.error("a<b & c>d");
  console.debug("only with -v");
  console.log("");
  // k6's formatting of values that are not strings.
  console.log("obj", { a: 1, s: "x", n: null, arr: [1, "two", []], f() {} }, new Uint8Array([1, 2]), new Error("e1"));
  throw new Error("boom");
}
