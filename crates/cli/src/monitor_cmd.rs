//! `volley monitor SPEC...`: watch targets on their own (a run driven by another tool), with a
//! live table and CSV; and the `--monitor` / `--threshold` helpers `volley http` shares.

use crate::args::MonitorArgs;
use crate::{exit, signals};
use std::io::Write;
use std::time::{Duration, Instant, SystemTime};
use volley_engine::{MonitorPlan, RunControl};
use volley_metrics::{time, Aggregator, RunMeta, RunResult, TagSet};
use volley_monitor::sampler::{CGROUP_METRICS, PROCESS_METRICS};
use volley_monitor::{Check, Monitor, MonitorSpec, Reading, Source};
use volley_run::Outcome;

/// One `--threshold METRIC[{tag:value,...}]:CHECK`.
pub struct Threshold {
    pub metric: String,
    pub tags: TagSet,
    pub check: Check,
}

impl Threshold {
    pub fn parse(s: &str) -> Result<Threshold, String> {
        let hint = || {
            format!(
                "--threshold '{s}': expected METRIC:CHECK, e.g. monitor_rss_bytes:slope<5MB/h, \
                 monitor_rss_bytes{{target:api}}:max<2GB or http_req_duration:drift(p95)<10%"
            )
        };
        // A tag selector holds ':' itself, so the separator is the first ':' after it.
        let (metric, tags, rest) = match s.find('{') {
            Some(open) if s[..open].find(':').is_none() => {
                let close = s[open..].find('}').ok_or_else(hint)? + open;
                let mut tags = TagSet::new();
                for kv in s[open + 1..close]
                    .split(',')
                    .filter(|kv| !kv.trim().is_empty())
                {
                    let (k, v) = kv.split_once(':').ok_or_else(hint)?;
                    tags.insert(k.trim().to_string(), v.trim().to_string());
                }
                let rest = s[close + 1..].strip_prefix(':').ok_or_else(hint)?;
                (&s[..open], tags, rest)
            }
            _ => {
                let (m, rest) = s.split_once(':').ok_or_else(hint)?;
                (m, TagSet::new(), rest)
            }
        };
        if metric.trim().is_empty() {
            return Err(hint());
        }
        Ok(Threshold {
            metric: metric.trim().to_string(),
            tags,
            check: Check::parse(rest).map_err(|e| format!("--threshold: {e}"))?,
        })
    }
}

pub fn parse_thresholds(list: &[String]) -> Result<Vec<Threshold>, String> {
    list.iter().map(|s| Threshold::parse(s)).collect()
}

/// `--monitor` values → what the engine samples. A bad spec is a usage error (Err(usage));
/// a missing pid or cgroup is a failure (Ok(Err(msg))).
pub fn plan(specs: &[String], interval: Duration) -> Result<Result<MonitorPlan, String>, String> {
    let specs = specs
        .iter()
        .map(|s| MonitorSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    if interval.is_zero() {
        return Err("--monitor-interval must be at least 1s".into());
    }
    Ok(volley_monitor::validate(&specs).map(|()| MonitorPlan { specs, interval }))
}

fn tags_label(t: &TagSet) -> String {
    if t.is_empty() {
        return String::new();
    }
    let v: Vec<String> = t.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", v.join(","))
}

fn show(metric: &str, v: f64) -> String {
    if metric.contains("_bytes") {
        volley_monitor::summary::bytes(v)
    } else {
        format!("{v:.2}")
    }
}

/// Judge the drift/limit checks on a finished run and print one line per series on stderr
/// (passed ones only when not `quiet`); returns k6's message naming the failed metrics, if any.
pub fn judge_checks(r: &RunResult, list: &[Threshold], quiet: bool) -> Option<String> {
    let mut failed: Vec<&str> = Vec::new();
    for t in list {
        for o in volley_monitor::evaluate(r, &t.metric, &t.tags, &t.check) {
            if !o.passed && !failed.contains(&t.metric.as_str()) {
                failed.push(&t.metric);
            }
            if quiet && o.passed {
                continue;
            }
            let seen = match o.observed {
                Some(v) if t.check.aggregate == volley_monitor::drift::Aggregate::Slope => {
                    format!("{}/h", show(&t.metric, v))
                }
                Some(v)
                    if matches!(
                        t.check.aggregate,
                        volley_monitor::drift::Aggregate::Drift(_)
                    ) =>
                {
                    format!("{v:+.1}%")
                }
                Some(v) => show(&t.metric, v),
                None => "no data".to_string(),
            };
            eprintln!(
                "{} {}{} {}  (observed {seen})",
                if o.passed { "✓" } else { "✗" },
                t.metric,
                tags_label(&o.tags),
                t.check.source,
            );
        }
    }
    (!failed.is_empty()).then(|| {
        format!(
            "thresholds on metrics '{}' have been crossed",
            failed.join(", ")
        )
    })
}

/// CSV field, quoted when it needs to be.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

struct Csv {
    out: std::io::BufWriter<std::fs::File>,
    columns: Option<Vec<String>>,
}

impl Csv {
    /// Columns: the standard figures of the kinds of targets watched, `gone`, and the series
    /// the first scrape of each `url:` target returned.
    fn columns(specs: &[MonitorSpec], first: &[Reading]) -> Vec<String> {
        let mut cols: Vec<String> = Vec::new();
        let mut add = |c: &str| {
            if !cols.iter().any(|x| x == c) {
                cols.push(c.to_string());
            }
        };
        for s in specs {
            match s.source {
                Source::Pid(_) | Source::Cmd(_) => PROCESS_METRICS.iter().for_each(|m| add(m)),
                Source::Cgroup(_) => CGROUP_METRICS.iter().for_each(|m| add(m)),
                Source::Url { .. } => {}
            }
        }
        for (s, r) in specs.iter().zip(first) {
            if matches!(s.source, Source::Url { .. }) {
                r.values.iter().for_each(|(n, _)| add(n));
            }
        }
        add("monitor_gone");
        cols
    }

    fn write(&mut self, specs: &[MonitorSpec], readings: &[Reading]) -> std::io::Result<()> {
        let header_needed = self.columns.is_none();
        let cols = self
            .columns
            .get_or_insert_with(|| Csv::columns(specs, readings));
        if header_needed {
            let names: Vec<String> = cols
                .iter()
                .map(|c| csv_field(c.strip_prefix("monitor_").unwrap_or(c)))
                .collect();
            writeln!(self.out, "time,elapsed_s,target,{}", names.join(","))?;
        }
        let now = time::rfc3339_ms(time::unix_ms(SystemTime::now()));
        for r in readings {
            let vals: Vec<String> = cols
                .iter()
                .map(|c| {
                    if c == "monitor_gone" {
                        u8::from(r.gone).to_string()
                    } else {
                        r.get(c).map(|v| format!("{v}")).unwrap_or_default()
                    }
                })
                .collect();
            writeln!(
                self.out,
                "{now},{:.3},{},{}",
                r.elapsed_s,
                csv_field(&r.target),
                vals.join(",")
            )?;
        }
        // A killed monitor leaves a valid file up to its last sample.
        self.out.flush()
    }
}

/// One line of the live table per target and sample.
fn table_line(r: &Reading) -> String {
    let mut o = format!("{:>7.1}s  {:<20}", r.elapsed_s, r.target);
    if r.gone {
        o.push_str("  gone");
        return o;
    }
    let f = |m: &str, w: usize, fmt: &dyn Fn(f64) -> String| {
        format!("{:>w$}", r.get(m).map_or("-".to_string(), fmt))
    };
    let b = |v: f64| volley_monitor::summary::bytes(v);
    let pct = |v: f64| format!("{v:.1}%");
    let n = |v: f64| format!("{v:.0}");
    if r.get("monitor_rss_bytes").is_some() {
        o.push_str(&format!(
            "  rss {}  dirty {}  cpu {} (usr {} sys {})  thr {}  fds {}  rd {}  wr {}  ctx {}",
            f("monitor_rss_bytes", 10, &b),
            f("monitor_private_dirty_bytes", 10, &b),
            f("monitor_cpu_percent", 6, &pct),
            f("monitor_cpu_user_percent", 6, &pct),
            f("monitor_cpu_sys_percent", 6, &pct),
            f("monitor_threads", 4, &n),
            f("monitor_fds", 5, &n),
            f("monitor_read_bytes", 10, &b),
            f("monitor_write_bytes", 10, &b),
            f("monitor_ctx_switches", 8, &n),
        ));
    } else if r.get("monitor_memory_current_bytes").is_some() {
        o.push_str(&format!(
            "  mem {}  anon {}  file {}  cpu {}  pids {}  psi mem {} cpu {}",
            f("monitor_memory_current_bytes", 10, &b),
            f("monitor_memory_anon_bytes", 10, &b),
            f("monitor_memory_file_bytes", 10, &b),
            f("monitor_cpu_percent", 6, &pct),
            f("monitor_pids", 4, &n),
            f("monitor_memory_pressure_avg10", 5, &|v| format!("{v:.2}")),
            f("monitor_cpu_pressure_avg10", 5, &|v| format!("{v:.2}")),
        ));
    } else {
        let shown: Vec<String> = r
            .values
            .iter()
            .take(6)
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    k.strip_prefix("monitor_").unwrap_or(k),
                    show(k, *v)
                )
            })
            .collect();
        o.push_str("  ");
        o.push_str(&shown.join("  "));
        if r.values.len() > 6 {
            o.push_str(&format!("  (+{} more)", r.values.len() - 6));
        }
    }
    o
}

pub fn run(a: MonitorArgs) -> i32 {
    let specs = match a
        .specs
        .iter()
        .map(|s| MonitorSpec::parse(s))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(s) => s,
        Err(e) => return exit::usage(&e),
    };
    let thresholds = match parse_thresholds(&a.thresholds) {
        Ok(t) => t,
        Err(e) => return exit::usage(&e),
    };
    if let Some(t) = thresholds
        .iter()
        .find(|t| !t.metric.starts_with("monitor_"))
    {
        return exit::usage(&format!(
            "--threshold: volley monitor records no metric '{}'; its metrics are monitor_* \
             (e.g. monitor_rss_bytes; see docs/monitor.md)",
            t.metric
        ));
    }
    if a.interval.is_zero() {
        return exit::usage("--interval must be at least 1s");
    }
    if let Err(e) = volley_monitor::validate(&specs) {
        return exit::fail(&e);
    }
    // The shared after-run chain (volley_run::after): checked before sampling starts.
    let after = volley_run::after::AfterRun {
        save: a.save.clone(),
        quiet: a.quiet,
        ..Default::default()
    };
    if let Err(e) = after.preflight(&[]) {
        return exit::fail(&e);
    }
    let mut csv = match &a.csv {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some(Csv {
                out: std::io::BufWriter::new(f),
                columns: None,
            }),
            Err(e) => return exit::fail(&format!("cannot write {}: {e}", p.display())),
        },
        None => None,
    };
    let ctl = RunControl::new();
    signals::install(ctl.clone());
    let every = a.interval.as_secs().max(1);
    let started_wall = SystemTime::now();
    let start = Instant::now();
    let mut m = Monitor::starting_at(specs.clone(), start);
    let mut agg = Aggregator::new(1, volley_metrics::series::DEFAULT_MAX_POINTS);
    let all_pids = specs.iter().all(|s| matches!(s.source, Source::Pid(_)));
    if !a.quiet {
        eprintln!(
            "volley monitor: every {every}s{}; Ctrl-C stops",
            a.duration
                .map(|d| format!(" for {}s", d.as_secs_f64()))
                .unwrap_or_default()
        );
    }
    let mut k = 0u64;
    let mut csv_error = None;
    loop {
        let due = start + Duration::from_secs(k * every);
        if a.duration.is_some_and(|d| due > start + d) {
            break;
        }
        while Instant::now() < due && !ctl.is_stopped() {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        if ctl.is_stopped() {
            break;
        }
        let tick = m.sample();
        for n in &tick.notes {
            eprintln!("volley: monitor: {n}");
        }
        agg.add(0, k * every, m.snapshot());
        if !a.quiet {
            for r in &tick.readings {
                outln!("{}", table_line(r));
            }
        }
        if let Some(c) = csv.as_mut() {
            if let Err(e) = c.write(&specs, &tick.readings) {
                csv_error = Some(format!("cannot write the CSV: {e}"));
                break;
            }
        }
        if all_pids && tick.readings.iter().all(|r| r.gone) {
            eprintln!("volley: monitor: every watched process is gone; stopping");
            break;
        }
        k += 1;
    }
    let (metrics, series) = agg.finish();
    let ended_wall = SystemTime::now();
    let meta = RunMeta::new("monitor", a.specs.join(" "), std::env::args().collect()).timed(
        started_wall,
        ended_wall,
        start.elapsed(),
        ctl.was_interrupted(),
    );
    let options = serde_json::json!({ "targets": a.specs, "interval_s": every });
    let result = RunResult::new(meta, options, metrics, series);
    if !a.quiet {
        let summary = volley_monitor::summarize(&result);
        exit::print(&volley_monitor::summary::render_text(&summary, "", ""));
    }
    let crossed = judge_checks(&result, &thresholds, a.quiet);
    let outcome = Outcome::of_run(None, None, crossed, ctl.was_interrupted(), false);
    let outcome = match (after.finish(&result, outcome, false), csv_error) {
        (Outcome::Failure(m), Some(c)) => Outcome::Failure(format!("{c}\n{m}")),
        (_, Some(c)) => Outcome::Failure(c),
        (o, None) => o,
    };
    exit::outcome(&outcome)
}

/// Validate `--monitor`/`--threshold` of `volley http` up front; returns the plan, the
/// thresholds, or the exit code of a bad flag.
pub fn http_setup(
    monitor: &[String],
    interval: Duration,
    thresholds: &[String],
) -> Result<(MonitorPlan, Vec<Threshold>), i32> {
    let t = parse_thresholds(thresholds).map_err(|e| exit::usage(&e))?;
    // A metric the run never records would fail as "no data" (99) after the whole run: say so
    // up front, as a bad flag (k6 refuses thresholds on unknown metrics before running, too).
    let quick = volley_engine::quick::METRICS;
    for th in &t {
        let m = th.metric.as_str();
        let watched = m.starts_with("monitor_") && !monitor.is_empty();
        if !quick.contains(&m) && !watched {
            return Err(exit::usage(&format!(
                "--threshold: quick mode records no metric '{m}'; it records {}{}",
                quick.join(", "),
                if monitor.is_empty() {
                    " (and monitor_* with --monitor)"
                } else {
                    " and monitor_*"
                }
            )));
        }
    }
    match plan(monitor, interval) {
        Err(e) => Err(exit::usage(&e)),
        Ok(Err(e)) => Err(exit::fail(&e)),
        Ok(Ok(p)) => Ok((p, t)),
    }
}
