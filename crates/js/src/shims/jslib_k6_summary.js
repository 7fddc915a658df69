// Volley's stand-in for https://jslib.k6.io/k6-summary/<version>/index.js (any version):
// textSummary(data, {indent, enableColors}) and jUnit(data, {name, classname}) over k6's
// handleSummary data shape. Written for Volley from the documented API.

function color(on, code, s) {
  return on ? `\x1b[${code}m${s}\x1b[0m` : s;
}

function fmtNumber(v) {
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(6).replace(/\.?0+$/, "");
}

function fmtTime(ms) {
  if (ms >= 60000) return `${(ms / 60000).toFixed(2)}m`;
  if (ms >= 1000) return `${(ms / 1000).toFixed(2)}s`;
  if (ms >= 1) return `${ms.toFixed(2)}ms`;
  return `${(ms * 1000).toFixed(2)}µs`;
}

function fmtData(b) {
  const units = ["B", "kB", "MB", "GB", "TB"];
  let i = 0;
  while (b >= 1000 && i < units.length - 1) {
    b /= 1000;
    i++;
  }
  return `${i === 0 ? b : b.toFixed(1)} ${units[i]}`;
}

function fmtValue(m, v) {
  if (m.contains === "time") return fmtTime(v);
  if (m.contains === "data") return fmtData(v);
  return fmtNumber(v);
}

function metricLine(name, m, enableColors) {
  const v = m.values || {};
  switch (m.type) {
    case "counter": {
      const rate = v.rate === undefined ? "" : ` ${fmtValue(m, v.rate)}/s`;
      return `${fmtValue(m, v.count || 0)}${rate}`;
    }
    case "gauge":
      return `${fmtValue(m, v.value || 0)} min=${fmtValue(m, v.min || 0)} max=${fmtValue(m, v.max || 0)}`;
    case "rate": {
      const pct = ((v.rate || 0) * 100).toFixed(2);
      return `${pct}% ${color(enableColors, 32, "✓ " + (v.passes || 0))} ${color(enableColors, 31, "✗ " + (v.fails || 0))}`;
    }
    default: {
      const keys = Object.keys(v);
      return keys.map((k) => `${k}=${fmtValue(m, v[k])}`).join(" ");
    }
  }
}

function renderGroup(g, indent, enableColors, out) {
  for (const c of g.checks || []) {
    const ok = (c.fails || 0) === 0;
    out.push(`${indent}${color(enableColors, ok ? 32 : 31, (ok ? "✓ " : "✗ ") + c.name)}`);
    if (!ok) {
      const total = (c.passes || 0) + (c.fails || 0);
      const pct = total ? Math.floor(((c.passes || 0) / total) * 100) : 0;
      out.push(`${indent}  ↳  ${pct}% — ✓ ${c.passes || 0} / ✗ ${c.fails || 0}`);
    }
  }
  for (const sub of g.groups || []) {
    out.push(`${indent}█ ${sub.name}`);
    out.push("");
    renderGroup(sub, indent + "  ", enableColors, out);
    out.push("");
  }
}

export function textSummary(data, options) {
  const opts = options || {};
  const indent = opts.indent === undefined ? " " : String(opts.indent);
  const enableColors = !!opts.enableColors;
  const out = [];
  if (data.root_group) {
    renderGroup(data.root_group, indent + "  ", enableColors, out);
    out.push("");
  }
  const metrics = data.metrics || {};
  const names = Object.keys(metrics).sort();
  const width = names.reduce((w, n) => Math.max(w, n.length), 0) + 3;
  for (const name of names) {
    const m = metrics[name];
    let failed = false;
    if (m.thresholds) {
      for (const k of Object.keys(m.thresholds)) if (m.thresholds[k].ok === false) failed = true;
    }
    const mark = m.thresholds ? (failed ? color(enableColors, 31, "✗ ") : color(enableColors, 32, "✓ ")) : "  ";
    const dots = ".".repeat(Math.max(1, width - name.length));
    out.push(`${indent}${mark}${name}${dots}: ${metricLine(name, m, enableColors)}`);
  }
  return out.join("\n") + "\n";
}

function xml(s) {
  return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

export function jUnit(data, options) {
  const opts = options || {};
  const name = opts.name || "k6 thresholds";
  const classname = opts.classname || "Unnamed folder";
  const cases = [];
  let failures = 0;
  const metrics = (data && data.metrics) || {};
  for (const metric of Object.keys(metrics)) {
    const th = metrics[metric].thresholds;
    if (!th) continue;
    for (const expr of Object.keys(th)) {
      const id = `${metric} - ${expr}`;
      if (th[expr].ok) {
        cases.push(`<testcase name="${xml(id)}" classname="${xml(classname)}" />`);
      } else {
        failures++;
        cases.push(
          `<testcase name="${xml(id)}" classname="${xml(classname)}"><failure message="failed" /></testcase>`
        );
      }
    }
  }
  return (
    `<?xml version="1.0"?>\n<testsuites tests="${cases.length}" failures="${failures}">\n` +
    `<testsuite name="${xml(name)}" tests="${cases.length}" failures="${failures}">` +
    cases.join("\n") +
    `\n</testsuite>\n</testsuites>`
  );
}

export default { textSummary, jUnit };
