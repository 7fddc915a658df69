// vus + duration (constant-vus) with sleep: VUs wait without holding a thread.
import http from "k6/http";
import { sleep } from "k6";

export const options = { vus: 20, duration: "1s" };

export default function () {
  http.get(`${__ENV.BASE}/`);
  sleep(0.1);
}
