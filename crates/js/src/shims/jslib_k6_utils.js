// Volley's stand-in for https://jslib.k6.io/k6-utils/<version>/index.js (any version).
// Written for Volley from the documented API; nothing is fetched at run time. The stage
// helpers (getCurrentStageIndex, tagWith*) sit at the end, over `k6/execution`.
import exec from "k6/execution";

const V = globalThis.__volley;

export function randomIntBetween(min, max) {
  min = Math.ceil(min);
  max = Math.floor(max);
  return Math.floor(Math.random() * (max - min + 1)) + min;
}

export function randomItem(arrayOfItems) {
  return arrayOfItems[Math.floor(Math.random() * arrayOfItems.length)];
}

const ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789";

export function randomString(length, charset) {
  const chars = charset === undefined ? ALNUM : String(charset);
  let s = "";
  for (let i = 0; i < length; i++) s += chars.charAt(Math.floor(Math.random() * chars.length));
  return s;
}

export function uuidv4(secure) {
  let b;
  if (secure) {
    b = new Uint8Array(V.randomBytes(16));
  } else {
    b = new Uint8Array(16);
    for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  }
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (x) => (x < 16 ? "0" : "") + x.toString(16)).join("");
  return h.slice(0, 8) + "-" + h.slice(8, 12) + "-" + h.slice(12, 16) + "-" + h.slice(16, 20) + "-" + h.slice(20);
}

export function findBetween(content, left, right, repeat) {
  const out = [];
  let from = 0;
  for (;;) {
    const s = content.indexOf(left, from);
    if (s < 0) break;
    const start = s + left.length;
    const e = content.indexOf(right, start);
    if (e < 0) break;
    const found = content.substring(start, e);
    if (!repeat) return found;
    out.push(found);
    from = e + right.length;
  }
  return repeat ? out : null;
}

export function normalDistributionStages(maxVus, durationSeconds, numberOfStages) {
  const n = numberOfStages === undefined ? 10 : numberOfStages;
  const mean = 0;
  const sigma = 1;
  const stepTime = durationSeconds / n;
  const stages = [{ duration: `${Math.floor(stepTime * 0.1)}s`, target: 0 }];
  const cdf = (x) => 0.5 * (1 + erf((x - mean) / (sigma * Math.SQRT2)));
  const pdf = (x) => Math.exp(-0.5 * x * x) / Math.sqrt(2 * Math.PI);
  const peak = pdf(0);
  for (let i = 1; i <= n; i++) {
    const x = -3 + (6 * i) / (n + 1);
    stages.push({ duration: `${Math.floor(stepTime)}s`, target: Math.floor((pdf(x) / peak) * maxVus) });
  }
  stages.push({ duration: `${Math.floor(stepTime * 0.9)}s`, target: 0 });
  void cdf;
  return stages;
}

function erf(x) {
  // Abramowitz-Stegun 7.1.26.
  const s = x < 0 ? -1 : 1;
  x = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * x);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return s * y;
}

export function parseDuration(str) {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
  const unit = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
  let total = 0;
  let m;
  let any = false;
  while ((m = re.exec(String(str))) !== null) {
    total += Number(m[1]) * unit[m[2]];
    any = true;
  }
  if (!any) throw new Error(`invalid duration '${str}'`);
  return total;
}

// The current scenario's options as k6 reports them: k6 turns top-level `stages` into a
// `default` ramping-vus scenario whose `startVUs` is `vus` (null when unset, even though it
// then starts from 1 VU), so that is mirrored here.
function currentScenario() {
  const opts = exec.test.options || {};
  const name = exec.scenario.name;
  if (opts.scenarios && opts.scenarios[name]) return opts.scenarios[name];
  if (!opts.scenarios && name === "default") {
    if (Array.isArray(opts.stages) && opts.stages.length > 0) {
      return { executor: "ramping-vus", startVUs: opts.vus === undefined ? null : opts.vus, stages: opts.stages };
    }
    return opts;
  }
  throw new Error(`the exec.test.options object doesn't contain the current scenario '${name}'`);
}

function stagesOf(scenario) {
  if (!Array.isArray(scenario.stages) || scenario.stages.length === 0) {
    throw new Error(
      `the current scenario '${exec.scenario.name}' doesn't contain a stages field ` +
        "(getCurrentStageIndex works with ramping-vus and ramping-arrival-rate scenarios)",
    );
  }
  return scenario.stages;
}

// A stage's duration in ms: k6 takes a number as milliseconds.
function stageMs(d) {
  return typeof d === "number" ? d : parseDuration(d);
}

function stageIndex(stages) {
  const elapsed = Date.now() - exec.scenario.startTime;
  let end = 0;
  for (let i = 0; i < stages.length; i++) {
    end += stageMs(stages[i].duration);
    if (elapsed < end) return i;
  }
  // Past the last stage (graceful ramp-down): still the last one.
  return stages.length - 1;
}

export function getCurrentStageIndex() {
  return stageIndex(stagesOf(currentScenario()));
}

export function tagWithCurrentStageIndex() {
  exec.vu.tags["stage"] = String(getCurrentStageIndex());
}

export function tagWithCurrentStageProfile() {
  const scenario = currentScenario();
  const stages = stagesOf(scenario);
  const i = stageIndex(stages);
  const start = scenario.startVUs != null ? scenario.startVUs : scenario.startRate;
  const prev = i > 0 ? stages[i - 1].target || 0 : start || 0;
  const cur = stages[i].target || 0;
  exec.vu.tags["stage_profile"] = cur > prev ? "ramp-up" : cur < prev ? "ramp-down" : "steady";
}

export default {
  randomIntBetween,
  randomItem,
  randomString,
  uuidv4,
  findBetween,
  normalDistributionStages,
  parseDuration,
  getCurrentStageIndex,
  tagWithCurrentStageIndex,
  tagWithCurrentStageProfile,
};
