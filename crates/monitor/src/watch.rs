//! `volley monitor`: watching targets on their own (a run driven by another tool). One
//! sample per interval until the duration ends, the caller stops it (Ctrl-C) or every
//! watched process is gone; each sample is printed as a live table line on stdout and
//! appended to a CSV file, and all of them are recorded into a run result (`mode:
//! "monitor"`) that the caller summarises, saves and judges.

use crate::sampler::{CGROUP_METRICS, PROCESS_METRICS};
use crate::{Monitor, MonitorSpec, Reading, Source};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use volley_metrics::{time, Aggregator, RunMeta, RunResult};

/// What to watch, for how long, and what to show.
pub struct WatchPlan {
    /// The targets, as given (they name the run and go into its options).
    pub targets: Vec<String>,
    pub specs: Vec<MonitorSpec>,
    /// Between two samples; whole seconds, at least 1 (the series' resolution).
    pub interval: Duration,
    /// Stop after this long (`None`: until stopped).
    pub duration: Option<Duration>,
    /// No table on stdout and no start line on stderr.
    pub quiet: bool,
    /// Also write every sample to this CSV file (created before the first sample).
    pub csv: Option<PathBuf>,
    /// The command line, recorded in the result.
    pub command: Vec<String>,
}

/// How the caller stops a watch (its run control; Ctrl-C).
pub struct Control<'a> {
    pub is_stopped: &'a dyn Fn() -> bool,
    pub was_interrupted: &'a dyn Fn() -> bool,
}

/// A finished watch: the samples as a run result, and why it ended early if the CSV could
/// not be written (the result holds what was sampled until then).
pub struct Watched {
    pub result: RunResult,
    pub error: Option<String>,
}

/// Watches until the plan's duration ends or `ctl` stops it. `Err`: the CSV file cannot be
/// created (nothing was sampled).
pub fn watch(plan: &WatchPlan, ctl: &Control<'_>) -> Result<Watched, String> {
    let mut csv = match &plan.csv {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some(Csv {
                out: std::io::BufWriter::new(f),
                columns: None,
            }),
            Err(e) => return Err(format!("cannot write {}: {e}", p.display())),
        },
        None => None,
    };
    let every = plan.interval.as_secs().max(1);
    let started_wall = SystemTime::now();
    let start = Instant::now();
    let mut m = Monitor::starting_at(plan.specs.clone(), start);
    let mut agg = Aggregator::new(1, volley_metrics::series::DEFAULT_MAX_POINTS);
    let all_pids = plan
        .specs
        .iter()
        .all(|s| matches!(s.source, Source::Pid(_)));
    if !plan.quiet {
        eprintln!(
            "volley monitor: every {every}s{}; Ctrl-C stops",
            plan.duration
                .map(|d| format!(" for {}s", d.as_secs_f64()))
                .unwrap_or_default()
        );
    }
    let mut k = 0u64;
    let mut error = None;
    loop {
        let due = start + Duration::from_secs(k * every);
        if plan.duration.is_some_and(|d| due > start + d) {
            break;
        }
        while Instant::now() < due && !(ctl.is_stopped)() {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
        if (ctl.is_stopped)() {
            break;
        }
        let tick = m.sample();
        for n in &tick.notes {
            eprintln!("volley: monitor: {n}");
        }
        agg.add(0, k * every, m.snapshot());
        if !plan.quiet {
            let mut lines = String::new();
            for r in &tick.readings {
                lines.push_str(&table_line(r));
                lines.push('\n');
            }
            print(&lines);
        }
        if let Some(c) = csv.as_mut() {
            if let Err(e) = c.write(&plan.specs, &tick.readings) {
                error = Some(format!("cannot write the CSV: {e}"));
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
    let meta = RunMeta::new("monitor", plan.targets.join(" "), plan.command.clone()).timed(
        started_wall,
        SystemTime::now(),
        start.elapsed(),
        (ctl.was_interrupted)(),
    );
    let options = serde_json::json!({ "targets": plan.targets, "interval_s": every });
    Ok(Watched {
        result: RunResult::new(meta, options, metrics, series),
        error,
    })
}

/// Writes to stdout; a closed pipe (`volley monitor ... | head`) is not worth a panic.
fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
}

/// A monitor figure for people: bytes with a binary unit, anything else with 2 decimals.
pub fn show(metric: &str, v: f64) -> String {
    if metric.contains("_bytes") {
        crate::summary::bytes(v)
    } else {
        format!("{v:.2}")
    }
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
                Source::Pid(_) | Source::Tree(_) | Source::Cmd(_) => {
                    PROCESS_METRICS.iter().for_each(|m| add(m))
                }
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
pub fn table_line(r: &Reading) -> String {
    let mut o = format!("{:>7.1}s  {:<20}", r.elapsed_s, r.target);
    if r.gone {
        o.push_str("  gone");
        return o;
    }
    let f = |m: &str, w: usize, fmt: &dyn Fn(f64) -> String| {
        format!("{:>w$}", r.get(m).map_or("-".to_string(), fmt))
    };
    let b = |v: f64| crate::summary::bytes(v);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(csv: Option<PathBuf>, duration: Option<Duration>) -> WatchPlan {
        let target = format!("me=pid:{}", std::process::id());
        WatchPlan {
            specs: vec![MonitorSpec::parse(&target).unwrap()],
            targets: vec![target],
            interval: Duration::from_secs(1),
            duration,
            quiet: true,
            csv,
            command: vec!["volley".into(), "monitor".into()],
        }
    }

    #[test]
    fn a_zero_duration_takes_one_sample_into_the_result_and_the_csv() {
        let csv = std::env::temp_dir().join(format!("volley-watch-{}.csv", std::process::id()));
        let no = || false;
        let ctl = Control {
            is_stopped: &no,
            was_interrupted: &no,
        };
        let w = watch(&plan(Some(csv.clone()), Some(Duration::ZERO)), &ctl).unwrap();
        assert!(w.error.is_none());
        let r = &w.result;
        assert_eq!(r.meta.mode, "monitor");
        assert!(!r.meta.interrupted);
        assert!(r.metrics_named("monitor_rss_bytes").next().is_some());
        let text = std::fs::read_to_string(&csv).unwrap();
        let _ = std::fs::remove_file(&csv);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].starts_with("time,elapsed_s,target,rss_bytes,"),
            "{text}"
        );
        assert!(lines[0].ends_with(",gone"), "{text}");
        assert!(
            lines[1].contains(",me,") && lines[1].ends_with(",0"),
            "{text}"
        );
    }

    #[test]
    fn a_stopped_control_ends_the_watch_before_any_sample_and_marks_it_interrupted() {
        let yes = || true;
        let ctl = Control {
            is_stopped: &yes,
            was_interrupted: &yes,
        };
        let w = watch(&plan(None, None), &ctl).unwrap();
        assert!(w.result.meta.interrupted);
        assert!(w.result.metrics_named("monitor_rss_bytes").next().is_none());
    }

    #[test]
    fn an_uncreatable_csv_is_an_error_before_sampling() {
        let no = || false;
        let ctl = Control {
            is_stopped: &no,
            was_interrupted: &no,
        };
        let bad = std::env::temp_dir().join("volley-no-such-dir/x/y.csv");
        let e = watch(&plan(Some(bad), Some(Duration::ZERO)), &ctl)
            .err()
            .unwrap();
        assert!(e.starts_with("cannot write ") && e.contains("y.csv"), "{e}");
    }

    #[test]
    fn csv_fields_are_quoted_only_when_needed() {
        assert_eq!(csv_field("api"), "api");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
