// k6/data SharedArray: built once per process, read by every VU without a copy.
import { SharedArray } from "k6/data";
import { check } from "k6";
import { Trend } from "k6/metrics";

export const options = { vus: 4, iterations: 8 };

const built = new Trend("shared_array_token");

const data = new SharedArray("users", function () {
  // Runs once per process: every VU must see the same token.
  const token = Math.floor(Math.random() * 1e9);
  const out = [];
  for (let i = 0; i < 1000; i++) out.push({ id: i, name: "user" + i, token });
  return out;
});

export default function () {
  built.add(data[0].token);
  check(data, {
    "length": (d) => d.length === 1000,
    "index": (d) => d[5].name === "user5" && d[999].id === 999 && d[1000] === undefined,
    "for of": (d) => {
      let n = 0;
      for (const u of d) n += u.id;
      return n === (999 * 1000) / 2;
    },
    "forEach/map/filter": (d) => {
      let n = 0;
      d.forEach(() => n++);
      return n === 1000 && d.map((u) => u.id)[7] === 7 && d.filter((u) => u.id < 10).length === 10;
    },
    "read only": (d) => {
      try {
        d[0] = 1;
        return false;
      } catch (e) {
        return true;
      }
    },
    "Object.keys": (d) => Object.keys(d).length === 1000,
  });
}
