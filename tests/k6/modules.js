// Relative ES module imports, setup → default(data) → teardown(data), groups, __ENV, __VU,
// open() in init, form bodies, JSON responses, headers and redirects.
import http from "k6/http";
import { check, group } from "k6";
import { answer, url } from "./lib/util.js";

const text = open("./lib/util.js");

export const options = { vus: 1, iterations: 3 };

export function setup() {
  return { token: "t-" + answer, vu: __VU };
}

export default function (data) {
  check(data, {
    "setup data arrives": (d) => d.token === "t-42" && d.vu === 0,
    "open() read the file": () => text.includes("export const answer"),
    "__VU is 1": () => __VU === 1,
    "__ENV.MODE from -e": () => __ENV.MODE === "conformance",
  });
  group("api", () => {
    const res = http.post(url("/echo"), { a: "1", b: "x y" }, { headers: { "X-Test": "yes" } });
    const body = res.json();
    check(res, {
      "form body": () => body.body === "a=1&b=x+y" || body.body === "a=1&b=x%20y",
      "form content type": () => body.headers["content-type"] === "application/x-www-form-urlencoded",
      "custom header": () => body.headers["x-test"] === "yes",
      "response header canonical": (r) => r.headers["Content-Type"] !== undefined,
    });
    group("nested", () => {
      const r = http.get(url("/redirect/2"), { tags: { name: "redirects" } });
      check(r, {
        "redirects followed": (r) => r.status === 200 && r.url.endsWith("/get"),
      });
    });
  });
}

export function teardown(data) {
  http.get(url("/status/204"));
  if (data.token !== "t-42") throw new Error("teardown got wrong data");
}
