//! `--out KIND=WHERE`: where a run streams besides the summary (k6's `--out` convention).
//!
//! Two families, following DESIGN.md's invariants:
//!
//! - **Per-sample** outputs exist only because the user asked for raw data: `json=FILE`
//!   ([`crate::out_json`]) and `csv=FILE` ([`csv`]). They are [`SampleSink`]s on each worker's
//!   recorder, buffered per worker; [`sample_sink`] hands a worker one sink feeding all of them.
//! - **Aggregated** outputs never see a sample: `influxdb=URL` ([`influx`]) and
//!   `prometheus=URL` ([`prom`]) read the finished one-second points of the run's
//!   [`Aggregator`] from the coordinator's once-per-second hook ([`Outputs::tick`]) and send
//!   one batch per second from a sender thread ([`post`]), so a slow or dead receiver never
//!   stalls the run.
//! - `junit=FILE` ([`junit`]) is written once at the end from the thresholds and checks.
//! - The coordinator feeds the aggregated outputs and JUnit from the agents' merged
//!   per-second series instead of an [`Aggregator`] ([`merged`]).

pub mod csv;
pub mod influx;
pub mod junit;
pub mod merged;
pub mod post;
pub mod prom;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use volley_metrics::{Aggregator, Point, RunResult, SampleSink};

/// One `--out` value.
#[derive(Clone, Debug, PartialEq)]
pub enum OutSpec {
    Json(PathBuf),
    Csv(PathBuf),
    Junit(PathBuf),
    /// `http://host:port/DB`: InfluxDB 1.x `/write?db=DB` (line protocol).
    Influx(String),
    /// `http://host:port/api/v1/write`: Prometheus remote write.
    Prometheus(String),
}

impl OutSpec {
    /// Parse `KIND=WHERE` (k6's names; `influxdb`, `prometheus`, `experimental-prometheus-rw`).
    pub fn parse(s: &str) -> Result<OutSpec, String> {
        let (kind, rest) = s.split_once('=').unwrap_or((s, ""));
        let need = |what: &str| {
            format!(
                "--out '{s}': expected {kind}={what}, e.g. {}",
                example(kind)
            )
        };
        if rest.is_empty() {
            return Err(
                if matches!(kind, "json" | "csv" | "junit" | "influxdb" | "prometheus") {
                    need(if kind.ends_with("db") || kind == "prometheus" {
                        "URL"
                    } else {
                        "FILE"
                    })
                } else {
                    unknown(s)
                },
            );
        }
        let url = |u: &str| -> Result<String, String> {
            post::HttpUrl::parse(u).map_err(|e| format!("--out '{s}': {e}"))?;
            Ok(u.to_string())
        };
        match kind {
            "json" => Ok(OutSpec::Json(rest.into())),
            "csv" => Ok(OutSpec::Csv(rest.into())),
            "junit" => Ok(OutSpec::Junit(rest.into())),
            "influxdb" => {
                let u = post::HttpUrl::parse(rest).map_err(|e| format!("--out '{s}': {e}"))?;
                if u.path.trim_matches('/').is_empty() {
                    return Err(need("http://host:8086/DATABASE"));
                }
                Ok(OutSpec::Influx(rest.to_string()))
            }
            "prometheus" | "experimental-prometheus-rw" => Ok(OutSpec::Prometheus(url(rest)?)),
            _ => Err(unknown(s)),
        }
    }

    /// Parse every `--out`; `json=` stays separate (it has its own plumbing).
    pub fn parse_all(specs: &[String]) -> Result<(Option<PathBuf>, Vec<OutSpec>), String> {
        let (mut json, mut rest) = (None, Vec::new());
        for s in specs {
            match OutSpec::parse(s)? {
                OutSpec::Json(p) => json = Some(p),
                o => rest.push(o),
            }
        }
        Ok((json, rest))
    }
}

fn example(kind: &str) -> &'static str {
    match kind {
        "influxdb" => "influxdb=http://127.0.0.1:8086/volley",
        "prometheus" => "prometheus=http://127.0.0.1:9090/api/v1/write",
        "csv" => "csv=points.csv",
        "junit" => "junit=junit.xml",
        _ => "json=points.ndjson",
    }
}

fn unknown(s: &str) -> String {
    format!(
        "--out '{s}': unknown output; supported: json=FILE, csv=FILE, junit=FILE, \
         influxdb=http://host:port/DB, prometheus=http://host:port/api/v1/write"
    )
}

/// The sink a worker's recorder gets: every per-sample output the run has, or none.
pub fn sample_sink(
    json: Option<&Arc<crate::out_json::JsonOut>>,
    csv: Option<&Arc<csv::CsvOut>>,
) -> Option<Box<dyn SampleSink>> {
    let mut sinks: Vec<Box<dyn SampleSink>> = Vec::new();
    if let Some(j) = json {
        sinks.push(j.sink());
    }
    if let Some(c) = csv {
        sinks.push(c.sink());
    }
    match sinks.len() {
        0 => None,
        1 => sinks.pop(),
        _ => Some(Box::new(Tee(sinks))),
    }
}

/// Several sinks behind one.
struct Tee(Vec<Box<dyn SampleSink>>);

impl SampleSink for Tee {
    fn sample(
        &mut self,
        series: u32,
        desc: &volley_metrics::MetricDesc,
        tags: Option<&Arc<volley_metrics::TagSet>>,
        value: f64,
    ) {
        for s in &mut self.0 {
            s.sample(series, desc, tags, value);
        }
    }

    fn flush(&mut self) {
        for s in &mut self.0 {
            s.flush();
        }
    }
}

/// An output fed with finished one-second points.
pub trait Aggregated: Send {
    /// Add one point (`start_ms`: the run's start, Unix milliseconds) to the pending batch.
    fn point(&mut self, start_ms: u64, p: &Point);
    /// The pending batch as a request body, if there is one (then the batch starts over).
    fn take_batch(&mut self) -> Option<Vec<u8>>;
}

/// The outputs of one run other than `json=`, driven by the run.
pub struct Outputs {
    /// The per-sample CSV writer, for [`sample_sink`].
    pub csv: Option<Arc<csv::CsvOut>>,
    junit: Option<PathBuf>,
    pushers: Vec<(Box<dyn Aggregated>, post::Sender)>,
    /// Unix ms of the run's start, learnt at the first tick.
    start_ms: Option<u64>,
    /// First series offset (s) not sent yet.
    next_t: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

impl Outputs {
    /// Open files and start the sender threads.
    pub fn start(specs: &[OutSpec]) -> Result<Outputs, String> {
        let mut o = Outputs {
            csv: None,
            junit: None,
            pushers: Vec::new(),
            start_ms: None,
            next_t: 0,
        };
        for s in specs {
            match s {
                OutSpec::Csv(p) => o.csv = Some(Arc::new(csv::CsvOut::create(p)?)),
                OutSpec::Junit(p) => {
                    // Fail now, not after a long run.
                    std::fs::write(p, "")
                        .map_err(|e| format!("--out junit={}: {e}", p.display()))?;
                    o.junit = Some(p.clone());
                }
                OutSpec::Influx(u) => {
                    let url = post::HttpUrl::parse(u)?;
                    let db = url.path.trim_matches('/').to_string();
                    let target = url.with_path(&format!("/write?db={}", post::query_escape(&db)));
                    o.pushers.push((
                        Box::new(influx::Influx::new()),
                        post::Sender::start("influxdb", target, influx::HEADERS),
                    ));
                }
                OutSpec::Prometheus(u) => {
                    let url = post::HttpUrl::parse(u)?;
                    o.pushers.push((
                        Box::new(prom::RemoteWrite::new()),
                        post::Sender::start("prometheus", url, prom::HEADERS),
                    ));
                }
                OutSpec::Json(_) => {}
            }
        }
        Ok(o)
    }

    pub fn is_empty(&self) -> bool {
        self.csv.is_none() && self.junit.is_none() && self.pushers.is_empty()
    }

    /// The coordinator's once-per-second hook: send the points finished since the last tick.
    pub fn tick(&mut self, agg: &Aggregator, elapsed: Duration) {
        if self.csv.is_none() && self.pushers.is_empty() {
            return;
        }
        let start_ms = *self
            .start_ms
            .get_or_insert_with(|| now_ms().saturating_sub(elapsed.as_millis() as u64));
        if let Some(c) = &self.csv {
            for name in ["vus", "vus_max"] {
                if let Some(volley_metrics::Agg::Gauge { last, .. }) =
                    agg.total(&volley_metrics::MetricKey::new(name))
                {
                    c.row(name, &volley_metrics::TagSet::new(), *last);
                }
            }
        }
        self.send_points(start_ms, &agg.series().points);
    }

    fn send_points(&mut self, start_ms: u64, points: &[Point]) {
        for p in points {
            if p.t < self.next_t {
                continue;
            }
            for (out, _) in &mut self.pushers {
                out.point(start_ms, p);
            }
            self.next_t = p.t + p.w.max(1);
        }
        for (out, tx) in &mut self.pushers {
            if let Some(body) = out.take_batch() {
                tx.send(body);
            }
        }
    }

    /// After the run: the last points, the JUnit file, and every output flushed and closed.
    /// Returns the problems to report as warnings (the run's outcome stands).
    pub fn finish(mut self, result: &RunResult) -> Vec<String> {
        let start_ms = self.start_ms.unwrap_or(result.meta.started_unix_ms);
        self.send_points(start_ms, &result.series.points);
        self.close(result)
    }

    /// Flush and close every output, write the JUnit file (no more points are sent).
    fn close(mut self, result: &RunResult) -> Vec<String> {
        let mut problems = Vec::new();
        for (_, tx) in self.pushers.drain(..) {
            if let Some(e) = tx.finish() {
                problems.push(e);
            }
        }
        if let Some(c) = &self.csv {
            if let Some(e) = c.error() {
                problems.push(e);
            }
        }
        if let Some(p) = &self.junit {
            let xml = junit::render(result);
            if let Err(e) = std::fs::write(p, xml) {
                problems.push(format!("--out junit={}: {e}", p.display()));
            }
        }
        problems
    }
}

/// What a per-sample sink formats once per series and per raw tag set (a request repeated
/// with the same tags hands over the same `Arc`, or an equal one from another VU), indexed by
/// the recorder's handle.
pub(crate) struct SeriesCache<T>(Vec<Option<(Option<Arc<volley_metrics::TagSet>>, T)>>);

impl<T> Default for SeriesCache<T> {
    fn default() -> Self {
        SeriesCache(Vec::new())
    }
}

impl<T> SeriesCache<T> {
    /// Series `i`'s value for these raw tags, made by `make` (given the tags to print) when
    /// the series is new or its raw tags changed.
    pub(crate) fn get(
        &mut self,
        i: u32,
        desc: &volley_metrics::MetricDesc,
        tags: Option<&Arc<volley_metrics::TagSet>>,
        make: impl FnOnce(&volley_metrics::TagSet) -> T,
    ) -> &T {
        let i = i as usize;
        if self.0.len() <= i {
            self.0.resize_with(i + 1, || None);
        }
        let fresh = match (&self.0[i], tags) {
            (None, _) => true,
            (Some((Some(a), _)), Some(t)) => !Arc::ptr_eq(a, t) && **a != **t,
            (Some((a, _)), t) => a.is_some() != t.is_some(),
        };
        if fresh {
            let v = make(tags.map_or(&desc.key.tags, |t| &**t));
            self.0[i] = Some((tags.cloned(), v));
        }
        match &self.0[i] {
            Some((_, v)) => v,
            None => unreachable!("filled above"),
        }
    }
}

/// The file a per-sample output (`json=`, `csv=`) writes: whole worker buffers under a lock, so
/// lines never interleave; the first write error kept for the end of the run; and the tags
/// every sample carries besides its series' own (quick mode's `method`, `url`, `name`:
/// constant for a run, so its series keys leave them out).
pub(crate) struct RawFile {
    file: std::sync::Mutex<std::fs::File>,
    error: std::sync::Mutex<Option<String>>,
    base: std::sync::OnceLock<volley_metrics::TagSet>,
    /// `--out json` / `--out csv`, for the error message.
    what: &'static str,
}

impl RawFile {
    pub(crate) fn new(file: std::fs::File, what: &'static str) -> RawFile {
        RawFile {
            file: std::sync::Mutex::new(file),
            error: Default::default(),
            base: Default::default(),
            what,
        }
    }

    pub(crate) fn write(&self, bytes: &[u8]) {
        use std::io::Write;
        if bytes.is_empty() {
            return;
        }
        let r = self.file.lock().unwrap().write_all(bytes);
        if let Err(e) = r {
            let what = self.what;
            self.error
                .lock()
                .unwrap()
                .get_or_insert_with(|| format!("{what}: {e}"));
        }
    }

    pub(crate) fn error(&self) -> Option<String> {
        self.error.lock().unwrap().clone()
    }

    /// Set before the run; once.
    pub(crate) fn set_base_tags(&self, tags: volley_metrics::TagSet) {
        let _ = self.base.set(tags);
    }

    /// A sample's tags under the constant ones: the sample's own win.
    pub(crate) fn tags(&self, own: &volley_metrics::TagSet) -> volley_metrics::TagSet {
        let mut all = self.base.get().cloned().unwrap_or_default();
        all.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        assert_eq!(
            OutSpec::parse("csv=a.csv").unwrap(),
            OutSpec::Csv("a.csv".into())
        );
        assert!(matches!(
            OutSpec::parse("influxdb=http://127.0.0.1:8086/k6"),
            Ok(OutSpec::Influx(_))
        ));
        assert!(OutSpec::parse("influxdb=http://127.0.0.1:8086/").is_err());
        assert!(OutSpec::parse("prometheus=https://x/api/v1/write").is_err());
        assert!(OutSpec::parse("statsd=x")
            .unwrap_err()
            .contains("unknown output"));
        assert!(OutSpec::parse("csv").unwrap_err().contains("csv=FILE"));
        let (j, rest) = OutSpec::parse_all(&["json=a.json".into(), "junit=j.xml".into()]).unwrap();
        assert_eq!(j, Some(PathBuf::from("a.json")));
        assert_eq!(rest, vec![OutSpec::Junit("j.xml".into())]);
    }
}
