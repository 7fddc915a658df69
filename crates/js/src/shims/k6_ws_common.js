// What k6/ws and k6/websockets share (an internal module, "volley/ws-common").

// gorilla/websocket's CloseError text, which k6 reports and scripts compare against.
const CLOSE_TEXT = {
  1000: " (normal)", 1001: " (going away)", 1002: " (protocol error)", 1003: " (unsupported data)",
  1005: " (no status)", 1006: " (abnormal closure)", 1007: " (invalid payload data)",
  1008: " (policy violation)", 1009: " (message too big)", 1010: " (mandatory extension missing)",
  1011: " (internal server error)", 1015: " (TLS handshake error)",
};

export function closeError(code, reason) {
  return "websocket: close " + code + (CLOSE_TEXT[code] || "") + (reason ? ": " + reason : "");
}

// k6's `compression` param: "deflate" (trimmed) asks for permessage-deflate; anything else is
// k6's error. k6/ws also takes "" for none, k6/websockets does not.
export function wantsDeflate(p, emptyIsNone) {
  if (!("compression" in p)) return false;
  const algo = String(p.compression).trim();
  if (algo === "" && emptyIsNone) return false;
  if (algo !== "deflate") {
    throw new Error(`unsupported compression algorithm '${algo}', supported algorithm is 'deflate'`);
  }
  return true;
}
