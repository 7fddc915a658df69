// k6/encoding and k6/crypto against known vectors (RFC 4648, RFC 1321, FIPS 180, RFC 4231).
import encoding from "k6/encoding";
import { b64encode, b64decode } from "k6/encoding";
import crypto from "k6/crypto";
import { check } from "k6";

export const options = { vus: 1, iterations: 1 };

function hex(buf) {
  return Array.from(new Uint8Array(buf), (b) => (b < 16 ? "0" : "") + b.toString(16)).join("");
}

export default function () {
  check(null, {
    "b64 std": () => b64encode("hello?>") === "aGVsbG8/Pg==",
    "b64 rawstd": () => b64encode("hello?>", "rawstd") === "aGVsbG8/Pg",
    "b64 url": () => b64encode("hello?>", "url") === "aGVsbG8_Pg==",
    "b64 rawurl": () => b64encode("hello?>", "rawurl") === "aGVsbG8_Pg",
    "b64 rfc4648 foobar": () => encoding.b64encode("foobar") === "Zm9vYmFy" && b64encode("fo") === "Zm8=",
    "b64 decode to string": () => b64decode("aGVsbG8_Pg", "rawurl", "s") === "hello?>",
    "b64 decode to ArrayBuffer": () => {
      const b = b64decode("AAEC/w==");
      return b instanceof ArrayBuffer && hex(b) === "000102ff";
    },
    "b64 of ArrayBuffer": () => b64encode(new Uint8Array([0, 1, 2, 255]).buffer) === "AAEC/w==",
    "b64 round trip unicode": () => b64decode(b64encode("héllo ✓"), "std", "s") === "héllo ✓",
  });
  check(null, {
    "md5": () => crypto.md5("hello", "hex") === "5d41402abc4b2a76b9719d911017c592",
    "sha1": () => crypto.sha1("hello", "hex") === "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
    "sha256": () =>
      crypto.sha256("hello", "hex") === "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824",
    "sha384": () =>
      crypto.sha384("hello", "hex") ===
      "59e1748777448c69de6b800d7a33bbfb9ff1b463e44354c3553bcdb9c666fa90125a3c79f90397bdf5f6a13de828684f",
    "sha512": () =>
      crypto.sha512("hello", "hex") ===
      "9b71d224bd62f3785d96d46ad3ea3d73319bfbc2890caadae2dff72519673ca72323c3d99ba5c11d7c7acc6e14b8c5da0c4663475c2e5c3adef46f73bcdec043",
    "sha256 base64": () => crypto.sha256("hello", "base64") === "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=",
    "hmac rfc4231 case 2": () =>
      crypto.hmac("sha256", "Jefe", "what do ya want for nothing?", "hex") ===
      "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    "createHash update digest": () => {
      const h = crypto.createHash("sha1");
      h.update("hel");
      h.update("lo");
      return h.digest("hex") === "aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d";
    },
    "createHMAC": () => {
      const h = crypto.createHMAC("sha256", "Jefe");
      h.update("what do ya want ");
      h.update("for nothing?");
      return h.digest("hex") === "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
    },
    "digest binary": () => hex(crypto.createHash("md5").update("hello").digest()) === "5d41402abc4b2a76b9719d911017c592",
    "randomBytes": () => {
      const a = crypto.randomBytes(32);
      return a instanceof ArrayBuffer && a.byteLength === 32 && hex(a) !== hex(crypto.randomBytes(32));
    },
  });
}
