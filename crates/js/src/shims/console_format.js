// console's formatting (console.js), made per VU on first use (`__volley.consoleFormat()`):
// a function of the arguments' list to the line k6 prints.
(function () {
  "use strict";
  // k6's console formatting (its console.go): a string or number as is, an Error as
  // "Name: message", anything else as `{ a: 1, b: [ 1, "two" ] }` (strings quoted, nullish
  // "null", functions "[object Function]", cycles "[Circular]", a Date as its quoted ISO
  // string, binary data as `Uint8Array(2) [ 1, 2 ]` / `ArrayBuffer { [Uint8Contents]: <01>,
  // byteLength: 1 }`).
  const hex = (b) => (b < 16 ? "0" : "") + b.toString(16);
  const inner = (v, seen) => {
    if (v === null || v === undefined) return "null";
    if (typeof v === "function") return "[object Function]";
    if (typeof v === "symbol") return '"' + (v.description ?? "") + '"';
    if (typeof v !== "object") return typeof v === "string" ? '"' + v + '"' : String(v);
    if (seen.has(v)) return "[Circular]";
    seen.add(v);
    try {
      if (v instanceof Error) return String(v);
      if (v instanceof ArrayBuffer) {
        const u = new Uint8Array(v);
        const hexes = Array.from(u, hex).join(" ");
        return `ArrayBuffer { [Uint8Contents]: <${hexes}>, byteLength: ${u.length} }`;
      }
      if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
        // k6 cannot tell a Uint8ClampedArray from a Uint8Array.
        const name = v instanceof Uint8ClampedArray ? "Uint8Array" : v.constructor.name;
        if (v.length === 0) return `${name}(0) []`;
        return `${name}(${v.length}) [ ${Array.from(v, String).join(", ")} ]`;
      }
      if (Array.isArray(v)) {
        if (v.length === 0) return "[]";
        return "[ " + Array.from(v, (x) => inner(x, seen)).join(", ") + " ]";
      }
      const keys = Object.keys(v);
      if (keys.length === 0) {
        if (v instanceof Date) {
          try {
            return '"' + v.toISOString() + '"';
          } catch (e) {
            return "{}";
          }
        }
        return "{}";
      }
      return "{ " + keys.map((k) => k + ": " + inner(v[k], seen)).join(", ") + " }";
    } finally {
      seen.delete(v);
    }
  };
  const one = (a) => {
    if (typeof a === "function") return "[object Function]";
    if (typeof a === "symbol") return a.description ?? "";
    try {
      if (a === null || typeof a !== "object" || a instanceof Error) return String(a);
      return inner(a, new Set());
    } catch (e) {
      return "[object Object]";
    }
  };
  return (args) => args.map(one).join(" ");
})
