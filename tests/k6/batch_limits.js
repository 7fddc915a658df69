// options.batchPerHost bounds how many of a batch's requests are in flight per host.
import http from "k6/http";
import { check } from "k6";

export const options = { vus: 1, iterations: 1, batchPerHost: 2 };

export default function () {
  const B = __ENV.BASE;
  const t0 = Date.now();
  const rs = http.batch([`${B}/delay/100`, `${B}/delay/100`, `${B}/delay/100`, `${B}/delay/100`]);
  const took = Date.now() - t0;
  check(rs, {
    "all answered": (r) => r.every((x) => x.status === 200),
    "two at a time": () => took >= 195,
  });
}
