//! `--out json=FILE`: k6's NDJSON output, the one place raw samples exist (DESIGN.md,
//! invariant 1). Lines as k6 writes them:
//!
//! ```text
//! {"type":"Metric","data":{"name":"http_reqs","type":"counter","contains":"default","thresholds":[],"submetrics":null},"metric":"http_reqs"}
//! {"type":"Point","data":{"time":"2026-01-02T03:04:05.678901Z","value":1,"tags":{...}},"metric":"http_reqs"}
//! ```
//!
//! Each worker's [`Recorder`](volley_metrics::Recorder) gets a `JsonSink` that formats
//! points into its own buffer and writes whole buffers to the shared file under a lock (so
//! lines never interleave), when the buffer is large and at every snapshot (once a second)
//! and when dropped. A metric's declaration is written straight to the file the first time
//! any worker sees it, so it always precedes that metric's points. A killed process leaves
//! valid NDJSON up to the last write.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use volley_metrics::{MetricDesc, MetricKind, SampleSink, TagSet, Unit};

/// Buffered bytes per worker before a write is forced between snapshots.
const BUF_LIMIT: usize = 256 * 1024;

/// The shared output file.
pub struct JsonOut {
    raw: crate::outputs::RawFile,
    declared: Mutex<HashSet<String>>,
    /// Threshold expressions per metric name, for the declarations.
    thresholds: HashMap<String, Vec<String>>,
}

impl std::fmt::Debug for JsonOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsonOut")
    }
}

impl JsonOut {
    pub fn create(path: &Path) -> Result<JsonOut, String> {
        let file = File::create(path).map_err(|e| format!("--out json={}: {e}", path.display()))?;
        Ok(JsonOut {
            raw: crate::outputs::RawFile::new(file, "--out json"),
            declared: Mutex::new(HashSet::new()),
            thresholds: HashMap::new(),
        })
    }

    /// Tags every point carries besides its series' own (quick mode's `method`, `url`, `name`:
    /// constant for a run, so its series keys leave them out). Set before the run; once.
    pub fn set_base_tags(&self, tags: TagSet) {
        self.raw.set_base_tags(tags);
    }

    pub fn set_thresholds(&mut self, ths: &[crate::thresholds::Threshold]) {
        for t in ths {
            self.thresholds
                .entry(t.name.clone())
                .or_default()
                .push(t.source.clone());
        }
    }

    /// A sink for one worker's recorder.
    pub fn sink(self: &Arc<Self>) -> Box<dyn SampleSink> {
        Box::new(JsonSink {
            out: self.clone(),
            buf: Vec::with_capacity(64 * 1024),
            series: Default::default(),
            clock: (u64::MAX, String::new()),
        })
    }

    /// The first write error, if any (reported once at the end).
    pub fn error(&self) -> Option<String> {
        self.raw.error()
    }

    fn write(&self, bytes: &[u8]) {
        self.raw.write(bytes);
    }

    /// Write `name`'s declaration unless some worker already did.
    fn declare(&self, name: &str, kind: MetricKind, unit: Unit) {
        if !self.declared.lock().unwrap().insert(name.to_string()) {
            return;
        }
        let th = self.thresholds.get(name).cloned().unwrap_or_default();
        let line = serde_json::json!({
            "type": "Metric",
            "data": {
                "name": name,
                "type": crate::summary::kind_name(kind),
                "contains": match unit { Unit::Time => "time", Unit::Data => "data", Unit::Default => "default" },
                "thresholds": th,
                "submetrics": null,
            },
            "metric": name,
        });
        self.write(format!("{line}\n").as_bytes());
    }

    /// One point written directly (the coordinator's `vus` gauges).
    pub fn point(&self, name: &str, kind: MetricKind, tags: &TagSet, value: f64) {
        self.declare(name, kind, Unit::Default);
        let (secs, sub) = now();
        let mut line = String::new();
        line.push_str(r#"{"type":"Point","data":{"time":""#);
        line.push_str(&second_prefix(secs));
        line.push_str(&format!(".{sub:06}Z\",\"value\":{}", number(value)));
        line.push_str(&tail(name, tags));
        self.write(line.as_bytes());
    }
}

/// One worker's buffer.
struct JsonSink {
    out: Arc<JsonOut>,
    buf: Vec<u8>,
    /// Per series and raw tag set: the line's end, from `,"tags"` on.
    series: crate::outputs::SeriesCache<String>,
    /// The current second and its formatted `YYYY-MM-DDTHH:MM:SS`.
    clock: (u64, String),
}

fn now() -> (u64, u32) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_secs(), d.subsec_micros())
}

fn second_prefix(secs: u64) -> String {
    // `YYYY-MM-DDTHH:MM:SS.000Z` → keep up to the seconds.
    let s = volley_metrics::time::rfc3339_ms(secs * 1000);
    s[..s.len() - 5].to_string()
}

fn tail(name: &str, tags: &TagSet) -> String {
    format!(
        ",\"tags\":{}}},\"metric\":{}}}\n",
        serde_json::to_string(tags).unwrap_or_else(|_| "{}".into()),
        serde_json::to_string(name).unwrap_or_default()
    )
}

/// Numbers as JSON without a needless `.0` (k6 writes `1`, not `1.0`).
fn number(v: f64) -> String {
    if !v.is_finite() {
        "0".into()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

impl SampleSink for JsonSink {
    fn sample(&mut self, series: u32, desc: &MetricDesc, tags: Option<&Arc<TagSet>>, value: f64) {
        let out = &self.out;
        let end = self.series.get(series, desc, tags, |own| {
            out.declare(&desc.key.name, desc.kind, desc.unit);
            tail(&desc.key.name, &out.raw.tags(own))
        });
        let (secs, sub) = now();
        if self.clock.0 != secs {
            self.clock = (secs, second_prefix(secs));
        }
        let b = &mut self.buf;
        b.extend_from_slice(br#"{"type":"Point","data":{"time":""#);
        b.extend_from_slice(self.clock.1.as_bytes());
        let _ = write!(b, ".{sub:06}Z\",\"value\":{}", number(value));
        b.extend_from_slice(end.as_bytes());
        if b.len() >= BUF_LIMIT {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.out.write(&self.buf);
        self.buf.clear();
    }
}

impl Drop for JsonSink {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::{MetricKey, Recorder};

    #[test]
    fn lines_are_k6_ndjson() {
        let dir = std::env::temp_dir().join(format!("volley-outjson-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("o.json");
        let out = Arc::new(JsonOut::create(&p).unwrap());
        let mut rec = Recorder::new();
        rec.set_sink(out.sink());
        let h = rec.handle(
            MetricKey::tagged("http_req_duration", &[("status", "200")]),
            MetricKind::Trend,
            Unit::Time,
        );
        rec.trend_us(h, 1500);
        rec.trend_us(h, 2000);
        let _ = rec.snapshot();
        drop(rec);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["type"], "Metric");
        assert_eq!(lines[0]["data"]["contains"], "time");
        assert_eq!(lines[1]["type"], "Point");
        assert_eq!(lines[1]["data"]["value"], 1.5);
        assert_eq!(lines[2]["data"]["value"], 2);
        assert_eq!(lines[1]["data"]["tags"]["status"], "200");
        assert!(lines[1]["data"]["time"].as_str().unwrap().ends_with('Z'));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
