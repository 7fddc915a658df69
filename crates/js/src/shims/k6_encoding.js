// The `k6/encoding` module: base64 in k6's four variants, natively.
const V = globalThis.__volley;

function toBuffer(d) {
  if (typeof d === "string" || d instanceof ArrayBuffer) return d;
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice().buffer;
  if (Array.isArray(d)) return new Uint8Array(d).buffer;
  return String(d);
}

export function b64encode(input, encoding) {
  return V.b64enc(toBuffer(input), encoding === undefined ? "std" : String(encoding));
}

export function b64decode(input, encoding, format) {
  return V.b64dec(String(input), encoding === undefined ? "std" : String(encoding), format === "s");
}

export default { b64encode, b64decode };
