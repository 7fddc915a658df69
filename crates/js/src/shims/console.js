// Globals every VU gets before the script runs: console (to stderr, as k6).
(() => {
  const V = globalThis.__volley;
  // The formatting (console_format.js) is made on the first call: most VUs never log.
  let F = null;
  const fmt = (args) => (F === null ? (F = V.consoleFormat()) : F)(args);
  // VOLLEY_LAZY_SHIMS=0: made with the VU (to measure what laziness saves).
  if (V.eagerShims) fmt([]);
  globalThis.console = {
    log: (...a) => V.log("info", fmt(a)),
    info: (...a) => V.log("info", fmt(a)),
    debug: (...a) => V.log("debug", fmt(a)),
    warn: (...a) => V.log("warn", fmt(a)),
    error: (...a) => V.log("error", fmt(a)),
  };
})();
