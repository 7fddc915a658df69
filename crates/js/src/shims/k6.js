// The `k6` module: check, group, sleep, fail. Recording is native (`__volley`).
const V = globalThis.__volley;

export function check(val, sets, tags) {
  let all = true;
  if (sets === null || typeof sets !== "object") return true;
  const t = tags === undefined ? null : tags;
  const names = Object.keys(sets);
  // An indexed loop: for-of's iterator protocol costs more than the rest of a check.
  for (let i = 0; i < names.length; i++) {
    const name = names[i];
    const c = sets[name];
    const pass = !!(typeof c === "function" ? c(val) : c);
    V.check(name, pass, t);
    if (!pass) all = false;
  }
  return all;
}

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
