//! `--out csv=FILE`: k6's CSV output, one row per sample, with k6's columns:
//!
//! ```text
//! metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata
//! http_reqs,1767323045,1.000000,,,,true,,GET,http://127.0.0.1:8080/,HTTP/1.1,default,,200,,,http://127.0.0.1:8080/,,
//! ```
//!
//! `timestamp` is Unix seconds (k6's default `timeFormat`); tags without a column of their own
//! go to `extra_tags` as `k=v&k2=v2`. Buffered per worker like [`crate::out_json`]: whole
//! buffers are written under a lock, at least once a second, so rows never interleave.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use volley_metrics::{MetricDesc, SampleSink, TagSet};

/// k6's header, in order.
pub const COLUMNS: [&str; 19] = [
    "metric_name",
    "timestamp",
    "metric_value",
    "check",
    "error",
    "error_code",
    "expected_response",
    "group",
    "method",
    "name",
    "proto",
    "scenario",
    "service",
    "status",
    "subproto",
    "tls_version",
    "url",
    "extra_tags",
    "metadata",
];

/// The tag columns: [`COLUMNS`] between `metric_value` and `extra_tags`.
const TAG_COLUMNS: &[&str] = {
    let (_, rest) = COLUMNS.split_at(3);
    rest.split_at(14).0
};

const BUF_LIMIT: usize = 256 * 1024;

pub struct CsvOut {
    raw: super::RawFile,
}

impl std::fmt::Debug for CsvOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CsvOut")
    }
}

/// Quote a field when it holds a comma, quote or line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Everything after `metric_value`: the tag columns, `extra_tags` and `metadata`.
fn tail(tags: &TagSet) -> String {
    let mut s = String::new();
    for c in TAG_COLUMNS {
        s.push(',');
        if let Some(v) = tags.get(*c) {
            s.push_str(&field(v));
        }
    }
    let extra: Vec<String> = tags
        .iter()
        .filter(|(k, _)| !TAG_COLUMNS.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    s.push(',');
    s.push_str(&field(&extra.join("&")));
    s.push_str(",\n");
    s
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

impl CsvOut {
    pub fn create(path: &Path) -> Result<CsvOut, String> {
        let mut file =
            File::create(path).map_err(|e| format!("--out csv={}: {e}", path.display()))?;
        file.write_all(format!("{}\n", COLUMNS.join(",")).as_bytes())
            .map_err(|e| format!("--out csv={}: {e}", path.display()))?;
        Ok(CsvOut {
            raw: super::RawFile::new(file, "--out csv"),
        })
    }

    /// Tags every row carries besides its series' own (quick mode's `method`, `url`, `name`).
    /// Set before the run; once.
    pub fn set_base_tags(&self, tags: TagSet) {
        self.raw.set_base_tags(tags);
    }

    pub fn sink(self: &Arc<Self>) -> Box<dyn SampleSink> {
        Box::new(CsvSink {
            out: self.clone(),
            buf: Vec::with_capacity(64 * 1024),
            series: Default::default(),
        })
    }

    pub fn error(&self) -> Option<String> {
        self.raw.error()
    }

    fn write(&self, bytes: &[u8]) {
        self.raw.write(bytes);
    }

    /// One row written directly (the coordinator's `vus` gauges).
    pub fn row(&self, name: &str, tags: &TagSet, value: f64) {
        let line = format!("{},{},{value:.6}{}", field(name), now_s(), tail(tags));
        self.write(line.as_bytes());
    }
}

struct CsvSink {
    out: Arc<CsvOut>,
    buf: Vec<u8>,
    /// Per series and raw tag set: `name,` and the row's end from the tag columns on.
    series: super::SeriesCache<(String, String)>,
}

impl SampleSink for CsvSink {
    fn sample(&mut self, series: u32, desc: &MetricDesc, tags: Option<&Arc<TagSet>>, value: f64) {
        let raw = &self.out.raw;
        let (head, end) = self.series.get(series, desc, tags, |own| {
            let end = tail(&raw.tags(own));
            (format!("{},", field(&desc.key.name)), end)
        });
        let b = &mut self.buf;
        b.extend_from_slice(head.as_bytes());
        let _ = write!(b, "{},{value:.6}", now_s());
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

impl Drop for CsvSink {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::{MetricKey, MetricKind, Recorder, Unit};

    #[test]
    fn rows_have_k6_columns() {
        let dir = std::env::temp_dir().join(format!("volley-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("o.csv");
        let out = Arc::new(CsvOut::create(&p).unwrap());
        let mut rec = Recorder::new();
        rec.set_sink(out.sink());
        let h = rec.handle(
            MetricKey::tagged(
                "http_req_duration",
                &[("status", "200"), ("method", "GET"), ("custom", "a,b")],
            ),
            MetricKind::Trend,
            Unit::Time,
        );
        rec.trend_us(h, 1500);
        drop(rec);
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], COLUMNS.join(","));
        assert_eq!(lines.len(), 2);
        let row = lines[1];
        assert!(row.starts_with("http_req_duration,"), "{row}");
        assert!(row.contains(",1.500000,"), "{row}");
        assert!(row.ends_with(",GET,,,,,200,,,,\"custom=a,b\","), "{row}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
