// Volley's live dashboard: follows /events (server-sent events) and draws SVG charts.
// Data from the run is only ever set as text (textContent, attributes), never parsed as HTML.
"use strict";

const MAX_POINTS = 3600; // as the server's history: older points merge pairwise beyond
const COLORS = ["#2563eb", "#16a34a", "#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d"];
const SVG = "http://www.w3.org/2000/svg";
const W = 600, H = 180, L = 52, R = 8, T = 8, B = 20;

const state = { pts: [], end: 0 };
const $ = (id) => document.getElementById(id);
const set = (id, text) => { const e = $(id); if (e) e.textContent = text; };

function num(v) {
  if (!isFinite(v)) return "–";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e4) return String(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
function ms(v) {
  if (!isFinite(v)) return "–";
  if (v >= 1000) return (v / 1000).toFixed(2) + "s";
  if (v >= 1) return v.toFixed(v >= 100 ? 0 : 2) + "ms";
  return (v * 1000).toFixed(0) + "µs";
}
function bytes(v) {
  if (!isFinite(v)) return "–";
  const u = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < u.length - 1) { v /= 1000; i++; }
  return (i ? v.toFixed(1) : v.toFixed(0)) + " " + u[i];
}
function pct(v) { return isFinite(v) ? (v * 100).toFixed(2) + "%" : "–"; }
function clock(s) {
  s = Math.floor(s);
  const h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
  return (h ? h + "h" : "") + (h || m ? m + "m" : "") + x + "s";
}

// Fold point b into a (the server does the same when its history outgrows MAX_POINTS).
function absorb(a, b) {
  const n = a.lat_n + b.lat_n;
  if (n > 0) {
    for (let i = 0; i < 4; i++) a.lat[i] = (a.lat[i] * a.lat_n + b.lat[i] * b.lat_n) / n;
    a.lat[4] = Math.max(a.lat[4], b.lat[4]);
  }
  a.lat_n = n;
  for (const k of ["reqs", "errs", "fail_t", "fail_n", "iters", "sent", "recv"]) a[k] += b[k];
  if (b.vus != null) a.vus = b.vus;
  if (b.vus_max != null) a.vus_max = b.vus_max;
  Object.assign(a.mon, b.mon);
  a.w = b.t + b.w - a.t;
}
function coarsen() {
  const out = [];
  for (let i = 0; i < state.pts.length; i += 2) {
    const a = state.pts[i];
    if (i + 1 < state.pts.length) absorb(a, state.pts[i + 1]);
    out.push(a);
  }
  state.pts = out;
}

// Each chart: lines of (label, value of a point or null), and a formatter for its axis.
function charts() {
  const lat = (i) => (p) => (p.lat_n > 0 ? p.lat[i] : null);
  const list = [
    { id: "rate", title: "Request rate (requests/s)", fmt: num, lines: [["requests/s", (p) => p.reqs / p.w], ["iterations/s", (p) => p.iters / p.w]] },
    { id: "latency", title: "Latency: http_req_duration per second", fmt: ms, lines: [["p50", lat(0)], ["p90", lat(1)], ["p95", lat(2)], ["p99", lat(3)]] },
    { id: "errors", title: "Errors: http_req_failed (%) and requests without response (/s)", fmt: num, lines: [["failed %", (p) => (p.fail_n > 0 ? (100 * p.fail_t) / p.fail_n : null)], ["errors/s", (p) => p.errs / p.w]] },
    { id: "vus", title: "VUs", fmt: num, lines: [["vus", (p) => p.vus], ["vus_max", (p) => p.vus_max]] },
    { id: "data", title: "Data (bytes/s)", fmt: bytes, lines: [["received/s", (p) => p.recv / p.w], ["sent/s", (p) => p.sent / p.w]] },
  ];
  // One chart per monitor_* metric, a line per target.
  const mon = new Map();
  for (const p of state.pts) for (const k of Object.keys(p.mon)) {
    const name = k.split("{")[0];
    if (!mon.has(name)) mon.set(name, new Set());
    mon.get(name).add(k);
  }
  for (const [name, keys] of mon) {
    const fmt = name.includes("bytes") ? bytes : num;
    list.push({ id: "m-" + name, title: "Target: " + name, fmt, lines: [...keys].map((k) => [k.slice(name.length) || name, (p) => (k in p.mon ? p.mon[k] : null)]) });
  }
  return list;
}

function el(tag, attrs, parent) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function niceMax(v) {
  if (!(v > 0)) return 1;
  const e = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * e) return m * e;
  return 10 * e;
}

function draw(c) {
  let box = $("chart-" + c.id);
  if (!box) {
    box = document.createElement("div");
    box.className = "chart";
    box.id = "chart-" + c.id;
    const h = document.createElement("h3");
    h.textContent = c.title;
    box.appendChild(h);
    box.appendChild(document.createElement("div")).className = "legend";
    $("charts").appendChild(box);
  }
  const pts = state.pts;
  const t0 = pts.length ? pts[0].t : 0;
  const t1 = pts.length ? pts[pts.length - 1].t + pts[pts.length - 1].w : 1;
  let ymax = 0;
  const series = c.lines.map(([label, f]) => {
    const xy = [];
    for (const p of pts) {
      const v = f(p);
      if (v == null || !isFinite(v)) continue;
      xy.push([p.t + p.w / 2, v]);
      ymax = Math.max(ymax, v);
    }
    return [label, xy];
  });
  ymax = niceMax(ymax);
  const x = (t) => L + ((t - t0) / Math.max(t1 - t0, 1)) * (W - L - R);
  const y = (v) => T + (1 - v / ymax) * (H - T - B);
  const svg = el("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
  let drawn = 0;
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4;
    el("line", { class: "grid", x1: L, x2: W - R, y1: y(v), y2: y(v) }, svg);
    el("text", { x: L - 4, y: y(v) + 3, "text-anchor": "end" }, svg).textContent = c.fmt(v);
  }
  el("text", { x: L, y: H - 4 }, svg).textContent = clock(t0);
  el("text", { x: W - R, y: H - 4, "text-anchor": "end" }, svg).textContent = clock(t1);
  const legend = box.querySelector(".legend");
  legend.textContent = "";
  series.forEach(([label, xy], i) => {
    const color = COLORS[i % COLORS.length];
    if (xy.length) {
      el("polyline", { stroke: color, points: xy.map(([t, v]) => x(t).toFixed(1) + "," + y(v).toFixed(1)).join(" ") }, svg);
      drawn += xy.length;
    }
    const s = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = color;
    s.appendChild(sw);
    s.appendChild(document.createTextNode(label));
    legend.appendChild(s);
  });
  svg.setAttribute("data-points", String(drawn));
  const old = box.querySelector("svg");
  if (old) old.replaceWith(svg); else box.appendChild(svg);
}

function render(snap) {
  set("elapsed", clock(snap.elapsed));
  set("vus", String(snap.vus));
  set("vus-max", String(snap.vus_max));
  const t = snap.total;
  set("run-reqs", num(t.reqs));
  set("run-rate", num(snap.elapsed > 0 ? t.reqs / snap.elapsed : 0));
  if (t.lat_n > 0) ["p50", "p90", "p95", "p99"].forEach((k, i) => set("run-" + k, ms(t.lat[i])));
  set("run-failed", t.fail_n > 0 ? pct(t.fail_t / t.fail_n) : "0%");
  set("run-errors", num(t.errs));
  set("run-checks", t.checks_n > 0 ? pct(t.checks_t / t.checks_n) : "–");
  set("run-recv", bytes(t.recv));
  set("run-sent", bytes(t.sent));
  set("run-iters", num(t.iters));
  const last = state.pts[state.pts.length - 1];
  if (last) set("now-rate", num(last.reqs / last.w));
  // The newest second that had requests (the run's last seconds may have none).
  for (let i = state.pts.length - 1; i >= 0; i--) {
    if (state.pts[i].lat_n > 0) { set("now-p95", ms(state.pts[i].lat[2])); break; }
  }
  for (const c of charts()) draw(c);
}

function ended(e) {
  const s = $("status");
  s.textContent = e.interrupted ? "interrupted" : "finished";
  s.className = "status ended";
  $("end").hidden = false;
  set("end-summary", `${e.mode} ${e.name}: ${clock(e.duration_s)} of load`);
  const ths = e.thresholds || [];
  if (ths.length) {
    const table = $("thresholds");
    table.hidden = false;
    const body = table.querySelector("tbody");
    body.textContent = "";
    for (const th of ths) {
      const tr = body.insertRow();
      const ok = tr.insertCell();
      ok.textContent = th.ok ? "✓" : "✗";
      ok.className = th.ok ? "ok" : "fail";
      tr.insertCell().textContent = `${th.metric}: ${th.expression}`;
      tr.insertCell().textContent = th.observed == null ? "–" : num(th.observed);
    }
  }
}

const es = new EventSource("/events");
es.addEventListener("hello", (m) => {
  set("command", JSON.parse(m.data).command);
  const s = $("status");
  s.textContent = "live";
  s.className = "status live";
});
es.addEventListener("snapshot", (m) => {
  const snap = JSON.parse(m.data);
  for (const p of snap.points) {
    if (p.t < state.end) continue; // already have it (a reconnect's catch-up)
    state.pts.push(p);
    state.end = p.t + p.w;
  }
  while (state.pts.length > MAX_POINTS) coarsen();
  render(snap);
});
es.addEventListener("end", (m) => {
  es.close(); // the run is over: no reconnecting to a process that exits
  ended(JSON.parse(m.data));
});
es.onerror = () => {
  if (es.readyState === EventSource.CLOSED) return;
  const s = $("status");
  s.textContent = "reconnecting…";
  s.className = "status lost";
};
