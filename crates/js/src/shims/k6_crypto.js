// The `k6/crypto` module: digests, HMAC and random bytes, natively.
const V = globalThis.__volley;

function toBuffer(d) {
  if (d === undefined || d === null) return "";
  if (typeof d === "string" || d instanceof ArrayBuffer) return d;
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength).slice().buffer;
  if (Array.isArray(d)) return new Uint8Array(d).buffer;
  return String(d);
}

class Hasher {
  constructor(alg, key) {
    this._alg = String(alg);
    this._key = key;
    this._parts = [];
  }
  update(data) {
    this._parts.push(toBuffer(data));
    return this;
  }
  digest(enc) {
    const data = V.concat(this._parts);
    const out = enc === undefined ? "binary" : String(enc);
    return this._key === undefined ? V.digest(this._alg, data, out) : V.hmac(this._alg, this._key, data, out);
  }
}

export function createHash(alg) {
  return new Hasher(alg);
}

export function createHMAC(alg, key) {
  return new Hasher(alg, toBuffer(key));
}

export function hmac(alg, key, data, enc) {
  return V.hmac(String(alg), toBuffer(key), toBuffer(data), enc === undefined ? "hex" : String(enc));
}

function digestFn(alg) {
  return (data, enc) => V.digest(alg, toBuffer(data), enc === undefined ? "hex" : String(enc));
}

export const md5 = digestFn("md5");
export const sha1 = digestFn("sha1");
export const sha256 = digestFn("sha256");
export const sha384 = digestFn("sha384");
export const sha512 = digestFn("sha512");
export const sha512_256 = digestFn("sha512_256");

export function randomBytes(n) {
  return V.randomBytes(Number(n));
}

export default { createHash, createHMAC, hmac, md5, sha1, sha256, sha384, sha512, sha512_256, randomBytes };
