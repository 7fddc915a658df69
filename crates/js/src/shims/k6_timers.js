// The `k6/timers` module: k6 has the timer functions as globals too (src/event_loop.rs).
export const setTimeout = globalThis.setTimeout;
export const clearTimeout = globalThis.clearTimeout;
export const setInterval = globalThis.setInterval;
export const clearInterval = globalThis.clearInterval;

export default { setTimeout, clearTimeout, setInterval, clearInterval };
