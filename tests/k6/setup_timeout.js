// setup() past setupTimeout: exit 100.
import { sleep } from "k6";

export const options = { iterations: 1, setupTimeout: "300ms" };

export function setup() {
  sleep(5);
}

export default function () {}
