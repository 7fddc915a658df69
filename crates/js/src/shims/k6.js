// The `k6` module: check, group, sleep, fail. Recording is native (`__volley`).
const V = globalThis.__volley;

// Native (src/check.rs): the conditions are read and recorded without a JS loop.
export const check = V.check;

export function group(name, fn) {
  if (typeof fn !== "function") throw new TypeError("group() needs a function as its second argument");
  V.groupEnter(String(name));
  try {
    return fn();
  } finally {
    V.groupLeave();
  }
}

export function sleep(secs) {
  V.sleep(Number(secs));
}

export function fail(msg) {
  throw new Error(msg === undefined ? "" : String(msg));
}

// k6's randomSeed: make Math.random repeatable (mulberry32 over the seed).
export function randomSeed(seed) {
  let a = Number(seed) >>> 0;
  Math.random = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export default { check, group, sleep, fail, randomSeed };
