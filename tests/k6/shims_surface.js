// The k6 shims look the same whether their rarely used parts are made on first use (the
// default) or with each VU (VOLLEY_LAZY_SHIMS=0): the surface (tests/k6/lib/shims_surface.js)
// equals the one the shims had before (lib/shims_surface.json, written by that code).
import { check } from "k6";
import { surface } from "./lib/shims_surface.js";

const expected = open("./lib/shims_surface.json");
const eager = globalThis.__volley.eagerShims === true;

export const options = { vus: 1, iterations: 1 };

export default function () {
  const s = surface(__ENV.BASE);
  if (__ENV.SHOW_SURFACE) console.log(s);
  check(s, {
    "the shims' surface is unchanged": (v) => v === expected.trim(),
    "made as asked (EAGER=1: VOLLEY_LAZY_SHIMS=0)": () => eager === (__ENV.EAGER === "1"),
  });
}
