// k6/metrics: Counter, Gauge, Rate, Trend (isTime) with tags.
import { Counter, Gauge, Rate, Trend } from "k6/metrics";

const counter = new Counter("my_counter");
const gauge = new Gauge("my_gauge");
const rate = new Rate("my_rate");
const trend = new Trend("my_trend", true);
const plain = new Trend("my_plain");

export const options = { vus: 1, iterations: 4 };

export default function () {
  counter.add(3, { kind: "a" });
  counter.add(1, { kind: "b" });
  gauge.add(10 + __ITER);
  rate.add(__ITER % 2 === 0);
  trend.add(100 * (__ITER + 1));
  plain.add(7);
}
