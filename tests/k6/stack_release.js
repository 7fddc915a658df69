// VU stacks released below the suspension point while a VU sleeps (crates/js/src/vu/stack.rs,
// run with VOLLEY_STACK_RELEASE_MS=0 so every idle wait releases): a VU suspended deep in
// its own call stack resumes with every frame above the suspension intact, in every VU, and
// deep recursion after a release is still a RangeError.
import http from "k6/http";
import { check, sleep } from "k6";

export const options = { vus: 4, iterations: 24 };

// Each frame keeps values that are checked after the call below it returns.
function deep(n, f) {
  if (n === 0) return f();
  const mine = [n, n * 2, `frame${n}`];
  const inner = deep(n - 1, f);
  return mine[0] === n && mine[1] === n * 2 && mine[2] === `frame${n}` ? inner + 1 : -1e9;
}

function recurse(n) {
  return recurse(n + 1) + 1;
}

export default function () {
  // Touch deep pages first, then wait shallower: the release frees what the recursion used.
  let overflow = "none";
  try {
    recurse(0);
  } catch (e) {
    overflow = e instanceof RangeError ? "RangeError" : String(e);
  }
  const got = deep(150, () => {
    const r = http.get(`${__ENV.BASE}/`);
    sleep(0.005);
    sleep(0.005);
    return r.status;
  });
  sleep(0.005);
  check(got, { "150 frames survive two released sleeps": (v) => v === 200 + 150 });
  check(overflow, { "deep recursion is a RangeError": (v) => v === "RangeError" });
}
