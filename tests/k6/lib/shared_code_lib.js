// A module every VU of shared_code.js imports: with shared runtimes its compiled code is one
// copy per runtime (vendor/rquickjs-sys/VOLLEY.md, "Code shared by a runtime's contexts"),
// run in the realm of the VU that calls it. Everything here must still be per VU.
import { sleep } from "k6";

let calls = 0; // module state: per VU

export function whoAmI() {
  calls += 1;
  return { vu: __VU, owner: globalThis.owner, calls };
}

// An error thrown by code (new Error) and by the interpreter (TypeError), objects, arrays
// and closures made here: all from the calling VU's own builtins.
export function made() {
  let typeError;
  try {
    null.x;
  } catch (e) {
    typeError = e;
  }
  class K {}
  return {
    error: new Error("from the shared module"),
    typeError,
    array: [1, 2],
    object: {},
    closure: () => __VU,
    instance: new K(),
    regexp: /a+/,
    promise: Promise.resolve(1),
  };
}

// Suspends between awaits (a timer, then a sleep inside) while other VUs run.
export async function later(ms) {
  await new Promise((resolve) => setTimeout(resolve, ms));
  const mid = { vu: __VU, owner: globalThis.owner };
  await null;
  sleep(0.01);
  return { mid, vu: __VU, owner: globalThis.owner, calls, isError: new Error() instanceof Error };
}

// gracefulStop must cut the VU spinning here, and only it.
export function spin() {
  for (;;) {}
}
