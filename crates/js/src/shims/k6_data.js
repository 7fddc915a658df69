// The `k6/data` module: SharedArray — one copy per process, read-only views per VU.
const V = globalThis.__volley;

const METHODS = new Set([
  "forEach", "map", "filter", "find", "findIndex", "some", "every", "reduce", "reduceRight",
  "indexOf", "lastIndexOf", "includes", "slice", "join", "entries", "keys", "values", "at", "concat",
  "flat", "flatMap", "findLast", "findLastIndex", "toString",
]);

export class SharedArray {
  constructor(name, fn) {
    if (typeof name !== "string" || name === "") throw new TypeError("SharedArray needs a name");
    if (typeof fn !== "function") throw new TypeError("SharedArray needs a function that returns an array");
    let id = V.saLookup(name);
    if (id < 0) {
      const data = fn();
      if (!Array.isArray(data)) throw new TypeError("SharedArray: the function must return an array");
      id = V.saStore(name, JSON.stringify(data));
    }
    const target = Object.create(SharedArray.prototype);
    return new Proxy(target, {
      get(t, k) {
        if (typeof k === "string") {
          if (k === "length") return V.saLen(id);
          const c = k.charCodeAt(0);
          if (c >= 48 && c <= 57) {
            const i = Number(k);
            if (Number.isInteger(i) && String(i) === k) return V.saGet(id, i);
          }
          if (METHODS.has(k)) return Array.prototype[k];
          if (k === "constructor") return SharedArray;
          return undefined;
        }
        if (k === Symbol.iterator) return Array.prototype.values;
        return undefined;
      },
      has(t, k) {
        if (typeof k === "string" && String(Number(k)) === k) return Number(k) < V.saLen(id);
        return k === "length";
      },
      set() {
        throw new TypeError("SharedArray is read-only");
      },
      deleteProperty() {
        throw new TypeError("SharedArray is read-only");
      },
      defineProperty() {
        throw new TypeError("SharedArray is read-only");
      },
      ownKeys() {
        const n = V.saLen(id);
        const keys = [];
        for (let i = 0; i < n; i++) keys.push(String(i));
        return keys;
      },
      getOwnPropertyDescriptor(t, k) {
        if (typeof k === "string" && String(Number(k)) === k && Number(k) < V.saLen(id)) {
          return { value: V.saGet(id, Number(k)), writable: false, enumerable: true, configurable: true };
        }
        return undefined;
      },
    });
  }
}

export default { SharedArray };
