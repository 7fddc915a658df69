// The `k6/metrics` module: custom metrics, recorded natively into the worker's recorder.
const V = globalThis.__volley;

function kind(k) {
  return class {
    constructor(name, isTime) {
      this.name = String(name);
      this._id = V.metric(this.name, k, !!isTime);
    }
    add(value, tags) {
      const v = k === 2 ? (value ? 1 : 0) : Number(value);
      V.metricAdd(this._id, v, tags === undefined ? null : tags);
      return true;
    }
  };
}

export const Counter = kind(0);
export const Gauge = kind(1);
export const Rate = kind(2);
export const Trend = kind(3);

export default { Counter, Gauge, Rate, Trend };
