//! [`Monitor`]: samples every watched target and records the readings as gauges.
//!
//! One `Monitor` lives on one thread (the sampler thread of a run, or `volley monitor`'s main
//! loop). Each [`Monitor::sample`] reads every target once and records each figure as a gauge
//! named `monitor_*` with a `target` tag into the monitor's own [`Recorder`]; the caller hands
//! [`Monitor::snapshot`] to an aggregator like any worker's, so the readings land in the run's
//! totals (first/min/max/last) and its per-second series. The readings are also returned, for
//! live tables and CSV.

use crate::cgroup::{sample_cgroup, CgroupSample};
use crate::procfs::{find_tree, pid_tree, sample_pid, ProcSample, TICKS_PER_SEC};
use crate::prom;
use crate::spec::{MonitorSpec, Source};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use volley_metrics::{MetricKey, MetricKind, Recorder, Snapshot, Unit};

/// Scrape timeout for `url:` targets (a sample must not stall the timeline).
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);
/// At most this many Prometheus series per target, so a huge exporter cannot grow memory.
const MAX_PROM_SERIES: usize = 500;

/// The figures of one target at one sample, in the order they were read.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// The `target` tag.
    pub target: String,
    /// Seconds since the monitor started.
    pub elapsed_s: f64,
    /// (metric name, value); empty when the target is gone.
    pub values: Vec<(String, f64)>,
    pub gone: bool,
}

impl Reading {
    pub fn get(&self, metric: &str) -> Option<f64> {
        self.values
            .iter()
            .find(|(n, _)| n == metric)
            .map(|(_, v)| *v)
    }
}

/// What one [`Monitor::sample`] produced: readings, and notes for the user (a target went
/// away or came back, a scrape failed) to print on stderr.
#[derive(Clone, Debug, Default)]
pub struct Tick {
    pub readings: Vec<Reading>,
    pub notes: Vec<String>,
}

/// CPU ticks (utime, stime) per pid.
type Ticks = HashMap<u32, (u64, u64)>;

struct TargetState {
    spec: MonitorSpec,
    /// CPU ticks (utime, stime) per pid at the previous sample, and when it was taken.
    prev_ticks: Option<(Instant, Ticks)>,
    /// cgroup: (when, usage, user, system) µs at the previous sample.
    prev_usec: Option<(Instant, u64, u64, u64)>,
    /// Alive at the previous sample (None before the first one).
    alive: Option<bool>,
}

pub struct Monitor {
    targets: Vec<TargetState>,
    rec: Recorder,
    start: Instant,
}

/// Metric names, in the order the live table and CSV show them.
pub const PROCESS_METRICS: &[&str] = &[
    "monitor_rss_bytes",
    "monitor_private_dirty_bytes",
    "monitor_cpu_percent",
    "monitor_cpu_user_percent",
    "monitor_cpu_sys_percent",
    "monitor_threads",
    "monitor_fds",
    "monitor_read_bytes",
    "monitor_write_bytes",
    "monitor_disk_read_bytes",
    "monitor_disk_write_bytes",
    "monitor_ctx_switches",
    "monitor_ctx_switches_voluntary",
    "monitor_ctx_switches_involuntary",
    "monitor_processes",
];

pub const CGROUP_METRICS: &[&str] = &[
    "monitor_memory_current_bytes",
    "monitor_memory_anon_bytes",
    "monitor_memory_file_bytes",
    "monitor_cpu_percent",
    "monitor_cpu_user_percent",
    "monitor_cpu_sys_percent",
    "monitor_pids",
    "monitor_memory_pressure_avg10",
    "monitor_cpu_pressure_avg10",
];

/// The display unit of a monitor metric (bytes show as KiB/MiB in summaries and reports).
pub fn unit_of(metric: &str) -> Unit {
    if metric.ends_with("_bytes") {
        Unit::Data
    } else {
        Unit::Default
    }
}

/// Samples of the processes still alive among `pids`.
fn sample_all(pids: &std::collections::BTreeSet<u32>) -> Vec<(u32, ProcSample)> {
    pids.iter()
        .filter_map(|p| sample_pid(*p).ok().map(|s| (*p, s)))
        .collect()
}

/// Check what can be checked before a run starts: a `pid:` must exist, a `cgroup:` must be a
/// cgroup v2 directory. (`cmd:` may start later; a `url:` may come up later.)
pub fn validate(specs: &[MonitorSpec]) -> Result<(), String> {
    for s in specs {
        match &s.source {
            Source::Pid(p) | Source::Tree(p) => {
                sample_pid(*p)
                    .map_err(|e| format!("--monitor {}: no process {p} ({e})", s.name))?;
            }
            Source::Cgroup(d) => {
                sample_cgroup(d).map_err(|e| format!("--monitor {}: {e}", s.name))?;
            }
            Source::Cmd(_) | Source::Url { .. } => {}
        }
    }
    Ok(())
}

impl Monitor {
    pub fn new(specs: Vec<MonitorSpec>) -> Monitor {
        Monitor::starting_at(specs, Instant::now())
    }

    /// A monitor whose `elapsed_s` counts from `start` (the run's start).
    pub fn starting_at(specs: Vec<MonitorSpec>, start: Instant) -> Monitor {
        Monitor {
            targets: specs
                .into_iter()
                .map(|spec| TargetState {
                    spec,
                    prev_ticks: None,
                    prev_usec: None,
                    alive: None,
                })
                .collect(),
            rec: Recorder::new(),
            start,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Everything recorded since the last snapshot.
    pub fn snapshot(&mut self) -> Snapshot {
        self.rec.snapshot()
    }

    /// Read every target once and record the figures.
    pub fn sample(&mut self) -> Tick {
        let mut tick = Tick::default();
        let now = Instant::now();
        let elapsed_s = now.duration_since(self.start).as_secs_f64();
        for t in &mut self.targets {
            let (values, error) = match &t.spec.source {
                Source::Pid(p) => match sample_pid(*p) {
                    Ok(s) => (Some(process_values(t, now, &[(*p, s)])), None),
                    Err(e) => (None, Some(e.to_string())),
                },
                Source::Cmd(name) => {
                    let samples = sample_all(&find_tree(name));
                    if samples.is_empty() {
                        (None, Some(format!("no process named '{name}'")))
                    } else {
                        (Some(process_values(t, now, &samples)), None)
                    }
                }
                Source::Tree(pid) => {
                    let samples = sample_all(&pid_tree(*pid));
                    if samples.is_empty() {
                        (None, Some(format!("process {pid} is gone")))
                    } else {
                        (Some(process_values(t, now, &samples)), None)
                    }
                }
                Source::Cgroup(dir) => match sample_cgroup(dir) {
                    Ok(s) => (Some(cgroup_values(t, now, &s)), None),
                    Err(e) => (None, Some(e.to_string())),
                },
                Source::Url { url, keep } => {
                    match prom::fetch(url, SCRAPE_TIMEOUT).and_then(|b| prom::parse(&b)) {
                        Ok(e) => (Some(prom_values(keep, &e.samples)), None),
                        Err(e) => (None, Some(e)),
                    }
                }
            };
            let alive = values.is_some();
            match (t.alive, alive) {
                (Some(true) | None, false) => tick.notes.push(format!(
                    "{} is gone at {:.1}s ({})",
                    t.spec.name,
                    elapsed_s,
                    error.unwrap_or_default()
                )),
                (Some(false), true) => tick
                    .notes
                    .push(format!("{} is back at {elapsed_s:.1}s", t.spec.name)),
                _ => {}
            }
            t.alive = Some(alive);
            if !alive {
                t.prev_ticks = None;
                t.prev_usec = None;
            }
            let target = t.spec.name.clone();
            let values = values.unwrap_or_default();
            for (name, labels, v) in &values {
                let mut key = MetricKey::tagged(name, &[("target", &target)]);
                for (k, lv) in labels {
                    // A scraped `target` label must not replace ours (Prometheus' convention).
                    let k = if k == "target" { "exported_target" } else { k };
                    key.tags.insert(k.to_string(), lv.clone());
                }
                let h = self.rec.handle(key, MetricKind::Gauge, unit_of(name));
                self.rec.add(h, *v);
            }
            let h = self.rec.handle(
                MetricKey::tagged("monitor_gone", &[("target", &target)]),
                MetricKind::Gauge,
                Unit::Default,
            );
            self.rec.add(h, if alive { 0.0 } else { 1.0 });
            tick.readings.push(Reading {
                target,
                elapsed_s,
                values: values
                    .into_iter()
                    .map(|(n, labels, v)| (with_labels(&n, &labels), v))
                    .collect(),
                gone: !alive,
            });
        }
        tick
    }
}

/// Run a [`Monitor`] on its own thread alongside a load run, as one more "worker" of the
/// run's aggregator. At every whole second `k` since `start` it samples (when `k` is a multiple
/// of `every`, rounded to whole seconds) and calls `send(k, snapshot, tick)` — the snapshot may
/// be empty, but every second is reported so the aggregator can close its intervals. Once
/// `stop` is set it takes a last sample (the end value) and returns.
pub fn spawn_sampler(
    specs: Vec<MonitorSpec>,
    every: Duration,
    start: Instant,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    mut send: impl FnMut(u64, Snapshot, Option<Tick>) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    let every = every.as_secs().max(1);
    std::thread::Builder::new()
        .name("volley-monitor".into())
        .spawn(move || {
            let mut m = Monitor::starting_at(specs, start);
            let mut k = 0u64;
            'run: loop {
                let due = start + Duration::from_secs(k);
                loop {
                    if stop.load(Ordering::Relaxed) {
                        break 'run;
                    }
                    let now = Instant::now();
                    if now >= due {
                        break;
                    }
                    std::thread::sleep((due - now).min(Duration::from_millis(50)));
                }
                let tick = k.is_multiple_of(every).then(|| m.sample());
                send(k, m.snapshot(), tick);
                k += 1;
            }
            // The end value, in an interval the aggregator has not closed yet.
            let tick = m.sample();
            let last = start.elapsed().as_secs().max(k);
            send(last, m.snapshot(), Some(tick));
        })
}

type Values = Vec<(String, Vec<(String, String)>, f64)>;

fn with_labels(name: &str, labels: &[(String, String)]) -> String {
    if labels.is_empty() {
        return name.to_string();
    }
    let l: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}{{{}}}", l.join(","))
}

fn push(out: &mut Values, name: &str, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        out.push((name.to_string(), Vec::new(), v));
    }
}

/// Percent of one core over the interval since `prev`.
fn percent(delta: f64, secs: f64) -> Option<f64> {
    (secs > 0.0).then(|| (delta / secs * 100.0).max(0.0))
}

fn process_values(t: &mut TargetState, now: Instant, procs: &[(u32, ProcSample)]) -> Values {
    let mut sum = ProcSample::default();
    for (_, s) in procs {
        sum.add(s);
    }
    let ticks: Ticks = procs
        .iter()
        .map(|(p, s)| (*p, (s.utime_ticks, s.stime_ticks)))
        .collect();
    let (mut user, mut sys) = (None, None);
    if let Some((then, prev)) = &t.prev_ticks {
        // A process that appeared since the last sample started within the interval: all its
        // CPU time belongs to it. One that vanished takes its last interval with it.
        let (mut du, mut ds) = (0u64, 0u64);
        for (p, (u, s)) in &ticks {
            let (pu, ps) = prev.get(p).copied().unwrap_or((0, 0));
            du += u.saturating_sub(pu);
            ds += s.saturating_sub(ps);
        }
        let secs = now.duration_since(*then).as_secs_f64();
        user = percent(du as f64 / TICKS_PER_SEC, secs);
        sys = percent(ds as f64 / TICKS_PER_SEC, secs);
    }
    t.prev_ticks = Some((now, ticks));
    let f = |v: Option<u64>| v.map(|v| v as f64);
    let mut out = Values::new();
    push(&mut out, "monitor_rss_bytes", f(sum.rss_bytes));
    push(
        &mut out,
        "monitor_private_dirty_bytes",
        f(sum.private_dirty_bytes),
    );
    if let (Some(u), Some(s)) = (user, sys) {
        push(&mut out, "monitor_cpu_percent", Some(u + s));
        push(&mut out, "monitor_cpu_user_percent", Some(u));
        push(&mut out, "monitor_cpu_sys_percent", Some(s));
    }
    push(&mut out, "monitor_threads", f(sum.threads));
    push(&mut out, "monitor_fds", f(sum.fds));
    push(&mut out, "monitor_read_bytes", f(sum.read_bytes));
    push(&mut out, "monitor_write_bytes", f(sum.write_bytes));
    push(&mut out, "monitor_disk_read_bytes", f(sum.disk_read_bytes));
    push(
        &mut out,
        "monitor_disk_write_bytes",
        f(sum.disk_write_bytes),
    );
    let ctx = match (sum.ctx_voluntary, sum.ctx_involuntary) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    };
    push(&mut out, "monitor_ctx_switches", f(ctx));
    push(
        &mut out,
        "monitor_ctx_switches_voluntary",
        f(sum.ctx_voluntary),
    );
    push(
        &mut out,
        "monitor_ctx_switches_involuntary",
        f(sum.ctx_involuntary),
    );
    push(&mut out, "monitor_processes", Some(procs.len() as f64));
    out
}

fn cgroup_values(t: &mut TargetState, now: Instant, s: &CgroupSample) -> Values {
    let f = |v: Option<u64>| v.map(|v| v as f64);
    let mut out = Values::new();
    push(
        &mut out,
        "monitor_memory_current_bytes",
        f(s.memory_current),
    );
    push(&mut out, "monitor_memory_anon_bytes", f(s.anon));
    push(&mut out, "monitor_memory_file_bytes", f(s.file));
    if let Some(usage) = s.usage_usec {
        let (user, sys) = (s.user_usec.unwrap_or(0), s.system_usec.unwrap_or(0));
        if let Some((then, pu, pus, pss)) = t.prev_usec {
            let secs = now.duration_since(then).as_secs_f64();
            let p = |d: u64| percent(d as f64 / 1e6, secs);
            push(&mut out, "monitor_cpu_percent", p(usage.saturating_sub(pu)));
            push(
                &mut out,
                "monitor_cpu_user_percent",
                p(user.saturating_sub(pus)),
            );
            push(
                &mut out,
                "monitor_cpu_sys_percent",
                p(sys.saturating_sub(pss)),
            );
        }
        t.prev_usec = Some((now, usage, user, sys));
    }
    push(&mut out, "monitor_pids", f(s.pids));
    push(&mut out, "monitor_memory_pressure_avg10", s.memory_pressure);
    push(&mut out, "monitor_cpu_pressure_avg10", s.cpu_pressure);
    out
}

fn prom_values(keep: &[String], samples: &[prom::PromSample]) -> Values {
    samples
        .iter()
        .filter(|s| s.value.is_finite() && prom::kept(keep, &s.name))
        .take(MAX_PROM_SERIES)
        .map(|s| (format!("monitor_{}", s.name), s.labels.clone(), s.value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_metrics::Agg;

    #[test]
    #[cfg(target_os = "linux")]
    fn samples_own_process_and_records_tagged_gauges() {
        let spec = MonitorSpec::parse(&format!("me=pid:{}", std::process::id())).unwrap();
        validate(std::slice::from_ref(&spec)).unwrap();
        let mut m = Monitor::new(vec![spec]);
        let first = m.sample();
        assert!(first.notes.is_empty(), "{:?}", first.notes);
        let r = &first.readings[0];
        assert_eq!(r.target, "me");
        assert!(!r.gone);
        assert!(r.get("monitor_rss_bytes").unwrap() > 0.0);
        assert!(
            r.get("monitor_cpu_percent").is_none(),
            "CPU needs two samples"
        );
        // Burn some CPU so the second sample has something to show.
        let t0 = Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(300) {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let second = m.sample();
        let cpu = second.readings[0].get("monitor_cpu_percent").unwrap();
        assert!(cpu > 20.0 && cpu < 250.0, "cpu {cpu}");
        let snap = m.snapshot();
        let rss = snap
            .entries
            .iter()
            .find(|(d, _)| d.key.name == "monitor_rss_bytes")
            .unwrap();
        assert_eq!(rss.0.key.tags["target"], "me");
        assert_eq!(rss.0.unit, Unit::Data);
        assert!(matches!(rss.1, Agg::Gauge { n: 2, .. }));
    }

    #[test]
    fn missing_targets_are_gone_with_a_note_once() {
        let mut m = Monitor::new(vec![
            MonitorSpec::parse("pid:4294967294").unwrap(),
            MonitorSpec::parse("cmd:no-such-volley-process").unwrap(),
        ]);
        assert!(validate(&[MonitorSpec::parse("pid:4294967294").unwrap()]).is_err());
        let t = m.sample();
        assert!(t.readings.iter().all(|r| r.gone && r.values.is_empty()));
        assert_eq!(t.notes.len(), 2, "{:?}", t.notes);
        assert!(t.notes[0].contains("is gone at"), "{:?}", t.notes);
        assert!(m.sample().notes.is_empty(), "noted once");
        let snap = m.snapshot();
        let gone: Vec<_> = snap
            .entries
            .iter()
            .filter(|(d, _)| d.key.name == "monitor_gone")
            .collect();
        assert_eq!(gone.len(), 2);
        assert!(gone
            .iter()
            .all(|(_, a)| matches!(a, Agg::Gauge { last, .. } if *last == 1.0)));
    }

    #[test]
    fn prometheus_samples_keep_labels_and_skip_non_finite() {
        let e = prom::parse("a{target=\"x\",k=\"v\"} 1\nb +Inf\nc 2\n").unwrap();
        let v = prom_values(&[], &e.samples);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].0, "monitor_a");
        let v = prom_values(&["c".to_string()], &e.samples);
        assert_eq!(v.len(), 1);
        assert_eq!(with_labels("m", &[("k".into(), "v".into())]), "m{k=v}");
    }
}
