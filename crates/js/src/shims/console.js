// Globals every VU gets before the script runs: console (to stderr, as k6).
(() => {
  const V = globalThis.__volley;
  const fmt = (args) =>
    args
      .map((a) => {
        if (typeof a === "string") return a;
        if (a instanceof Error) return String(a);
        if (typeof a === "object" && a !== null) {
          try {
            return JSON.stringify(a);
          } catch (e) {
            return String(a);
          }
        }
        return String(a);
      })
      .join(" ");
  globalThis.console = {
    log: (...a) => V.log("info", fmt(a)),
    info: (...a) => V.log("info", fmt(a)),
    debug: (...a) => V.log("debug", fmt(a)),
    warn: (...a) => V.log("warn", fmt(a)),
    error: (...a) => V.log("error", fmt(a)),
  };
})();
