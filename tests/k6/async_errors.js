// Errors in async code end the iteration as an exception (k6: "Uncaught (in promise) ..."):
// a rejected default promise, a rejection nobody handles, a throwing timer callback.
// Rejections that are handled are not errors.
import { check } from "k6";
import { Counter } from "k6/metrics";

const reached = new Counter("reached");

const once = (exec) => ({ executor: "per-vu-iterations", vus: 1, iterations: 2, exec });

export const options = {
  scenarios: {
    rejects: once("rejects"),
    unhandled: once("unhandled"),
    timerThrows: once("timerThrows"),
    handled: once("handled"),
  },
};

export async function rejects() {
  await new Promise((resolve) => setTimeout(resolve, 1));
  throw new Error("async boom");
}

export function unhandled() {
  Promise.reject(new Error("nobody catches this"));
}

export function timerThrows() {
  setTimeout(() => {
    throw new Error("thrown in a timer");
  }, 1);
  // Dropped with the iteration: the error ends it first.
  setTimeout(() => reached.add(1, { where: "after timer error" }), 20);
}

export async function handled() {
  try {
    await Promise.reject(new Error("caught"));
  } catch (e) {
    check(e, { "await rejects into catch": (e) => e.message === "caught" });
  }
  const late = Promise.reject(new Error("handled later"));
  await null;
  await late.catch(() => reached.add(1, { where: "late catch" }));
  reached.add(1, { where: "handled end" });
}
