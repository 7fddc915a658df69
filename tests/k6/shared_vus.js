// VUs sharing one QuickJS runtime (VOLLEY_VU_RUNTIME=shared, crates/js/src/vu/shared.rs):
// each keeps its own globals and module state across suspensions while the others run, a
// VU suspended deep in its own call stack resumes there, a deep recursion throws RangeError
// in the VU that recursed, and gracefulStop's interrupt reaches only the spinning VU.
import http from "k6/http";
import { check, sleep } from "k6";

export { options } from "./lib/spinning_and_working.js";

let count = 0; // module state: per VU
globalThis.owner = 0; // a global: per VU

function deep(n, f) {
  return n === 0 ? f() : deep(n - 1, f);
}

function recurse(n) {
  return recurse(n + 1) + 1;
}

export function spinning() {
  for (;;) {}
}

export default function () {
  const me = __VU;
  count += 1;
  const mine = count;
  globalThis.owner = me;
  Array.prototype["seen" + me] = true;
  // Suspend 40 frames deep (a request, then a sleep) while other VUs run their own code.
  const stack = deep(40, () => {
    http.get(`${__ENV.BASE}/`);
    sleep(0.02);
    return new Error("here").stack;
  });
  let overflow = "none";
  if (me % 2 === 0) {
    try {
      recurse(0);
    } catch (e) {
      overflow = e instanceof RangeError ? "RangeError" : String(e);
    }
  }
  const others = Object.keys(Array.prototype).filter((k) => k !== "seen" + me);
  check(null, {
    "global is this VU's": () => globalThis.owner === me,
    "module state is this VU's": () => count === mine,
    "no other VU's prototype change": () => others.length === 0,
    "stack is this VU's": () => stack.includes("deep") && !stack.includes("recurse"),
    "deep recursion throws RangeError": () => me % 2 === 1 || overflow === "RangeError",
  });
}
