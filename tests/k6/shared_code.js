// Code shared by a runtime's contexts (crates/js/tests/shared_runtime.rs): VUs of one
// runtime call the same compiled functions of a module (lib/shared_code_lib.js) and of the
// k6 shims, and each still sees its own globals, __VU, module state and builtins — in
// errors, closures, objects made by the shared code, and across awaits resumed by promise
// jobs. A VU spinning in a shared function is cut by gracefulStop; no other VU is.
import { check } from "k6";
import exec from "k6/execution";
import { whoAmI, made, later, spin } from "./lib/shared_code_lib.js";
import { tagged } from "./lib/shared_code_tagged.js";

export { options } from "./lib/spinning_and_working.js";

// Each VU marks its own builtins (not enumerable: the shims iterate objects); shared code
// must find this VU's marks only.
for (const c of [Error, TypeError, Array, Function, RegExp, Promise]) {
  Object.defineProperty(c.prototype, "mark", { value: __VU });
}

let iterations = 0;

export function spinning() {
  spin();
}

export default async function () {
  const me = __VU;
  iterations += 1;
  globalThis.owner = me * 100 + iterations;
  const who = whoAmI();
  const m = made();
  const l = await later(5 + (me % 3) * 5);
  const owner = me * 100 + iterations;
  check(null, {
    "shared code sees this VU's globals and module state": () =>
      who.vu === me && who.owner === owner && who.calls === iterations,
    "errors are this VU's": () =>
      m.error instanceof Error &&
      m.error.mark === me &&
      m.typeError instanceof TypeError &&
      m.typeError.mark === me &&
      m.error.stack.includes("made"),
    "objects made by shared code are this VU's": () =>
      Array.isArray(m.array) &&
      m.array.mark === me &&
      Object.getPrototypeOf(m.object) === Object.prototype &&
      m.closure.mark === me &&
      m.closure() === me &&
      Object.getPrototypeOf(Object.getPrototypeOf(m.instance)) === Object.prototype &&
      m.regexp.mark === me &&
      m.promise.mark === me,
    "awaits resume in this VU": () =>
      l.mid.vu === me &&
      l.mid.owner === owner &&
      l.vu === me &&
      l.owner === owner &&
      l.calls === iterations &&
      l.isError,
    "k6 shims are this VU's": () => exec.vu.idInTest === me,
    "a template object is this VU's": () => tagged().mark === me && tagged()[0] === "x",
  });
}
