// A VU gets the natives of the modules its script imports, not every module's
// (crates/js/src/modules/mod.rs). VU 0 (the compile run) still gets them all.
import http from 'k6/http';
import { check } from 'k6';

const V = globalThis.__volley;
const seen = __VU > 0 ? {
  request: typeof V.request,
  jarNew: typeof V.jarNew,
  htmlApi: typeof V.htmlApi,
  b64enc: typeof V.b64enc,
  wsOpen: typeof V.wsOpen,
  grpcNew: typeof V.grpcNew,
  saGet: typeof V.saGet,
  execInfo: typeof V.execInfo,
  fsOpen: typeof V.fsOpen,
  csvNext: typeof V.csvNext,
  ledgerAck: typeof V.ledgerAck,
} : null;

export const options = { vus: 2, iterations: 2 };

export default function () {
  check(seen, {
    'imported modules have their natives': (s) =>
      s.request === 'function' && s.jarNew === 'function' &&
      s.htmlApi === 'function' && s.b64enc === 'function',
    'modules not imported have none': (s) =>
      ['wsOpen', 'grpcNew', 'saGet', 'execInfo', 'fsOpen', 'csvNext', 'ledgerAck']
        .every((k) => s[k] === 'undefined'),
  });
  http.get(`${__ENV.BASE}/get`);
}
