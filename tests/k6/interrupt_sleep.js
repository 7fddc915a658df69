// 50 VUs asleep: SIGTERM must end the run at once (k6: ~0.1 s), not after the sleep or the
// gracefulStop, with every output written and the sleeping iterations counted as interrupted.
import { sleep } from "k6";
import http from "k6/http";

export const options = { vus: 50, duration: "60s" };

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(10);
}
